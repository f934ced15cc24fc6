package memstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// Writes accepted by a store that dies before its writer ran (no drain,
// as after kill -9) reach the database when the next store starts.
func TestAcceptedWritesSurviveACrash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "brain.db")
	crashed := memstore.New(memstore.Config{Path: path})
	for i := range 20 {
		if err := crashed.Enqueue(memstore.Write{Content: fmt.Sprint("fact ", i), Category: "core", Importance: 0.7}); err != nil {
			t.Fatal(err)
		}
	}
	// crashed never runs: its queue is lost with the process.
	next := memstore.New(memstore.Config{Path: path})
	stop := run(t, next)
	rows := stoppedRows(t, path, 20, stop)
	if len(rows) != 20 || rows[0].Content != "fact 0" || rows[19].Content != "fact 19" {
		t.Errorf("%d rows after replay", len(rows))
	}
	if fi, err := os.Stat(path + ".voice-journal"); err != nil || fi.Size() != 0 {
		t.Errorf("journal after replay: %v %v", fi, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("brain.db mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	// A replay of rows that already reached the database (a crash after
	// the insert, before the journal was emptied) adds none.
	journal := []byte(`{"id":"11111111-2222-3333-4444-555555555555","ts":"2026-11-24T10:00:00.000000+00:00","content":"once","category":"core","importance":0.7}` + "\n" + `{"id":"trunc`)
	for range 2 {
		if err := os.WriteFile(path+".voice-journal", journal, 0o600); err != nil {
			t.Fatal(err)
		}
		s := memstore.New(memstore.Config{Path: path})
		stop := run(t, s)
		waitRows(t, path, 21)
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(memstoretest.Rows(t, path)); n != 21 {
		t.Errorf("%d rows after replaying the same journal twice, want 21", n)
	}
}

// A line a crash cut off at the journal's end is never continued: the
// next accepted write starts a line of its own, so a later replay finds
// it (and skips the cut one, which was never acknowledged).
func TestCutJournalLineNotContinued(t *testing.T) {
	path := memstoretest.V1(t)
	journal := []byte(`{"id":"11111111-2222-3333-4444-555555555555","ts":"2026-11-24T10:00:00.000000+00:00","content":"whole","category":"core","importance":0.7}` + "\n" + `{"id":"cut-by-the-cr`)
	if err := os.WriteFile(path+".voice-journal", journal, 0o600); err != nil {
		t.Fatal(err)
	}
	crashed := memstore.New(memstore.Config{Path: path})
	if err := crashed.Enqueue(memstore.Write{Content: "after the crash", Category: "core"}); err != nil {
		t.Fatal(err)
	}
	// crashed dies too; the next start replays both whole lines.
	next := memstore.New(memstore.Config{Path: path})
	stop := run(t, next)
	rows := stoppedRows(t, path, 2, stop)
	if len(rows) != 2 || rows[0].Content != "whole" || rows[1].Content != "after the crash" {
		t.Errorf("rows %+v", rows)
	}
}

// BenchmarkEnqueue measures what an acknowledged write costs the caller:
// the journal append and its fsync.
func BenchmarkEnqueue(b *testing.B) {
	s := memstore.New(memstore.Config{Path: filepath.Join(b.TempDir(), "brain.db"), QueueSize: b.N + 1})
	b.ResetTimer()
	for i := range b.N {
		if err := s.Enqueue(memstore.Write{Content: fmt.Sprint("fact ", i), Category: "core"}); err != nil {
			b.Fatal(err)
		}
	}
}
