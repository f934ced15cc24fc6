package observe

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/social"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// london's clocks go forward at 01:00 on 2026-03-29.
var london = testkit.Zone("Europe/London")

func at(day, hour, minute, sec, nsec int) time.Time {
	return time.Date(2026, 3, day, hour, minute, sec, nsec, london)
}

// TestConvoRecordsByLocalDay writes turns through the real conversation
// log across two midnights (one of them before the DST change) and reads
// each day back.
func TestConvoRecordsByLocalDay(t *testing.T) {
	dir := t.TempDir()
	log := convolog.New(convolog.Config{Dir: dir, Location: london})
	turns := []convolog.Record{
		{TS: at(28, 23, 59, 59, 500_000_000), Channel: "dotty", RequestText: "good night"},
		{TS: at(29, 0, 0, 1, 0), Channel: "greeter", RequestText: "face:alex", ResponseText: "Morning, Alex!"},
		{TS: at(29, 3, 15, 0, 250_000), Channel: "", RequestText: "after the jump"},
		{TS: at(30, 0, 0, 0, 0), Channel: "dotty", RequestText: "next day"},
	}
	for _, r := range turns {
		log.Write(r)
	}

	got, err := Records(dir, Convo, "2026-03-29")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d records on 2026-03-29, want 2: %+v", len(got), got)
	}
	for i, want := range turns[1:3] {
		if !got[i].TS.Equal(want.TS.Truncate(time.Microsecond)) || got[i].Channel != want.Channel || got[i].Device != "" {
			t.Errorf("record %d = %v %q %q, want %v %q", i, got[i].TS, got[i].Channel, got[i].Device, want.TS, want.Channel)
		}
		if !strings.Contains(string(got[i].Raw), want.RequestText) {
			t.Errorf("record %d raw %s lacks its request", i, got[i].Raw)
		}
	}
	if _, off := got[1].TS.Zone(); off != 3600 {
		t.Errorf("a record after the jump has offset %d, want +01:00", off)
	}

	dates, err := Dates(dir, Convo)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(dates, []string{"2026-03-28", "2026-03-29", "2026-03-30"}); d != "" {
		t.Errorf("dates (-got +want):\n%s", d)
	}
	size, err := DayBytes(dir, Convo, "2026-03-29")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(log.Path(at(29, 12, 0, 0, 0))); err != nil || fi.Size() != size || size == 0 {
		t.Errorf("DayBytes = %d, file %v (%v)", size, fi, err)
	}
}

// TestJournalsDeviceAndMissingDays writes the perception and social
// journals' record types through convolog.Daily, under the kinds' names.
func TestJournalsDeviceAndMissingDays(t *testing.T) {
	dir := t.TempDir()
	day := at(31, 14, 0, 0, 0)
	ts := convolog.Timestamp(day)
	for _, w := range []struct {
		kind string
		rec  any
	}{
		{Security, perception.SecurityRecord{TS: ts, Device: "hall", PhotoDesc: "empty hall", Errors: []string{}}},
		{Idle, perception.IdleRecord{TS: ts, Device: "kitchen", Type: "perception", Mode: "idle", Text: "a cat"}},
		{Scene, perception.SceneRecord{TS: ts, Type: "scene_synthesis", Device: "lounge", Text: "quiet", State: "idle"}},
		{Dances, social.DanceRecord{TS: ts, Type: "dance", Device: "kids-room", Dance: "robot", Reflection: "fun"}},
		{Dreams, social.DreamRecord{TS: ts, Type: "dream", DreamID: "d1", Seed: "moon", Summary: "flying"}},
	} {
		convolog.NewDaily(convolog.DailyConfig{Dir: dir, Prefix: w.kind, Location: london}).Append(day, w.rec)
	}
	for kind, device := range map[string]string{Security: "hall", Idle: "kitchen", Scene: "lounge", Dances: "kids-room", Dreams: ""} {
		got, err := Records(dir, kind, "2026-03-31")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Device != device || !got[0].TS.Equal(day) {
			t.Errorf("%s records %+v, want one from %q at %v", kind, got, device, day)
		}
	}
	// Idle's kind, "perception", must not pick up the scene files, nor
	// scene's the others.
	for kind, want := range map[string]int{Idle: 1, Scene: 1, Convo: 0} {
		if dates, err := Dates(dir, kind); err != nil || len(dates) != want {
			t.Errorf("Dates(%s) = %q, %v; want %d", kind, dates, err, want)
		}
	}

	// A day without a file is no records and no bytes.
	if got, err := Records(dir, Dreams, "2026-04-01"); err != nil || got != nil {
		t.Errorf("a day without dreams: %v, %v", got, err)
	}
	if n, err := DayBytes(dir, Dreams, "2026-04-01"); err != nil || n != 0 {
		t.Errorf("DayBytes of a missing day: %d, %v", n, err)
	}
}

func TestRecordsRefusesTornLines(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"not json":  `{"ts":"2026-03-31T14:00:00+01:00"}` + "\n" + `{"ts":"2026-03-31T14:0`,
		"no ts":     `{"device":"hall"}`,
		"bad ts":    `{"ts":"yesterday"}`,
		"long line": `{"ts":"2026-03-31T14:00:00+01:00","x":"` + strings.Repeat("x", maxLine) + `"}`,
	} {
		kind := strings.ReplaceAll(name, " ", "_")
		if err := os.WriteFile(Path(dir, kind, "2026-03-31"), []byte(content+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Records(dir, kind, "2026-03-31")
		if err == nil || !strings.Contains(err.Error(), kind+"-2026-03-31.ndjson:") {
			t.Errorf("%s: %v, want an error naming the file and line", name, err)
		}
	}
	if _, err := Records(filepath.Join(dir, "blocker", "x"), Convo, "2026-03-31"); err != nil {
		t.Errorf("a missing directory: %v, want no records", err)
	}
}

// TestGreeterState reads the file in the shape the greeter saves it:
// today's counts under the date, last_ts in epoch seconds.
func TestGreeterState(t *testing.T) {
	dir := t.TempDir()
	write := func(s string) string {
		path := filepath.Join(dir, "greeter_state.json")
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	last := at(29, 8, 30, 0, 125_000_000)
	got, err := ReadGreeterState(write(`{"2026-03-29":{"alex":{"count":2,"last_ts":1774769400.125},"unknown":{"count":1,"last_ts":1774760000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got.Date != "2026-03-29" || len(got.People) != 2 || got.People["alex"].Count != 2 || !got.People["alex"].Last.Equal(last) ||
		got.People["unknown"].Count != 1 {
		t.Errorf("state %+v, want alex 2 (last %v) and unknown 1 on 2026-03-29", got, last)
	}

	got, err = ReadGreeterState(write(`{}`))
	if err != nil || got.Date != "" || len(got.People) != 0 {
		t.Errorf("nobody greeted yet: %+v, %v", got, err)
	}
	for name, content := range map[string]string{
		"two days":      `{"2026-03-28":{"alex":{"count":1,"last_ts":1}},"2026-03-29":{}}`,
		"unknown field": `{"2026-03-29":{"alex":{"count":1,"last_ts":1,"extra":true}}}`,
		"string count":  `{"2026-03-29":{"alex":{"count":"1","last_ts":1}}}`,
		"no last_ts":    `{"2026-03-29":{"alex":{"count":1}}}`,
		"bad day":       `{"Sunday":{}}`,
		"not json":      `{"2026-03-29":`,
	} {
		if _, err := ReadGreeterState(write(content)); err == nil || !strings.Contains(err.Error(), "greeter state") {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
	if _, err := ReadGreeterState(filepath.Join(dir, "none.json")); err == nil || !strings.Contains(err.Error(), "none.json") {
		t.Errorf("missing file: %v", err)
	}
}

// TestMemoriesHeldThenApproved writes through the real memory store: a
// voice memory, a fact held for review, then approved.
func TestMemoriesHeldThenApproved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "brain.db")
	store := memstore.New(memstore.Config{Path: path})
	testkit.Run(t, store, 30*time.Second)
	if err := store.Enqueue(memstore.Write{Content: "the kettle is new", Category: "conversation", Importance: 0.5}); err != nil {
		t.Fatal(err)
	}
	if err := store.EnqueuePerson(memstore.PersonWrite{PersonID: "Mia", Fact: "Mia likes dinosaurs", Pending: true}); err != nil {
		t.Fatal(err)
	}
	acked := []string{"the kettle is new", "Mia likes dinosaurs"}
	if n, err := CheckMemory(path, acked, []string{"never said"}, 30*time.Second); err != nil || n != 2 {
		t.Fatalf("CheckMemory = %d, %v; want 2 stored", n, err)
	}
	mems, err := Memories(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(mems) != 2 || mems[0].Person != "" || mems[0].Pending || mems[1].Person != "mia" || !mems[1].Pending ||
		mems[1].Namespace != "person_pending:mia" {
		t.Fatalf("memories %+v, want the voice row then mia's held fact", mems)
	}

	ok, err := store.Approve(context.Background(), mems[1].ID)
	if err != nil || !ok {
		t.Fatalf("Approve = %v, %v", ok, err)
	}
	mems, err = Memories(path)
	if err != nil {
		t.Fatal(err)
	}
	if mems[1].Person != "mia" || mems[1].Pending || mems[1].Namespace != "person:mia" {
		t.Errorf("after approval %+v, want person:mia", mems[1])
	}
}

func TestCheckMemoryFindings(t *testing.T) {
	path := memstoretest.V1(t)
	memstoretest.Insert(t, path,
		memstoretest.Memory{ID: "1", Content: "twice"}, memstoretest.Memory{ID: "2", Content: "twice"}, memstoretest.Memory{ID: "3", Content: "refused"})
	n, err := CheckMemory(path, []string{"twice", "lost"}, []string{"refused"}, 0)
	if n != 1 || err == nil {
		t.Fatalf("CheckMemory = %d, %v", n, err)
	}
	for _, want := range []string{"1 of 2 acknowledged memory writes missing", "1 acknowledged memory writes stored more than once",
		"1 refused memory writes stored anyway"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	// An unreadable database says why.
	missing := filepath.Join(t.TempDir(), "none.db")
	if _, err := CheckMemory(missing, []string{"x"}, nil, 0); err == nil || !strings.Contains(err.Error(), "none.db") {
		t.Errorf("a missing brain.db: %v", err)
	}
	if _, err := Memories(missing); err == nil {
		t.Error("Memories of a missing brain.db: no error")
	}
}
