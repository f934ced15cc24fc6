package acptest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// Driver is what the tests of both protocols (acp's and acp/steerable's
// supervisor harnesses, and acp's in-process pools) do with a supervisor
// and a pool: wait for the agent, run bounded turns collecting their
// chunks, and barge in. acptest cannot import acp, whose own tests use it,
// so Driver is generic over acp.AgentHealth and acp.TurnResult, and its
// functions wrap the pool's and the supervisor's methods.
type Driver[Health, Res any] struct {
	T testing.TB
	// Timeout bounds each turn Turn and MustTurn run.
	Timeout time.Duration
	// Run runs a turn of prompt on key, passing each chunk to onChunk
	// (acp.Pool.Turn).
	Run func(ctx context.Context, key, prompt string, onChunk func(string)) (Res, error)
	// Acquire waits until the agent is ready (acp.Supervisor.Acquire), and
	// Health reports on it (acp.Supervisor.Health); only WaitReady and
	// WaitHealth use them.
	Acquire func(ctx context.Context) error
	Health  func() Health
}

// WaitReady waits 90 s at most for the agent to be ready and returns its
// health, failing the test if it is not: a bound only a hang reaches (a
// race-built child on a machine running two CI builds at once has taken
// over 10 s to start).
func (d Driver[Health, Res]) WaitReady() Health {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := d.Acquire(ctx); err != nil {
		d.T.Fatalf("agent not ready: %v", err)
	}
	return d.Health()
}

// WaitHealth waits 10 s at most (testkit.WaitFor) for the agent's health
// to satisfy cond; what says what it waits for.
func (d Driver[Health, Res]) WaitHealth(what string, cond func(Health) bool) {
	d.T.Helper()
	testkit.WaitFor(d.T, 10*time.Second, what, func() bool { return cond(d.Health()) })
}

// Turn runs one turn of prompt on key, bounded by Timeout, and returns its
// result and the chunks it streamed, in order.
func (d Driver[Health, Res]) Turn(key, prompt string) (Res, []string, error) {
	d.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d.Timeout)
	defer cancel()
	var chunks []string
	res, err := d.Run(ctx, key, prompt, func(s string) { chunks = append(chunks, s) })
	return res, chunks, err
}

// MustTurn is Turn, failing the test on an error.
func (d Driver[Health, Res]) MustTurn(key, prompt string) (Res, []string) {
	d.T.Helper()
	res, chunks, err := d.Turn(key, prompt)
	if err != nil {
		d.T.Fatalf("turn %q: %v", prompt, err)
	}
	return res, chunks
}

// Start starts a turn of prompt on key under ctx and returns once its
// first chunk has come, failing the test if none comes within a minute; the
// turn's error arrives on the channel returned when it ends.
func (d Driver[Health, Res]) Start(ctx context.Context, key, prompt string) <-chan error {
	d.T.Helper()
	first := make(chan struct{})
	var once sync.Once
	errc := make(chan error, 1)
	go func() {
		_, err := d.Run(ctx, key, prompt, func(string) { once.Do(func() { close(first) }) })
		errc <- err
	}()
	select {
	case <-first:
	case err := <-errc:
		select {
		case <-first: // a turn short enough to end at once
			errc <- err
		default:
			d.T.Fatalf("turn %q ended before its first chunk: %v", prompt, err)
		}
	case <-time.After(time.Minute):
		d.T.Fatalf("turn %q: no first chunk", prompt)
	}
	return errc
}

// BargeIn starts a turn of prompt on key and ends its ctx once its first
// chunk has come, as a caller hanging up does. It returns how long the
// turn took to return after that (for the log: latency is never asserted)
// and the turn's error, failing the test if it does not return within 30 s.
func (d Driver[Health, Res]) BargeIn(key, prompt string) (time.Duration, error) {
	d.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := d.Start(ctx, key, prompt)
	begin := time.Now()
	cancel()
	err := Await(d.T, errc, 30*time.Second, "the turn's return after its ctx ended")
	return time.Since(begin), err
}

// Logs returns a buffer for a test's logs that is printed when the test
// fails. Goroutines may keep logging after the test ends (the SDK logs
// "connection closed" late), so loggers write to it, never to t.
func Logs(t testing.TB) *testkit.LogBuffer {
	buf := &testkit.LogBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log("log output:\n" + buf.String())
		}
	})
	return buf
}

// Bounds sets the supervisor settings a harness's test left zero: a fast
// first restart (20 ms) and stop grace (500 ms), and for the unavailable
// grace and the handshake's timeout bounds only a hang reaches (a
// minute): on a loaded machine a race-built child takes seconds to start,
// and a restart must not outlast the grace nor a handshake its timeout.
// (They are acp.Config's BackoffInitial, StopGrace, UnavailableGrace and
// InitTimeout.)
func Bounds(backoffInitial, stopGrace, unavailableGrace, initTimeout *time.Duration) {
	for _, b := range []struct {
		d   *time.Duration
		def time.Duration
	}{{backoffInitial, 20 * time.Millisecond}, {stopGrace, 500 * time.Millisecond}, {unavailableGrace, time.Minute}, {initTimeout, time.Minute}} {
		if *b.d == 0 {
			*b.d = b.def
		}
	}
}

// WaitClosed waits 5 s at most for done to be closed, as a test's cleanup
// does for each end of a connection, and fails the test, naming what,
// if it is not.
func WaitClosed(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("%s did not close", what)
	}
}

// RunTests runs m's tests as a TestMain of a package whose tests run real
// children does, and returns the exit code: an exec.Cmd started and never
// waited for panics (GODEBUG execwait=2), and a goroutine that outlives a
// passing run (every test has cleaned up by then) fails it.
func RunTests(m *testing.M) int {
	_ = os.Setenv("GODEBUG", "execwait=2")
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutine leak:", err)
			code = 1
		}
	}
	return code
}

// Outcome is how a turn run in the background ended.
type Outcome[Res any] struct {
	Res Res
	Err error
}

// Go runs a turn of prompt on key under ctx in the background; its
// outcome arrives on the channel returned (Await it).
func (d Driver[Health, Res]) Go(ctx context.Context, key, prompt string) <-chan Outcome[Res] {
	c := make(chan Outcome[Res], 1)
	go func() {
		res, err := d.Run(ctx, key, prompt, nil)
		c <- Outcome[Res]{res, err}
	}()
	return c
}

// Await receives from c, failing the test if nothing comes within limit
// (testkit.WaitFor's bound: at least testkit.MinWait); what names what it
// waits for.
func Await[T any](t testing.TB, c <-chan T, limit time.Duration, what string) T {
	t.Helper()
	return testkit.Recv(t, limit, c, what)
}
