package memstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// Per-person writes, approvals, redactions and reads all at once while a
// stand-in for ZeroClaw keeps locking the file: no acknowledged write is
// lost, no held fact is ever read before its approval was asked for, a
// redacted row never lingers in the journal, and the FTS index ends in
// step with the table — in both schemas and both journal modes.
func TestPersonMemoryUnderContention(t *testing.T) {
	for _, tt := range []struct {
		name string
		db   func(testing.TB) string
		wal  bool
	}{
		{"V1 rollback journal", memstoretest.V1, false},
		{"V1 WAL", memstoretest.V1, true},
		{"V3 rollback journal", func(t testing.TB) string { return memstoretest.V3(t, "default") }, false},
		{"V3 WAL", func(t testing.TB) string { return memstoretest.V3(t, "default") }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.db(t)
			if tt.wal {
				memstoretest.WAL(t, path)
			}
			contend(t, path)
		})
	}
}

func contend(t *testing.T, path string) {
	const writers, perWriter = 4, 20
	s := memstore.New(memstore.Config{Path: path, WriteBusyTimeout: 50 * time.Millisecond, ReadBusyTimeout: time.Second})
	stopStore := run(t, s)
	stopChurn := memstoretest.Churn(t, path, 15*time.Millisecond, 15*time.Millisecond)

	var (
		mu        sync.Mutex
		acked     = map[string]bool{} // content → held for review
		attempted = map[string]bool{} // held contents an approval was asked for
		approved  = map[string]bool{}
		redacted  = map[string]bool{}
		problems  []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	// A held fact may be read only once its approval has been asked for.
	readable := func(content string) bool {
		if strings.HasPrefix(content, "adult ") {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		return attempted[content]
	}

	var writing sync.WaitGroup
	for w := range writers {
		writing.Go(func() {
			for i := range perWriter {
				held := i%2 == 0
				content := fmt.Sprintf("adult w%d-%d", w, i)
				if held {
					content = fmt.Sprintf("held w%d-%d", w, i)
				}
				err := s.EnqueuePerson(memstore.PersonWrite{PersonID: fmt.Sprint("P", w), Fact: content, Pending: held})
				if err != nil {
					fail("enqueue %s: %v", content, err)
					continue
				}
				mu.Lock()
				acked[content] = held
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}

	quit := make(chan struct{})
	var others sync.WaitGroup
	for range 2 { // readers: the voice turn's block and memory_lookup
		others.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-quit:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				block := s.PersonBlock(ctx, fmt.Sprint("p", n%writers))
				rows, _ := s.Search(ctx, "held", 5)
				cancel()
				for line := range strings.Lines(strings.TrimPrefix(block, "[Person memory]\n")) {
					if c := strings.TrimSuffix(strings.TrimPrefix(line, "- "), "\n"); !readable(c) {
						fail("held fact %q in a block before its approval", c)
					}
				}
				for _, r := range rows {
					if !readable(r.Content) {
						fail("held fact %q found by search before its approval", r.Content)
					}
				}
			}
		})
	}
	reviewed := make(chan struct{}) // one full pass after the writers finished
	writersDone := make(chan struct{})
	others.Go(func() { // the grown-up at the review card
		for {
			// A pass that starts after the writers finished, and lists the
			// records, is the last one.
			last := false
			select {
			case <-quit:
				return
			case <-writersDone:
				last = true
			default:
			}
			// Each call gets its own bound, long enough that only a hang
			// reaches it: on a busy machine one pass of approvals can take
			// many seconds of waiting for the writer.
			opCtx := func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 60*time.Second)
			}
			// review approves or redacts r and marks it in done; a failure
			// fails the test.
			review := func(what string, op func(context.Context, string) (bool, error), r memstore.PersonRecord, done map[string]bool) bool {
				ctx, cancel := opCtx()
				ok, err := op(ctx, r.ID)
				cancel()
				if err != nil || !ok {
					fail("%s %s: %v %v", what, r.Content, ok, err)
					return false
				}
				mu.Lock()
				done[r.Content] = true
				mu.Unlock()
				return true
			}
			ctx, cancel := opCtx()
			recs, _, err := s.PersonRecords(ctx)
			cancel()
			if err != nil {
				// A read that outwaits ReadBusyTimeout behind the lock
				// holder says so and the card asks again; anything else
				// is a failure.
				if !strings.Contains(err.Error(), "SQLITE_BUSY") {
					fail("list: %v", err)
				}
				time.Sleep(5 * time.Millisecond)
				continue
			}
			for _, r := range recs {
				switch {
				case r.Pending:
					mu.Lock()
					attempted[r.Content] = true
					mu.Unlock()
					review("approve", s.Approve, r, approved)
				case strings.HasPrefix(r.Content, "adult") && seq(r.Content)%4 == 1:
					if !review("redact", s.Redact, r, redacted) {
						continue
					}
					if j, err := os.ReadFile(path + ".voice-journal"); err == nil && strings.Contains(string(j), r.ID) {
						fail("redacted row %s still in the journal", r.ID)
					}
				}
			}
			if last {
				close(reviewed)
				<-quit
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	writing.Wait()
	// The writer lags behind the locks; the last review pass starts once
	// every acknowledged write is in brain.db.
	testkit.WaitFor(t, 120*time.Second, "every acknowledged write in brain.db", func() bool {
		rows, err := memstoretest.TryRows(path)
		mu.Lock()
		defer mu.Unlock()
		return err == nil && len(rows)+len(redacted) >= len(acked)
	})
	close(writersDone)
	select {
	case <-reviewed:
	case <-time.After(5 * time.Minute):
		t.Error("the reviewer never finished a pass")
	}
	close(quit)
	others.Wait()
	if locks := stopChurn(); locks == 0 {
		t.Error("the lock holder never got the lock")
	}
	if err := stopStore(); err != nil {
		t.Fatal(err)
	}

	for _, p := range problems {
		t.Error(p)
	}
	got := map[string]memstoretest.Row{}
	for _, r := range memstoretest.Rows(t, path) {
		if _, dup := got[r.Content]; dup {
			t.Errorf("%q written twice", r.Content)
		}
		got[r.Content] = r
	}
	if len(acked) != writers*perWriter {
		t.Errorf("%d writes acknowledged, want all %d", len(acked), writers*perWriter)
	}
	for content, held := range acked {
		r, ok := got[content]
		person := "p" + content[strings.Index(content, "w")+1:strings.Index(content, "-")]
		switch {
		case redacted[content]:
			if ok {
				t.Errorf("redacted %q still stored", content)
			}
		case !ok:
			t.Errorf("acknowledged write %q lost", content)
		case held && !approved[content]:
			t.Errorf("held %q (in %s) never approved", content, r.Namespace)
		case r.Namespace != "person:"+person:
			t.Errorf("%q in %s, want person:%s", content, r.Namespace, person)
		}
		delete(got, content)
	}
	if len(got) > 0 {
		t.Errorf("rows nobody wrote: %v", got)
	}
	memstoretest.CheckFTS(t, path)
}

// seq is the write number at the end of a contention fact ("adult w1-5": 5).
func seq(content string) int {
	var i int
	_, _ = fmt.Sscanf(content[strings.LastIndexByte(content, '-')+1:], "%d", &i)
	return i
}
