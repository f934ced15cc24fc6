package acp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// turnText runs one turn and returns its text, failing the test on error.
func turnText(t *testing.T, p *Pool, key, prompt string, idxs *[]int) TurnResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Turn(ctx, TurnRequest{Key: key, Prompt: func(i int) string {
		if idxs != nil {
			*idxs = append(*idxs, i)
		}
		return prompt
	}})
	if err != nil {
		t.Fatalf("turn %q: %v", prompt, err)
	}
	return res
}

// goTurn starts a turn of key with prompt and returns the channel its
// error comes on.
func goTurn(ctx context.Context, p *Pool, key, prompt string) <-chan error {
	errc := make(chan error, 1)
	go func() {
		_, err := p.Turn(ctx, TurnRequest{Key: key, Prompt: func(int) string { return prompt }})
		errc <- err
	}()
	return errc
}

func TestPoolTurnStreamsChunksInOrder(t *testing.T) {
	a := newFakeAgent()
	c := dialFake(t, a, dialCfg{})
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	p := NewPool(PoolConfig{Logger: testLogger(t), Metrics: m}, c)
	testkit.Run(t, p, 10*time.Second)

	var chunks []string
	var idxs []int
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := p.Turn(ctx, TurnRequest{
		Key:     "robot-1",
		Prompt:  func(i int) string { idxs = append(idxs, i); return "hello there" },
		OnChunk: func(s string) { chunks = append(chunks, s) },
	})
	if err != nil {
		t.Fatal(err)
	}
	want := echoReply("hello there")
	if res.Text != want || strings.Join(chunks, "") != want || len(chunks) != 3 {
		t.Fatalf("text %q chunks %q, want %q in 3 chunks", res.Text, chunks, want)
	}
	if res.StopReason != "end_turn" || res.TurnIndex != 0 || res.Phases.Reused {
		t.Errorf("result %+v: want end_turn, index 0, fresh session", res)
	}
	res2 := turnText(t, p, "robot-1", "again", &idxs)
	if res2.SessionID != res.SessionID || res2.TurnIndex != 1 || !res2.Phases.Reused {
		t.Errorf("second turn %+v: want same session, index 1, reused", res2)
	}
	if got := []int{0, 1}; idxs[0] != got[0] || idxs[1] != got[1] {
		t.Errorf("prompt indexes %v, want %v", idxs, got)
	}
	h := p.Health()
	if h.Sessions != 1 || !h.CachedSession || h.SessionTurns != 2 {
		t.Errorf("health %+v, want 1 session with 2 turns", h)
	}
	if v := testutil.ToFloat64(m.ActiveSessions); v != 1 {
		t.Errorf("dotty_active_acp_sessions = %v, want 1", v)
	}
}

func TestPoolKeysSelectSessions(t *testing.T) {
	for _, mode := range []SessionKeyMode{KeyPerSession, KeyShared} {
		t.Run(string(mode), func(t *testing.T) {
			a := newFakeAgent()
			p := NewPool(PoolConfig{Logger: testLogger(t), KeyMode: mode}, dialFake(t, a, dialCfg{}))
			testkit.Run(t, p, 10*time.Second)
			r1 := turnText(t, p, "a", "one", nil)
			r2 := turnText(t, p, "b", "two", nil)
			r3 := turnText(t, p, "", "three", nil)
			r4 := turnText(t, p, "a", "four", nil)
			if r4.SessionID != r1.SessionID {
				t.Errorf("key a changed session: %s then %s", r1.SessionID, r4.SessionID)
			}
			distinct := map[string]bool{r1.SessionID: true, r2.SessionID: true, r3.SessionID: true}
			want := 3
			if mode == KeyShared {
				want = 1
			}
			if len(distinct) != want {
				t.Errorf("%d distinct sessions, want %d", len(distinct), want)
			}
		})
	}
}

func TestPoolSerialisesOneKeyAndOverlapsKeys(t *testing.T) {
	a := newFakeAgent()
	release := make(chan struct{})
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		_ = a.Chunk(ctx, sid, "😊 ok")
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i, key := range []string{"x", "x", "x", "y", "y", "z"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := p.Turn(ctx, TurnRequest{Key: key, Prompt: func(int) string { return "p" + string(rune('0'+i)) }})
			errs <- err
		}()
	}
	// Three keys → three prompts in flight at once, never two on one session.
	testkit.WaitFor(t, 5*time.Second, "three concurrent prompts", func() bool { return int32(a.MaxConcurrent()) >= 3 })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := int32(a.MaxPerSession()); n != 1 {
		t.Errorf("max concurrent prompts on one session = %d, want 1", n)
	}
	if n := int32(a.MaxConcurrent()); n != 3 {
		t.Errorf("max concurrent prompts = %d, want 3 (one per key)", n)
	}
}

func TestPoolRotation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     PoolConfig
		between func(clk *testkit.Clock)
		turns   int
		rotate  bool
	}{
		{"fresh session reused", PoolConfig{}, func(c *testkit.Clock) { c.Advance(299 * time.Second) }, 2, false},
		{"idle over 300s", PoolConfig{}, func(c *testkit.Clock) { c.Advance(301 * time.Second) }, 2, true},
		{"turn limit", PoolConfig{SessionMaxTurns: 3}, func(*testkit.Clock) {}, 4, true},
		{"below turn limit", PoolConfig{SessionMaxTurns: 3}, func(*testkit.Clock) {}, 3, false},
		{"age over max", PoolConfig{SessionMaxAge: 100 * time.Second, SessionIdle: time.Hour}, func(c *testkit.Clock) { c.Advance(60 * time.Second) }, 3, true},
		{"rotate all", PoolConfig{}, nil, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := newFakeAgent()
			clk := testkit.NewClock()
			cfg := tt.cfg
			cfg.Logger, cfg.Clock = testLogger(t), clk
			p := NewPool(cfg, dialFake(t, a, dialCfg{}))
			var idxs []int
			first := turnText(t, p, "k", "t0", &idxs)
			var last TurnResult
			for i := 1; i < tt.turns; i++ {
				if tt.between == nil {
					p.RotateAll() // the persona changed
				} else {
					tt.between(clk)
				}
				last = turnText(t, p, "k", "t", &idxs)
			}
			if rotated := last.SessionID != first.SessionID; rotated != tt.rotate {
				t.Errorf("rotated = %v, want %v (indexes %v)", rotated, tt.rotate, idxs)
			}
			if tt.rotate && last.TurnIndex != 0 {
				t.Errorf("turn index after rotation = %d, want 0", last.TurnIndex)
			}
			if tt.rotate {
				testkit.WaitFor(t, 10*time.Second, "old session closed", func() bool {
					_, closed, _, _ := snapshot(a)
					return len(closed) == 1 && closed[0] == first.SessionID
				})
			}
		})
	}
}

func TestPoolRetriesLostSessionOnce(t *testing.T) {
	a := newFakeAgent()
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	first := turnText(t, p, "k", "warm up", nil)
	a.LoseNextSession()
	var idxs []int
	res := turnText(t, p, "k", "after loss", &idxs)
	if res.SessionID == first.SessionID {
		t.Error("retry reused the lost session")
	}
	if len(idxs) != 2 || idxs[0] != 1 || idxs[1] != 0 {
		t.Errorf("prompt built with indexes %v, want [1 0] (rebuilt as turn 0)", idxs)
	}
	if res.Text != echoReply("after loss") {
		t.Errorf("text %q", res.Text)
	}
}

func TestPoolFailsAfterSecondLostSession(t *testing.T) {
	a := newFakeAgent()
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32000, Message: "Session not found: " + sid}
	}
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{}))
	calls := 0
	_, err := p.Turn(context.Background(), TurnRequest{Prompt: func(int) string { calls++; return "x" }})
	if !errors.Is(err, agentconn.ErrSessionNotFound) || calls != 2 {
		t.Fatalf("err = %v after %d prompts, want agentconn.ErrSessionNotFound after 2", err, calls)
	}
}

func TestPoolAgentErrorStartsFreshSession(t *testing.T) {
	a := newFakeAgent()
	fail := true
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		if fail {
			return acpsdk.PromptResponse{}, &acpsdk.RequestError{Code: -32603, Message: "Agent turn failed: provider down"}
		}
		_ = a.Chunk(ctx, sid, "😊 fine")
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	_, err := p.Turn(context.Background(), TurnRequest{Key: "k", Prompt: func(int) string { return "x" }})
	var re *agentconn.RPCError
	if !errors.As(err, &re) || re.Code != -32603 {
		t.Fatalf("err = %v, want the agent's -32603", err)
	}
	fail = false
	var idxs []int
	res := turnText(t, p, "k", "y", &idxs)
	if res.TurnIndex != 0 || res.Phases.Reused {
		t.Errorf("turn after failure: index %d reused %v, want a fresh session", res.TurnIndex, res.Phases.Reused)
	}
}

// slowAgent streams a chunk every 20 ms until cancelled, honouring cancel
// unless ignoreCancel is set.
func slowAgent(ignoreCancel bool) *fakeAgent {
	a := newFakeAgent()
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		if strings.HasPrefix(text, "quick") {
			_ = a.Chunk(ctx, sid, "😊 quick")
			return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
		}
		waitCtx := ctx
		if ignoreCancel {
			waitCtx = context.Background()
		}
		for i := 0; i < 500; i++ {
			if err := a.Chunk(context.Background(), sid, "tick "); err != nil {
				return acpsdk.PromptResponse{}, err
			}
			select {
			case <-waitCtx.Done():
				return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
			case <-time.After(20 * time.Millisecond):
			}
		}
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	return a
}

// A cancelled turn returns without waiting for the agent: the agent's
// cancelled result is held until Turn has returned. The pool's clock is
// fake, so the cancel's grace never retires the session meanwhile.
func TestPoolCancelKeepsSession(t *testing.T) {
	a := slowAgent(false)
	release := make(chan struct{})
	stream := a.OnPrompt
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		res, err := stream(ctx, a, sid, text)
		if ctx.Err() != nil {
			<-release
		}
		return res, err
	}
	p := NewPool(PoolConfig{Logger: testLogger(t), Clock: testkit.NewClock()}, dialFake(t, a, dialCfg{CancelGrace: 2 * time.Second}))
	testkit.Run(t, p, 10*time.Second)
	warm := turnText(t, p, "k", "quick warm-up", nil)

	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	got := 0
	afterCancel := false
	errc := make(chan error, 1)
	go func() {
		_, err := p.Turn(ctx, TurnRequest{Key: "k", Prompt: func(int) string { return "long story" }, OnChunk: func(string) {
			mu.Lock()
			defer mu.Unlock()
			got++
			if ctx.Err() != nil {
				afterCancel = true
			}
		}})
		errc <- err
	}()
	testkit.WaitFor(t, 5*time.Second, "first chunk", func() bool { mu.Lock(); defer mu.Unlock(); return got > 0 })
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Turn did not return after cancel: it waits for the agent")
	}
	testkit.WaitFor(t, 10*time.Second, "session/cancel at the agent", func() bool {
		cancels, _, _, _ := snapshot(a)
		return len(cancels) >= 1 && cancels[0] == warm.SessionID
	})
	close(release)
	// The next turn on the key waits for the cancelled result, then reuses the session.
	next := turnText(t, p, "k", "quick again", nil)
	if next.SessionID != warm.SessionID {
		t.Errorf("session replaced after cancel: %s then %s", warm.SessionID, next.SessionID)
	}
	if next.TurnIndex != 1 {
		t.Errorf("turn index after a cancelled turn = %d, want 1 (cancelled turns do not count)", next.TurnIndex)
	}
	if next.Text != "😊 quick" {
		t.Errorf("late chunks of the cancelled turn leaked: %q", next.Text)
	}
	mu.Lock()
	defer mu.Unlock()
	if afterCancel {
		t.Error("OnChunk was called after the turn's ctx ended")
	}
}

// A barge-in during a tool ZeroClaw of May 2026 cannot interrupt: the
// session is kept past the cancel's grace and the key's next turn waits
// for the cancelled turn's result, then continues the conversation on the
// same session. A turn whose whole deadline passes while it waits gives
// up, and the session is retired with it: the turn after that starts
// afresh at once instead of queueing behind the tool too.
func TestPoolCancelDuringToolKeepsSession(t *testing.T) {
	var tools [3]chan struct{}
	for i := range tools {
		tools[i] = make(chan struct{})
	}
	var nth atomic.Int32
	a := newFakeAgent()
	a.Script = func(p acptest.Prompt) acptest.Reply {
		if p.Text != "look it up" {
			return acptest.Reply{Chunks: acptest.Thirds(acptest.Echo(p.Text))}
		}
		return acptest.Reply{Chunks: []string{"😊 let me look. "}, Shape: acptest.ZeroClawMay,
			Tools: []acptest.Tool{{Name: "web_fetch", NoAsk: true, Until: tools[nth.Add(1)-1]}}}
	}
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{CancelGrace: 50 * time.Millisecond}))
	t.Cleanup(func() { close(tools[2]) }) // before the connection's cleanup
	testkit.Run(t, p, 10*time.Second)
	warm := turnText(t, p, "k", "hello", nil)

	bargeIn := func() { t.Helper(); bargeInAfterChunk(t, p, "k", "look it up") }

	// The tool ends while the next turn waits for it: same session.
	bargeIn()
	waited := driver(t, p, 0).Go(context.Background(), "k", "and now?")
	testkit.WaitFor(t, 10*time.Second, "the next turn waiting for the key", func() bool { return p.keyWaiters("k") == 1 })
	close(tools[0])
	next := acptest.Await(t, waited, time.Minute, "the waiting turn")
	if next.Err != nil || next.Res.SessionID != warm.SessionID || next.Res.TurnIndex != 1 || next.Res.Text != acptest.Echo("and now?") {
		t.Errorf("turn after the tool %+v (%v): want session %s kept, turn index 1, its own echo", next.Res, next.Err, warm.SessionID)
	}

	// A waiting turn whose caller hangs up (a second barge-in) says nothing
	// of the agent: the session is kept for the turn after.
	bargeIn()
	hangUp, cancelHangUp := context.WithCancel(context.Background())
	hungUp := goTurn(hangUp, p, "k", "never sent")
	testkit.WaitFor(t, 10*time.Second, "a turn waiting for the key", func() bool { return p.keyWaiters("k") == 1 })
	cancelHangUp()
	if err := <-hungUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting turn hung up: %v", err)
	}
	close(tools[1])
	if kept := turnText(t, p, "k", "still there?", nil); kept.SessionID != warm.SessionID || kept.TurnIndex != 2 {
		t.Errorf("turn after a waiter hung up %+v: want session %s kept, turn index 2", kept, warm.SessionID)
	}

	// The tool outlasts a waiting turn's deadline: that turn fails before
	// prompting, the session is retired, the next turn starts afresh.
	bargeIn()
	short, cancelShort := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancelShort()
	built := false
	if _, err := p.Turn(short, TurnRequest{Key: "k", Prompt: func(int) string { built = true; return "too soon" }}); !errors.Is(err, context.DeadlineExceeded) || built {
		t.Fatalf("turn during the tool: %v (prompt built %v), want DeadlineExceeded before prompting", err, built)
	}
	fresh := turnText(t, p, "k", "hello again", nil)
	if fresh.SessionID == warm.SessionID || fresh.TurnIndex != 0 {
		t.Errorf("turn after a give-up %+v: want a new session at index 0", fresh)
	}
	testkit.WaitFor(t, 10*time.Second, "the given-up session closed", func() bool {
		_, closed, _, _ := snapshot(a)
		return slices.Equal(closed, []string{warm.SessionID})
	})
	if n := a.MaxPerSession(); n != 1 {
		t.Errorf("%d prompts ran at once on a session, want 1", n)
	}
}

// An agent that never ends a cancelled turn, with no turn of the key
// waiting, keeps its session only up to SessionIdle after the cancel: then
// the session is retired and the key's next turn starts afresh. The pool's
// clock is fake.
func TestPoolUnansweredCancelRetiredAfterIdle(t *testing.T) {
	release := make(chan struct{})
	a := newFakeAgent()
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		_ = a.Chunk(ctx, sid, "😊 "+text)
		if text == "never ends" {
			<-release // ignores the cancel
		}
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	clk := testkit.NewClock()
	p := NewPool(PoolConfig{Logger: testLogger(t), Clock: clk}, dialFake(t, a, dialCfg{CancelGrace: 200 * time.Millisecond}))
	t.Cleanup(func() { close(release) }) // before the connection's cleanup
	testkit.Run(t, p, 10*time.Second)
	warm := turnText(t, p, "k", "hello", nil)
	bargeInAfterChunk(t, p, "k", "never ends")
	idle := 300 * time.Second // the default SessionIdle
	testkit.WaitFor(t, 5*time.Second, "the settlement's timers", func() bool { return slices.Contains(clk.Requested(), idle) })
	clk.Advance(time.Second) // past the grace
	if _, closed, _, _ := snapshot(a); len(closed) != 0 {
		t.Fatalf("session closed %v within SessionIdle", closed)
	}
	clk.Advance(idle)
	testkit.WaitFor(t, 5*time.Second, "the session retired", func() bool {
		_, closed, _, _ := snapshot(a)
		return len(closed) == 1 && closed[0] == warm.SessionID
	})
	if next := turnText(t, p, "k", "hello after", nil); next.SessionID == warm.SessionID || next.TurnIndex != 0 {
		t.Errorf("next turn %+v: want a new session at index 0", next)
	}
}

// bargeInAfterChunk starts a turn of text on key and cancels it, as a
// caller hanging up does, once its first chunk has come; the turn must end
// with the cancel.
func bargeInAfterChunk(t *testing.T, p *Pool, key, text string) {
	t.Helper()
	if _, err := driver(t, p, 0).BargeIn(key, text); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled turn: %v", err)
	}
}

// blockingPerm blocks its first decision until its ctx ends and allows
// later ones at once.
type blockingPerm struct {
	asked chan agentconn.PermissionRequest
	once  sync.Once
}

func (b *blockingPerm) Decide(ctx context.Context, req agentconn.PermissionRequest) agentconn.Decision {
	first := false
	b.once.Do(func() { first = true })
	if !first {
		return agentconn.Allow
	}
	b.asked <- req
	<-ctx.Done()
	return agentconn.Allow
}

func permAgent(outcomes chan<- acpsdk.RequestPermissionOutcome, options []acpsdk.PermissionOption, toolCall acpsdk.ToolCallUpdate) *fakeAgent {
	a := newFakeAgent()
	a.OnPrompt = func(ctx context.Context, a *fakeAgent, sid, text string) (acpsdk.PromptResponse, error) {
		_ = a.Conn().SessionUpdate(ctx, acpsdk.SessionNotification{SessionId: acpsdk.SessionId(sid),
			Update: acpsdk.StartToolCall("call-1", text, acpsdk.WithStartStatus(acpsdk.ToolCallStatusPending))})
		// Like ZeroClaw's approval gate, the wait ignores the turn's cancellation.
		resp, err := a.Conn().RequestPermission(context.Background(), acpsdk.RequestPermissionRequest{
			SessionId: acpsdk.SessionId(sid), Options: options, ToolCall: toolCall})
		if err != nil {
			return acpsdk.PromptResponse{}, err
		}
		outcomes <- resp.Outcome
		if ctx.Err() != nil {
			return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
		}
		_ = a.Chunk(ctx, sid, "😊 done")
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
	}
	return a
}

var zeroclawOptions = []acpsdk.PermissionOption{
	{OptionId: "allow-once", Name: "Allow once", Kind: acpsdk.PermissionOptionKindAllowOnce},
	{OptionId: "allow-always", Name: "Always allow", Kind: acpsdk.PermissionOptionKindAllowAlways},
	{OptionId: "reject-with-edit", Name: "Reject with edit", Kind: "reject_with_edit"},
	{OptionId: "reject-once", Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
}

func TestPermissionOptionsChosenByKind(t *testing.T) {
	kid := false
	tests := []struct {
		name     string
		kid      bool
		tool     string // the title of the tool_call permAgent sends before its request (its id differs: never used to decide)
		toolCall acpsdk.ToolCallUpdate
		options  []acpsdk.PermissionOption
		want     string // selected option id, or "cancelled"
	}{
		{"allowed tool", false, "shell", acpsdk.ToolCallUpdate{ToolCallId: "approval-1", Title: acpsdk.Ptr("Approve shell?")}, zeroclawOptions, "allow-once"},
		{"kid mode denies the camera", true, "camera.take_photo", acpsdk.ToolCallUpdate{ToolCallId: "approval-2", Title: acpsdk.Ptr("Approve camera.take_photo?")}, zeroclawOptions, "reject-once"},
		{"tool parsed from the approval title", true, "", acpsdk.ToolCallUpdate{ToolCallId: "approval-3", Title: acpsdk.Ptr("Approve self.camera.take_photo?")}, zeroclawOptions, "reject-once"},
		{"localised names ignored", false, "shell", acpsdk.ToolCallUpdate{ToolCallId: "approval-4"}, []acpsdk.PermissionOption{
			{OptionId: "x1", Name: "Reject", Kind: acpsdk.PermissionOptionKindRejectOnce},
			{OptionId: "x2", Name: "Ablehnen", Kind: acpsdk.PermissionOptionKindAllowOnce}}, "x2"},
		{"no option of the wanted kind", false, "shell", acpsdk.ToolCallUpdate{ToolCallId: "approval-5"}, []acpsdk.PermissionOption{
			{OptionId: "a", Name: "Always", Kind: acpsdk.PermissionOptionKindAllowAlways}}, "cancelled"},
		{"questions are never answered", false, "ask_user", acpsdk.ToolCallUpdate{ToolCallId: "ask-user-1"}, []acpsdk.PermissionOption{
			{OptionId: "choice-0", Name: "Yes", Kind: acpsdk.PermissionOptionKindAllowOnce},
			{OptionId: "choice-1", Name: "No", Kind: acpsdk.PermissionOptionKindRejectOnce}}, "cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kid = tt.kid
			outcomes := make(chan acpsdk.RequestPermissionOutcome, 1)
			a := permAgent(outcomes, tt.options, tt.toolCall)
			c := dialFake(t, a, dialCfg{Permissions: &agentconn.Policy{KidMode: func() bool { return kid }}})
			p := NewPool(PoolConfig{Logger: testLogger(t)}, c)
			testkit.Run(t, p, 10*time.Second)
			turnText(t, p, "k", tt.tool, nil)
			var o acpsdk.RequestPermissionOutcome
			select {
			case o = <-outcomes:
			case <-time.After(5 * time.Second):
				t.Fatal("no permission outcome")
			}
			got := "cancelled"
			if o.Selected != nil {
				got = string(o.Selected.OptionId)
			}
			if got != tt.want {
				t.Errorf("outcome %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCancelAnswersPendingPermission(t *testing.T) {
	outcomes := make(chan acpsdk.RequestPermissionOutcome, 1)
	a := permAgent(outcomes, zeroclawOptions, acpsdk.ToolCallUpdate{ToolCallId: "approval-1", Title: acpsdk.Ptr("Approve shell?")})
	perm := &blockingPerm{asked: make(chan agentconn.PermissionRequest, 1)}
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{Permissions: perm}))
	testkit.Run(t, p, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	errc := goTurn(ctx, p, "k", "shell")
	select {
	case req := <-perm.asked:
		if req.Tool != "shell" {
			t.Errorf("policy asked about %q, want shell (from the approval title)", req.Tool)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("permission never reached the policy")
	}
	cancel()
	select {
	case o := <-outcomes:
		if o.Cancelled == nil {
			t.Errorf("outcome %+v, want cancelled", o)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("pending permission not answered after cancel")
	}
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("turn err = %v", err)
	}
	res := turnText(t, p, "k", "shell", nil) // the session is still usable
	if res.TurnIndex != 0 {
		t.Errorf("turn index %d, want 0 (the cancelled turn does not count)", res.TurnIndex)
	}
	<-outcomes
}

func TestPoolSessionLimit(t *testing.T) {
	a := slowAgent(false)
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 2}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	r1 := turnText(t, p, "a", "quick a", nil)
	turnText(t, p, "b", "quick b", nil)
	turnText(t, p, "c", "quick c", nil) // evicts a, the least recently used
	testkit.WaitFor(t, 10*time.Second, "LRU session closed", func() bool {
		_, closed, _, _ := snapshot(a)
		return len(closed) == 1 && closed[0] == r1.SessionID
	})
	if h := p.Health(); h.Sessions != 2 {
		t.Errorf("live sessions %d, want 2", h.Sessions)
	}

	// With both sessions in a turn, a third key waits for the first to end.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for _, k := range []string{"b", "c"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p.Turn(ctx, TurnRequest{Key: k, Prompt: func(int) string { return "long" }})
		}()
	}
	testkit.WaitFor(t, 5*time.Second, "two busy sessions", func() bool { return int32(a.MaxConcurrent()) >= 2 })
	got := goTurn(context.Background(), p, "d", "quick d")
	testkit.WaitFor(t, 5*time.Second, "d queued", func() bool { return p.queued() == 1 })
	if h := p.Health(); h.Sessions != 2 {
		t.Errorf("live sessions %d while d waits, want 2", h.Sessions)
	}
	cancel() // both long turns end; d takes the first free slot
	if err := testkit.Recv(t, 10*time.Second, got, "queued turn never ran"); err != nil {
		t.Errorf("queued turn: %v", err)
	}
	wg.Wait()
	if h := p.Health(); h.Sessions > 2 {
		t.Errorf("live sessions %d, limit 2", h.Sessions)
	}
}

// TestPoolNoEvictTakesOnlyAFreeSlot: a NoEvict turn (the greeter's)
// takes a free slot and keeps its session for its key, but never closes
// another key's session to make room: with none free it fails at once
// with ErrSessionLimit and the conversations keep their sessions, while a
// conversation may still close the NoEvict key's idle session. Its own
// session's rotation waits for that close instead of failing.
func TestPoolNoEvictTakesOnlyAFreeSlot(t *testing.T) {
	a := slowAgent(false)
	p := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 2}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	greet := func(p *Pool) (TurnResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return p.Turn(ctx, TurnRequest{Key: "greeter", Prompt: func(int) string { return "quick hello" }, NoEvict: true})
	}
	ra := turnText(t, p, "a", "quick a", nil)
	g1, err := greet(p) // a free slot
	if err != nil {
		t.Fatal(err)
	}
	if g2, err := greet(p); err != nil || g2.SessionID != g1.SessionID {
		t.Fatalf("second greeting: %v on %q, want the session %q kept", err, g2.SessionID, g1.SessionID)
	}
	turnText(t, p, "a", "quick a again", nil)
	rb := turnText(t, p, "b", "quick b", nil) // the greeter's session is the least recently used
	testkit.WaitFor(t, 10*time.Second, "the greeter's session closed for b", func() bool {
		_, closed, _, _ := snapshot(a)
		return len(closed) == 1 && closed[0] == g1.SessionID
	})
	if _, err := greet(p); !errors.Is(err, agentconn.ErrSessionLimit) {
		t.Errorf("greeting with no free slot: %v, want agentconn.ErrSessionLimit", err)
	}
	if r := turnText(t, p, "a", "quick a", nil); r.SessionID != ra.SessionID {
		t.Errorf("a moved from %s to %s", ra.SessionID, r.SessionID)
	}
	if r := turnText(t, p, "b", "quick b", nil); r.SessionID != rb.SessionID {
		t.Errorf("b moved from %s to %s", rb.SessionID, r.SessionID)
	}
	if _, closed, _, _ := snapshot(a); len(closed) != 1 {
		t.Errorf("sessions closed %v, want only the greeter's", closed)
	}

	// A rotation of its own session holds the slot until the agent has
	// closed it; the NoEvict turn waits for that, then takes it.
	r := newFakeAgent()
	gate := &gatedClose{fakeAgent: r, asked: make(chan struct{}, 1), open: make(chan struct{})}
	clk := testkit.NewClock()
	q := NewPool(PoolConfig{Logger: testLogger(t), MaxSessions: 2, SessionMaxTurns: 1, Clock: clk}, dialFakeAgent(t, r, gate, dialCfg{}))
	testkit.Run(t, q, 10*time.Second)
	turnText(t, q, "a", "quick a", nil)
	first, err := greet(q)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		res, err := greet(q)
		if err == nil && res.SessionID == first.SessionID {
			err = errors.New("the session was not rotated")
		}
		done <- err
	}()
	select {
	case <-gate.asked:
	case <-time.After(10 * time.Second):
		t.Fatal("the rotated session's close never reached the agent")
	}
	clk.Advance(slotRecheck)
	select {
	case err := <-done:
		t.Fatalf("the greeting ended (%v) while its old session still held the slot", err)
	default:
	}
	close(gate.open)
	var got error
	testkit.WaitFor(t, 10*time.Second, "the rotated greeting", func() bool {
		clk.Advance(slotRecheck)
		select {
		case got = <-done:
			return true
		default:
			return false
		}
	})
	if got != nil {
		t.Errorf("greeting after its session's rotation: %v", got)
	}
}

// gatedClose holds each session/close until open is closed, saying on
// asked when one arrives.
type gatedClose struct {
	*fakeAgent
	asked chan struct{}
	open  chan struct{}
}

func (g *gatedClose) CloseSession(ctx context.Context, r acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	select {
	case g.asked <- struct{}{}:
	default:
	}
	select {
	case <-g.open:
	case <-ctx.Done():
	}
	return g.fakeAgent.CloseSession(ctx, r)
}

func TestPoolReapsIdleSessions(t *testing.T) {
	a := newFakeAgent()
	clk := testkit.NewClock()
	p := NewPool(PoolConfig{Logger: testLogger(t), Clock: clk}, dialFake(t, a, dialCfg{}))
	r := turnText(t, p, "k", "hi", nil)
	clk.Advance(301 * time.Second)
	p.reap()
	testkit.WaitFor(t, 10*time.Second, "idle session closed", func() bool {
		_, closed, _, _ := snapshot(a)
		return len(closed) == 1 && closed[0] == r.SessionID
	})
	if h := p.Health(); h.Sessions != 0 || h.CachedSession {
		t.Errorf("health after reap %+v", h)
	}
	clk.Advance(301 * time.Second)
	p.reap()
	n := p.Keys()
	if n != 0 {
		t.Errorf("%d entries left, want unused keys forgotten", n)
	}
}

func TestPoolTurnWaitsForLeaseWithinCtx(t *testing.T) {
	a := slowAgent(false)
	p := NewPool(PoolConfig{Logger: testLogger(t)}, dialFake(t, a, dialCfg{}))
	testkit.Run(t, p, 10*time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = p.Turn(ctx, TurnRequest{Key: "k", Prompt: func(int) string { return "long" }}) }()
	testkit.WaitFor(t, 5*time.Second, "first turn running", func() bool { return int32(a.MaxConcurrent()) >= 1 })
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	calls := 0
	_, err := p.Turn(short, TurnRequest{Key: "k", Prompt: func(int) string { calls++; return "x" }})
	if !errors.Is(err, context.DeadlineExceeded) || calls != 0 {
		t.Errorf("err = %v, prompt built %d times; want DeadlineExceeded before building", err, calls)
	}
}
