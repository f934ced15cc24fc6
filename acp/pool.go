package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
)

// Source hands out the current agent connection, waiting for one within
// ctx. *Supervisor and *acpclient.Client implement it.
type Source interface {
	Acquire(ctx context.Context) (agentconn.Conn, error)
}

// Pool maps callers to agent sessions: one session per pool key, one turn
// at a time per session (per process for legacy agents), rotation on idle
// time, turn count and age, a bound on live sessions, and one retry on a
// lost session. See the package doc for the concurrency rules.
type Pool struct {
	cfg PoolConfig
	src Source
	log hclog.Logger

	stopping chan struct{}
	stopOnce sync.Once
	bg       agentconn.Background // settle and retire goroutines
	turns    atomic.Int64         // turns in Turn

	mu      sync.Mutex
	entries map[string]*entry
	// creating counts session/new requests in flight per connection; they
	// hold a slot under the session limit from the moment they are
	// decided, so concurrent turns can never overshoot it.
	creating map[agentconn.Conn]int
	// retiring counts sessions being closed per connection: the agent
	// still holds them until the close is answered, so they keep their slot.
	retiring map[agentconn.Conn]int
	// queue holds turns waiting for a session slot, first come first served.
	queue []*slotWaiter
	// seq orders turn ends against slot waits (see mustYieldLocked).
	seq uint64
	// rotation counts RotateAll calls; sessions created before the last one are replaced.
	rotation int
	last     *entry // most recently used
	closed   bool
	// restores counts the sessions whose agent restarted under them, for
	// /health (see restore.go).
	restores restoreCounts
}

// entry is one pool key's agent session. lease is a 1-slot semaphore; the
// fields below it are guarded by Pool.mu and written only by the lease holder.
type entry struct {
	key   string
	lease chan struct{}

	client   agentconn.Conn
	sid      string
	created  time.Time
	lastUsed time.Time
	turns    int
	dead     bool // removed from the map; waiters must look again
	rotation int  // Pool.rotation when the session was created
	// endSeq is Pool.seq when the key's last turn ended; passedHead and
	// passes count the turns the session served while passedHead, the
	// head of the slot queue, kept waiting (see mustYieldLocked).
	endSeq     uint64
	passedHead *slotWaiter
	passes     int
	// settling is set while a cancelled turn is settled in the background
	// (it holds lease); a turn that gives up waiting for lease then sends
	// on gaveUp (cap 1), and the settlement retires the session: the agent
	// outlasted a caller's whole deadline, so the key's turns after it
	// start afresh instead of each timing out behind it.
	settling bool
	gaveUp   chan struct{}
	waiting  int // turns waiting for lease
}

// NewPool returns a pool that takes agent clients from src.
func NewPool(cfg PoolConfig, src Source) *Pool {
	cfg = cfg.withDefaults()
	p := &Pool{
		cfg:      cfg,
		src:      src,
		log:      cfg.Logger,
		stopping: make(chan struct{}),
		entries:  make(map[string]*entry),
		creating: make(map[agentconn.Conn]int),
		retiring: make(map[agentconn.Conn]int),
	}
	if cfg.Metrics != nil {
		f := p.liveSessions
		cfg.Metrics.sessions.Store(&f)
	}
	return p
}

// Run closes idle sessions in the background until ctx ends, then waits for
// the pool's background work (cancel settlements, retirements) to finish.
func (p *Pool) Run(ctx context.Context) error {
	tick := p.cfg.Clock.NewTicker(p.cfg.ReapInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.Chan():
			p.reap()
		case <-ctx.Done():
			p.stopOnce.Do(func() { close(p.stopping) })
			p.mu.Lock()
			p.closed = true
			p.mu.Unlock()
			p.kick()
			p.bg.Wait()
			return nil
		}
	}
}

// goBackground runs f on a goroutine the pool waits for at shutdown; after
// shutdown it runs f inline.
func (p *Pool) goBackground(f func()) {
	if !p.bg.Go(f) {
		f()
	}
}

// Health reports the pool's sessions without blocking on turns.
func (p *Pool) Health() PoolHealth {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := PoolHealth{Sessions: p.liveSessionsLocked()}
	h.CachedSession = h.Sessions > 0
	h.SessionsResumed, h.SessionsRecreated, h.SessionsLost = p.restores.resumed, p.restores.recreated, p.restores.lost
	if e := p.last; e != nil && e.sid != "" && e.client.Err() == nil {
		h.SessionTurns = e.turns
	}
	return h
}

// Turns is the number of turns in progress: waiting for a session or
// the agent, or being answered.
func (p *Pool) Turns() int { return int(p.turns.Load()) }

// Keys is the number of pool keys holding an entry, live or not: the
// table MaxKeys bounds.
func (p *Pool) Keys() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.entries)
}

func (p *Pool) liveSessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.liveSessionsLocked()
}

func (p *Pool) liveSessionsLocked() int {
	n := 0
	for _, e := range p.entries {
		if e.sid != "" && e.client.Err() == nil {
			n++
		}
	}
	return n
}

// KeyFor is the pool key of a turn's TurnRequest.Key: the one key of
// KeyShared mode, agentconn.DefaultKey for none, else the key itself.
func (p *Pool) KeyFor(k string) string {
	if p.cfg.KeyMode == KeyShared {
		return string(KeyShared)
	}
	if k == "" {
		return agentconn.DefaultKey
	}
	return k
}

// leases is what a turn holds: its entry's lease and, for legacy agents,
// the process lease. Ownership can move to a background settlement.
type leases struct {
	p    *Pool
	e    *entry
	proc chan struct{}
}

func (l *leases) releaseProc() {
	if l.proc != nil {
		<-l.proc
		l.proc = nil
	}
}

func (l *leases) releaseEntry() {
	if l.e != nil {
		l.p.mu.Lock()
		l.p.seq++
		l.e.endSeq = l.p.seq
		l.p.mu.Unlock()
		<-l.e.lease
		l.e = nil
		l.p.kick() // its session is idle now, so a queued turn may take it
	}
}

func (l *leases) release() {
	l.releaseProc()
	l.releaseEntry()
}

// Turn runs one prompt turn on the session for req.Key. It waits (within
// ctx) for the session's previous turn, a cancelled one included, and for
// a ready agent. When ctx ends mid-turn the agent's turn is cancelled (v1:
// session/cancel, pending permissions answered "cancelled", the cancelled
// result awaited in the background with the session kept, see settle;
// legacy: detached) and Turn returns at once with an error wrapping
// ctx.Err().
func (p *Pool) Turn(ctx context.Context, req TurnRequest) (TurnResult, error) {
	p.turns.Add(1)
	defer p.turns.Add(-1)
	clk := p.cfg.Clock
	start := clk.Now()
	e, err := p.lease(ctx, p.KeyFor(req.Key))
	if err != nil {
		return TurnResult{}, err
	}
	ls := &leases{p: p, e: e}
	defer ls.release()

	c, err := p.acquireInto(ctx, ls)
	if err != nil {
		return TurnResult{}, err
	}
	ph := Phases{Lease: clk.Now().Sub(start), Reused: true}

	for attempt, reacquired := 0, false; ; attempt++ {
		sid, idx, fresh, created, err := p.prepareSession(ctx, ls, e, c, req.NoEvict)
		if err != nil && errors.Is(err, agentconn.ErrAgentGone) && !reacquired && ctx.Err() == nil {
			// The agent died before this turn sent it anything; the
			// supervisor is restarting it, so wait for the next one once.
			reacquired = true
			ls.releaseProc()
			if c, err = p.acquireInto(ctx, ls); err != nil {
				return TurnResult{}, err
			}
			attempt--
			continue
		}
		if err != nil {
			return TurnResult{}, err
		}
		if fresh {
			ph.Reused = false
		}
		ph.NewSession += created
		text := ""
		if req.Prompt != nil {
			text = req.Prompt(idx)
		}
		t0 := clk.Now()
		out, chunks, err := p.runPrompt(ctx, ls, c, sid, text, req.OnChunk, req.Flush)
		ph.Prompt = clk.Now().Sub(t0)
		if err != nil {
			if ctx.Err() != nil {
				return TurnResult{}, fmt.Errorf("turn cancelled: %w", ctx.Err())
			}
			lost, busy := errors.Is(err, agentconn.ErrSessionNotFound), errors.Is(err, agentconn.ErrSessionBusy)
			if attempt == 0 && (lost || busy) {
				p.log.Info("agent session unusable; retrying once on a new session", "session", sid, "error", err)
				p.dropSession(e, c, sid, busy)
				continue
			}
			if !lost && c.Err() != nil {
				p.agentGone(e, c, sid)
				return TurnResult{}, err
			}
			// Hard failure: the next turn starts a fresh session (turn index 0).
			p.dropSession(e, c, sid, !lost && c.Err() == nil)
			return TurnResult{}, err
		}
		now := clk.Now()
		p.mu.Lock()
		e.turns++
		e.lastUsed = now
		p.last = e
		p.mu.Unlock()
		ph.Total = now.Sub(start)
		text = out.Content
		if !out.HasContent {
			text = strings.Join(chunks, "")
		}
		return TurnResult{Text: text, StopReason: out.StopReason, SessionID: sid, TurnIndex: idx, Phases: ph}, nil
	}
}

// keyWaiters is how many turns wait for key's lease.
func (p *Pool) keyWaiters(key string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.entries[key]; e != nil {
		return e.waiting
	}
	return 0
}

// lease takes key's entry lease, FIFO among waiters, within ctx.
func (p *Pool) lease(ctx context.Context, key string) (*entry, error) {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrStopped
		}
		e := p.entries[key]
		if e == nil {
			// Several at a time when the table grew past its bound while
			// every key was in a turn, so it shrinks back once they end.
			for len(p.entries) >= p.cfg.MaxKeys && p.pruneKeysLocked() {
			}
			e = &entry{key: key, lease: make(chan struct{}, 1), gaveUp: make(chan struct{}, 1), lastUsed: p.cfg.Clock.Now()}
			p.entries[key] = e
		}
		e.waiting++
		p.mu.Unlock()
		select {
		case e.lease <- struct{}{}:
			p.mu.Lock()
			e.waiting--
			p.mu.Unlock()
		case <-ctx.Done():
			p.mu.Lock()
			e.waiting--
			// Only a deadline says the agent outlasted the caller: a
			// caller that hung up (another barge-in) says nothing of it.
			if e.settling && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				select {
				case e.gaveUp <- struct{}{}:
				default:
				}
			}
			p.mu.Unlock()
			return nil, fmt.Errorf("waiting for session %q: %w", key, ctx.Err())
		}
		p.mu.Lock()
		dead := e.dead
		p.mu.Unlock()
		if !dead {
			return e, nil
		}
		<-e.lease
	}
}

// acquireInto acquires a live connection and records its process lease in ls.
func (p *Pool) acquireInto(ctx context.Context, ls *leases) (agentconn.Conn, error) {
	c, proc, err := p.acquireClient(ctx)
	if err != nil {
		return nil, err
	}
	ls.proc = proc
	return c, nil
}

// acquireClient returns a ready connection and, for one-turn-per-process
// agents, its held process lease. A legacy agent still busy with a detached
// turn after InitTimeout is recycled through its owner.
func (p *Pool) acquireClient(ctx context.Context) (agentconn.Conn, chan struct{}, error) {
	for {
		c, err := p.src.Acquire(ctx)
		if err != nil {
			return nil, nil, err
		}
		lease := c.TurnLease()
		if lease == nil {
			return c, nil, nil
		}
		select {
		case lease <- struct{}{}:
			return c, lease, nil
		default:
		}
		wait := c.Traits().InitTimeout
		wedged := p.cfg.Clock.After(wait)
		for {
			select {
			case lease <- struct{}{}:
				return c, lease, nil
			case <-ctx.Done():
				return nil, nil, fmt.Errorf("waiting for the agent's previous turn: %w", ctx.Err())
			case <-c.Done():
			case <-wedged:
				p.log.Warn("legacy agent still busy with a detached turn; recycling it", "waited", wait)
				c.Recycle("detached legacy turn still running")
				wedged = nil
				continue
			}
			break
		}
	}
}

// prepareSession returns the entry's session on c, rotating, resuming or
// creating it as needed, with the session's turn index and the time spent
// creating it. noEvict is TurnRequest.NoEvict.
func (p *Pool) prepareSession(ctx context.Context, ls *leases, e *entry, c agentconn.Conn, noEvict bool) (sid string, idx int, fresh bool, created time.Duration, err error) {
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	var stale agentconn.Conn // the connection of a session from before a restart
	var staleSid string
	if e.sid != "" && e.client != c {
		stale, staleSid = e.client, e.sid
		switch {
		case c.Traits().Resume && p.rotationLocked(e, now) == "":
			// The agent restarted but keeps its sessions: reopen this one,
			// its conversation and turn count intact.
			p.mu.Unlock()
			sid, idx, fresh, created, err = p.resumeSession(ctx, ls, e, c, stale, staleSid, now, noEvict)
			if err == nil || !p.resumeRefused(ctx, e, c, err) {
				return sid, idx, fresh, created, err
			}
			// Counted lost and forgotten: the conversation starts again
			// on a new session, in this turn.
			p.log.Info("agent could not reopen the session; starting a new one", "key", e.key, "session", staleSid, "error", err)
			p.mu.Lock()
			stale = nil
		case p.rotationLocked(e, now) == "":
			p.lostLocked(LossAgentRestart)
			fallthrough
		default:
			e.sid = "" // the agent restarted; its sessions are gone
		}
	}
	var rotated string
	if e.sid != "" {
		why := p.rotationLocked(e, now)
		if why == "" && p.mustYieldLocked(e) {
			why = "yield"
			p.metricAdd(func(m *Metrics) { m.SessionYields.Inc() })
		}
		if why != "" {
			p.log.Info("rotating agent session", "key", e.key, "session", e.sid, "reason", why, "turns", e.turns)
			rotated, e.sid = e.sid, ""
			e.passedHead, e.passes = nil, 0
			p.retiring[c]++ // with the unbinding, so its slot is never seen free while the agent holds it
		}
	}
	sid, idx = e.sid, e.turns
	p.mu.Unlock()
	if stale != nil {
		stale.ForgetSession(staleSid)
	}
	if rotated != "" {
		p.retireCounted(c, rotated)
	}
	if sid != "" {
		return sid, idx, false, 0, nil
	}

	if err := p.reserveSlot(ctx, c, e, noEvict); err != nil {
		return "", 0, false, 0, err
	}
	sid, err = p.newSession(ctx, ls, e, c, noEvict)
	if err != nil {
		return "", 0, false, 0, err
	}
	done := p.cfg.Clock.Now()
	p.log.Debug("agent session created", "key", e.key, "session", sid)
	return sid, 0, true, done.Sub(now), nil
}

// resumeSession reopens e's session staleSid, created on the agent's
// previous connection stale, on c (an agent whose sessions outlive its
// process), in a slot reserveSlot gives it. The session keeps its turn
// count, age and rotation. If it cannot be reopened, it is forgotten
// (counted lost, LossResumeFailed); when the agent refused it (see
// resumeRefused) the turn goes on on a new session, else it fails and the
// key's next turn starts afresh.
func (p *Pool) resumeSession(ctx context.Context, ls *leases, e *entry, c, stale agentconn.Conn, staleSid string, start time.Time, noEvict bool) (string, int, bool, time.Duration, error) {
	if err := p.reserveSlot(ctx, c, e, noEvict); err != nil {
		return "", 0, false, 0, err // still bound to stale: the next turn tries again
	}
	sid, err := p.openSession(ctx, ls, e, c, stale, func() (string, error) {
		keyed := agentconn.WithSessionKey(context.Background(), e.key)
		sid, err := c.ResumeSession(keyed, staleSid)
		if errors.Is(err, agentconn.ErrSessionLimit) && !noEvict {
			p.log.Warn("agent session limit reached while resuming; closing idle sessions and retrying", "error", err)
			p.evictIdle(c, e, 1)
			sid, err = c.ResumeSession(keyed, staleSid)
		}
		return sid, err
	})
	if err != nil {
		return "", 0, false, 0, err
	}
	p.mu.Lock()
	idx := e.turns
	p.mu.Unlock()
	p.log.Info("agent session resumed after a restart", "key", e.key, "session", sid, "was", staleSid, "turns", idx)
	return sid, idx, true, p.cfg.Clock.Now().Sub(start), nil
}

// resumeRefused reports whether a resumption that failed with err left
// the turn free to start a new session at once: the session was
// forgotten, and neither the turn's ctx nor the connection has ended.
func (p *Pool) resumeRefused(ctx context.Context, e *entry, c agentconn.Conn, err error) bool {
	if ctx.Err() != nil || c.Err() != nil || errors.Is(err, agentconn.ErrAgentGone) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return e.sid == ""
}

// newSession creates a session on c for e, holding the slot reserveSlot
// gave it; at the agent's own session limit an idle session is closed and
// the agent asked again, unless noEvict.
func (p *Pool) newSession(ctx context.Context, ls *leases, e *entry, c agentconn.Conn, noEvict bool) (string, error) {
	return p.openSession(ctx, ls, e, c, nil, func() (string, error) {
		keyed := agentconn.WithSessionKey(context.Background(), e.key)
		sid, err := c.NewSession(keyed)
		if errors.Is(err, agentconn.ErrSessionLimit) && !noEvict {
			p.log.Warn("agent session limit reached; closing idle sessions and retrying", "error", err)
			p.evictIdle(c, e, 1)
			sid, err = c.NewSession(keyed)
		}
		return sid, err
	})
}

// openSession runs open (a session creation or resumption on c, for e)
// in the slot reserveSlot gave it. It runs to its end (bounded by
// InitTimeout) whatever happens to ctx: an agent that was asked creates
// the session even when the caller has gone, and a session nobody records
// is never closed. When ctx ends first, the turn's leases move to a
// background goroutine that records the session for e's key (its next
// turn uses it) and releases them. resumedFrom is the connection of the
// session being resumed, nil for a new one.
func (p *Pool) openSession(ctx context.Context, ls *leases, e *entry, c, resumedFrom agentconn.Conn, open func() (string, error)) (string, error) {
	type result struct {
		sid string
		err error
	}
	ch := make(chan result, 1)
	// Deliberately detached from the caller: a session the agent creates
	// must be recorded even if the caller has gone; NewSession and
	// ResumeSession bound themselves by InitTimeout.
	go func() { // #nosec G118 -- see above
		sid, err := open()
		ch <- result{sid, err}
	}()
	select {
	case r := <-ch:
		p.recordSession(e, c, resumedFrom, r.sid, r.err)
		return r.sid, r.err
	case <-ctx.Done():
	}
	held := *ls
	*ls = leases{}
	p.goBackground(func() {
		defer held.release()
		r := <-ch
		p.recordSession(e, c, resumedFrom, r.sid, r.err)
		if r.err == nil {
			p.log.Debug("agent session created after its caller left; kept for the key", "key", e.key, "session", r.sid)
		}
	})
	return "", fmt.Errorf("creating an agent session: %w", ctx.Err())
}

// recordSession binds a new session to e (whose lease the caller holds)
// and gives back the slot reserved for its creation. A resumed session
// (resumedFrom set) keeps its turns, age and rotation; one that could not
// be resumed is forgotten.
func (p *Pool) recordSession(e *entry, c, resumedFrom agentconn.Conn, sid string, err error) {
	now := p.cfg.Clock.Now()
	p.mu.Lock()
	if p.creating[c]--; p.creating[c] <= 0 {
		delete(p.creating, c)
	}
	var forget string
	switch {
	case err == nil && resumedFrom != nil:
		p.restoredLocked(e.sid, sid)
		e.client, e.sid = c, sid
	case err == nil:
		e.client, e.sid, e.created, e.lastUsed, e.turns, e.rotation = c, sid, now, now, 0, p.rotation
	case resumedFrom != nil && e.client == resumedFrom && (c.Err() != nil || errors.Is(err, agentconn.ErrAgentGone)):
		// The new process died too: nothing said the session is gone, so
		// the key stays bound to it and the next process is asked again.
	case resumedFrom != nil && e.client == resumedFrom:
		p.lostLocked(LossResumeFailed)
		forget, e.sid = e.sid, ""
	}
	p.mu.Unlock()
	if forget != "" {
		resumedFrom.ForgetSession(forget)
	}
	p.kick()
}

// RotateAll makes every open session be replaced before its next turn
// (after the persona files changed); the old ones are retired then.
func (p *Pool) RotateAll() {
	p.mu.Lock()
	p.rotation++
	p.mu.Unlock()
}

// rotationLocked returns why e's session must be replaced, or "".
func (p *Pool) rotationLocked(e *entry, now time.Time) string {
	switch {
	case e.rotation < p.rotation:
		return "rotated"
	case now.Sub(e.lastUsed) > p.cfg.SessionIdle:
		return "idle"
	case e.turns >= p.cfg.SessionMaxTurns:
		return "turns"
	case now.Sub(e.created) > p.cfg.SessionMaxAge:
		return "age"
	}
	return ""
}

// maxPasses is how many turns a session may start while the head of the
// slot queue keeps waiting, counting from when the head has seen one of its
// turns end, before it yields to the head. One lets a barge-in's
// replacement turn keep its conversation even when sessions are scarce.
const maxPasses = 1

// mustYieldLocked reports whether e's session, about to serve another turn
// for its key, must instead go to the turn at the head of the slot queue.
// Idle sessions are evicted for queued turns, but a key whose turns arrive
// back to back (the next one already waiting for the key when the previous
// ends) never leaves its session idle, so a LAN client could otherwise hold
// every slot and starve the robot until its sessions rotate. Once a queued
// turn has waited through the end of one of e's turns, e may start
// maxPasses more before its session is closed for the queue's head; the
// key's turn then queues for a slot behind it like any other.
func (p *Pool) mustYieldLocked(e *entry) bool {
	if len(p.queue) == 0 {
		return false
	}
	head := p.queue[0]
	if head.seq > e.endSeq {
		return false // the head queued after the key's last turn ended
	}
	if e.passedHead != head {
		e.passedHead, e.passes = head, 0
	}
	e.passes++
	return e.passes > maxPasses
}

// sessionLimit is the most sessions the pool keeps on c.
func (p *Pool) sessionLimit(c agentconn.Conn) int {
	limit := p.cfg.MaxSessions
	if m := c.Traits().MaxSessions; m > 0 && m < limit {
		limit = m
	}
	return limit
}

// slotWaiter is a turn queued for a session slot; wake is signalled when a
// slot may have freed. seq is Pool.seq when it queued.
type slotWaiter struct {
	wake chan struct{}
	seq  uint64
}

// slotRecheck bounds how long a queued turn sleeps between looks at the
// pool, so a wake-up that was never sent (the agent's own session count
// changing, say) cannot strand it.
const slotRecheck = 250 * time.Millisecond

// reserveSlot reserves room on c for one new session for self: a free slot,
// else the least recently used idle session is closed. When every session
// is in a turn the caller waits, first come first served, for the first
// that frees, within ctx; past SessionQueue waiters it fails with
// ErrSessionLimit. A reservation is released by recordSession. With
// noEvict it is reserveFree's instead.
func (p *Pool) reserveSlot(ctx context.Context, c agentconn.Conn, self *entry, noEvict bool) error {
	if noEvict {
		return p.reserveFree(ctx, c, self)
	}
	var w *slotWaiter
	defer func() {
		if w != nil {
			p.leaveQueue(w)
		}
	}()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return ErrStopped
		}
		first := (w == nil && len(p.queue) == 0) || (w != nil && p.queue[0] == w)
		var victim *entry
		var vsid string
		if first {
			var ok bool
			victim, vsid, ok = p.takeSlotLocked(c, self)
			if ok {
				if w != nil {
					p.queue = p.queue[1:]
					w = nil
				}
				p.mu.Unlock()
				p.kick() // there may be room for the next one too
				return nil
			}
		}
		if victim != nil {
			// Its slot frees when the agent has closed it; wait for that.
			p.mu.Unlock()
			<-victim.lease
			p.log.Info("closing least recently used agent session to make room", "key", victim.key, "session", vsid)
			p.retireCounted(c, vsid)
			p.mu.Lock()
		}
		if w == nil {
			if len(p.queue) >= p.cfg.SessionQueue {
				n := len(p.queue)
				p.mu.Unlock()
				return fmt.Errorf("%w: every session is in a turn and %d turns are already waiting", agentconn.ErrSessionLimit, n)
			}
			p.seq++
			w = &slotWaiter{wake: make(chan struct{}, 1), seq: p.seq}
			p.queue = append(p.queue, w)
			p.metricAdd(func(m *Metrics) { m.SessionWaits.Inc() })
		}
		p.mu.Unlock()
		select {
		case <-w.wake:
		case <-p.cfg.Clock.After(slotRecheck):
		case <-c.Done():
			return fmt.Errorf("waiting for a session slot: %w", c.Err())
		case <-ctx.Done():
			return fmt.Errorf("waiting for a session slot: %w", ctx.Err())
		}
	}
}

// takeSlotLocked reserves a slot on c when one is free. Sessions being
// created or closed hold theirs, so the agent never holds more than the
// limit. When none is free and no close is already under way, the least
// recently used idle session is evicted (returned with its lease held, to be
// released and retired after p.mu); its slot frees when the agent has
// closed it. ok reports a reservation.
func (p *Pool) takeSlotLocked(c agentconn.Conn, self *entry) (victim *entry, sid string, ok bool) {
	if p.slotsUsedLocked(c, self) < p.sessionLimit(c) {
		p.creating[c]++
		return nil, "", true
	}
	if p.retiring[c] > 0 {
		return nil, "", false
	}
	victim = p.idleVictimLocked(c, self)
	if victim == nil {
		return nil, "", false
	}
	sid, victim.sid = victim.sid, ""
	p.retiring[c]++ // counted now, so the slot stays taken until the close ends
	return victim, sid, false
}

// slotsUsedLocked counts the session slots on c taken by other keys'
// sessions and by sessions being created or closed (the agent holds them
// until the close is answered).
func (p *Pool) slotsUsedLocked(c agentconn.Conn, self *entry) int {
	n := p.creating[c] + p.retiring[c] + c.LateSessions()
	for _, e := range p.entries {
		if e != self && e.sid != "" && e.client == c {
			n++
		}
	}
	return n
}

// reserveFree reserves a free slot on c for self (TurnRequest.NoEvict):
// never by closing another key's session and never ahead of, or behind,
// turns queued for a slot. While a close already under way may free one
// it looks again every slotRecheck, within ctx; otherwise it fails at once
// with ErrSessionLimit.
func (p *Pool) reserveFree(ctx context.Context, c agentconn.Conn, self *entry) error {
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return ErrStopped
		}
		queued := len(p.queue)
		if queued == 0 && p.slotsUsedLocked(c, self) < p.sessionLimit(c) {
			p.creating[c]++
			p.mu.Unlock()
			return nil
		}
		closing := p.retiring[c] > 0
		p.mu.Unlock()
		if queued > 0 || !closing {
			return fmt.Errorf("%w: no free session slot (%d turns waiting for one), and this turn may not close another key's session",
				agentconn.ErrSessionLimit, queued)
		}
		select {
		case <-p.cfg.Clock.After(slotRecheck):
		case <-c.Done():
			return fmt.Errorf("waiting for a session slot: %w", c.Err())
		case <-ctx.Done():
			return fmt.Errorf("waiting for a session slot: %w", ctx.Err())
		}
	}
}

// idleVictimLocked returns the least recently used session on c not in a
// turn, with its lease taken, or nil.
func (p *Pool) idleVictimLocked(c agentconn.Conn, self *entry) *entry {
	var victim *entry
	for _, e := range p.entries {
		if e == self || e.sid == "" || e.client != c {
			continue
		}
		if victim == nil || e.lastUsed.Before(victim.lastUsed) {
			select {
			case e.lease <- struct{}{}:
				if victim != nil {
					<-victim.lease
				}
				victim = e
			default:
			}
		}
	}
	return victim
}

// leaveQueue removes w from the queue (if still there) and passes any
// wake-up it may have swallowed to the new head.
func (p *Pool) leaveQueue(w *slotWaiter) {
	p.mu.Lock()
	if i := slices.Index(p.queue, w); i >= 0 {
		p.queue = slices.Delete(p.queue, i, i+1)
	}
	p.mu.Unlock()
	p.kick()
}

// kick wakes the turn at the head of the slot queue to look again.
func (p *Pool) kick() {
	p.mu.Lock()
	var head *slotWaiter
	if len(p.queue) > 0 {
		head = p.queue[0]
	}
	p.mu.Unlock()
	if head != nil {
		select {
		case head.wake <- struct{}{}:
		default:
		}
	}
}

// pruneKeysLocked forgets the least recently used key with no session and
// no turn, reporting whether there was one (a flood of new session ids must
// not grow the table without bound). Keys holding a session or a turn stay;
// those are bounded by MaxSessions and by the server's connection limit.
func (p *Pool) pruneKeysLocked() bool {
	var oldest *entry
	for _, e := range p.entries {
		if e.sid != "" || len(e.lease) > 0 {
			continue
		}
		if oldest == nil || e.lastUsed.Before(oldest.lastUsed) {
			oldest = e
		}
	}
	if oldest == nil {
		return false
	}
	select {
	case oldest.lease <- struct{}{}:
	default:
		return false
	}
	oldest.dead = true
	delete(p.entries, oldest.key)
	if p.last == oldest {
		p.last = nil
	}
	<-oldest.lease
	p.metricAdd(func(m *Metrics) { m.KeysForgotten.Inc() })
	return true
}

func (p *Pool) metricAdd(f func(*Metrics)) {
	if p.cfg.Metrics != nil {
		f(p.cfg.Metrics)
	}
}

// evictIdle closes up to n sessions on c whose entries are not in a turn,
// least recently used first, and returns how many it closed; each close
// has reached the agent when it returns.
func (p *Pool) evictIdle(c agentconn.Conn, self *entry, n int) int {
	freed := 0
	for freed < n {
		p.mu.Lock()
		victim := p.idleVictimLocked(c, self)
		var sid string
		if victim != nil {
			sid, victim.sid = victim.sid, ""
			p.retiring[c]++
		}
		p.mu.Unlock()
		if victim == nil {
			return freed
		}
		<-victim.lease
		p.log.Info("closing least recently used agent session to make room", "key", victim.key, "session", sid)
		// In line, not in the background: the caller asks the agent again
		// at once, and the agent must have closed the session by then.
		p.closeCounted(c, sid)
		freed++
	}
	return freed
}

// dropSession forgets e's session sid; retire also closes it on the agent.
// A retired session keeps its slot, counted in the same critical section
// that unbinds it: between the two, a concurrent turn would see the slot
// free while the agent still holds the session, and overshoot the limit.
func (p *Pool) dropSession(e *entry, c agentconn.Conn, sid string, retire bool) {
	p.mu.Lock()
	if e.sid == sid && e.client == c {
		e.sid = ""
	}
	if retire {
		p.retiring[c]++
	}
	p.mu.Unlock()
	if retire {
		p.retireCounted(c, sid)
	} else {
		c.ForgetSession(sid)
		p.kick()
	}
}

// detachSession unbinds sid from e so the key's next turn starts a new session.
func (p *Pool) detachSession(e *entry, c agentconn.Conn, sid string) {
	p.mu.Lock()
	if e.sid == sid && e.client == c {
		e.sid = ""
	}
	p.mu.Unlock()
	p.kick()
}

// retireCounted closes sid on c in the background; its slot, already
// counted in p.retiring (under the same lock that unbound the session from
// its key), is given back when the close ends.
func (p *Pool) retireCounted(c agentconn.Conn, sid string) {
	p.goBackground(func() { p.closeCounted(c, sid) })
}

// closeCounted closes sid on c (bounded by retireTimeout), then frees the
// slot counted in p.retiring and wakes queued turns.
func (p *Pool) closeCounted(c agentconn.Conn, sid string) {
	c.CloseSession(context.Background(), sid)
	p.mu.Lock()
	if p.retiring[c]--; p.retiring[c] <= 0 {
		delete(p.retiring, c)
	}
	p.mu.Unlock()
	p.kick()
}

// reap closes sessions idle longer than SessionIdle and forgets unused keys.
func (p *Pool) reap() {
	now := p.cfg.Clock.Now()
	type victim struct {
		c   agentconn.Conn
		sid string
	}
	var victims, lost []victim
	p.mu.Lock()
	for key, e := range p.entries {
		select {
		case e.lease <- struct{}{}:
		default:
			continue // in a turn
		}
		idle := now.Sub(e.lastUsed) > p.cfg.SessionIdle
		switch {
		case e.sid != "" && e.client.Err() != nil:
			// Its agent process is gone. A session the next process can
			// resume is kept for the key's next turn, until it is idle.
			if idle || !e.client.Traits().Resume {
				if p.rotationLocked(e, now) == "" {
					p.lostLocked(LossAgentRestart)
				}
				lost = append(lost, victim{e.client, e.sid})
				e.sid = ""
			}
		case e.sid != "" && idle:
			victims = append(victims, victim{e.client, e.sid})
			e.sid = ""
			p.retiring[e.client]++
		case e.sid == "" && idle:
			e.dead = true
			delete(p.entries, key)
			if p.last == e {
				p.last = nil
			}
		}
		<-e.lease
	}
	p.mu.Unlock()
	for _, v := range lost {
		v.c.ForgetSession(v.sid)
	}
	for _, v := range victims {
		p.log.Debug("closing idle agent session", "session", v.sid)
		p.retireCounted(v.c, v.sid)
	}
	p.kick()
}

// runPrompt sends the prompt and forwards chunks until the result arrives
// or ctx ends. On ctx's end it hands the leases to a background settlement
// (ls is emptied) and returns ctx's error.
func (p *Pool) runPrompt(ctx context.Context, ls *leases, c agentconn.Conn, sid, text string, onChunk func(string), flush func()) (agentconn.PromptResult, []string, error) {
	t := agentconn.NewMailbox(sid)
	c.BeginTurn(t)
	acpCtx, abandon := context.WithCancel(context.Background())
	resCh := make(chan promptOutcome, 1)
	go func() {
		r, err := c.Prompt(acpCtx, sid, text)
		resCh <- promptOutcome{r, err}
	}()

	var chunks []string
	forward := func(deliver bool) {
		for _, s := range t.Drain() {
			chunks = append(chunks, s)
			if deliver && onChunk != nil {
				onChunk(s)
			}
		}
	}
	for {
		select {
		case <-t.Signal():
			if ctx.Err() == nil {
				forward(true)
				if flush != nil && onChunk != nil {
					flush()
				}
				continue
			}
		case o := <-resCh:
			forward(ctx.Err() == nil) // every chunk sent before the result is queued by now
			endTurn(c, t)
			abandon()
			return o.res, chunks, o.err
		case <-ctx.Done():
		}
		// ctx ended: barge-in or timeout.
		t.MarkCancelled()
		p.settle(ls, c, sid, t, resCh, abandon)
		return agentconn.PromptResult{}, chunks, ctx.Err()
	}
}

// endTurn ends t's routing on c, then refuses its late text.
func endTurn(c agentconn.Conn, t *agentconn.Mailbox) {
	c.EndTurn(t)
	t.Close()
}

type promptOutcome struct {
	res agentconn.PromptResult
	err error
}

// settle finishes a cancelled turn in the background, owning its leases
// (so the key's next turn waits for it, first come first served). The
// cancel is re-sent once. A connection with KeepCancelled keeps the
// session while the agent finishes what it could not interrupt, up to
// SessionIdle (by then an unused session would be rotated anyway) or
// until a turn of the key gives up waiting at its own deadline, whichever
// comes first; one without retires the session after CancelGrace.
func (p *Pool) settle(ls *leases, c agentconn.Conn, sid string, t *agentconn.Mailbox, resCh <-chan promptOutcome, abandon context.CancelFunc) {
	held := *ls
	*ls = leases{}
	started := p.cfg.Clock.Now()
	traits := c.Traits()
	if !traits.Cancel {
		// Legacy: no cancel in protocol. Detach: the session is retired and
		// the turn runs out while holding the process lease.
		p.detachSession(held.e, c, sid)
		held.releaseEntry()
		p.log.Info("legacy agent cannot cancel; turn detached", "session", sid)
		p.goBackground(func() {
			defer held.releaseProc()
			defer abandon()
			defer endTurn(c, t)
			select {
			case <-resCh:
				c.CloseSession(context.Background(), sid)
			case <-c.Done():
			case <-p.stopping:
			}
		})
		return
	}
	if err := c.CancelTurn(sid); err != nil {
		p.log.Debug("session/cancel not sent", "session", sid, "error", err)
	}
	grace, limit := traits.CancelGrace, traits.CancelGrace
	if traits.KeepCancelled {
		limit = max(grace, p.cfg.SessionIdle)
	}
	e := held.e
	p.mu.Lock()
	e.settling = true
	select {
	case <-e.gaveUp: // a give-up meant for an earlier settlement
	default:
	}
	p.mu.Unlock()
	p.goBackground(func() {
		defer held.release()
		defer func() { p.mu.Lock(); e.settling = false; p.mu.Unlock() }()
		defer abandon()
		defer endTurn(c, t)
		resend := p.cfg.Clock.After(min(time.Second, grace/2))
		deadline := p.cfg.Clock.After(limit)
		var overdue <-chan time.Time
		if limit > grace {
			overdue = p.cfg.Clock.After(grace)
		}
		late := false
		for {
			select {
			case o := <-resCh:
				if o.err != nil {
					lost := errors.Is(o.err, agentconn.ErrSessionNotFound)
					if !lost && c.Err() != nil {
						p.agentGone(held.e, c, sid)
						return
					}
					p.dropSession(held.e, c, sid, !lost)
					p.log.Debug("cancelled turn ended with an error", "session", sid, "error", o.err)
					return
				}
				lvl := hclog.Debug
				if late {
					lvl = hclog.Info
				}
				p.log.Log(lvl, "agent confirmed cancel", "session", sid, "stop", o.res.StopReason,
					"elapsed", p.cfg.Clock.Now().Sub(started))
				return
			case <-resend:
				resend = nil
				_ = c.CancelTurn(sid) // a cancel racing the prompt's start can be lost
			case <-overdue:
				overdue, late = nil, true
				p.log.Warn("cancelled turn still running after the grace (a tool the agent cannot interrupt?); keeping the session: the key's next turn waits for its result",
					"session", sid, "grace", grace, "limit", limit)
			case <-deadline:
				p.log.Warn("agent did not confirm the cancel in time; retiring the session", "session", sid, "waited", limit)
				p.dropSession(held.e, c, sid, true)
				return
			case <-e.gaveUp:
				p.log.Warn("a turn's whole deadline passed waiting for the cancelled turn's result; retiring the session so the conversation's next turn starts afresh",
					"session", sid, "waited", p.cfg.Clock.Now().Sub(started))
				p.dropSession(held.e, c, sid, true)
				return
			case <-c.Done():
				p.agentGone(held.e, c, sid)
				return
			case <-p.stopping:
				p.dropSession(held.e, c, sid, false)
				return
			}
		}
	})
}

// queued reports how many turns wait for a session slot.
func (p *Pool) queued() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}
