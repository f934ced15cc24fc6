package tier1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm/llmtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

type visionStub struct {
	desc string
	age  time.Duration
}

func (v visionStub) Freshest() (string, time.Duration, bool) { return v.desc, v.age, v.desc != "" }

type env struct {
	url     string
	db      string
	store   *memstore.Store
	thinker *llmtest.Server
	xz      *xiaozhitest.Server
	dropped prometheus.Counter
}

func newEnv(t *testing.T, edit func(*Config)) *env {
	t.Helper()
	return newEnvAt(t, memstoretest.V1(t), nil, edit)
}

// newEnvAt serves the routes over the brain.db at db; store edits the
// memory's configuration.
func newEnvAt(t *testing.T, db string, store func(*memstore.Config), edit func(*Config)) *env {
	t.Helper()
	e := &env{db: db, thinker: llmtest.New(t, "  A comet is icy.  "), xz: xiaozhitest.New(t)}
	mc := memstore.Config{Path: e.db, WriteBusyTimeout: 50 * time.Millisecond}
	if store != nil {
		store(&mc)
	}
	e.store = memstore.New(mc)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.store.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	host, port := e.xz.HostPort()
	e.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "d"})
	cfg := Config{
		Memory:        e.store,
		Xiaozhi:       xiaozhi.New(xiaozhi.Config{Host: host, Port: port}),
		Thinker:       ThinkerConfig{URL: e.thinker.URL + "/v1/chat/completions", Model: "qwen-test"},
		SongAssetBase: "/assets/songs/",
		Metrics:       &Metrics{MemoryWritesDropped: e.dropped},
		Logger:        hclog.NewNullLogger(),
	}
	if edit != nil {
		edit(&cfg)
	}
	ec := echo.New()
	ec.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	New(cfg).Routes(ec)
	ts := httptest.NewServer(ec)
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

func (e *env) post(t *testing.T, path, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(e.url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// escalate returns the result of a tool call, checking E1's 200 JSON shape.
func (e *env) escalate(t *testing.T, tool string, args any) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"tool": tool, "args": args, "session_id": ""})
	code, body, h := e.post(t, "/api/voice/escalate", string(b))
	var out map[string]any
	if err := json.Unmarshal([]byte(body), &out); code != 200 || err != nil || h.Get("Content-Type") != "application/json" || len(out) != 1 {
		t.Fatalf("escalate %s: %d %s", tool, code, body)
	}
	r, ok := out["result"].(string)
	if !ok {
		t.Fatalf("result not a string: %s", body)
	}
	return r
}

// escalation is one tool call and the result it must answer.
type escalation struct {
	tool string
	args any
	want string
}

// escalateEach calls each tool and checks its result.
func (e *env) escalateEach(t *testing.T, calls []escalation) {
	t.Helper()
	for _, tt := range calls {
		if got := e.escalate(t, tt.tool, tt.args); got != tt.want {
			t.Errorf("%s %v: %q, want %q", tt.tool, tt.args, got, tt.want)
		}
	}
}

func TestEscalateUnknownAndFailing(t *testing.T) {
	e := newEnv(t, nil)
	e.escalateEach(t, []escalation{
		{"dance", map[string]any{}, "(unknown tool: dance)"},
		{"", map[string]any{}, "(unknown tool: )"},
		{"memory_lookup", map[string]any{"query": 42}, "(memory_lookup failed)"},
		{"memory_lookup", map[string]any{"query": nil}, "(memory_lookup failed)"},
		{"think_hard", map[string]any{"question": []int{1}}, "(think_hard failed)"},
		{"play_song", map[string]any{"name": true}, "(play_song failed)"},
	})
}

// E5: degenerate inputs give bridge.py's strings; missing tool and
// non-object args are 422.
func TestEscalateDegenerate(t *testing.T) {
	e := newEnv(t, nil)
	e.escalateEach(t, []escalation{
		{"memory_lookup", map[string]any{}, "(empty query)"},
		{"memory_lookup", map[string]any{"query": "  \t"}, "(empty query)"},
		{"think_hard", map[string]any{"question": ""}, "(empty question)"},
		{"play_song", map[string]any{}, "(no song name given)"},
		{"take_photo", map[string]any{}, "(I can't see anything fresh right now)"},
		{"memory_lookup", map[string]any{"query": "nothing like this"}, "(no memories found)"},
	})
	for _, tt := range []struct{ body, want string }{
		{`{"args":{}}`, `{"detail":[{"type":"missing","loc":["body","tool"],"msg":"Field required","input":{"args":{}}}]}`},
		{`{"tool":"take_photo","args":null}`, `{"detail":[{"type":"dict_type","loc":["body","args"],"msg":"Input should be a valid dictionary","input":null}]}`},
		{`{"tool":"take_photo","args":[1,2]}`, `{"detail":[{"type":"dict_type","loc":["body","args"],"msg":"Input should be a valid dictionary","input":[1,2]}]}`},
		{`{"tool":5}`, `{"detail":[{"type":"string_type","loc":["body","tool"],"msg":"Input should be a valid string","input":5}]}`},
	} {
		if code, body, _ := e.post(t, "/api/voice/escalate", tt.body); code != 422 || body != tt.want {
			t.Errorf("%s: %d %s", tt.body, code, body)
		}
	}
	// args may be absent (defaults to {}) and session_id null.
	if code, body, _ := e.post(t, "/api/voice/escalate", `{"tool":"take_photo","session_id":null}`); code != 200 || !strings.Contains(body, "fresh") {
		t.Errorf("%d %s", code, body)
	}
}

// E4, M1: a remembered fact is found by a later memory_lookup.
func TestRememberThenLookup(t *testing.T) {
	e := newEnv(t, nil)
	code, body, _ := e.post(t, "/api/voice/remember", `{"fact":"  Alex's favourite dinosaur is the stegosaurus  ","session_id":"s1"}`)
	if code != 204 || body != "" {
		t.Fatalf("remember: %d %q", code, body)
	}
	var got string
	testkit.Within(testkit.MinWait, func() bool {
		got = e.escalate(t, "memory_lookup", map[string]any{"query": "favourite dinosaur"})
		return got != NoMemories
	})
	if got != "Alex's favourite dinosaur is the stegosaurus" {
		t.Errorf("lookup %q", got)
	}
}

// E3: three best rows, each at most 200 characters, joined.
func TestLookupSnippets(t *testing.T) {
	e := newEnv(t, nil)
	long := "robot " + strings.Repeat("é", 300)
	for _, c := range []string{long, "robot two", "robot three", "robot four", "robot five", "robot six"} {
		if err := e.store.Enqueue(memstore.Write{Content: c, Category: "core", Importance: 0.7}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Within(testkit.MinWait, func() bool { return len(memstoretest.Rows(t, e.db)) >= 6 })
	got := e.escalate(t, "memory_lookup", map[string]any{"query": "robot"})
	parts := strings.Split(got, " | ")
	if len(parts) != 3 {
		t.Fatalf("%d snippets: %q", len(parts), got)
	}
	for _, p := range parts {
		if n := len([]rune(p)); n > 200 {
			t.Errorf("snippet of %d characters", n)
		}
		if strings.HasPrefix(p, "robot é") && (len([]rune(p)) != 200 || !strings.HasSuffix(p, "...")) {
			t.Errorf("long row cut wrong: %d %q", len([]rune(p)), p[len(p)-10:])
		}
	}
}

func TestThinkHard(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.escalate(t, "think_hard", map[string]any{"question": "  what is a comet? "}); got != "A comet is icy." {
		t.Errorf("answer %q", got)
	}
	r := e.thinker.Request(0)
	req, auth := r.Body, r.Path+" "+r.Auth
	want := map[string]any{
		"model": "qwen-test", "max_tokens": 200.0, "temperature": 0.3, "stream": false,
		"chat_template_kwargs": map[string]any{"enable_thinking": false},
		"messages": []any{
			map[string]any{"role": "system", "content": "Answer the user's question concisely in 1-2 sentences. Be precise."},
			map[string]any{"role": "user", "content": "what is a comet?"},
		},
	}
	if d := cmp.Diff(req, want); d != "" {
		t.Errorf("body (-got +want):\n%s", d)
	}
	if auth != "/v1/chat/completions " {
		t.Errorf("path and Authorization %q: want the chat path and no auth header", auth)
	}
	e.thinker.Answer(strings.Repeat("x", 800))
	if got := e.escalate(t, "think_hard", map[string]any{"question": "long?"}); len(got) != 500 {
		t.Errorf("answer of %d characters, want the first 500", len(got))
	}
	e.thinker.Set(llmtest.Reply{Status: 500, Text: strings.Repeat("x", 800)})
	if got := e.escalate(t, "think_hard", map[string]any{"question": "q"}); got != ThinkingFailed {
		t.Errorf("500: %q", got)
	}
}

// E2: a thinker that never answers gives the slow string within budget.
func TestThinkHardBudget(t *testing.T) {
	e := newEnv(t, func(c *Config) {
		c.longBudget = 300 * time.Millisecond
		c.Thinker.Timeout = time.Hour // VOICE_THINKER_TIMEOUT larger than the budget
	})
	e.thinker.Set(llmtest.Reply{Block: true})
	start := time.Now()
	if got := e.escalate(t, "think_hard", map[string]any{"question": "q"}); got != ThinkerSlow {
		t.Errorf("%q", got)
	}
	// The thinker never answers and its own timeout is an hour, so the slow
	// string at all shows the budget ended the wait; how soon is printed.
	t.Logf("answered after %s; the budget is 300ms", time.Since(start).Round(time.Millisecond))
}

func TestTakePhoto(t *testing.T) {
	for _, tt := range []struct {
		v    visionStub
		want string
	}{
		{visionStub{"a red ball on a table", 10 * time.Second}, "a red ball on a table"},
		{visionStub{"old picture", 31 * time.Second}, NothingFresh},
		{visionStub{strings.Repeat("é", 400), time.Second}, strings.Repeat("é", 300)},
	} {
		e := newEnv(t, func(c *Config) { c.Vision = tt.v })
		if got := e.escalate(t, "take_photo", map[string]any{}); got != tt.want {
			t.Errorf("%+v: %q", tt.v, got)
		}
	}
}

func TestMatchSong(t *testing.T) {
	files := []string{"Twinkle Twinkle.opus", "baby_shark.mp3", "Shark Week Theme.ogg", "Happy Birthday.wav", ".hidden"}
	for _, tt := range []struct{ name, want string }{
		{"twinkle twinkle", "Twinkle Twinkle.opus"},
		{"Twinkle Twinkle.mp3", "Twinkle Twinkle.opus"},
		{"shark", "baby_shark.mp3"}, // both contain it; baby_shark is closer in length
		{"happy", "Happy Birthday.wav"},
		{"the happy birthday song", "Happy Birthday.wav"}, // the stem is contained in the name
		{".hidden", ".hidden"},
		{"zzz", ""},
	} {
		got, ok := MatchSong(tt.name, files)
		if (tt.want == "") == ok || got != tt.want {
			t.Errorf("MatchSong(%q) = %q %v, want %q", tt.name, got, ok, tt.want)
		}
	}
	if stem("dir/a.b.c") != "a.b" || stem(".rc") != ".rc" || stem("plain") != "plain" {
		t.Error("stem")
	}
}

func TestPlaySong(t *testing.T) {
	e := newEnv(t, nil)
	e.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"base":"/x","files":["Alpha.opus","Bravo.opus","Charlie.opus","Delta.opus","Echo.opus","Lullaby.opus"]}`})
	if got := e.escalate(t, "play_song", map[string]any{"name": "lullaby"}); got != "playing Lullaby" {
		t.Errorf("%q", got)
	}
	play := e.xz.CallsTo("/xiaozhi/admin/play-asset")
	if len(play) != 1 || !cmp.Equal(play[0].Body, map[string]any{"asset": "/assets/songs/Lullaby.opus"}) {
		t.Errorf("play-asset calls %+v (no device_id, base without a doubled slash)", play)
	}
	if got := e.escalate(t, "play_song", map[string]any{"name": "waltz"}); got != "(no match for 'waltz'; have: Alpha, Bravo, Charlie, Delta, Echo)" {
		t.Errorf("%q", got)
	}
	if n := len(e.xz.CallsTo("/xiaozhi/admin/songs")); n != 1 {
		t.Errorf("catalogue fetched %d times in a minute, want once", n)
	}
	e.xz.Set("/xiaozhi/admin/play-asset", xiaozhitest.Reply{Status: 404, Body: `{"error":"asset not found: ` + strings.Repeat("p", 200) + `"}`})
	got := e.escalate(t, "play_song", map[string]any{"name": "alpha"})
	if !strings.HasPrefix(got, `(couldn't play Alpha.opus: HTTP 404: {"error":"asset not found: pp`) || len([]rune(got)) != len("(couldn't play Alpha.opus: HTTP 404: ")+120+1 {
		t.Errorf("%q", got)
	}
	e.xz.Set("/xiaozhi/admin/play-asset", xiaozhitest.Reply{Status: 201, Body: `{}`})
	if got := e.escalate(t, "play_song", map[string]any{"name": "Alpha"}); got != "(couldn't play Alpha.opus: HTTP 201: {})" {
		t.Errorf("201 must not count as success: %q", got)
	}
}

// The catalogue is kept for a minute of the handler's clock, then asked
// for again.
func TestSongCatalogueExpires(t *testing.T) {
	clk := clockwork.NewFakeClock()
	e := newEnv(t, func(c *Config) { c.Clock = clk })
	e.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":["Alpha.opus"]}`})
	fetches := func() int { return len(e.xz.CallsTo("/xiaozhi/admin/songs")) }
	e.escalate(t, "play_song", map[string]any{"name": "alpha"})
	clk.Advance(songCacheTTL - time.Second)
	e.escalate(t, "play_song", map[string]any{"name": "alpha"})
	if n := fetches(); n != 1 {
		t.Errorf("catalogue fetched %d times within its minute", n)
	}
	clk.Advance(time.Second)
	e.escalate(t, "play_song", map[string]any{"name": "alpha"})
	if n := fetches(); n != 2 {
		t.Errorf("catalogue fetched %d times after its minute, want 2", n)
	}
}

func TestPlaySongWithoutXiaozhi(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Xiaozhi = xiaozhi.New(xiaozhi.Config{}) })
	if got := e.escalate(t, "play_song", map[string]any{"name": "x"}); got != NoXiaozhi {
		t.Errorf("%q", got)
	}
	e2 := newEnv(t, nil)
	e2.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 500, Body: "boom"})
	if got := e2.escalate(t, "play_song", map[string]any{"name": "x"}); got != EmptyCatalogue {
		t.Errorf("%q", got)
	}
	e2.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":["x.opus"]}`})
	if got := e2.escalate(t, "play_song", map[string]any{"name": "x"}); got != "playing x" {
		t.Errorf("a failed catalogue fetch must not be cached: %q", got)
	}
}

// E2: stalled xiaozhi routes cannot push play_song past its budget.
func TestPlaySongBudget(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.shortBudget = 300 * time.Millisecond })
	e.xz.Set("/xiaozhi/admin/songs", xiaozhitest.Reply{Status: 200, Body: `{"files":["x.opus"]}`, Delay: time.Minute})
	start := time.Now()
	if got := e.escalate(t, "play_song", map[string]any{"name": "x"}); got != EmptyCatalogue {
		t.Errorf("%q", got)
	}
	// Past the budget the songs would have come (after a minute) and
	// been played: the empty catalogue shows the budget ended the wait.
	t.Logf("answered after %s; the budget is 300ms", time.Since(start).Round(time.Millisecond))
}

// M1, M2: memory writes answer 204 at once; stored content is bridge.py's.
func TestMemoryWrites(t *testing.T) {
	e := newEnv(t, nil)
	user := "[ROOM_VIEW]\na child\n\nwhat is " + strings.Repeat("u", 2000)
	assistant := strings.Repeat("a", 5000)
	b, _ := json.Marshal(map[string]any{"user": user, "assistant": assistant, "session_id": "s9"})
	for _, tt := range []struct{ path, body string }{
		{"/api/voice/memory_log", string(b)},
		{"/api/voice/remember", `{"fact":"` + strings.Repeat("f", 1000) + `"}`},
		{"/api/voice/remember", `{"fact":"   ","session_id":"s"}`},
		{"/api/voice/memory_log", `{"user":" ","assistant":"","session_id":null}`},
		{"/api/voice/memory_log", `{"user":"hi","assistant":"😊 hello"}`},
	} {
		if code, body, _ := e.post(t, tt.path, tt.body); code != 204 || body != "" {
			t.Errorf("%s: %d %q", tt.path, code, body)
		}
	}
	var rows []memstoretest.Row
	testkit.Within(testkit.MinWait, func() bool { rows = memstoretest.Rows(t, e.db); return len(rows) >= 3 })
	if len(rows) != 3 {
		t.Fatalf("%d rows, want 3 (blank inputs store nothing)", len(rows))
	}
	wantLog := "user: " + string([]rune(user)[:500]) + " | assistant: " + assistant[:1000]
	if rows[0].Content != wantLog || rows[0].Category != "conversation" || rows[0].Importance != 0.3 || rows[0].SessionID.String != "s9" {
		t.Errorf("memory_log row: %d chars %q…", len([]rune(rows[0].Content)), rows[0].Content[:40])
	}
	if rows[1].Content != strings.Repeat("f", 300) || rows[1].Category != "core" || rows[1].Importance != 0.7 || rows[1].SessionID.Valid {
		t.Errorf("remember row %+v", rows[1])
	}
	if rows[2].Content != "user: hi | assistant: 😊 hello" {
		t.Errorf("%q", rows[2].Content)
	}
	for _, tt := range []struct{ path, body string }{
		{"/api/voice/remember", `{"session_id":"s"}`},
		{"/api/voice/memory_log", `{"user":"u"}`},
		{"/api/voice/memory_log", `{"user":1,"assistant":"a"}`},
		{"/api/voice/remember", `[]`},
	} {
		if code, _, _ := e.post(t, tt.path, tt.body); code != 422 {
			t.Errorf("%s %s: %d", tt.path, tt.body, code)
		}
	}
}

// M1: with the database locked the reply still comes at once and the row
// appears after the lock is released; a full queue answers 503.
func TestMemoryWritesUnderLock(t *testing.T) {
	e := newEnv(t, nil)
	release := memstoretest.Lock(t, e.db)
	// Answered 204 while the test still holds the lock: the reply did not
	// wait for the write (which cannot happen before the release).
	start := time.Now()
	if code, _, _ := e.post(t, "/api/voice/remember", `{"fact":"written later"}`); code != 204 {
		t.Fatalf("%d", code)
	}
	t.Logf("remember answered in %s with the database locked", time.Since(start).Round(time.Millisecond))
	refused := 0
	for i := 0; i < 400 && refused == 0; i++ {
		code, body, _ := e.post(t, "/api/voice/remember", `{"fact":"more"}`)
		if code == 503 {
			refused++
			if !strings.HasPrefix(body, `{"detail":`) {
				t.Errorf("503 body %s", body)
			}
		}
	}
	if refused == 0 || testutil.ToFloat64(e.dropped) != 1 {
		t.Errorf("queue never filled (refused %d, counter %v)", refused, testutil.ToFloat64(e.dropped))
	}
	release()
	if !testkit.Within(testkit.MinWait, func() bool {
		rows := memstoretest.Rows(t, e.db)
		return len(rows) > 0 && rows[0].Content == "written later"
	}) {
		t.Error("the write accepted under the lock never arrived")
	}
}

// TestJournalRefusalSaidByTheStoreOnce: with a journal that cannot be
// written, /remember and /memory_log answer 503 saying so and why, and
// the cause is logged once, by the store, however many writes are
// refused.
func TestJournalRefusalSaidByTheStoreOnce(t *testing.T) {
	blocker := testkit.Blocker(t, filepath.Join(t.TempDir(), "file"))
	var logs testkit.LogBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	e := newEnvAt(t, memstoretest.V1(t), func(c *memstore.Config) {
		c.Journal, c.Logger = filepath.Join(blocker, "journal"), log.Named("memory")
	}, func(c *Config) { c.Logger = log.Named("tier1") })
	for _, req := range [][2]string{{"/api/voice/remember", `{"fact":"a"}`}, {"/api/voice/memory_log", `{"user":"hi","assistant":"yo"}`},
		{"/api/voice/remember", `{"fact":"b"}`}} {
		if code, body, _ := e.post(t, req[0], req[1]); code != 503 || body != `{"detail":"memory not writable: not a directory; write not accepted"}` {
			t.Errorf("%s: %d %s", req[0], code, body)
		}
	}
	if got := testutil.ToFloat64(e.dropped); got != 3 {
		t.Errorf("dropped %v, want 3", got)
	}
	if n := strings.Count(logs.String(), "\n"); n != 1 || !strings.Contains(logs.String(), "[ERROR] memory: voice memory journal not writable") {
		t.Errorf("want the store's one Error line, got:\n%s", logs.String())
	}
}

// TestRefusalsSayWhatIsWrong: a refused memory write is answered with
// what keeps it out, never a path: a full disk 507, anything else 503;
// "busy" only for a locked database (a full queue of rows it will take).
func TestRefusalsSayWhatIsWrong(t *testing.T) {
	pathErr := func(errno syscall.Errno) error {
		return &fs.PathError{Op: "write", Path: "/state/memory/brain.db.voice-journal", Err: errno}
	}
	for _, tt := range []struct {
		err    error
		status int
		detail string
	}{
		{fmt.Errorf("%w: %w", memstore.ErrJournal, pathErr(syscall.ENOSPC)), 507, "memory not writable: no space left on device; write not accepted"},
		{fmt.Errorf("%w: %w", memstore.ErrJournal, pathErr(syscall.EDQUOT)), 507, "memory not writable: disk quota exceeded; write not accepted"},
		{fmt.Errorf("%w: %w", memstore.ErrJournal, pathErr(syscall.EROFS)), 503, "memory not writable: read-only file system; write not accepted"},
		{fmt.Errorf("%w: %w", memstore.ErrJournal, pathErr(syscall.EACCES)), 503, "memory not writable: permission denied; write not accepted"},
		{fmt.Errorf("%w: %w", memstore.ErrJournal, errors.New("short write")), 503, "memory not writable; write not accepted"},
		{fmt.Errorf("%w (256 writes wait): %w: insert memory: database or disk is full (13) (%w)", memstore.ErrQueueFull, memstore.ErrDatabase, syscall.ENOSPC),
			507, "memory database not writable: no space left on device; write not accepted"},
		{fmt.Errorf("%w (256 writes wait): %w: %w", memstore.ErrQueueFull, memstore.ErrDatabase, pathErr(syscall.EROFS)),
			503, "memory database not writable: read-only file system; write not accepted"},
		{fmt.Errorf("%w (256 writes wait): %w: file is not a database (26)", memstore.ErrQueueFull, memstore.ErrDatabase),
			503, "memory database not writable; write not accepted"},
		{memstore.ErrQueueFull, 503, "memory writer busy; write not accepted"},
		{memstore.ErrClosed, 503, "memory writer stopping; write not accepted"},
	} {
		var apiErr *httpapi.APIError
		if !errors.As(notAccepted(tt.err), &apiErr) || apiErr.Status != tt.status || apiErr.Detail != tt.detail {
			t.Errorf("%v: answered %+v, want %d %q", tt.err, apiErr, tt.status, tt.detail)
		}
	}

	// Through the routes: a brain.db the writer cannot use keeps the
	// accepted write waiting and refuses the next ones once the queue is
	// full, on /remember, /remember_person and the tool alike.
	db := filepath.Join(t.TempDir(), "brain.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	e := newEnvAt(t, db, func(c *memstore.Config) { c.QueueSize = 1 }, func(c *Config) { c.People = &household{adults: []string{"brett"}} })
	if code, body, _ := e.post(t, "/api/voice/remember", `{"fact":"waits"}`); code != 204 {
		t.Fatalf("first write: %d %s", code, body)
	}
	const refused = `{"detail":"memory database not writable; write not accepted"}`
	testkit.WaitFor(t, 10*time.Second, "the writer to meet the database's failure", func() bool {
		code, body, _ := e.post(t, "/api/voice/remember", `{"fact":"refused"}`)
		return code == 503 && body == refused
	})
	if code, body, _ := e.post(t, "/api/voice/remember_person", `{"person_id":"brett","fact":"refused too"}`); code != 503 || body != refused {
		t.Errorf("remember_person: %d %s", code, body)
	}
	if got := e.escalate(t, "remember_person", map[string]any{"name": "brett", "fact": "one more"}); got != RememberFailed {
		t.Errorf("tool: %q", got)
	}
	if e.store.Pending() != 1 {
		t.Errorf("%d writes pending, want the accepted one kept", e.store.Pending())
	}
}
