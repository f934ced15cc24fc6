package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/observe"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
)

// The hostile soak's full-disk phase: a bridge of its own with its
// memory (brain.db and the journal) on a 2 MiB tmpfs, which fills up
// while ZeroClaw (played by the soak) holds brain.db locked, while eight
// clients write through /api/voice/remember and remember_person. Every
// write must be acknowledged (204, or 200 with ok) or refused with 507
// (the disk is full) or 503 (the queue is full behind the lock); once
// space is back, every acknowledged write must be in brain.db exactly
// once and no refused one at all. The tmpfs is mounted in a private mount
// namespace: the soak runs itself again there (-diskfull), which needs
// root; without it the phase is skipped, saying why.
const (
	diskFullSize    = 2 << 20
	diskFullWriters = 8
	diskFullFor     = 3 * time.Second
	// diskFullBound bounds the child's whole run: only a hung bridge gets
	// near it.
	diskFullBound = 3 * time.Minute
	// diskFullNSEnv marks the child the soak started in a private mount
	// namespace: only there does it mount anything.
	diskFullNSEnv = "SOAK_PRIVATE_MOUNT_NAMESPACE"
)

// diskFullPhase runs the full-disk phase against the bridge binary bin in
// a child soak in a private mount namespace, and returns its report lines
// and what broke the invariant. A phase that cannot run (not root, no
// namespace, no tmpfs) is reported skipped with the reason, not failed.
func diskFullPhase(bin string) (string, error) {
	if os.Geteuid() != 0 {
		return fmt.Sprintf("  full disk: skipped: mounting a tmpfs in a private mount namespace needs root (running as uid %d)\n", os.Geteuid()), nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("full disk: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), diskFullBound)
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "-diskfull", bin) // #nosec G204 -- this soak binary, on the bridge it built
	cmd.Env = append(os.Environ(), diskFullNSEnv+"=1")
	// Go makes the new namespace's mounts private before it executes the
	// child: its tmpfs never reaches the host's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return fmt.Sprintf("  full disk: skipped: cannot start in a private mount namespace: %v\n", err), nil
	}
	report, verdict, _ := strings.Cut(string(out), "\nverdict: ")
	verdict = strings.TrimSpace(verdict)
	switch {
	case strings.HasPrefix(verdict, "skip: "):
		return report + "\n  full disk: skipped: " + strings.TrimPrefix(verdict, "skip: ") + "\n", nil
	case verdict == "pass" && err == nil:
		return report + "\n", nil
	case strings.HasPrefix(verdict, "fail: "):
		return report + "\n", errors.New("full disk: " + strings.TrimPrefix(verdict, "fail: "))
	}
	return string(out), fmt.Errorf("full disk: the phase ended without a verdict (%v)", err)
}

// runDiskFull is the child: it mounts the tmpfs, runs the phase, prints
// its report and then "verdict: pass", "verdict: skip: <why>" or
// "verdict: fail: <why>".
func runDiskFull(bin string) int {
	if os.Getenv(diskFullNSEnv) != "1" {
		fmt.Println("\nverdict: fail: -diskfull runs only in the private mount namespace the hostile soak starts it in")
		return 1
	}
	dir, err := os.MkdirTemp("", "soak-diskfull-")
	if err != nil {
		fmt.Println("\nverdict: fail:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0700", diskFullSize)); err != nil {
		fmt.Printf("\nverdict: skip: mount a tmpfs: %v\n", err)
		return 0
	}
	defer func() { _ = syscall.Unmount(dir, 0) }()
	report, err := diskFull(bin, dir)
	fmt.Print(strings.TrimSuffix(report, "\n"))
	if err != nil {
		fmt.Println("\nverdict: fail:", err)
		return 1
	}
	fmt.Println("\nverdict: pass")
	return 0
}

// memoryWrites sorts the answers to memory writes by fact.
type memoryWrites struct {
	mu       sync.Mutex
	acked    []string
	refused  []string
	statuses statusCount
	problems []string
}

// write sends fact through /remember (even n) or /remember_person (odd n)
// and files the answer; refusals maps the refusals the moment allows to
// their status.
func (m *memoryWrites) write(c *http.Client, base string, n int, fact string, refusals map[string]int) {
	route, body := "/api/voice/remember", `{"fact":"`+fact+`"}`
	if n%2 == 1 {
		route, body = "/api/voice/remember_person", `{"person_id":"sam","fact":"`+fact+`"}`
	}
	code, answer := 0, ""
	resp, err := c.Post(base+route, "application/json", strings.NewReader(body))
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, answer = resp.StatusCode, string(b)
	}
	m.statuses.add(code)
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case route == "/api/voice/remember" && code == http.StatusNoContent,
		route == "/api/voice/remember_person" && code == http.StatusOK && strings.HasPrefix(answer, `{"ok":true,`):
		m.acked = append(m.acked, fact)
	case code != 0 && refusals[answer] == code:
		m.refused = append(m.refused, fact)
	default:
		if len(m.problems) < 10 {
			m.problems = append(m.problems, fmt.Sprintf("%s: %d %s %v", route, code, answer, err))
		}
	}
}

// Refusals the phase accepts, by body.
var (
	noRefusal        = map[string]int{}
	diskFullRefusals = map[string]int{
		`{"detail":"memory not writable: no space left on device; write not accepted"}`:          http.StatusInsufficientStorage,
		`{"detail":"memory database not writable: no space left on device; write not accepted"}`: http.StatusInsufficientStorage,
		`{"detail":"memory writer busy; write not accepted"}`:                                    http.StatusServiceUnavailable,
	}
)

// diskFull runs the phase on a bridge whose memory lives under mnt.
func diskFull(bin, mnt string) (string, error) {
	db := filepath.Join(mnt, "memory", "brain.db")
	b, err := benchkit.Start(bin, "ZEROCLAW_BIN="+bin, "VOICE_MEMORY_DB="+db)
	if err != nil {
		return "", err
	}
	defer b.Stop()
	c := &http.Client{Timeout: 30 * time.Second}
	if err := waitHealthy(c, b.URL, 60*time.Second); err != nil {
		return "", err
	}
	m := &memoryWrites{}
	m.write(c, b.URL, 0, "the first fact", noRefusal)
	if _, err := observe.CheckMemory(db, m.acked, nil, 30*time.Second); err != nil {
		return "", err
	}
	// ZeroClaw holds brain.db while the disk fills: rows wait in the
	// journal, whose last block then takes a few more.
	unlock, err := lockDatabase(db)
	if err != nil {
		return "", err
	}
	defer unlock()
	for i := range 20 {
		m.write(c, b.URL, i, fmt.Sprint("before the disk filled ", i), noRefusal)
	}
	free, err := testkit.FillFS(filepath.Dir(db))
	if err != nil {
		return "", err
	}
	defer func() { _ = free() }() // freed below; this is for an early return
	var wg sync.WaitGroup
	end := time.Now().Add(diskFullFor)
	for w := range diskFullWriters {
		wg.Go(func() {
			for i := 0; time.Now().Before(end); i++ {
				m.write(c, b.URL, i, fmt.Sprintf("while the disk is full %d-%d %s", w, i, strings.Repeat("x", 80)), diskFullRefusals)
			}
		})
	}
	wg.Wait()
	unlock()
	ackedFull := len(m.acked) - 21
	// Unlocked, brain.db cannot take a row either: not a block is free.
	degraded := memoryProblems(c, b.URL, 30*time.Second, func(p []string) bool {
		return len(p) > 0 && strings.HasPrefix(p[0], "memory database: ") && strings.HasSuffix(p[0], "(no space left on device)")
	})
	g, _ := gauges(c, b.URL)

	if err := free(); err != nil {
		return "", err
	}
	for i := range 20 {
		m.write(c, b.URL, i, fmt.Sprint("after space came back ", i), noRefusal)
	}
	stored, storeErr := observe.CheckMemory(db, m.acked, m.refused, 60*time.Second)
	cleared := memoryProblems(c, b.URL, 30*time.Second, func(p []string) bool { return len(p) == 0 })

	var rep strings.Builder
	fmt.Fprintf(&rep, "  full disk (memory on a %d MiB tmpfs, brain.db locked while it filled, %d writers for %v):\n",
		diskFullSize>>20, diskFullWriters, diskFullFor)
	fmt.Fprintf(&rep, "    memory writes acknowledged %d (%d while full), in brain.db once space came back %d; refused %d, none stored\n",
		len(m.acked), ackedFull, stored, len(m.refused))
	fmt.Fprintf(&rep, "    answers: %s; while full: pending %v, failed attempts at brain.db %v\n",
		m.statuses.String(), g["dotty_memory_writes_pending"], g["dotty_memory_write_failures_total"])
	var errs []error
	if storeErr != nil {
		errs = append(errs, storeErr)
	}
	if len(m.problems) > 0 {
		errs = append(errs, fmt.Errorf("%d writes answered neither an acknowledgement nor a documented refusal, first: %s",
			len(m.problems), strings.Join(m.problems, "; ")))
	}
	if len(m.refused) == 0 {
		errs = append(errs, errors.New("no memory write was refused on the full disk"))
	}
	if !degraded {
		errs = append(errs, errors.New("/health did not name the full disk as brain.db's problem"))
	}
	if !cleared {
		errs = append(errs, errors.New("/health still has memory problems 30 s after space came back"))
	}
	return rep.String(), errors.Join(errs...)
}

// memoryProblems polls /health (≤ d) until its memory problems satisfy ok.
func memoryProblems(c *http.Client, base string, d time.Duration, ok func([]string) bool) bool {
	deadline := time.Now().Add(d)
	for {
		var h struct{ Problems []string }
		if resp, err := c.Get(base + "/health"); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			var mem []string
			for _, p := range h.Problems {
				if strings.HasPrefix(p, "memory ") {
					mem = append(mem, p)
				}
			}
			if ok(mem) {
				return true
			}
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// lockDatabase holds an exclusive transaction on brain.db, as ZeroClaw
// may, until the returned function is called (more than once is fine).
func lockDatabase(path string) (func(), error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=exclusive")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			_ = tx.Rollback()
			_ = db.Close()
		})
	}, nil
}
