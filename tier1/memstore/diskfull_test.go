package memstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health/healthtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// journalLines reads the journal's lines: the ids of those that parse,
// and how many do not.
func journalLines(t *testing.T, path string) (ids []string, unreadable int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e struct{ ID string }
		if json.Unmarshal(line, &e) != nil || e.ID == "" {
			unreadable++
			continue
		}
		ids = append(ids, e.ID)
	}
	return ids, unreadable
}

// contents counts the stored rows by content.
func contents(t *testing.T, path string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, r := range memstoretest.Rows(t, path) {
		out[r.Content]++
	}
	return out
}

// TestFullDiskLosesNoAcceptedWrite: brain.db and its journal on a tmpfs
// that fills up while the journal holds rows (brain.db locked). A write
// the journal cannot take is refused with ErrJournal wrapping ENOSPC, and
// leaves no part of a line behind (the next line would be lost with it);
// a write it took (the last block's slack) waits, however long the full
// brain.db refuses it. Once space is back, the re-checks clear /health
// and every accepted write is in brain.db, once; none that was refused
// is.
func TestFullDiskLosesNoAcceptedWrite(t *testing.T) {
	mnt, path, _, ok := v1OnTmpfs(t, 256<<10)
	if !ok {
		return
	}
	conds := healthtest.New(t, nil)
	metrics := memstore.NewMetrics(nil)
	s := memstore.New(memstore.Config{Path: path, Health: conds.Conditions, Metrics: metrics, WriteBusyTimeout: 50 * time.Millisecond})
	stop := run(t, s)
	t.Cleanup(func() { _ = stop() }) // closes brain.db before the unmount
	release := memstoretest.Lock(t, path)
	accepted, refused := []string{}, []string{}
	for i := range 3 {
		fact := fmt.Sprint("before ", i)
		if err := s.Enqueue(memstore.Write{Content: fact, Category: "core"}); err != nil {
			t.Fatal(err)
		}
		accepted = append(accepted, fact)
	}

	free := testkit.Fill(t, mnt)
	for i := range 200 {
		fact := fmt.Sprintf("while full %d %s", i, strings.Repeat("x", 100))
		err := s.Enqueue(memstore.Write{Content: fact, Category: "core"})
		switch {
		case err == nil:
			accepted = append(accepted, fact)
		case errors.Is(err, syscall.ENOSPC) && (errors.Is(err, memstore.ErrJournal) || errors.Is(err, memstore.ErrDatabase)):
			refused = append(refused, fact)
		default:
			t.Fatalf("write %d: %v, want it accepted or refused for the full disk", i, err)
		}
	}
	release()
	t.Logf("on the full disk: %d accepted (the journal's last block), %d refused", len(accepted)-3, len(refused))
	if len(refused) == 0 {
		t.Fatal("no write refused on a full disk")
	}
	ids, unreadable := journalLines(t, path+".voice-journal")
	if unreadable != 0 || len(ids) < s.Pending() {
		t.Errorf("journal: %d lines, %d unreadable, %d writes pending: a refused append left part of a line", len(ids), unreadable, s.Pending())
	}
	if got := testutil.ToFloat64(metrics.Pending); int(got) != s.Pending() {
		t.Errorf("pending gauge %v, want %d", got, s.Pending())
	}
	problems := conds.Problems()
	if len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), "no space left on device") {
		t.Errorf("problems %q, want the full disk named", problems)
	}

	free()
	conds.Recheck(t)
	if got := conds.Problems(); got != nil {
		t.Errorf("problems %q after the re-check with space back", got)
	}
	waitRows(t, path, len(accepted))
	stored := contents(t, path)
	for _, f := range accepted {
		if stored[f] != 1 {
			t.Errorf("accepted write stored %d times: %.20s…", stored[f], f)
		}
	}
	for _, f := range refused {
		if stored[f] != 0 {
			t.Errorf("refused write stored: %.20s…", f)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the journal emptied", func() bool {
		fi, err := os.Stat(path + ".voice-journal")
		return err == nil && fi.Size() == 0 && s.Pending() == 0
	})
	if got := testutil.ToFloat64(metrics.Pending); got != 0 {
		t.Errorf("pending gauge %v once every write is stored", got)
	}
	t.Logf("accepted %d, all stored once; refused %d, none stored", len(accepted), len(refused))
}

// TestFullDatabaseKeepsRowsInTheJournal: brain.db alone on a full tmpfs
// (the journal has room) refuses every row. They all wait, counted in
// the pending gauge; each failed attempt counts; the database's condition
// names the full disk; once QueueSize wait, Enqueue says why with
// ErrDatabase and ENOSPC, and a review action is refused at once with
// the same cause. The re-check that finds space again has them written
// without waiting out the backoff.
func TestFullDatabaseKeepsRowsInTheJournal(t *testing.T) {
	mnt, path, _, ok := v1OnTmpfs(t, 256<<10)
	if !ok {
		return
	}
	memstoretest.Insert(t, path, memstoretest.Memory{ID: "held-1", Content: "likes trains", Namespace: "person_pending:sam"})
	var logs testkit.LogBuffer
	conds := healthtest.New(t, nil)
	metrics := memstore.NewMetrics(nil)
	const queue = 8
	s := memstore.New(memstore.Config{Path: path, Journal: filepath.Join(t.TempDir(), "journal"), QueueSize: queue,
		Health: conds.Conditions, Metrics: metrics, Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	stop := run(t, s)
	t.Cleanup(func() { _ = stop() })
	free := testkit.Fill(t, mnt)

	for i := range queue {
		if err := s.Enqueue(memstore.Write{Content: fmt.Sprint("waits ", i), Category: "core"}); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the database's condition", func() bool { return len(conds.Problems()) == 1 })
	if got := conds.Problems(); !strings.HasPrefix(got[0], "memory database: ") || !strings.HasSuffix(got[0], "(no space left on device)") {
		t.Errorf("problems %q, want the database full", got)
	}
	err := s.Enqueue(memstore.Write{Content: "one too many", Category: "core"})
	if !errors.Is(err, memstore.ErrQueueFull) || !errors.Is(err, memstore.ErrDatabase) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Enqueue with %d waiting: %v, want the full queue and why", queue, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.Approve(ctx, "held-1"); !errors.Is(err, memstore.ErrDatabase) || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Approve while the writer waits: %v, want the full database", err)
	}
	if got := testutil.ToFloat64(metrics.Pending); got != queue {
		t.Errorf("pending gauge %v, want %d", got, queue)
	}
	if got := testutil.ToFloat64(metrics.WriteFailures); got < 1 {
		t.Errorf("write failures %v, want at least one", got)
	}
	if n := strings.Count(logs.String(), "[ERROR]"); n != 1 || !strings.Contains(logs.String(), "voice memory write failed; it stays in the journal and is retried") {
		t.Errorf("want one Error line for the cause, got:\n%s", logs.String())
	}

	free()
	conds.Recheck(t)
	rows := waitRows(t, path, 1+queue)
	for i, r := range rows[1:] {
		if r.Content != fmt.Sprint("waits ", i) {
			t.Errorf("row %d %q: order not kept", i, r.Content)
		}
	}
	if ok, err := s.Approve(ctx, "held-1"); !ok || err != nil {
		t.Errorf("Approve with space back: %v %v", ok, err)
	}
	if got := testutil.ToFloat64(metrics.Pending); got != 0 {
		t.Errorf("pending gauge %v once written", got)
	}
}

// TestFailingDatabaseRetriedOnTheClock: a brain.db the writer cannot use
// (not a database) is tried again after the backoff on the store's clock,
// never dropping the row; a stop meanwhile does not wait out the drain
// deadline for it but leaves it in the journal, and the next start
// writes it once the file is fixed.
func TestFailingDatabaseRetriedOnTheClock(t *testing.T) {
	good, err := os.ReadFile(memstoretest.V1(t))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "brain.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	clock := clockwork.NewFakeClock()
	metrics := memstore.NewMetrics(nil)
	conds := healthtest.New(t, nil)
	s := memstore.New(memstore.Config{Path: path, Clock: clock, Metrics: metrics, Health: conds.Conditions})
	stop := run(t, s)
	if err := s.Enqueue(memstore.Write{Content: "waits for a database", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for attempt := 1; attempt <= 4; attempt++ {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprint("failed attempt ", attempt), func() bool {
			return testutil.ToFloat64(metrics.WriteFailures) == float64(attempt)
		})
		if err := clock.BlockUntilContext(ctx, 1); err != nil { // the writer's backoff
			t.Fatal(err)
		}
		if attempt < 4 {
			clock.Advance(10 * time.Second) // past any backoff
		}
	}
	if got := conds.Problems(); len(got) != 1 || !strings.Contains(got[0], "file is not a database") {
		t.Errorf("problems %q", got)
	}
	if s.Pending() != 1 {
		t.Errorf("%d pending, want the row kept", s.Pending())
	}
	if err := stop(); err == nil || !strings.Contains(err.Error(), "1 writes left in the journal") {
		t.Errorf("stop: %v, want the row left in the journal", err)
	}
	if ids, _ := journalLines(t, path+".voice-journal"); len(ids) != 1 {
		t.Fatalf("journal after the stop holds %d rows, want 1", len(ids))
	}

	if err := os.WriteFile(path, good, 0o600); err != nil {
		t.Fatal(err)
	}
	next := memstore.New(memstore.Config{Path: path})
	stopNext := run(t, next)
	if rows := waitRows(t, path, 1); rows[0].Content != "waits for a database" {
		t.Errorf("rows %+v", rows)
	}
	if err := stopNext(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + ".voice-journal"); err != nil || fi.Size() != 0 {
		t.Errorf("journal after the replay: %v %v", fi, err)
	}
}

// v1OnTmpfs puts a copy of a V1 brain.db (its bytes: src) at path on a
// tmpfs of size bytes mounted at mnt, in the test's private mount
// namespace; ok is false in the process that ran the test there.
func v1OnTmpfs(t *testing.T, size int) (mnt, path string, src []byte, ok bool) {
	t.Helper()
	if !testkit.InMountNamespace(t) {
		return "", "", nil, false
	}
	mnt = testkit.MountTmpfs(t, size)
	path = filepath.Join(mnt, "brain.db")
	src, err := os.ReadFile(memstoretest.V1(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	return mnt, path, src, true
}
