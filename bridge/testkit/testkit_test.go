package testkit

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// A running child is not gone; killed, it is, already as a zombie before
// it is reaped.
func TestProcessGone(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if ProcessGone(pid) {
		t.Fatal("a running child reported gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, "the killed child gone before its reaping", func() bool { return ProcessGone(pid) })
	_ = cmd.Wait()
	if !ProcessGone(pid) {
		t.Error("a reaped child reported running")
	}
}

// The clock records every wait in call order and fires a timer only when
// Advance passes it.
func TestClockRecordsWaits(t *testing.T) {
	c := NewClock()
	after := c.After(2 * time.Second)
	timer := c.NewTimer(time.Second)
	fired := make(chan struct{})
	c.AfterFunc(3*time.Second, func() { close(fired) })
	if got, want := c.Requested(), []time.Duration{2 * time.Second, time.Second, 3 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("Requested() = %v, want %v", got, want)
	}
	select {
	case <-after:
		t.Fatal("After fired before the clock moved")
	default:
	}
	c.Advance(time.Second)
	select {
	case <-timer.Chan():
	default:
		t.Error("the 1 s timer did not fire when the clock passed it")
	}
	select {
	case <-after:
		t.Error("the 2 s After fired at 1 s")
	default:
	}
	c.Advance(2 * time.Second)
	select {
	case <-after:
	default:
		t.Error("the 2 s After did not fire when the clock passed it")
	}
	select {
	case <-fired:
	case <-time.After(MinWait):
		t.Error("the AfterFunc did not run when the clock passed it")
	}
}

// runUntil is a Runner that runs until its context ends.
type runUntil struct{ ran chan struct{} }

func (r runUntil) Run(ctx context.Context) error {
	close(r.ran)
	<-ctx.Done()
	return ctx.Err()
}

// RunAll runs every runner until stop, which ends them all; a second stop
// returns the first's duration.
func TestRunAll(t *testing.T) {
	a, b := runUntil{make(chan struct{})}, runUntil{make(chan struct{})}
	stop := RunAll(t, func() int { return 0 }, a, b)
	for _, r := range []runUntil{a, b} {
		select {
		case <-r.ran:
		case <-time.After(MinWait):
			t.Fatal("a runner was not started")
		}
	}
	took := stop()
	if again := stop(); again != took {
		t.Errorf("second stop returned %s, want the first's %s", again, took)
	}
	t.Logf("stopped in %s", took)
}

// Run runs its runner until stop, which hands back what Run returned, the
// same error again on a second call.
func TestRun(t *testing.T) {
	r := runUntil{make(chan struct{})}
	stop := Run(t, r, time.Second)
	Recv(t, MinWait, r.ran, "the runner was not started")
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("stop = %v, want context.Canceled", err)
	}
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("second stop = %v, want context.Canceled", err)
	}
}

// TestRecv: Recv hands back the value sent, and the zero value of a
// closed channel.
func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := Recv(t, time.Second, ch, "no value"); got != 7 {
		t.Errorf("Recv = %d, want 7", got)
	}
	close(ch)
	if got := Recv(t, time.Second, ch, "closed channel not seen"); got != 0 {
		t.Errorf("Recv of a closed channel = %d, want 0", got)
	}
}

// TestTogether: every goroutine makes every call.
func TestTogether(t *testing.T) {
	var mu sync.Mutex
	seen := map[[2]int]int{}
	Together(3, 4, func(w, i int) {
		mu.Lock()
		defer mu.Unlock()
		seen[[2]int{w, i}]++
	})
	if len(seen) != 12 {
		t.Fatalf("%d distinct calls, want 12: %v", len(seen), seen)
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("call %v made %d times", k, n)
		}
	}
}

// TestSSEFrames: frames come without their blank line, and the channel
// closes at the end of the stream.
func TestSSEFrames(t *testing.T) {
	frames := SSEFrames(context.Background(), strings.NewReader("data: 1\n\nretry: 2\ndata: x\n\npartial"))
	var got []string
	for f := range frames {
		got = append(got, f)
	}
	if want := []string{"data: 1\n", "retry: 2\ndata: x\n"}; !slices.Equal(got, want) {
		t.Errorf("frames %q, want %q", got, want)
	}
}

// Get answers any status with the whole body; only a request that cannot
// be made fails the test.
func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte("short and stout " + r.URL.Path))
	}))
	defer srv.Close()
	if code, body := Get(t, srv.URL+"/pot"); code != http.StatusTeapot || body != "short and stout /pot" {
		t.Errorf("Get = %d %q", code, body)
	}
}

// Scrape sends its Accept, returns the body and Content-Type, and fails
// the test on any status but 200.
func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/x-test")
		_, _ = w.Write([]byte("accept=" + r.Header.Get("Accept")))
	}))
	defer srv.Close()
	if body, ct := Scrape(t, srv.URL+"/metrics", OpenMetrics); body != "accept="+OpenMetrics || ct != "text/x-test" {
		t.Errorf("Scrape = %q, %q", body, ct)
	}
	rec := &Recorder{TB: t}
	Scrape(rec, srv.URL+"/gone", "")
	if want := "GET " + srv.URL + "/gone: status 404"; !slices.Equal(rec.Failures, []string{want}) {
		t.Errorf("Scrape of a 404 recorded %q, want %q", rec.Failures, want)
	}
}

func TestFieldChecks(t *testing.T) {
	var errs fieldcheck.Errors
	errs.Check("Port", false, 70000, "a port from 0 to 65535")
	errs.Check("Fine", true, 1, "at least 1")
	errs.CheckRef("Max", false, 1, "at least", "Min")
	err := fieldcheck.Under("HTTP", errs.Err())
	want := []string{"HTTP.Port 70000: want a port from 0 to 65535", "HTTP.Max 1: want at least HTTP.Min"}
	if got := fieldTexts(t, err); !slices.Equal(got, want) {
		t.Errorf("fieldTexts = %q, want %q", got, want)
	}
	if got := fieldTexts(t, nil); got != nil {
		t.Errorf("fieldTexts(nil) = %q", got)
	}
	CheckFieldErrors(t, "HTTP", err, want...)
	CheckDefaults(t, "valid", validated{1}, validated{1})
	// An error that is no fieldcheck.Error fails the test, its text kept
	// in order.
	rec := &Recorder{TB: t}
	got := fieldTexts(rec, errors.Join(errs.Err(), io.EOF))
	if !slices.Equal(got, []string{"Port 70000: want a port from 0 to 65535", "Max 1: want at least Min", "EOF"}) ||
		!slices.Equal(rec.Failures, []string{"EOF is not a fieldcheck.Error"}) {
		t.Errorf("fieldTexts with another error = %q, reported %q", got, rec.Failures)
	}
}

// validated is a Config whose Validate passes.
type validated struct{ N int }

func (validated) Validate() error { return nil }

// SaidOnce passes one line per wanted text, in order, each saying the
// cause once, and fails a missing, extra, swapped or repeating line.
func TestSaidOnce(t *testing.T) {
	a, b := "[ERROR] a failed: no such file", "[ERROR] b failed: no such file"
	for _, tt := range []struct {
		name  string
		lines []string
		fails int
	}{
		{"one line each", []string{a, b}, 0},
		{"a line missing", []string{a}, 1},
		{"an extra line", []string{a, b, b}, 1},
		{"swapped", []string{b, a}, 1},
		{"cause said twice", []string{a, b + ": no such file"}, 1},
		{"cause not said", []string{"[ERROR] a failed", b}, 1},
	} {
		rec := &Recorder{TB: t}
		SaidOnce(rec, tt.lines, "no such file", "a failed", "b failed")
		if len(rec.Failures) != tt.fails {
			t.Errorf("%s: failures %q, want %d", tt.name, rec.Failures, tt.fails)
		}
	}
}
