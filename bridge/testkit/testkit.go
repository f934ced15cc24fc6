// Package testkit holds the helpers every package's tests share: a log
// sink safe to write from background goroutines, a bounded polling wait
// and a bounded receive, the recording fake clock, running components
// until the test ends, a test server whose requests a test can end, test
// time zones, a file that blocks a directory, whether a process still
// runs, a private mount namespace to mount a read-only or full file
// system in, a package's /metrics exposition held to its golden file, a
// route read (Get, Scrape, Fetch), a component's settings checks
// (CheckDefaults, CheckFieldErrors) and a testing.TB that records a
// helper's failures (Recorder). It lives under bridge/ with the rest of
// the shared plumbing, is imported only by tests and the soak (cmd/soak,
// for FillFS), and imports no package of this module but the leaf
// bridge/fieldcheck, so any package's tests (acp's included) may use it
// without a cycle.
package testkit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Recorder is a testing.TB that records the failures a helper reports
// (Errorf, Fatalf) instead of failing the test, so that a test can check
// a helper's own failures. Its Fatalf returns: the helper goes on.
type Recorder struct {
	testing.TB
	Failures []string
}

// Helper does nothing: the failures are the recorder's.
func (r *Recorder) Helper() {}

// Errorf records a failure.
func (r *Recorder) Errorf(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// Fatalf records a failure, as Errorf.
func (r *Recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// LogBuffer is an io.Writer for loggers that background goroutines write
// while the test reads it.
type LogBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Reset empties the buffer.
func (l *LogBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

// SaidOnce fails the test unless lines are one per want, line i holding
// want[i], and each says cause exactly once: one log line per failure,
// its error's text not repeated.
func SaidOnce(t testing.TB, lines []string, cause string, want ...string) {
	t.Helper()
	ok := len(lines) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = strings.Contains(lines[i], want[i])
	}
	if !ok {
		t.Errorf("want one line each for %q, got:\n%s", want, strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if strings.Count(l, cause) != 1 {
			t.Errorf("%q not said exactly once: %s", cause, l)
		}
	}
}

// MinWait is the least WaitFor waits before it fails a test. Its bounds
// are against hangs, never timing assertions: on a machine loaded many
// times over its cores, a child process can take seconds to start, so a
// bound a test states that is shorter is stretched to this.
const MinWait = time.Minute

// WaitFor polls cond every few milliseconds until it holds, failing the
// test when d (at least MinWait) passes first. A test that holds waits no
// longer for the stretch.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	d = max(d, MinWait)
	if !Within(d, cond) {
		t.Fatalf("timed out after %s waiting for %s", d, what)
	}
}

// Within polls cond every few milliseconds until it holds or d passes,
// and reports whether it held.
func Within(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Recv returns the next value from ch (the zero value once ch is closed),
// failing the test with msg when none comes within d (at least MinWait,
// as WaitFor: a bound against hangs).
func Recv[T any](t testing.TB, d time.Duration, ch <-chan T, msg string) T {
	t.Helper()
	d = max(d, MinWait)
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s (waited %s)", msg, d)
		var zero T
		return zero
	}
}

// Zone is the time zone name from the system's database; it panics when
// the zone is missing, so a package's tests can load one in a var.
func Zone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// Blocker writes an empty file at path, where the code under test wants
// a directory (or a file inside one), and returns path.
func Blocker(t testing.TB, path string) string {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// ServeEndable serves h on a loopback test server until the test ends;
// end(cause) cancels the contexts of its requests with cause, as the
// server's shutdown grace does.
func ServeEndable(t testing.TB, h http.Handler) (url string, end context.CancelCauseFunc) {
	ts := httptest.NewUnstartedServer(h)
	base, end := context.WithCancelCause(context.Background())
	ts.Config.BaseContext = func(net.Listener) context.Context { return base }
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(func() { end(nil) })
	return ts.URL, end
}

// Get GETs url and returns the answer's status and whole body (Fetch).
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, b := Fetch(t, req)
	return resp.StatusCode, string(b)
}

// Scrape GETs url as a scraper does, asking for the format accept names
// ("" asks for none), and returns the body and its Content-Type; any
// status but 200 fails the test.
func Scrape(t testing.TB, url, accept string) (body, contentType string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, b := Fetch(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", url, resp.StatusCode)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// fetchClient is Fetch's: each request on its own connection (a test's
// server may check, by goleak, that nothing is left open), each bounded
// by MinWait.
var fetchClient = &http.Client{Timeout: MinWait, Transport: &http.Transport{DisableKeepAlives: true}}

// Fetch sends req on a new connection and returns the answer, its body
// read and closed, and the body; a request that cannot be made or a body
// that cannot be read fails the test.
func Fetch(t testing.TB, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := fetchClient.Do(req) // #nosec G704 -- tests only: the test's own server
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the body: %v", req.Method, req.URL, err)
	}
	return resp, b
}

// Together runs n goroutines at once, goroutine w calling f(w, i) for
// each i below each, and returns when all are done.
func Together(n, each int, f func(w, i int)) {
	var wg sync.WaitGroup
	for w := range n {
		wg.Go(func() {
			for i := range each {
				f(w, i)
			}
		})
	}
	wg.Wait()
}

// SSEFrames reads the server-sent events stream r on a goroutine and
// delivers each frame (its lines, without the blank line that ends it) on
// the channel, which closes at the end of the stream or once ctx is done.
func SSEFrames(ctx context.Context, r io.Reader) <-chan string {
	frames := make(chan string, 16)
	go func() {
		defer close(frames)
		br := bufio.NewReader(r)
		var b strings.Builder
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line != "\n" {
				b.WriteString(line)
				continue
			}
			select {
			case frames <- b.String():
			case <-ctx.Done():
				return
			}
			b.Reset()
		}
	}()
	return frames
}

// ProcessGone reports whether pid no longer runs. A zombie counts as gone:
// in a container its reaper may be a PID 1 that never reaps.
func ProcessGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && len(s) > i+2 {
		return s[i+2] == 'Z' || s[i+2] == 'X'
	}
	return false
}

// Fill fills the file system dir is on (a small MountTmpfs) to its last
// byte with a file in dir (FillFS), and returns the function that removes
// the file again (run at the end of the test too).
func Fill(t testing.TB, dir string) (free func()) {
	t.Helper()
	remove, err := FillFS(dir)
	if remove != nil {
		free = func() {
			if err := remove(); err != nil {
				t.Errorf("remove the filler: %v", err)
			}
		}
		t.Cleanup(free)
	}
	if err != nil {
		t.Fatal(err)
	}
	return free
}

// FillFS fills the file system dir is on to its last byte with a file in
// dir and returns the function that removes the file (the first call
// removes it, later ones do nothing). It takes no testing.TB, for the soak
// (cmd/soak); tests call Fill.
func FillFS(dir string) (free func() error, err error) {
	f, err := os.CreateTemp(dir, "filler-*")
	if err != nil {
		return nil, err
	}
	var once sync.Once
	free = func() error {
		var err error
		once.Do(func() { err = os.Remove(f.Name()) })
		return err
	}
	// Large writes first, then ever smaller ones for the last block's
	// slack, each until the file system is full.
	for _, size := range []int{64 << 10, 4 << 10, 512, 1} {
		chunk := make([]byte, size)
		for {
			if _, err := f.Write(chunk); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					_ = f.Close()
					return free, fmt.Errorf("fill %s: %w", dir, err)
				}
				break
			}
		}
	}
	if err := f.Close(); err != nil && !errors.Is(err, syscall.ENOSPC) {
		return free, fmt.Errorf("fill %s: %w", dir, err)
	}
	return free, nil
}
