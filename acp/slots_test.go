package acp

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// 32 conversations over 8 session slots with an instant agent: every turn
// succeeds (turns wait for a slot instead of failing) and the agent never
// holds more than 8 open sessions, counted on the agent's side.
func TestPoolSlotsHammer(t *testing.T) {
	const keys, limit, turns = 32, 8, 12
	a := newFakeAgent()
	var open, maxOpen atomic.Int32
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		_ = a.Chunk(ctx, sid, "😊 ok")
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	counting := &countingAgent{fakeAgent: a, open: &open, max: &maxOpen}
	m := NewMetrics(prometheus.NewRegistry())
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: limit, Metrics: m}, dialFakeAgent(t, a, counting, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)

	stop := make(chan struct{})
	var watched sync.WaitGroup
	var overLimit atomic.Int32
	watched.Add(1)
	go func() { // /health's count must never pass the limit either
		defer watched.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if n := p.Health().Sessions; n > limit {
				overLimit.Store(int32(n))
			}
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	var failed atomic.Int32
	for k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range turns {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := p.Turn(ctx, TurnRequest{Key: fmt.Sprintf("convo-%d", k), Prompt: func(int) string { return fmt.Sprint("hi ", i) }})
				cancel()
				if err != nil {
					failed.Add(1)
					t.Errorf("convo %d turn %d: %v", k, i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	watched.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d turns failed", n, keys*turns)
	}
	if n := maxOpen.Load(); n > limit {
		t.Errorf("agent held %d open sessions, limit %d", n, limit)
	}
	if n := overLimit.Load(); n > 0 {
		t.Errorf("/health reported %d sessions, limit %d", n, limit)
	}
	if testutil.ToFloat64(m.SessionWaits) == 0 {
		t.Error("no turn waited for a slot; the hammer did not contend")
	}
}

// countingAgent counts sessions the agent holds open (created, not closed).
type countingAgent struct {
	*fakeAgent
	open, max *atomic.Int32
}

func (c *countingAgent) NewSession(ctx context.Context, r acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	storeMax(c.max, c.open.Add(1))
	return c.fakeAgent.NewSession(ctx, r)
}

func (c *countingAgent) CloseSession(ctx context.Context, r acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	c.open.Add(-1)
	return c.fakeAgent.CloseSession(ctx, r)
}

// Queued turns get slots in arrival order; one whose ctx ends leaves the
// queue without taking a slot; past SessionQueue a turn fails at once.
func TestPoolSlotQueueOrderAndCap(t *testing.T) {
	a := slowAgent(false)
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 1, SessionQueue: 3}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	hold, release := context.WithCancel(context.Background())
	defer release()
	go func() { _, _ = p.Turn(hold, TurnRequest{Key: "holder", Prompt: func(int) string { return "long" }}) }()
	testkit.WaitFor(t, 5*time.Second, "the only session busy", func() bool { return int32(a.MaxConcurrent()) >= 1 })

	var mu sync.Mutex
	var order []string
	results := make(chan error, 3)
	queue := func(key string, ctx context.Context) {
		go func() {
			_, err := p.Turn(ctx, TurnRequest{Key: key, Prompt: func(int) string {
				mu.Lock()
				order = append(order, key)
				mu.Unlock()
				return "quick " + key
			}})
			results <- err
		}()
	}
	queue("first", context.Background())
	testkit.WaitFor(t, 5*time.Second, "first queued", func() bool { return p.queued() == 1 })
	leaver, leave := context.WithCancel(context.Background())
	queue("leaver", leaver)
	testkit.WaitFor(t, 5*time.Second, "leaver queued", func() bool { return p.queued() == 2 })
	queue("second", context.Background())
	testkit.WaitFor(t, 5*time.Second, "second queued", func() bool { return p.queued() == 3 })

	// The queue is full: the next turn fails at once.
	_, err := p.Turn(context.Background(), TurnRequest{Key: "overflow", Prompt: func(int) string { return "quick" }})
	if !errors.Is(err, agentconn.ErrSessionLimit) {
		t.Errorf("overflow turn: %v, want agentconn.ErrSessionLimit", err)
	}
	leave()
	testkit.WaitFor(t, 5*time.Second, "leaver gone", func() bool { return p.queued() == 2 })
	release()
	for range 3 {
		select {
		case err := <-results:
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("queued turn: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("queued turns did not finish")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[first second]" {
		t.Errorf("slot order %v, want [first second]", order)
	}
}

// A flood of distinct session keys keeps the key table at its bound: keys
// with no session are forgotten, least recently used first.
func TestPoolKeyTableBounded(t *testing.T) {
	a := newFakeAgent()
	m := NewMetrics(prometheus.NewRegistry())
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 2, MaxKeys: 16, Metrics: m}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	for i := range 200 {
		turnText(t, p, fmt.Sprintf("flood-%d", i), "hi", nil)
	}
	p.mu.Lock()
	n := len(p.entries)
	_, newest := p.entries["flood-199"]
	p.mu.Unlock()
	if n > 16 || !newest {
		t.Errorf("%d keys kept (bound 16), newest kept %v", n, newest)
	}
	if got := testutil.ToFloat64(m.KeysForgotten); got < 184 {
		t.Errorf("keys forgotten %v, want at least 184", got)
	}
}

// A key whose turns arrive back to back (each waiting on the key while the
// previous runs) never leaves its session idle, so idle eviction alone would
// never free it: the turn queued for a slot would wait until the session
// rotated. The busy session yields to the queue's head instead, and the
// hogging key's turns still all succeed, after queueing in their turn.
func TestPoolBusyKeyYieldsToQueuedTurn(t *testing.T) {
	a := newFakeAgent()
	m := NewMetrics(prometheus.NewRegistry())
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 1, SessionMaxTurns: 1 << 20, Metrics: m}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)

	stop := make(chan struct{})
	var hogs sync.WaitGroup
	var hogTurns atomic.Int32
	for range 3 {
		hogs.Add(1)
		go func() {
			defer hogs.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := p.Turn(ctx, TurnRequest{Key: "hog", Prompt: func(int) string { return "more" }})
				cancel()
				if err != nil {
					t.Errorf("hog turn: %v", err)
				}
				hogTurns.Add(1)
			}
		}()
	}
	testkit.WaitFor(t, 5*time.Second, "the hog to hold the only session", func() bool { return hogTurns.Load() >= 10 })
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := p.Turn(ctx, TurnRequest{Key: fmt.Sprint("robot-", i), Prompt: func(int) string { return "my turn" }})
		cancel()
		if err != nil || res.Text != echoReply("my turn") {
			t.Errorf("queued turn %d behind a busy key: %q %v", i, res.Text, err)
		}
	}
	close(stop)
	hogs.Wait()
	// A queued turn may also have found the hog's session idle for a moment
	// and evicted it, so the yield count is not asserted here.
	t.Logf("%d yields", int(testutil.ToFloat64(m.SessionYields)))
}

// The yield rule: a session yields on its second turn started after a
// queued turn waited through the end of one of its turns; a head that
// queued after the key's last turn ended, or a new head, starts the count
// again.
func TestPoolYieldRule(t *testing.T) {
	p := NewPool(PoolConfig{}, nil)
	e := &entry{key: "k", endSeq: 5}
	later := &slotWaiter{seq: 6}
	p.queue = []*slotWaiter{later}
	for pass := range 2 { // each call counts a pass
		if p.mustYieldLocked(e) {
			t.Errorf("pass %d: yielded to a head that queued after the key's last turn ended", pass)
		}
	}
	head := &slotWaiter{seq: 3}
	p.queue = []*slotWaiter{head, later}
	if p.mustYieldLocked(e) {
		t.Error("yielded on the first pass")
	}
	if !p.mustYieldLocked(e) {
		t.Error("did not yield on the second pass")
	}
	next := &slotWaiter{seq: 4}
	p.queue = []*slotWaiter{next}
	if p.mustYieldLocked(e) {
		t.Error("a new head did not restart the count")
	}
	p.queue = nil
	if p.mustYieldLocked(e) {
		t.Error("yielded with nobody queued")
	}
}

// The key table may pass its bound while every key is in a turn (those
// cannot be forgotten); once the turns end, the next new key brings it back
// within the bound instead of forgetting one key per new key.
func TestPoolKeyTableShrinksAfterBurst(t *testing.T) {
	a := slowAgent(false)
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 1, MaxKeys: 4}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	hold, release := context.WithCancel(context.Background())
	held := goTurn(hold, p, "holder", "long")
	testkit.WaitFor(t, 5*time.Second, "the only session busy", func() bool { return int32(a.MaxConcurrent()) >= 1 })
	const burst = 6
	results := make(chan error, burst)
	for i := range burst {
		go func() {
			_, err := p.Turn(context.Background(), TurnRequest{Key: fmt.Sprint("burst-", i), Prompt: func(int) string { return "quick" }})
			results <- err
		}()
	}
	testkit.WaitFor(t, 5*time.Second, "the burst queued", func() bool { return p.queued() == burst })
	if n := p.Turns(); n != burst+1 {
		t.Errorf("Turns = %d during the burst, want %d (the held turn and the queued ones)", n, burst+1)
	}
	grown := p.Keys()
	if grown != burst+1 {
		t.Fatalf("%d keys during the burst, want %d (keys in a turn are kept)", grown, burst+1)
	}
	release()
	for range burst + 1 {
		var err error
		select {
		case err = <-held:
		case err = <-results:
		case <-time.After(10 * time.Second):
			t.Fatal("burst turns did not finish")
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("turn: %v", err)
		}
	}
	turnText(t, p, "after", "quick", nil)
	if n := p.Turns(); n != 0 {
		t.Errorf("Turns = %d after every turn returned", n)
	}
	n := p.Keys()
	if n > 4 {
		t.Errorf("%d keys after the burst, bound 4", n)
	}
}
