package agentconn

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestEndingOnce(t *testing.T) {
	e := NewEnding()
	if err := e.Err(); err != nil {
		t.Fatalf("Err of a live connection: %v", err)
	}
	closed := func() bool {
		select {
		case <-e.Done():
			return true
		default:
			return false
		}
	}
	var order []string
	e.End(nil,
		func() { order = append(order, fmt.Sprintf("before (Done closed %v)", closed())) },
		func() { order = append(order, fmt.Sprintf("after (Done closed %v)", closed())) })
	e.End(errors.New("second"), func() { order = append(order, "again") }, nil)
	if want := []string{"before (Done closed false)", "after (Done closed true)"}; fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("hooks ran %q, want %q", order, want)
	}
	if !closed() || !errors.Is(e.Err(), ErrAgentGone) {
		t.Errorf("after End(nil): Done closed %v, Err %v; want closed and ErrAgentGone", closed(), e.Err())
	}
}

// Concurrent ends: one wins, its reason is the one Err reports, and every
// End returns with Done closed.
func TestEndingConcurrent(t *testing.T) {
	e := NewEnding()
	errs := make([]error, 8)
	var wg sync.WaitGroup
	var mu sync.Mutex
	befores := 0
	for i := range errs {
		errs[i] = fmt.Errorf("end %d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.End(errs[i], func() { mu.Lock(); befores++; mu.Unlock() }, nil)
			if e.Err() == nil {
				t.Error("End returned before the connection ended")
			}
		}()
	}
	wg.Wait()
	found := false
	for _, err := range errs {
		found = found || e.Err() == err
	}
	if befores != 1 || !found {
		t.Errorf("%d before hooks ran, Err %v: want 1 and one of the reasons given", befores, e.Err())
	}
}
