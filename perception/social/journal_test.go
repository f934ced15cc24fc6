package social

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func getToday(t *testing.T, s *Service) (int, string) {
	t.Helper()
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	s.Routes(e)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/api/journal/today", nil)
	req.Host = "localhost:8080" // httptest's example.com is not this machine
	e.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func TestJournalToday(t *testing.T) {
	e := newEnv(t, nil)
	if code, body := getToday(t, e.s); code != http.StatusOK || body != `{"date":"2026-05-17","dreams":[],"dances":[],"greetings":[]}` {
		t.Errorf("empty card: %d %s", code, body)
	}
	e.model.Answer("Dreaming.\nSUMMARY: Short.")
	e.ingest("d1", "state_changed", map[string]any{"state": "sleep"})
	testkit.WaitFor(t, wait, "dreams scheduled", func() bool { return e.s.Pending()["d1"] == 3 })
	e.clock.Advance(2 * time.Hour) // 11:00
	e.waitLines("dreams-2026-05-17.ndjson", 1)
	e.model.Answer("Wheee.")
	e.ingest("d1", "state_changed", map[string]any{"state": "idle"})
	e.ingest("d1", "dance_ended", map[string]any{"dance": "robot"})
	e.waitLines("dances-2026-05-17.ndjson", 1)
	e.ingest("d2", "face_recognized", map[string]any{"identity": "brett"})
	e.waitSays(1)
	e.clock.Advance(time.Minute) // 11:01
	e.xz.Set("/xiaozhi/admin/say", xiaozhiDown)
	e.ingest("d2", "face_recognized", map[string]any{"identity": "hudson"})
	e.waitSays(2)
	e.waitLines("convo-2026-05-17.ndjson", 2)

	today := e.s.Today()
	id := today.Dreams[0].DreamID
	seed, _ := json.Marshal(today.Dreams[0].Seed)
	sayErr := *today.Greetings[0].Error
	errJSON, _ := json.Marshal(sayErr)
	want := `{"date":"2026-05-17",` +
		`"dreams":[{"ts":"2026-05-17T11:00:00+10:00","type":"dream","dream_id":"` + id + `","seed":` + string(seed) + `,"summary":"Short.","full_text":"Dreaming."}],` +
		`"dances":[{"ts":"2026-05-17T11:00:00+10:00","type":"dance","device":"d1","dance":"robot","reflection":"Wheee."}],` +
		`"greetings":[{"ts":"2026-05-17T11:01:00+10:00","device":"d2","identity":"hudson","text":"Hello there!","error":` + string(errJSON) + `},` +
		`{"ts":"2026-05-17T11:00:00+10:00","device":"d2","identity":"brett","text":"Hello there!","error":null}]}`
	code, body := getToday(t, e.s)
	if code != http.StatusOK || body != want {
		t.Errorf("card %d:\n%s\nwant\n%s", code, body, want)
	}

	// After a restart the card is read back from the files; the
	// conversation log does not keep the device.
	e.restart()
	reloaded := strings.ReplaceAll(want, `"device":"d2",`, `"device":"",`)
	if _, body := getToday(t, e.s); body != reloaded {
		t.Errorf("card after restart:\n%s\nwant\n%s", body, reloaded)
	}

	// After local midnight the card starts empty, also after a restart.
	e.clock.Advance(13 * time.Hour) // 00:01 on the 18th
	if _, body := getToday(t, e.s); body != `{"date":"2026-05-18","dreams":[],"dances":[],"greetings":[]}` {
		t.Errorf("card after midnight: %s", body)
	}
	e.restart()
	if _, body := getToday(t, e.s); body != `{"date":"2026-05-18","dreams":[],"dances":[],"greetings":[]}` {
		t.Errorf("card after midnight and a restart: %s", body)
	}
	e.model.Answer("Again.")
	e.ingest("d1", "dance_ended", nil)
	e.waitLines("dances-2026-05-18.ndjson", 1)
	if d := e.s.Today().Dances; len(d) != 1 || d[0].Reflection != "Again." {
		t.Errorf("new day's card %+v", d)
	}
}

func TestJournalBounds(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Agent = nil })
	for i := range JournalKeep + 5 {
		e.model.Answer(fmt.Sprintf("r%d", i))
		e.ingest("d1", "dance_ended", nil)
		e.waitLines("dances-2026-05-17.ndjson", i+1)
	}
	check := func(when string) {
		t.Helper()
		d := e.s.Today().Dances
		if len(d) != JournalKeep || d[0].Reflection != fmt.Sprintf("r%d", JournalKeep+4) || d[JournalKeep-1].Reflection != "r5" {
			t.Errorf("%s: %d dances, newest %q", when, len(d), d[0].Reflection)
		}
	}
	check("in memory")
	e.restart()
	check("read back")
}

func TestJournalReadBack(t *testing.T) {
	dir := t.TempDir()
	day := "2026-05-17"
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name+"-"+day+".ndjson"), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("x", maxJournalLine+10)
	write("dances", `{"ts":"a","type":"dance","device":"d","dance":"x","reflection":"one"}`+"\n"+
		"not json\n"+
		`{"ts":"b","type":"other"}`+"\n"+
		`{"ts":"c","type":"dance","device":"d","dance":"x","reflection":"`+long+`"}`+"\n"+
		`{"ts":"d","type":"dance","device":"d","dance":"x","reflection":"two"}`) // no final newline
	write("convo", `{"ts":"t1","type":"chat","channel":"dotty","session_id":"s","request_text":"face:greeter","response_text":"voice"}`+"\n"+
		`{"ts":"t2","type":"chat","channel":"greeter","session_id":"","request_text":"face:ann","response_len":3,"response_text":"Hi!","emoji_used":"","latency_ms":5,"error":null}`+"\n")
	s := New(Config{JournalDir: dir, Location: brisbane, Clock: newEnvClock(), Settings: Settings{QueueSize: 1}})
	got := s.Today()
	if len(got.Dances) != 2 || got.Dances[0].Reflection != "two" || got.Dances[1].Reflection != "one" {
		t.Errorf("dances %+v", got.Dances)
	}
	if d := cmp.Diff(got.Greetings, []GreetingRecord{{TS: "t2", Identity: "ann", Text: "Hi!"}}); d != "" {
		t.Errorf("greetings (-got +want):\n%s", d)
	}
}

var xiaozhiDown = xiaozhitest.Reply{Status: http.StatusInternalServerError, Body: "tts down"}

func newEnvClock() clockwork.Clock { return clockwork.NewFakeClockAt(t0) }
