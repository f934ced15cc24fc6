package observe

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// Memory is one row of brain.db's memories table, with the person a
// per-person fact is about: namespace person:<id> (approved) or
// person_pending:<id> (held for a grown-up's review).
type Memory struct {
	memstoretest.Row
	// Person is the id after the namespace's colon; "" for a row that is
	// not a per-person fact.
	Person string
	// Pending is true for a fact held for review.
	Pending bool
}

// Memories reads every row of the brain.db at path, read-only, oldest
// first.
func Memories(path string) ([]Memory, error) {
	rows, err := memstoretest.TryRows(path)
	if err != nil {
		return nil, fmt.Errorf("observe: memories in %s: %w", path, err)
	}
	out := make([]Memory, len(rows))
	for i, r := range rows {
		out[i].Row = r
		if id, ok := strings.CutPrefix(r.Namespace, "person_pending:"); ok {
			out[i].Person, out[i].Pending = id, true
		} else if id, ok := strings.CutPrefix(r.Namespace, "person:"); ok {
			out[i].Person = id
		}
	}
	return out, nil
}

// CheckMemory checks that every acknowledged fact (answered 204, or 200
// with ok) is in the brain.db at path exactly once and no refused one is,
// waiting up to wait for the writer to drain. It returns how many
// acknowledged facts are stored.
func CheckMemory(path string, acked, refused []string, wait time.Duration) (int, error) {
	deadline := time.Now().Add(wait)
	for {
		stored := map[string]int{}
		rows, readErr := Memories(path)
		for _, r := range rows {
			stored[r.Content]++
		}
		missing, twice, kept := 0, 0, 0
		for _, f := range acked {
			switch stored[f] {
			case 0:
				missing++
			case 1:
			default:
				twice++
			}
		}
		for _, f := range refused {
			if stored[f] > 0 {
				kept++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			var errs []error
			if missing > 0 {
				errs = append(errs, fmt.Errorf("%d of %d acknowledged memory writes missing from brain.db", missing, len(acked)))
				if readErr != nil {
					errs = append(errs, readErr)
				}
			}
			if twice > 0 {
				errs = append(errs, fmt.Errorf("%d acknowledged memory writes stored more than once", twice))
			}
			if kept > 0 {
				errs = append(errs, fmt.Errorf("%d refused memory writes stored anyway", kept))
			}
			return len(acked) - missing, errors.Join(errs...)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
