package memstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health/healthtest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// run starts the writer; stop cancels it and returns Run's error.
func run(t *testing.T, s *memstore.Store) (stop func() error) {
	t.Helper()
	return testkit.Run(t, s, 30*time.Second)
}

func waitRows(t *testing.T, path string, n int) []memstoretest.Row {
	t.Helper()
	var rows []memstoretest.Row
	var err error
	if !testkit.Within(testkit.MinWait, func() bool {
		rows, err = memstoretest.TryRows(path) // the file may still be being created
		return err == nil && len(rows) >= n
	}) {
		t.Fatalf("%d rows after the wait, want %d (last error %v)", len(rows), n, err)
	}
	return rows
}

// stoppedRows waits for n rows in path, then stops the store; an error
// from its Run fails the test.
func stoppedRows(t *testing.T, path string, n int, stop func() error) []memstoretest.Row {
	t.Helper()
	rows := waitRows(t, path, n)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return rows
}

var keyRe = regexp.MustCompile(`^voice_(core|conversation)_(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00)_([0-9a-f]{8})$`)

func TestWritesOnBothSchemas(t *testing.T) {
	for _, tt := range []struct {
		name, path, agent string
		alias             string
	}{
		{"zeroclaw before 0.8", memstoretest.V1(t), "", ""},
		{"zeroclaw 0.8+ with the configured alias", memstoretest.V3(t, "default", "dotty"), "agent-dotty", "dotty"},
		{"zeroclaw 0.8+ falls back to default", memstoretest.V3(t, "default"), "agent-default", "dotty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := memstoretest.SchemaSQL(t, tt.path)
			s := memstore.New(memstore.Config{Path: tt.path, AgentAlias: tt.alias})
			stop := run(t, s)
			if err := s.Enqueue(memstore.Write{Content: "Alex likes dinosaurs", Category: "core", Importance: 0.7, SessionID: "s1", HasSession: true}); err != nil {
				t.Fatal(err)
			}
			if err := s.Enqueue(memstore.Write{Content: "user: hi | assistant: 😊 hello", Category: "conversation", Importance: 0.3}); err != nil {
				t.Fatal(err)
			}
			rows := stoppedRows(t, tt.path, 2, stop)
			for i, want := range []struct {
				cat, content string
				imp          float64
				session      bool
			}{{"core", "Alex likes dinosaurs", 0.7, true}, {"conversation", "user: hi | assistant: 😊 hello", 0.3, false}} {
				r := rows[i]
				m := keyRe.FindStringSubmatch(r.Key)
				if m == nil || m[1] != want.cat || m[2] != r.CreatedAt || m[3] != r.ID[:8] || r.CreatedAt != r.UpdatedAt {
					t.Errorf("key %q id %q created %q updated %q", r.Key, r.ID, r.CreatedAt, r.UpdatedAt)
				}
				if r.Content != want.content || r.Category != want.cat || r.Namespace != "voice" || r.Importance != want.imp || r.SessionID.Valid != want.session {
					t.Errorf("row %+v", r)
				}
				if (tt.agent == "") == r.AgentID.Valid || (tt.agent != "" && r.AgentID.String != tt.agent) {
					t.Errorf("agent_id %+v, want %q", r.AgentID, tt.agent)
				}
			}
			if after := memstoretest.SchemaSQL(t, tt.path); after != before {
				t.Error("an existing database's schema was altered")
			}
		})
	}
}

// Rows are stamped by the store's clock, in UTC with ZeroClaw's layout.
func TestRowsStampedByTheClock(t *testing.T) {
	path := memstoretest.V1(t)
	at := time.Date(2026, 11, 24, 21, 5, 9, 123456000, time.FixedZone("AEST", 10*3600))
	s := memstore.New(memstore.Config{Path: path, Clock: clockwork.NewFakeClockAt(at)})
	stop := run(t, s)
	if err := s.Enqueue(memstore.Write{Content: "stamped", Category: "core", Importance: 0.7}); err != nil {
		t.Fatal(err)
	}
	rows := stoppedRows(t, path, 1, stop)
	if rows[0].CreatedAt != "2026-11-24T11:05:09.123456+00:00" {
		t.Errorf("created_at %q", rows[0].CreatedAt)
	}
}

func TestCreatesMissingDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "deep", "memory", "brain.db")
	var logs bytes.Buffer
	s := memstore.New(memstore.Config{Path: path, Logger: hclog.New(&hclog.LoggerOptions{Output: &logs})})
	run(t, s)
	if err := s.Enqueue(memstore.Write{Content: "the robot's name is Dotty", Category: "core", Importance: 0.7}); err != nil {
		t.Fatal(err)
	}
	waitRows(t, path, 1)
	rows, err := s.Search(context.Background(), "name is Dotty", 5)
	if err != nil || len(rows) != 1 || rows[0].Content != "the robot's name is Dotty" || rows[0].Namespace != "voice" {
		t.Errorf("search %+v %v", rows, err)
	}
	if n := strings.Count(logs.String(), "created the voice memory database"); n != 1 {
		t.Errorf("creation logged %d times", n)
	}
}

func TestSearch(t *testing.T) {
	path := memstoretest.V1(t)
	s := memstore.New(memstore.Config{Path: path})
	stop := run(t, s)
	for _, c := range []string{"Alex likes red apples", "Sam said \"hello there\" loudly", "red apples are tasty", "apples red", "likes"} {
		if err := s.Enqueue(memstore.Write{Content: c, Category: "core", Importance: 0.7}); err != nil {
			t.Fatal(err)
		}
	}
	waitRows(t, path, 5)
	_ = stop()
	ctx := context.Background()
	rows, err := s.Search(ctx, "red apples", 5)
	if err != nil || len(rows) != 2 {
		t.Fatalf("phrase search: %+v %v (the phrase must be in order)", rows, err)
	}
	if rows, _ := s.Search(ctx, `"hello there"`, 5); len(rows) != 1 {
		t.Errorf("quotes in the query: %+v", rows)
	}
	if rows, _ := s.Search(ctx, "dinosaurs", 5); len(rows) != 0 {
		t.Errorf("no match: %+v", rows)
	}
	if rows, _ := s.Search(ctx, "a OR b NEAR(x)", 5); len(rows) != 0 {
		t.Errorf("FTS syntax must be quoted: %+v", rows)
	}
	if got := memstore.PhraseQuery(`say "hi"`); got != `"say ""hi"""` {
		t.Errorf("PhraseQuery = %s", got)
	}
	missing := memstore.New(memstore.Config{Path: filepath.Join(t.TempDir(), "none.db")})
	if _, err := missing.Search(ctx, "x", 5); err == nil {
		t.Error("a missing database should be an error (no memories)")
	}
}

// A write accepted while another connection holds the database locked
// reaches it once the lock is released.
func TestWriteWaitsOutALock(t *testing.T) {
	path := memstoretest.V1(t)
	var logs testkit.LogBuffer
	s := memstore.New(memstore.Config{Path: path, WriteBusyTimeout: 100 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	run(t, s)
	release := memstoretest.Lock(t, path)
	// Enqueue answers while the lock is held: it waits for the journal,
	// never for the database.
	accepted := make(chan error, 1)
	go func() {
		accepted <- s.Enqueue(memstore.Write{Content: "written after the lock", Category: "core", Importance: 0.7})
	}()
	if err := testkit.Recv(t, 10*time.Second, accepted, "Enqueue waited for the locked database"); err != nil {
		t.Fatal(err)
	}
	// Hold the lock until the writer has met it and retried.
	testkit.WaitFor(t, 10*time.Second, "the writer to report the busy database", func() bool {
		return strings.Contains(logs.String(), "retrying")
	})
	release()
	rows := waitRows(t, path, 1)
	if rows[0].Content != "written after the lock" {
		t.Errorf("rows %+v", rows)
	}
}

// Writes queued behind a lock are all written at shutdown once it lifts.
func TestShutdownDrainsQueue(t *testing.T) {
	path := memstoretest.V1(t)
	s := memstore.New(memstore.Config{Path: path, WriteBusyTimeout: 50 * time.Millisecond})
	stop := run(t, s)
	release := memstoretest.Lock(t, path)
	for i := 0; i < 20; i++ {
		if err := s.Enqueue(memstore.Write{Content: fmt.Sprintf("fact %d", i), Category: "core", Importance: 0.7}); err != nil {
			t.Fatal(err)
		}
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	testkit.WaitFor(t, 10*time.Second, "shutdown to begin", func() bool { return !s.Accepting() })
	if err := s.Enqueue(memstore.Write{Content: "too late", Category: "core"}); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("enqueue during shutdown: %v", err)
	}
	release()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	rows := memstoretest.Rows(t, path)
	if len(rows) != 20 {
		t.Fatalf("%d rows after shutdown, want all 20", len(rows))
	}
	for i, r := range rows {
		if r.Content != fmt.Sprintf("fact %d", i) {
			t.Errorf("row %d = %q: order not kept", i, r.Content)
		}
	}
}

func TestQueueFull(t *testing.T) {
	path := memstoretest.V1(t)
	s := memstore.New(memstore.Config{Path: path, QueueSize: 2, WriteBusyTimeout: 50 * time.Millisecond, DrainTimeout: 10 * time.Second})
	release := memstoretest.Lock(t, path)
	stop := run(t, s)
	accepted := 0
	var full error
	for i := 0; i < 10 && full == nil; i++ {
		if err := s.Enqueue(memstore.Write{Content: fmt.Sprint(i), Category: "core"}); err != nil {
			full = err
		} else {
			accepted++
		}
	}
	if !errors.Is(full, memstore.ErrQueueFull) || accepted > 3 {
		t.Errorf("accepted %d, then %v", accepted, full)
	}
	release()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := len(memstoretest.Rows(t, path)); n != accepted {
		t.Errorf("%d rows, want every accepted write (%d)", n, accepted)
	}
}

func TestDatabaseAppearsLater(t *testing.T) {
	path := filepath.Join(t.TempDir(), "brain.db")
	blocker := path + ".d"
	// The directory cannot be created, so the store cannot create the file.
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := memstore.New(memstore.Config{Path: filepath.Join(blocker, "brain.db"), Journal: filepath.Join(t.TempDir(), "journal")})
	run(t, s)
	if err := s.Enqueue(memstore.Write{Content: "kept", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	if rows, err := s.Search(context.Background(), "kept", 5); err == nil || len(rows) != 0 {
		t.Errorf("search without a database: %v %v", rows, err)
	}
}

// blockedStore is a store whose brain.db path lies under a regular file
// where its directory should be (ENOTDIR, even for root), with its health
// conditions and its Info log. journal, unless empty, names its journal
// beside the blocker; else the journal is beside brain.db, blocked too.
func blockedStore(t *testing.T, journal string) (s *memstore.Store, path, blocker string, conds *healthtest.Set, logs *testkit.LogBuffer) {
	t.Helper()
	root := t.TempDir()
	blocker = testkit.Blocker(t, filepath.Join(root, "memory"))
	path = filepath.Join(blocker, "brain.db")
	if journal != "" {
		journal = filepath.Join(root, journal)
	}
	logs = &testkit.LogBuffer{}
	conds = healthtest.New(t, nil)
	s = memstore.New(memstore.Config{Path: path, Journal: journal, Health: conds.Conditions,
		Logger: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})})
	return s, path, blocker, conds, logs
}

// TestUnwritableStoreIsAHealthCondition: a database and journal under a
// path that cannot be created are two /health problems, each logged once
// with the error once, however many writes are refused; once the
// directory can be made their re-checks clear both, with one Info line
// each and no write; then the journal accepts writes, the writer creates
// the database and the row reaches it, with nothing more to say.
func TestUnwritableStoreIsAHealthCondition(t *testing.T) {
	s, path, blocker, conds, logs := blockedStore(t, "")
	run(t, s)
	testkit.WaitFor(t, 10*time.Second, "the database's condition", func() bool { return len(conds.Problems()) == 1 })
	for range 3 {
		if err := s.Enqueue(memstore.Write{Content: "refused", Category: "core"}); !errors.Is(err, memstore.ErrJournal) {
			t.Fatalf("Enqueue: %v, want ErrJournal", err)
		}
	}
	want := []string{"memory database: stat " + path + ": not a directory", "memory journal: mkdir " + blocker + ": not a directory"}
	if d := cmp.Diff(conds.Problems(), want); d != "" {
		t.Errorf("problems (-got +want):\n%s", d)
	}
	testkit.SaidOnce(t, strings.Split(strings.TrimSpace(logs.String()), "\n"), "not a directory",
		"[ERROR] voice memory database unavailable", "[ERROR] voice memory journal not writable")
	conds.Recheck(t)
	if d := cmp.Diff(conds.Problems(), want); d != "" {
		t.Errorf("problems after a re-check with the blocker in place (-got +want):\n%s", d)
	}

	// The directory can be made: the re-checks clear both conditions
	// before any write.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	conds.Recheck(t)
	if got := conds.Problems(); got != nil {
		t.Errorf("problems after the re-check %q, want none", got)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "[INFO]  memory database recovered: its re-check passed") ||
		!strings.Contains(lines[1], "[INFO]  memory journal recovered: its re-check passed") {
		t.Errorf("want one Info line per re-checked condition, got:\n%s", logs.String())
	}

	// Writes are accepted again, and the writer creates the database.
	logs.Reset()
	if err := s.Enqueue(memstore.Write{Content: "kept", Category: "core"}); err != nil {
		t.Fatalf("Enqueue after the fix: %v", err)
	}
	if rows := waitRows(t, path, 1); rows[0].Content != "kept" {
		t.Errorf("rows %+v", rows)
	}
	if got := conds.Problems(); got != nil {
		t.Errorf("problems after the write %q", got)
	}
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "[INFO]  created the voice memory database") {
		t.Errorf("want only the creation's line, got:\n%s", logs.String())
	}
}

// TestDatabaseConditionRecheckedOnlyWhenHonest: brain.db on a read-only
// file system (root cannot write it either) refuses the writer's row: a
// condition re-checked by opening the file for writing, which clears it
// once the file system is writable and has the row written at once. A
// corrupt brain.db is a condition no writable directory fixes: its
// re-check does not exist, and only a row written clears it. Neither
// loses the row: it waits in the journal until brain.db takes it.
func TestDatabaseConditionRecheckedOnlyWhenHonest(t *testing.T) {
	mnt, path, src, ok := v1OnTmpfs(t, 4<<20)
	if !ok {
		return
	}
	var logs testkit.LogBuffer
	conds := healthtest.New(t, nil)
	s := memstore.New(memstore.Config{Path: path, Journal: filepath.Join(t.TempDir(), "journal"), Health: conds.Conditions,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	stop := run(t, s)
	t.Cleanup(func() { _ = stop() }) // closes brain.db before the unmount

	testkit.Remount(t, mnt, true)
	if err := s.Enqueue(memstore.Write{Content: "kept while read-only", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the database's condition", func() bool { return len(conds.Problems()) == 1 })
	// The writer logs the failure after it sets the condition.
	testkit.WaitFor(t, 10*time.Second, "the failed write's log line", func() bool {
		return strings.Contains(logs.String(), "voice memory write failed")
	})
	if got := conds.Problems(); !strings.HasPrefix(got[0], "memory database: ") || !strings.Contains(got[0], "readonly") ||
		!strings.HasSuffix(got[0], "read-only file system)") {
		t.Errorf("problems %q, want the database read-only, saying why", got)
	}
	conds.Recovers(t, 1, func() error { testkit.Remount(t, mnt, false); logs.Reset(); return nil })
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "[INFO]  memory database recovered: its re-check passed") {
		t.Errorf("want one Info line for the recovery, got:\n%s", logs.String())
	}
	if rows := waitRows(t, path, 1); rows[0].Content != "kept while read-only" {
		t.Errorf("rows %+v", rows)
	}

	// Not a database any more: the directory takes files, the condition
	// stays until a row is written.
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(memstore.Write{Content: "kept while corrupt", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the corrupt database's condition", func() bool { return len(conds.Problems()) == 1 })
	conds.Recheck(t)
	conds.Recheck(t)
	if got := conds.Problems(); len(got) != 1 || !strings.HasPrefix(got[0], "memory database: ") {
		t.Errorf("problems %q after re-checks of a corrupt database, want it kept", got)
	}
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Enqueue(memstore.Write{Content: "kept", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a row written to clear it", func() bool { return conds.Problems() == nil })
	if rows := waitRows(t, path, 2); len(rows) != 2 || rows[0].Content != "kept while corrupt" || rows[1].Content != "kept" {
		t.Errorf("rows %+v, want the one that waited, then the new one", rows)
	}
}

// TestCompactionHasItsOwnCondition: a journal that takes appends but
// cannot be emptied (append-only, which root meets too) is one condition
// of its own, said once however many writes follow, none of them saying
// the journal is "writable again"; it has no re-check (only emptying it
// proves the journal holds no row written already) and clears at the
// first compaction that works.
func TestCompactionHasItsOwnCondition(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to set the append-only attribute (chattr +a)")
	}
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("needs chattr (e2fsprogs) to make the journal append-only")
	}
	path := memstoretest.V1(t)
	journal := testkit.Blocker(t, filepath.Join(t.TempDir(), "journal"))
	if out, err := exec.Command(chattr, "+a", journal).CombinedOutput(); err != nil {
		t.Skipf("this file system takes no append-only attribute: %v %s", err, out)
	}
	appendOnly := true
	clearAttr := func() {
		if appendOnly {
			if out, err := exec.Command(chattr, "-a", journal).CombinedOutput(); err != nil {
				t.Fatalf("chattr -a: %v %s", err, out)
			}
			appendOnly = false
		}
	}
	t.Cleanup(clearAttr) // before the directory is removed
	var logs testkit.LogBuffer
	conds := healthtest.New(t, nil)
	s := memstore.New(memstore.Config{Path: path, Journal: journal, Health: conds.Conditions,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})})
	run(t, s)
	for i := range 3 {
		if err := s.Enqueue(memstore.Write{Content: fmt.Sprint("fact ", i), Category: "core"}); err != nil {
			t.Fatal(err)
		}
		waitRows(t, path, i+1)
		testkit.WaitFor(t, 10*time.Second, "the compaction's failure", func() bool { return len(conds.Problems()) == 1 })
	}
	if got := conds.Problems(); !strings.HasPrefix(got[0], "memory journal compaction: ") || !strings.HasSuffix(got[0], "operation not permitted") {
		t.Errorf("problems %q, want the compaction's", got)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "[WARN]  voice memory journal not emptied") {
		t.Errorf("want one Warn line for the compaction, got:\n%s", logs.String())
	}
	conds.Recheck(t)
	if len(conds.Problems()) != 1 {
		t.Error("a re-check cleared the compaction's condition")
	}

	clearAttr()
	logs.Reset()
	if err := s.Enqueue(memstore.Write{Content: "fact 3", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the compaction to work", func() bool { return conds.Problems() == nil })
	if lines := strings.Split(strings.TrimSpace(logs.String()), "\n"); len(lines) != 1 ||
		!strings.Contains(lines[0], "[INFO]  voice memory journal emptied again") {
		t.Errorf("want one Info line for the compaction, got:\n%s", logs.String())
	}
	if st, err := os.Stat(journal); err != nil || st.Size() != 0 {
		t.Errorf("journal after the compaction: %v %v", st.Size(), err)
	}
}
