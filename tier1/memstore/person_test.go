package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// schemas are ZeroClaw's two generations of brain.db.
func schemas(t *testing.T) []struct{ name, path string } {
	return []struct{ name, path string }{
		{"V1", memstoretest.V1(t)},
		{"V3", memstoretest.V3(t, "default")},
	}
}

// rowByContent returns the stored row holding content.
func rowByContent(t *testing.T, path, content string) memstoretest.Row {
	t.Helper()
	for _, r := range memstoretest.Rows(t, path) {
		if r.Content == content {
			return r
		}
	}
	t.Fatalf("no row %q", content)
	return memstoretest.Row{}
}

func TestEnqueuePersonRows(t *testing.T) {
	for _, sc := range schemas(t) {
		t.Run(sc.name, func(t *testing.T) {
			s := memstore.New(memstore.Config{Path: sc.path})
			stop := run(t, s)
			long := strings.Repeat("é", 400)
			for _, w := range []memstore.PersonWrite{
				{PersonID: "  Brett ", Fact: "  likes strong coffee \n", SessionID: "s1", HasSession: true},
				{PersonID: "ALEX", Fact: long, Pending: true},
			} {
				if err := s.EnqueuePerson(w); err != nil {
					t.Fatal(err)
				}
			}
			rows := stoppedRows(t, sc.path, 2, stop)
			for i, want := range []struct {
				ns, content string
				session     bool
			}{{"person:brett", "likes strong coffee", true}, {"person_pending:alex", strings.Repeat("é", 300), false}} {
				r := rows[i]
				m := keyRe.FindStringSubmatch(r.Key)
				if r.Namespace != want.ns || r.Content != want.content || r.Category != "core" || r.Importance != 0.7 ||
					r.SessionID.Valid != want.session || m == nil || m[1] != "core" {
					t.Errorf("row %d: %+v", i, r)
				}
			}
		})
	}
}

func TestEnqueuePersonRefusesBadInput(t *testing.T) {
	s := memstore.New(memstore.Config{Path: memstoretest.V1(t)})
	for _, w := range []memstore.PersonWrite{
		{PersonID: "", Fact: "x"},
		{PersonID: " \t", Fact: "x"},
		{PersonID: strings.Repeat("a", memstore.MaxPersonIDLen+1), Fact: "x"},
		{PersonID: "al\nex", Fact: "x"},
		{PersonID: "al\u200bex", Fact: "x"},
		{PersonID: "alex", Fact: "  "},
	} {
		if err := s.EnqueuePerson(w); !errors.Is(err, memstore.ErrInvalidPersonFact) {
			t.Errorf("%q/%q: %v", w.PersonID, w.Fact, err)
		}
	}
	if s.Pending() != 0 {
		t.Errorf("%d writes queued from bad input", s.Pending())
	}
	if err := s.EnqueuePerson(memstore.PersonWrite{PersonID: strings.Repeat("é", memstore.MaxPersonIDLen), Fact: "x"}); err != nil {
		t.Errorf("a %d-character id: %v", memstore.MaxPersonIDLen, err)
	}
}

func TestPersonBlock(t *testing.T) {
	for _, sc := range schemas(t) {
		t.Run(sc.name, func(t *testing.T) {
			cut := strings.Repeat("a", 158) + "  tail that is cut off" // 159 characters end in a space
			exact := strings.Repeat("b", 160)
			memstoretest.Insert(t, sc.path,
				memstoretest.Memory{ID: "r1", Content: "newer, less important", Namespace: "person:alex", Importance: 0.5, CreatedAt: "2026-01-01", UpdatedAt: "2026-06-01"},
				memstoretest.Memory{ID: "r2", Content: " most important ", Namespace: "person:alex", Importance: 0.9, CreatedAt: "2026-01-01", UpdatedAt: "2026-01-01"},
				memstoretest.Memory{ID: "r3", Content: "older", Namespace: "person:alex", Importance: 0.7, CreatedAt: "2026-01-01", UpdatedAt: "2026-02-01"},
				memstoretest.Memory{ID: "r4", Content: cut, Namespace: "person:alex", Importance: 0.7, CreatedAt: "2026-01-01", UpdatedAt: "2026-04-01"},
				memstoretest.Memory{ID: "r5", Content: exact, Namespace: "person:alex", Importance: 0.7, CreatedAt: "2026-01-01", UpdatedAt: "2026-03-01"},
				memstoretest.Memory{ID: "r6", Content: "   ", Namespace: "person:alex", Importance: 0.8, CreatedAt: "2026-01-01", UpdatedAt: "2026-01-01"},
				memstoretest.Memory{ID: "p1", Content: "held for review", Namespace: "person_pending:alex", Importance: 1, CreatedAt: "2026-01-01", UpdatedAt: "2026-07-01"},
				memstoretest.Memory{ID: "o1", Content: "about someone else", Namespace: "person:alexander", Importance: 1, CreatedAt: "2026-01-01", UpdatedAt: "2026-07-01"},
				memstoretest.Memory{ID: "v1", Content: "a voice fact", Namespace: "voice", Importance: 1, CreatedAt: "2026-01-01", UpdatedAt: "2026-07-01"},
			)
			ctx := context.Background()
			s := memstore.New(memstore.Config{Path: sc.path})
			run(t, s) // its stop closes the cached read handle
			want := "[Person memory]\n" +
				"- most important\n" +
				"- " + strings.Repeat("a", 158) + "…\n" +
				"- " + exact + "\n" +
				"- older\n" +
				"- newer, less important\n"
			for _, id := range []string{"alex", " ALEX "} {
				if got := s.PersonBlock(ctx, id); got != want {
					t.Errorf("PersonBlock(%q) =\n%s\nwant\n%s", id, got, want)
				}
			}
			for _, id := range []string{"", "nobody", "al", strings.Repeat("x", 100)} {
				if got := s.PersonBlock(ctx, id); got != "" {
					t.Errorf("PersonBlock(%q) = %q", id, got)
				}
			}
			// The blank fact counts against the limit, as bridge.py's did.
			few := memstore.New(memstore.Config{Path: sc.path, PersonMaxFacts: 3})
			run(t, few)
			if got := few.PersonBlock(ctx, "alex"); got != "[Person memory]\n- most important\n- "+strings.Repeat("a", 158)+"…\n" {
				t.Errorf("three facts: %q", got)
			}
			if got := memstore.New(memstore.Config{Path: sc.path, PersonMaxFacts: -1}).PersonBlock(ctx, "alex"); got != "" {
				t.Errorf("block turned off: %q", got)
			}
			facts := s.PersonFacts(ctx, "alex", 2)
			if len(facts) != 2 || facts[0].ID != "r2" || facts[1].ID != "r6" || facts[0].PersonID != "alex" || facts[0].Pending {
				t.Errorf("PersonFacts %+v", facts)
			}
			missing := memstore.New(memstore.Config{Path: filepath.Join(t.TempDir(), "none.db")})
			if got := missing.PersonBlock(ctx, "alex"); got != "" {
				t.Errorf("no database: %q", got)
			}
		})
	}
}

func TestPersonMaxFactsValidated(t *testing.T) {
	if err := (memstore.Config{Path: "x", PersonMaxFacts: memstore.MaxPersonFacts + 1}).Validate(); err == nil {
		t.Error("too many facts per turn accepted")
	}
	if err := (memstore.Config{Path: "x", PersonMaxFacts: -1}).Validate(); err != nil {
		t.Error(err)
	}
}

// A held fact is invisible to the block and to memory_lookup's search
// until approved; redacting removes the row and its FTS entry.
func TestApproveAndRedact(t *testing.T) {
	for _, sc := range schemas(t) {
		t.Run(sc.name, func(t *testing.T) {
			clk := clockwork.NewFakeClockAt(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
			s := memstore.New(memstore.Config{Path: sc.path, Clock: clk})
			run(t, s)
			ctx := context.Background()
			memstoretest.Insert(t, sc.path, memstoretest.Memory{ID: "zc-1", Content: "Alex visited the zoo", Namespace: "default",
				Importance: 0.5, CreatedAt: "2026-01-01", UpdatedAt: "2026-01-01"})
			if err := s.EnqueuePerson(memstore.PersonWrite{PersonID: "alex", Fact: "Alex loves stegosaurus toys", Pending: true}); err != nil {
				t.Fatal(err)
			}
			waitRows(t, sc.path, 2)
			held := rowByContent(t, sc.path, "Alex loves stegosaurus toys")
			// hidden checks the fact is in neither the block nor a search,
			// with fts entries for it in the FTS index.
			hidden := func(what string, fts int) {
				t.Helper()
				if got := s.PersonBlock(ctx, "alex"); got != "" {
					t.Errorf("%s fact in the block: %q", what, got)
				}
				if rows, _ := s.Search(ctx, "stegosaurus", 5); len(rows) != 0 {
					t.Errorf("%s fact found by search: %+v", what, rows)
				}
				if n := memstoretest.FTSMatches(t, sc.path, "stegosaurus"); n != fts {
					t.Errorf("FTS index has %d entries for the %s fact, want %d", n, what, fts)
				}
			}
			hidden("held", 1) // only the search hides it
			recs, more, err := s.PersonRecords(ctx)
			if err != nil || more || len(recs) != 1 || !recs[0].Pending || recs[0].PersonID != "alex" || recs[0].ID != held.ID {
				t.Fatalf("records %+v %v %v", recs, more, err)
			}

			clk.Advance(time.Hour)
			if ok, err := s.Approve(ctx, held.ID); !ok || err != nil {
				t.Fatalf("approve: %v %v", ok, err)
			}
			approved := rowByContent(t, sc.path, "Alex loves stegosaurus toys")
			if approved.Namespace != "person:alex" || approved.UpdatedAt != "2026-05-01T09:00:00.000000+00:00" || approved.CreatedAt != held.CreatedAt {
				t.Errorf("approved row %+v", approved)
			}
			if got := s.PersonBlock(ctx, "alex"); got != "[Person memory]\n- Alex loves stegosaurus toys\n" {
				t.Errorf("block after approval: %q", got)
			}
			if rows, _ := s.Search(ctx, "stegosaurus", 5); len(rows) != 1 {
				t.Errorf("approved fact not found: %+v", rows)
			}
			if ok, err := s.Approve(ctx, held.ID); ok || err != nil {
				t.Errorf("second approve: %v %v", ok, err)
			}
			memstoretest.CheckFTS(t, sc.path)

			if ok, err := s.Redact(ctx, held.ID); !ok || err != nil {
				t.Fatalf("redact: %v %v", ok, err)
			}
			hidden("redacted", 0)
			memstoretest.CheckFTS(t, sc.path)

			for _, id := range []string{held.ID, "", "no-such-row", "' OR 1=1 --", "zc-1%", strings.Repeat("a", memstore.MaxRowIDLen+1), "zc-1"} {
				if ok, err := s.Redact(ctx, id); ok || err != nil {
					t.Errorf("redact %q: %v %v", id, ok, err)
				}
				if ok, err := s.Approve(ctx, id); ok || err != nil {
					t.Errorf("approve %q: %v %v", id, ok, err)
				}
			}
			if rows := memstoretest.Rows(t, sc.path); len(rows) != 1 || rows[0].ID != "zc-1" {
				t.Errorf("ZeroClaw's own row must survive redaction attempts: %+v", rows)
			}
		})
	}
}

// A held fact written before a held fact of another person and an
// approved one: the listing puts the held first and caps its length.
func TestPersonRecords(t *testing.T) {
	path := memstoretest.V1(t)
	s := memstore.New(memstore.Config{Path: path})
	run(t, s)
	ctx := context.Background()
	if recs, more, err := memstore.New(memstore.Config{Path: filepath.Join(t.TempDir(), "none.db")}).PersonRecords(ctx); recs != nil || more || err != nil {
		t.Errorf("no database: %v %v %v", recs, more, err)
	}
	rows := []memstoretest.Memory{
		{ID: "a1", Content: "approved", Namespace: "person:alex", Importance: 0.7, CreatedAt: "c", UpdatedAt: "2026-01-01"},
		{ID: "p1", Content: "held b", Namespace: "person_pending:brett", Importance: 0.7, CreatedAt: "c", UpdatedAt: "2026-01-01"},
		{ID: "p2", Content: "held a", Namespace: "person_pending:alex", Importance: 0.7, CreatedAt: "c", UpdatedAt: "2026-01-01"},
		{ID: "v1", Content: "voice", Namespace: "voice", Importance: 0.7, CreatedAt: "c", UpdatedAt: "c"},
		{ID: "x1", Content: "not a person", Namespace: "personal", Importance: 0.7, CreatedAt: "c", UpdatedAt: "c"},
		{ID: "x2", Content: "not a person", Namespace: "person_pendingx", Importance: 0.7, CreatedAt: "c", UpdatedAt: "c"},
	}
	memstoretest.Insert(t, path, rows...)
	recs, more, err := s.PersonRecords(ctx)
	if err != nil || more {
		t.Fatal(more, err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s:%s:%v", r.ID, r.PersonID, r.Pending))
	}
	if want := "p2:alex:true p1:brett:true a1:alex:false"; strings.Join(got, " ") != want {
		t.Errorf("records %v, want %s", got, want)
	}
	var many []memstoretest.Memory
	for i := range memstore.MaxPersonRecords + 1 {
		many = append(many, memstoretest.Memory{ID: fmt.Sprint("m", i), Content: "fact", Namespace: "person:crowd", Importance: 0.7, CreatedAt: "c", UpdatedAt: "u"})
	}
	memstoretest.Insert(t, path, many...)
	recs, more, err = s.PersonRecords(ctx)
	if err != nil || !more || len(recs) != memstore.MaxPersonRecords || !recs[0].Pending || !recs[1].Pending {
		t.Errorf("capped listing: %d rows, more %v, %v", len(recs), more, err)
	}
}

// TestPersonRecordsUnreadableIsOneCondition: the review's listing of a
// brain.db whose path cannot be read (a regular file where its directory
// should be: ENOTDIR, even for root) is one /health problem, logged once
// however often the dashboard polls, and its error wraps
// health.ErrReported so the dashboard does not log it again; the
// condition's re-check clears it once the path reads, without a listing.
// A file that is not a database has no such re-check: the next listing
// that works clears it.
func TestPersonRecordsUnreadableIsOneCondition(t *testing.T) {
	s, path, blocker, conds, logs := blockedStore(t, "journal")
	ctx := context.Background()
	for range 3 {
		if recs, _, err := s.PersonRecords(ctx); recs != nil || !errors.Is(err, health.ErrReported) {
			t.Fatalf("listing under a file: %v %v, want an error wrapping ErrReported", recs, err)
		}
	}
	want := "memory review: list person memory: memory database: stat " + path + ": not a directory"
	if got := conds.Problems(); len(got) != 1 || got[0] != want {
		t.Errorf("problems %q, want [%q]", got, want)
	}
	testkit.SaidOnce(t, strings.Split(strings.TrimSpace(logs.String()), "\n"), "not a directory",
		"[WARN]  the memory review cannot read the voice memory database")
	conds.Recovers(t, 1, func() error { logs.Reset(); return os.Remove(blocker) })
	if !strings.Contains(logs.String(), "[INFO]  memory review recovered: its re-check passed") {
		t.Errorf("want the recovery's Info line, got:\n%s", logs.String())
	}

	// Not a database: no re-check clears it, a listing that works does.
	if err := os.Mkdir(blocker, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("not a database ", 512)), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, s) // the store's read handle is closed when it stops
	if _, _, err := s.PersonRecords(ctx); !errors.Is(err, health.ErrReported) {
		t.Fatalf("listing a file that is no database: %v", err)
	}
	conds.Recheck(t)
	if got := conds.Problems(); len(got) != 1 || !strings.HasPrefix(got[0], "memory review: ") {
		t.Errorf("problems %q after a re-check of a corrupt database, want it kept", got)
	}
	src, err := os.ReadFile(memstoretest.V1(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	logs.Reset()
	if recs, _, err := s.PersonRecords(ctx); err != nil || recs != nil {
		t.Fatalf("listing after the repair: %v %v", recs, err)
	}
	if conds.Problems() != nil || !strings.Contains(logs.String(), "[INFO]  voice memory database readable again by the memory review") {
		t.Errorf("problems %q, logs:\n%s", conds.Problems(), logs.String())
	}
}

// A review action waits out ZeroClaw's lock like a write, and gives up
// with the caller.
func TestReviewWaitsOutALock(t *testing.T) {
	path := memstoretest.V1(t)
	memstoretest.Insert(t, path, memstoretest.Memory{ID: "p1", Content: "held", Namespace: "person_pending:alex", Importance: 0.7, CreatedAt: "c", UpdatedAt: "c"})
	var logs testkit.LogBuffer
	s := memstore.New(memstore.Config{Path: path, WriteBusyTimeout: 50 * time.Millisecond,
		Logger: hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Warn})})
	run(t, s)
	release := memstoretest.Lock(t, path)

	short, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if ok, err := s.Approve(short, "p1"); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("approve under a lock past the deadline: %v %v", ok, err)
	}
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := s.Approve(context.Background(), "p1")
		done <- result{ok, err}
	}()
	testkit.WaitFor(t, 10*time.Second, "the writer to report the busy database", func() bool {
		return strings.Contains(logs.String(), "retrying")
	})
	release()
	if r := testkit.Recv(t, 10*time.Second, done, "approve never finished"); !r.ok || r.err != nil {
		t.Errorf("approve after the lock: %v %v", r.ok, r.err)
	}
	if r := memstoretest.Rows(t, path); r[0].Namespace != "person:alex" {
		t.Errorf("row %+v", r[0])
	}
}

func TestReviewNeedsTheWriter(t *testing.T) {
	path := memstoretest.V1(t)
	s := memstore.New(memstore.Config{Path: path})
	short, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := s.Approve(short, "p1"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("before Run: %v", err)
	}
	stop := run(t, s)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Redact(context.Background(), "p1"); !errors.Is(err, memstore.ErrClosed) {
		t.Errorf("after Run: %v", err)
	}
	if ok, err := memstore.New(memstore.Config{Path: filepath.Join(t.TempDir(), "none.db")}).Approve(context.Background(), "p1"); ok || err != nil {
		t.Errorf("no database: %v %v", ok, err)
	}
}

// A redacted fact is not in the journal, so a crash and replay cannot
// bring it back.
func TestRedactedFactStaysGoneAfterReplay(t *testing.T) {
	path := memstoretest.V1(t)
	s := memstore.New(memstore.Config{Path: path})
	stop := run(t, s)
	if err := s.EnqueuePerson(memstore.PersonWrite{PersonID: "alex", Fact: "secret"}); err != nil {
		t.Fatal(err)
	}
	id := waitRows(t, path, 1)[0].ID
	if ok, err := s.Redact(context.Background(), id); !ok || err != nil {
		t.Fatal(ok, err)
	}
	journal, err := os.ReadFile(path + ".voice-journal")
	if err != nil || strings.Contains(string(journal), id) {
		t.Fatalf("journal after redaction: %q %v", journal, err)
	}
	_ = stop()
	next := memstore.New(memstore.Config{Path: path})
	stop = run(t, next)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if rows := memstoretest.Rows(t, path); len(rows) != 0 {
		t.Errorf("redacted fact back after a restart: %+v", rows)
	}
}
