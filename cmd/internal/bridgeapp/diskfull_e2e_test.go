package bridgeapp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// memoryAnswers sorts the answers to memory writes: acknowledged (204 from
// /remember, 200 {"ok":true} from /remember_person) and refused, by the
// write's fact.
type memoryAnswers struct {
	mu       sync.Mutex
	acked    map[string]string // fact → route
	refused  map[string]string // fact → status and body
	problems []string
}

func newMemoryAnswers() *memoryAnswers {
	return &memoryAnswers{acked: map[string]string{}, refused: map[string]string{}}
}

// write sends fact through /remember (even n) or /remember_person (odd n)
// and files the answer: acknowledged, refused with one of the statuses and
// bodies in refusals, or a problem.
func (a *memoryAnswers) write(p *bridgeProc, n int, fact string, refusals map[string]int) {
	route, body := "/api/voice/remember", `{"fact":"`+fact+`"}`
	if n%2 == 1 {
		route, body = "/api/voice/remember_person", `{"person_id":"sam","fact":"`+fact+`"}`
	}
	code, answer := p.post(route, body)
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case route == "/api/voice/remember" && code == http.StatusNoContent,
		route == "/api/voice/remember_person" && code == http.StatusOK && strings.HasPrefix(answer, `{"ok":true,`):
		a.acked[fact] = route
	case refusals[answer] == code:
		a.refused[fact] = fmt.Sprint(code, " ", answer)
	default:
		a.problems = append(a.problems, fmt.Sprintf("%s %q: %d %s", route, fact, code, answer))
	}
}

// byRoute counts facts by the route that took them.
func byRoute(facts map[string]string, route string) int {
	n := 0
	for _, r := range facts {
		if r == route {
			n++
		}
	}
	return n
}

// checkStored waits (≤ 60 s) until every acknowledged fact is in brain.db
// and fails the test unless each is there exactly once and no refused
// one is; it returns how many acknowledged facts are stored.
func (a *memoryAnswers) checkStored(t *testing.T, db string) int {
	t.Helper()
	var stored map[string]int
	all := func() bool {
		rows, err := memstoretest.TryRows(db)
		if err != nil {
			return false
		}
		stored = map[string]int{}
		for _, r := range rows {
			stored[r.Content]++
		}
		for f := range a.acked {
			if stored[f] == 0 {
				return false
			}
		}
		return true
	}
	if !testkit.Within(60*time.Second, all) {
		missing := 0
		for f := range a.acked {
			if stored[f] == 0 {
				missing++
			}
		}
		t.Errorf("%d of %d acknowledged memory writes missing from brain.db after 60 s", missing, len(a.acked))
	}
	n := 0
	for f := range a.acked {
		if stored[f] > 0 {
			n++
		}
		if stored[f] > 1 {
			t.Errorf("acknowledged %q stored %d times", f, stored[f])
		}
	}
	for f, answer := range a.refused {
		if stored[f] != 0 {
			t.Errorf("refused %q (%s) stored anyway", f, answer)
		}
	}
	for _, p := range a.problems {
		t.Errorf("unexpected answer: %s", p)
	}
	return n
}

// metricValue reads a sample without labels from the /metrics text.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return f
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return 0
}

// memoryProblems are /health's problems about the voice memory.
func memoryProblems(h map[string]any) []string {
	var out []string
	for _, p := range problemsOf(h) {
		if strings.HasPrefix(p, "memory ") {
			out = append(out, p)
		}
	}
	return out
}

// TestFullDiskLosesNoAcknowledgedMemoryWrite runs the binary with brain.db
// and its journal on a 2 MiB tmpfs, which fills up while the journal
// holds rows (the test keeps brain.db locked meanwhile, as ZeroClaw may),
// and writes through /api/voice/remember and /api/voice/remember_person
// from four clients at once. Every write is either acknowledged (204, or
// 200 with ok: the journal's last block still had room) or refused with
// 507 saying the disk is full; /health is degraded naming the full disk.
// Once space is back, every acknowledged write is in brain.db exactly
// once, no refused one is, and /health is ok again.
func TestFullDiskLosesNoAcknowledgedMemoryWrite(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	mnt := testkit.MountTmpfs(t, 2<<20)
	db := filepath.Join(mnt, "memory", "brain.db")
	p := startBridge(t, "VOICE_MEMORY_DB="+db, "LOG_LEVEL=info")
	a := newMemoryAnswers()
	full := map[string]int{
		`{"detail":"memory not writable: no space left on device; write not accepted"}`:          http.StatusInsufficientStorage,
		`{"detail":"memory database not writable: no space left on device; write not accepted"}`: http.StatusInsufficientStorage,
	}
	a.write(p, 0, "the first fact", nil)
	a.checkStored(t, db) // brain.db exists
	release := memstoretest.Lock(t, db)
	for i := range 10 {
		a.write(p, i, fmt.Sprint("before the disk filled ", i), nil)
	}
	if len(a.acked) != 11 {
		t.Fatalf("writes before the disk filled: %v", a.problems)
	}

	free := testkit.Fill(t, filepath.Dir(db))
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			for i := range 150 {
				a.write(p, i, fmt.Sprintf("while the disk is full %d-%d %s", c, i, strings.Repeat("x", 80)), full)
			}
		})
	}
	wg.Wait()
	release()
	ackedFull, refusedFull := len(a.acked)-11, len(a.refused)
	if refusedFull == 0 {
		t.Errorf("no write refused on a full disk (%d acknowledged)", ackedFull)
	}
	// Unlocked, brain.db cannot take a row either: not a block is free.
	_, h := p.health("the full journal and database", func(h map[string]any) bool { return len(memoryProblems(h)) == 2 })
	got := memoryProblems(h)
	if h["status"] != "degraded" || !strings.HasPrefix(got[0], "memory database: ") || !strings.HasPrefix(got[1], "memory journal: ") ||
		!strings.HasSuffix(got[0], "(no space left on device)") || !strings.HasSuffix(got[1], ": no space left on device") {
		t.Errorf("/health on the full disk: status %v, problems %q", h["status"], problemsOf(h))
	}
	_, m := p.get("/metrics")
	pending, failures := metricValue(t, m, "dotty_memory_writes_pending"), metricValue(t, m, "dotty_memory_write_failures_total")
	if pending != float64(len(a.acked)-1) || failures < 1 {
		t.Errorf("%v writes pending, %v failed attempts; want every write acknowledged since brain.db was locked (%d), and failures",
			pending, failures, len(a.acked)-1)
	}

	free()
	for i := range 10 { // space is back: every write is taken again
		a.write(p, i, fmt.Sprint("after space came back ", i), nil)
	}
	stored := a.checkStored(t, db)
	testkit.WaitFor(t, health.RecheckInterval+10*time.Second, "/health without memory problems", func() bool {
		_, h := p.health("any", func(map[string]any) bool { return true })
		return len(memoryProblems(h)) == 0
	})
	t.Logf("full disk: %d writes acknowledged (remember %d, remember_person %d), %d in brain.db once space came back; "+
		"%d refused with 507, none stored; while full: %d acknowledged, %v pending, %v failed attempts at brain.db",
		len(a.acked), byRoute(a.acked, "/api/voice/remember"), byRoute(a.acked, "/api/voice/remember_person"), stored,
		refusedFull, ackedFull, pending, failures)
}

// TestReadOnlyBrainDBLosesNoAcknowledgedMemoryWrite runs the binary with
// brain.db alone read-only (bind-mounted so; its directory and journal
// stay writable). Writes are acknowledged while they fit the writer's
// queue and wait there, counted in dotty_memory_writes_pending; the
// next are refused with 503 saying brain.db is read-only, as is the
// dashboard's approval of a held fact; /health names the cause. Once
// brain.db is writable again every acknowledged write reaches it, the
// approval works and /health is ok.
func TestReadOnlyBrainDBLosesNoAcknowledgedMemoryWrite(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	mnt := testkit.MountTmpfs(t, 16<<20) // fsyncs cost nothing: 300 writes take a moment
	db := filepath.Join(mnt, "memory", "brain.db")
	src, err := os.ReadFile(memstoretest.V1(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(db, src, 0o600); err != nil {
		t.Fatal(err)
	}
	memstoretest.Insert(t, db, memstoretest.Memory{ID: "held-fact", Content: "likes trains", Namespace: "person_pending:sam"})
	writable := testkit.ReadOnlyFile(t, db)
	p := startBridge(t, "VOICE_MEMORY_DB="+db, "LOG_LEVEL=info")

	a := newMemoryAnswers()
	readOnly := map[string]int{
		`{"detail":"memory database not writable: read-only file system; write not accepted"}`: http.StatusServiceUnavailable,
	}
	a.write(p, 0, "the first fact", nil)
	_, h := p.health("brain.db read-only", func(h map[string]any) bool { return len(memoryProblems(h)) > 0 })
	if got := memoryProblems(h); h["status"] != "degraded" || len(got) != 1 || !strings.HasPrefix(got[0], "memory database: ") ||
		!strings.HasSuffix(got[0], "brain.db: read-only file system)") {
		t.Errorf("/health with brain.db read-only: status %v, problems %q", h["status"], problemsOf(h))
	}
	const writes = 300
	for i := 1; i < writes; i++ {
		a.write(p, i, fmt.Sprint("while brain.db is read-only ", i), readOnly)
	}
	if len(a.refused) == 0 || len(a.acked)+len(a.refused)+len(a.problems) != writes {
		t.Errorf("%d acknowledged, %d refused, %d other answers of %d writes", len(a.acked), len(a.refused), len(a.problems), writes)
	}
	_, m := p.get("/metrics")
	if pending := metricValue(t, m, "dotty_memory_writes_pending"); pending != float64(len(a.acked)) {
		t.Errorf("%v writes pending, want every acknowledged one (%d)", pending, len(a.acked))
	}
	failures := metricValue(t, m, "dotty_memory_write_failures_total")
	if failures < 1 {
		t.Errorf("%v failed attempts at brain.db counted", failures)
	}
	code, body := p.post("/ui/api/memory/approve", `{"id":"held-fact"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "memory database not writable") || !strings.Contains(body, "read-only file system") {
		t.Errorf("approve with brain.db read-only: %d %s", code, body)
	}

	writable()
	stored := a.checkStored(t, db)
	code, body = p.post("/ui/api/memory/approve", `{"id":"held-fact"}`)
	var approved struct{ OK bool }
	if code != http.StatusOK || json.Unmarshal([]byte(body), &approved) != nil || !approved.OK {
		t.Errorf("approve with brain.db writable again: %d %s", code, body)
	}
	testkit.WaitFor(t, health.RecheckInterval+10*time.Second, "/health without memory problems", func() bool {
		_, h := p.health("any", func(map[string]any) bool { return true })
		return len(memoryProblems(h)) == 0
	})
	_, m = p.get("/metrics")
	if pending := metricValue(t, m, "dotty_memory_writes_pending"); pending != 0 {
		t.Errorf("%v writes pending once brain.db took them", pending)
	}
	t.Logf("brain.db read-only: %d writes acknowledged (remember %d, remember_person %d), %d in brain.db once writable; "+
		"%d refused with 503, none stored; %v failed attempts at brain.db",
		len(a.acked), byRoute(a.acked, "/api/voice/remember"), byRoute(a.acked, "/api/voice/remember_person"), stored, len(a.refused), failures)
}

// TestReadOnlyMemoryDirectorySaysSo runs the binary with brain.db in a
// read-only directory (a tmpfs mounted read-only, which root cannot write
// either): no memory write can be journaled, so none is acknowledged, and
// each refusal says what is wrong, on both routes, as /health does.
func TestReadOnlyMemoryDirectorySaysSo(t *testing.T) {
	if !inMountNamespace(t) {
		return
	}
	mnt := testkit.MountTmpfs(t, 1<<20)
	src, err := os.ReadFile(memstoretest.V1(t))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(mnt, "brain.db")
	if err := os.WriteFile(db, src, 0o600); err != nil {
		t.Fatal(err)
	}
	testkit.Remount(t, mnt, true)
	t.Cleanup(func() { testkit.Remount(t, mnt, false) })
	p := startBridge(t, "VOICE_MEMORY_DB="+db)
	const want = `{"detail":"memory not writable: read-only file system; write not accepted"}`
	for _, req := range [][2]string{{"/api/voice/remember", `{"fact":"the cat is called Pixel"}`},
		{"/api/voice/remember_person", `{"person_id":"sam","fact":"likes trains"}`}} {
		if code, body := p.post(req[0], req[1]); code != http.StatusServiceUnavailable || body != want {
			t.Errorf("%s: %d %s, want 503 %s", req[0], code, body, want)
		}
	}
	_, h := p.health("the journal's problem", func(h map[string]any) bool { return len(memoryProblems(h)) > 0 })
	if got := memoryProblems(h); len(got) != 1 || !strings.HasPrefix(got[0], "memory journal: ") || !strings.HasSuffix(got[0], ": read-only file system") {
		t.Errorf("/health: problems %q", problemsOf(h))
	}
	if rows := memstoretest.Rows(t, db); len(rows) != 0 {
		t.Errorf("%d rows stored from refused writes", len(rows))
	}
}
