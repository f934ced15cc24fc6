package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDailyReadsRecordsAndSize: a day's conversation log gives each
// turn's time, channel, request and error, and the file's size.
func TestDailyReadsRecordsAndSize(t *testing.T) {
	dir := t.TempDir()
	lines := `{"ts":"2026-03-29T00:00:01+00:00","channel":"greeter","request_text":"face:sam","error":null}` + "\n" +
		`{"ts":"2026-03-29T23:59:59.500000+01:00","channel":"dotty","request_text":"hi","error":"timeout"}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "convo-2026-03-29.ndjson"), []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	recs, size, err := daily(dir, "convo", "2026-03-29")
	if err != nil || len(recs) != 2 || size != int64(len(lines)) {
		t.Fatalf("daily = %d records, %d bytes, %v; want 2, %d", len(recs), size, err, len(lines))
	}
	if recs[0].Channel != "greeter" || recs[0].Error != nil || recs[1].Error == nil || recs[1].TS.Hour() != 23 {
		t.Errorf("records %+v", recs)
	}
	if recs, _, err := daily(dir, "dreams", "2026-03-29"); err != nil || len(recs) != 0 {
		t.Errorf("a missing file: %v, %v; want none", recs, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "dances-2026-03-29.ndjson"), []byte(`{"ts":"yesterday"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := daily(dir, "dances", "2026-03-29"); err == nil || !strings.Contains(err.Error(), "dances-2026-03-29.ndjson") {
		t.Errorf("a bad ts: %v, want an error naming the file", err)
	}
}

func TestStreamedFinal(t *testing.T) {
	ok := `{"type":"chunk","content":"hi"}` + "\n" + `{"type":"final","content":"hi","session_id":"s"}` + "\n"
	bad := `{"type":"chunk","content":"hi"}` + "\n" + `{"type":"error","message":"😐 My AI brain is offline.","session_id":"s"}` + "\n"
	if !streamedFinal([]byte(ok)) || streamedFinal([]byte(bad)) || streamedFinal(nil) {
		t.Fatal("streamedFinal misjudged a stream")
	}
}

func TestDayHours(t *testing.T) {
	loc := london(t)
	for date, want := range map[string]int{"2026-03-28": 24, "2026-03-29": 23, "2026-10-25": 25} {
		if got := dayHours(date, loc); got != want {
			t.Errorf("%s lasts %d h, want %d", date, got, want)
		}
	}
}

func TestWithAppearances(t *testing.T) {
	b, err := withAppearances(householdYAML)
	if err != nil {
		t.Fatal(err)
	}
	for _, look := range appearances {
		if !strings.Contains(string(b), look) {
			t.Errorf("no %q in\n%s", look, b)
		}
	}
	r, err := parseRoster(b)
	if err != nil || len(r) != 4 {
		t.Fatalf("the edited roster: %v, %v", r, err)
	}
	if _, err := withAppearances([]byte("people: [")); err == nil {
		t.Fatal("a broken roster was edited")
	}
}
