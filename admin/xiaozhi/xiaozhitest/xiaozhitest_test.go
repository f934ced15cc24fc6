package xiaozhitest

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func post(t *testing.T, url string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"device_id":"d"}`))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if n := s.InFlight(); n != 0 {
			t.Errorf("InFlight %d after Close: a hook outlived it", n)
		}
	})
	return s
}

// TestStartRejectsANegativeKeep: the setting is named.
func TestStartRejectsANegativeKeep(t *testing.T) {
	if _, err := Start(Options{Keep: -1}); err == nil || !strings.Contains(err.Error(), "Options.Keep") {
		t.Fatalf("Start(Keep -1) = %v, want an error naming Options.Keep", err)
	}
}

// TestFloodKeepsTheLogBounded: a flood of calls to a few paths and to ever
// new ones leaves the latest Keep calls, exact counts for the known paths
// and at most MaxPaths counters.
func TestFloodKeepsTheLogBounded(t *testing.T) {
	s := start(t, Options{Keep: 8})
	const rounds = 300
	for i := range rounds {
		post(t, s.URL+"/xiaozhi/admin/say")
		post(t, s.URL+"/churn/"+strconv.Itoa(i))
	}
	calls := s.Calls()
	if len(calls) != 8 || calls[7].Path != "/churn/"+strconv.Itoa(rounds-1) || calls[6].Path != "/xiaozhi/admin/say" {
		t.Errorf("kept %d calls, last %+v", len(calls), calls[len(calls)-1])
	}
	if got := len(s.CallsTo("/xiaozhi/admin/say")); got != 4 {
		t.Errorf("CallsTo kept %d say calls, want 4", got)
	}
	if got := s.CountTo("/xiaozhi/admin/say"); got != rounds {
		t.Errorf("CountTo(say) = %d, want %d", got, rounds)
	}
	// say took one counter, the first MaxPaths-1 churn paths the others.
	if got := s.CountTo(OtherPaths); got != rounds-(MaxPaths-1) {
		t.Errorf("CountTo(OtherPaths) = %d, want %d", got, rounds-(MaxPaths-1))
	}
	s.mu.Lock()
	counters, held := len(s.counts), cap(s.calls)
	s.mu.Unlock()
	if counters > MaxPaths+1 || held > 2*8 {
		t.Errorf("%d counters (bound %d+1), %d calls held (bound %d)", counters, MaxPaths, held, 2*8)
	}
}

// TestInFlightCountsHandlersAndHooks: a delayed answer and a slow hook each
// count until they end, with no idle gap between a handler and its hook.
func TestInFlightCountsHandlersAndHooks(t *testing.T) {
	s := start(t, Options{})
	if n := s.InFlight(); n != 0 {
		t.Fatalf("idle fake: InFlight %d", n)
	}
	release := make(chan struct{})
	s.After("/slow-hook", func(Call) { <-release })
	post(t, s.URL+"/slow-hook") // answered; its hook now runs
	// The hook holds, so the count cannot reach 0 before release.
	testkit.WaitFor(t, time.Minute, "the handler to end, its hook still counted", func() bool { return s.InFlight() == 1 })
	close(release)
	testkit.WaitFor(t, time.Minute, "the hook to end", func() bool { return s.InFlight() == 0 })

	s.Set("/held", Reply{Status: 200, Body: "{}", Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/held", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}()
	testkit.WaitFor(t, time.Minute, "the held request to count", func() bool { return s.InFlight() == 1 })
	cancel()
	testkit.Recv(t, time.Minute, done, "the held request did not end")
	testkit.WaitFor(t, time.Minute, "the held request to end", func() bool { return s.InFlight() == 0 })
}

// posted is one request the bridge stand-in received.
type posted struct {
	Call
	ContentType string
}

// bridgeStandIn records the requests it gets and answers status.
func bridgeStandIn(t *testing.T, status int) (url string, got <-chan posted) {
	ch := make(chan posted, 16)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		p := posted{Call{Method: r.Method, Path: r.URL.Path, Raw: raw}, r.Header.Get("Content-Type")}
		_ = json.Unmarshal(raw, &p.Body)
		ch <- p
		w.WriteHeader(status)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, ch
}

// robot starts a fake that plays the robot "dotty-1" (plays is
// ReportsStates or Talks) towards a bridge stand-in answering status, and
// returns the bridge's client for it.
func robot(t *testing.T, status int, plays func(s *Server, bridgeURL, deviceID string)) (*Server, *xiaozhi.Client, <-chan posted) {
	bridge, got := bridgeStandIn(t, status)
	s := start(t, Options{})
	plays(s, bridge, "dotty-1")
	host, port := s.HostPort()
	return s, xiaozhi.New(xiaozhi.Config{Host: host, Port: port}), got
}

// TestRobotReportsStates: a set-state for the robot comes back to the
// bridge as the firmware's state_changed event, without a ts; one for
// another device does not.
func TestRobotReportsStates(t *testing.T) {
	s, c, got := robot(t, http.StatusNoContent, (*Server).ReportsStates)
	ctx := context.Background()
	if err := c.SetState(ctx, "other-robot", "dance"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, time.Minute, "the fake to settle", func() bool { return s.InFlight() == 0 })
	for _, dev := range []string{"", "dotty-1"} {
		if err := c.SetState(ctx, dev, "sleep"); err != nil {
			t.Fatal(err)
		}
		ev := testkit.Recv(t, time.Minute, got, "no state_changed reached the bridge")
		want := `{"data":{"state":"sleep"},"device_id":"dotty-1","name":"state_changed"}`
		if ev.Method != http.MethodPost || ev.Path != "/api/perception/event" || ev.ContentType != "application/json" || string(ev.Raw) != want {
			t.Errorf("set-state for %q posted %s %s (%s) %s, want %s", dev, ev.Method, ev.Path, ev.ContentType, ev.Raw, want)
		}
	}
	testkit.WaitFor(t, time.Minute, "the fake to settle", func() bool { return s.InFlight() == 0 })
	if len(got) != 0 || s.RobotFailures() != 0 {
		t.Errorf("%d more posts (the other robot's set-state?), %d failures", len(got), s.RobotFailures())
	}
}

var uuid4Shape = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestRobotTalks: an inject-text for the robot is a buffered turn on the
// bridge's /api/message in ZeroClawLLM's shape, one session id for the
// robot's connection, and a failing bridge is counted.
func TestRobotTalks(t *testing.T) {
	s, c, got := robot(t, http.StatusInternalServerError, (*Server).Talks)
	ctx := context.Background()
	var sessions []string
	for _, text := range []string{"Hi!", "what's for dinner?"} {
		if err := c.InjectText(ctx, "", text); err != nil {
			t.Fatal(err)
		}
		turn := testkit.Recv(t, time.Minute, got, "no turn reached the bridge")
		meta, _ := turn.Body["metadata"].(map[string]any)
		if turn.Path != "/api/message" || turn.ContentType != "application/json" || turn.Body["content"] != text || turn.Body["channel"] != "dotty" ||
			meta["provider"] != "zeroclaw" || meta["device_id"] != "dotty-1" || len(turn.Body) != 4 || len(meta) != 2 {
			t.Errorf("inject-text %q posted %s %s", text, turn.Path, turn.Raw)
		}
		sid, _ := turn.Body["session_id"].(string)
		if !uuid4Shape.MatchString(sid) {
			t.Errorf("session_id %q is not a UUIDv4", sid)
		}
		sessions = append(sessions, sid)
	}
	if sessions[0] != sessions[1] {
		t.Errorf("one connection, two session ids: %q", sessions)
	}
	if err := c.InjectText(ctx, "other-robot", "hello"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, time.Minute, "the fake to settle", func() bool { return s.InFlight() == 0 })
	if len(got) != 0 || s.RobotFailures() != 2 {
		t.Errorf("%d more turns (the other robot's?), %d failures, want 2 (the bridge answered 500)", len(got), s.RobotFailures())
	}
}

// TestFakePlaysAnyRobot: with AnyRobot the fake answers for every robot a
// call names: its state_changed and its turns carry that robot's id, and
// each robot's turns keep one session id of their own; a call naming no
// robot goes to Options.FirstRobot.
func TestFakePlaysAnyRobot(t *testing.T) {
	bridge, got := bridgeStandIn(t, http.StatusNoContent)
	s := start(t, Options{FirstRobot: "hall"})
	s.ReportsStates(bridge, AnyRobot)
	s.Talks(bridge, AnyRobot)
	host, port := s.HostPort()
	c := xiaozhi.New(xiaozhi.Config{Host: host, Port: port})
	ctx := context.Background()
	for _, dev := range []string{"kitchen", "lounge"} {
		if err := c.SetState(ctx, dev, "sleep"); err != nil {
			t.Fatal(err)
		}
		ev := testkit.Recv(t, time.Minute, got, "no state_changed reached the bridge")
		if want := `{"data":{"state":"sleep"},"device_id":"` + dev + `","name":"state_changed"}`; string(ev.Raw) != want {
			t.Errorf("set-state for %s posted %s, want %s", dev, ev.Raw, want)
		}
	}
	sessions := map[string][]any{}
	for _, dev := range []string{"kitchen", "lounge", "kitchen", ""} {
		if err := c.InjectText(ctx, dev, "hello"); err != nil {
			t.Fatal(err)
		}
		turn := testkit.Recv(t, time.Minute, got, "no turn reached the bridge")
		meta, _ := turn.Body["metadata"].(map[string]any)
		if want := cmp.Or(dev, "hall"); meta["device_id"] != want {
			t.Errorf("inject-text for %s posted %s", dev, turn.Raw)
		}
		sessions[dev] = append(sessions[dev], turn.Body["session_id"])
	}
	if k, l := sessions["kitchen"], sessions["lounge"]; k[0] != k[1] || k[0] == l[0] {
		t.Errorf("sessions %v: want one per robot", sessions)
	}
	testkit.WaitFor(t, time.Minute, "the fake to settle", func() bool { return s.InFlight() == 0 })
	if s.RobotFailures() != 0 {
		t.Errorf("%d failures", s.RobotFailures())
	}
}
