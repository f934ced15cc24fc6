package llmtest

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// chat is a Chat Completions body: a system message and a user message of
// the text and, when given, an image.
func chat(system, user string, jpeg []byte) string {
	parts := fmt.Sprintf(`[{"type":"text","text":%q}`, user)
	if jpeg != nil {
		parts += fmt.Sprintf(`,{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,%s"}}`, base64.StdEncoding.EncodeToString(jpeg))
	}
	return fmt.Sprintf(`{"model":"m","messages":[{"role":"system","content":%q},{"role":"user","content":%s]}]}`, system, parts)
}

// TestStartRejectsNegativeBounds: the setting is named.
func TestStartRejectsNegativeBounds(t *testing.T) {
	for _, o := range []Options{{Keep: -1}, {KeepLines: -1}} {
		if _, err := Start(o); err == nil || !strings.Contains(err.Error(), "Options.Keep") {
			t.Errorf("Start(%+v) = %v, want an error naming the option", o, err)
		}
	}
}

// TestFloodKeepsTheLogsBounded: after a flood of model calls and calls to
// ever new paths, the latest Keep requests and KeepLines prompt lines are
// kept under their absolute indexes, the known path's count is exact and
// the counters stay at MaxPaths.
func TestFloodKeepsTheLogsBounded(t *testing.T) {
	s := start(t, Options{Text: "ok", Keep: 4, KeepLines: 6})
	ctx := context.Background()
	url := s.URL + "/v1/chat/completions"
	const churn, calls = 300, 100
	send := func(i int) {
		if code, text, err := post(ctx, url, "", chat("sys", fmt.Sprintf("line a\nline b %d", i), nil)); err != nil || code != 200 || text != "ok" {
			t.Fatalf("call %d: %d %q %v", i, code, text, err)
		}
	}
	send(0)
	for i := range churn {
		if code, _, _ := post(ctx, s.URL+fmt.Sprintf("/churn/%d", i), "", `{}`); code != 404 {
			t.Fatalf("churn %d: %d", i, code)
		}
	}
	for i := 1; i < calls; i++ {
		send(i)
	}
	total := churn + calls
	if n := s.Count(); n != total {
		t.Errorf("Count %d, want %d", n, total)
	}
	reqs := s.Requests()
	if len(reqs) != 4 || reqs[3].API != ChatCompletions {
		t.Fatalf("kept %d requests: %+v", len(reqs), reqs)
	}
	if last := s.Request(total - 1); !strings.Contains(fmt.Sprint(last.Body["messages"]), fmt.Sprintf("line b %d", calls-1)) {
		t.Errorf("Request(%d) is %+v", total-1, last)
	}
	if _, ok := s.Wait(0, time.Minute, func(r Request) bool { return r.API == ChatCompletions }); !ok {
		t.Error("Wait(0) found none of the kept requests")
	}
	func() {
		defer func() {
			if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "no longer kept") {
				t.Errorf("Request(0) after the flood: panic %v", p)
			}
		}()
		s.Request(0)
	}()
	if n := s.CountTo("/v1/chat/completions"); n != calls {
		t.Errorf("CountTo(chat) = %d, want %d", n, calls)
	}
	if n := s.CountTo(OtherPaths); n != churn-(MaxPaths-1) {
		t.Errorf("CountTo(OtherPaths) = %d, want %d", n, churn-(MaxPaths-1))
	}
	lines, next := s.Lines(0)
	want := []string{"line a", fmt.Sprintf("line b %d", calls-2), "sys", "line a", fmt.Sprintf("line b %d", calls-1)}
	if next != 3*calls || len(lines) != 6 || strings.Join(lines[1:], "|") != strings.Join(want, "|") {
		t.Errorf("Lines(0) = %q, %d", lines, next)
	}
	if lines, again := s.Lines(next); len(lines) != 0 || again != next {
		t.Errorf("Lines(next) = %q, %d: nothing new was asked", lines, again)
	}
	s.mu.Lock()
	counters, held, heldLines := len(s.counts), cap(s.requests), cap(s.lines)
	s.mu.Unlock()
	if counters > MaxPaths+1 || held > 2*4 || heldLines > 2*6 {
		t.Errorf("%d counters (bound %d+1), %d requests held (bound 8), %d lines held (bound 12)", counters, MaxPaths, held, heldLines)
	}
}

// TestAnswerByMarker: an Answer function gets each request's prompt text
// and decoded images, and its text is the reply; lines are not recorded
// unless asked for.
func TestAnswerByMarker(t *testing.T) {
	s := start(t, Options{})
	var (
		mu   sync.Mutex
		seen []Prompt
	)
	s.Set(Reply{Answer: func(p Prompt) string {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p)
		for _, room := range []string{"kitchen", "garden"} {
			if len(p.Images) == 1 && bytes.Contains(p.Images[0], []byte(room)) {
				return "A " + room + "."
			}
		}
		return "Nothing."
	}})
	ctx := context.Background()
	url := s.URL + "/v1/chat/completions"
	for jpeg, want := range map[string]string{"\xff\xd8 kitchen": "A kitchen.", "\xff\xd8 garden": "A garden.", "\xff\xd8 attic": "Nothing."} {
		if code, text, err := post(ctx, url, "", chat("Describe the room.", "What do you see?", []byte(jpeg))); err != nil || code != 200 || text != want {
			t.Errorf("photo %q: %d %q %v, want %q", jpeg, code, text, err, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 3 || seen[0].Text != "Describe the room.\nWhat do you see?" {
		t.Errorf("prompts seen: %+v", seen)
	}
	if lines, next := s.Lines(0); len(lines) != 0 || next != 0 {
		t.Errorf("Lines without KeepLines: %q, %d", lines, next)
	}
}

// TestInFlightCountsASlowAnswer: a request counts while its answer is
// computed and while it is held, and not after.
func TestInFlightCountsASlowAnswer(t *testing.T) {
	s := start(t, Options{})
	release := make(chan struct{})
	s.Set(Reply{Answer: func(Prompt) string { <-release; return "done" }})
	done := make(chan string, 1)
	go func() {
		_, text, _ := post(context.Background(), s.URL+"/v1/chat/completions", "", `{}`)
		done <- text
	}()
	testkit.WaitFor(t, time.Minute, "the slow answer to count", func() bool { return s.InFlight() == 1 })
	close(release)
	if text := testkit.Recv(t, time.Minute, done, "no answer"); text != "done" {
		t.Errorf("answer %q", text)
	}
	testkit.WaitFor(t, time.Minute, "the answered request to stop counting", func() bool { return s.InFlight() == 0 })

	s.Set(Reply{Block: true})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, _, err := post(ctx, s.URL+"/v1/chat/completions", "", `{}`)
		errs <- err
	}()
	testkit.WaitFor(t, time.Minute, "the held request to count", func() bool { return s.InFlight() == 1 })
	cancel()
	testkit.Recv(t, time.Minute, errs, "the held request did not end")
	testkit.WaitFor(t, time.Minute, "the held request to stop counting", func() bool { return s.InFlight() == 0 })
}
