package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
)

// errorsOf is GET /ui/api/errors/today.
func errorsOf(t *testing.T, url string) (int, todayErrors) {
	t.Helper()
	resp, body := get(t, url+"/ui/api/errors/today", "", "")
	var got todayErrors
	if resp.StatusCode == 200 {
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, got
}

// TestTodaysErrorsFromTheLog reads the day's failed turns from the
// conversation log the voice routes write, in the household's time zone:
// a second dashboard over the same log (a restarted bridge) shows the
// same, each error in the frame /ui/events sent for it, newest first.
func TestTodaysErrorsFromTheLog(t *testing.T) {
	dir := t.TempDir()
	brisbane := time.FixedZone("AEST", 10*3600)
	// 23:30 UTC is 09:30 the next day in Brisbane: the log's day is the 28th.
	now := time.Date(2026, 11, 27, 23, 30, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(now)
	log := convolog.New(convolog.Config{Dir: dir, Location: brisbane})
	turns := []turnbus.Turn{
		{TS: now.Add(-10 * time.Hour), Channel: "dotty", RequestText: "yesterday", Error: "timeout"}, // the 27th in Brisbane
		{TS: now.Add(-9 * time.Hour), Channel: "dotty", RequestText: "[Context] x [User] what's a comet?", ResponseText: "😊 A snowball.", EmojiUsed: "😊", Latency: 900 * time.Millisecond},
		{TS: now.Add(-9*time.Hour + time.Second), Channel: "dotty", RequestText: "[User] sing", ResponseText: "😢 Sorry, I can't think right now.", EmojiUsed: "😢", Latency: 30 * time.Second, Error: "timeout"},
		{TS: now.Add(-time.Minute), Channel: "stackchan", RequestText: "hello", ResponseText: "😐 Something went wrong.", EmojiUsed: "😐", Latency: 1234567 * time.Microsecond, Error: "exception"},
	}
	for _, tr := range turns {
		log.Write(convolog.Record{TS: tr.TS, Channel: tr.Channel, RequestText: tr.RequestText, ResponseText: tr.ResponseText,
			EmojiUsed: tr.EmojiUsed, Latency: tr.Latency, Error: tr.Error})
	}
	cfg := Config{Clock: clock, Location: brisbane, ConvoLogPath: log.Path}
	first := newEnv(t, cfg)
	code, got := errorsOf(t, first.url)
	if code != 200 {
		t.Fatalf("errors: %d", code)
	}
	// What the feed sent for the same turns (emotion from the reply's emoji).
	want := todayErrors{Date: "2026-11-28", Count: 2}
	for _, tr := range []turnbus.Turn{turns[3], turns[2]} {
		tr.TS = tr.TS.In(brisbane).Round(time.Microsecond)
		tr.Latency = tr.Latency.Round(time.Millisecond)
		tr.Emotion = map[string]string{"😢": "sad", "😐": "neutral"}[tr.EmojiUsed]
		want.Errors = append(want.Errors, first.ui.encode(tr))
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("today's errors (-got +want):\n%s", d)
	}
	var frame turnFrame
	if err := json.Unmarshal(got.Errors[1], &frame); err != nil || frame.RequestText != "sing" || *frame.Error != "timeout" {
		t.Errorf("frame %s: %v", got.Errors[1], err)
	}
	// A restarted bridge (a new dashboard, an empty turn ring) reads the same.
	if _, again := errorsOf(t, newEnv(t, cfg).url); !cmp.Equal(again, got) {
		t.Errorf("after a restart: %+v, want %+v", again, got)
	}
	// At midnight in Brisbane the day starts empty.
	clock.Advance(15 * time.Hour)
	if _, next := errorsOf(t, first.url); next.Date != "2026-11-29" || next.Count != 0 || len(next.Errors) != 0 || next.Error != "" {
		t.Errorf("the next day: %+v", next)
	}
	// Without a conversation log the route is absent.
	if code, _ := errorsOf(t, newEnv(t, Config{}).url); code != 404 {
		t.Errorf("no log: %d", code)
	}
}

// TestTodaysErrorsAreBounded: a day of many errors sends the newest
// maxErrorsKept and counts them all; a log past maxErrorScan is read from
// its end only and says so; an unreadable log is a reason, not a failure.
func TestTodaysErrorsAreBounded(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 27, 20, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(now)
	log := convolog.New(convolog.Config{Dir: dir, Location: time.UTC})
	n := maxErrorsKept + 50
	for i := range n {
		log.Write(convolog.Record{TS: now.Add(time.Duration(i-n) * time.Second), Channel: "dotty",
			RequestText: fmt.Sprintf("turn %d", i), Error: "timeout"})
	}
	e := newEnv(t, Config{Clock: clock, Location: time.UTC, ConvoLogPath: log.Path})
	_, got := errorsOf(t, e.url)
	if got.Count != n || len(got.Errors) != maxErrorsKept || got.Partial {
		t.Fatalf("count %d, %d errors, partial %v", got.Count, len(got.Errors), got.Partial)
	}
	var newest, oldest turnFrame
	_ = json.Unmarshal(got.Errors[0], &newest)
	_ = json.Unmarshal(got.Errors[len(got.Errors)-1], &oldest)
	if newest.RequestText != fmt.Sprintf("turn %d", n-1) || oldest.RequestText != fmt.Sprintf("turn %d", n-maxErrorsKept) {
		t.Errorf("kept %q … %q", newest.RequestText, oldest.RequestText)
	}

	// A log longer than the scan: only its end, and the page is told.
	path := log.Path(now)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"ts":"2026-11-27T19:00:00+00:00","type":"chat","channel":"dotty","request_text":"` + strings.Repeat("x", 1000) + `","error":null}` + "\n"
	for range maxErrorScan/len(ok) + 1 {
		if _, err := f.WriteString(ok); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, got := errorsOf(t, e.url); !got.Partial || got.Count != 0 || got.Error != "" {
		t.Errorf("long log: count %d, partial %v, error %q", got.Count, got.Partial, got.Error)
	}

	// A directory where the day's file should be: the reason, with 200.
	other := filepath.Join(dir, "other")
	if err := os.MkdirAll(filepath.Join(other, "convo-2026-11-27.ndjson"), 0o700); err != nil {
		t.Fatal(err)
	}
	bad := newEnv(t, Config{Clock: clock, Location: time.UTC,
		ConvoLogPath: func(t time.Time) string { return filepath.Join(other, "convo-"+t.Format(time.DateOnly)+".ndjson") }})
	if code, got := errorsOf(t, bad.url); code != 200 || !strings.Contains(got.Error, "cannot read today's conversation log") {
		t.Errorf("unreadable log: %d %+v", code, got)
	}
}
