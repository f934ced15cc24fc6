package acp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/childlog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/internal/jsonrpc"
)

// Supervisor states reported by Health.
const (
	StateStarting = "starting"
	StateReady    = "ready"
	StateBackoff  = "backoff"
	StateStopping = "stopping"
	StateStopped  = "stopped"
)

// drainWindow is how long the pipe readers may keep reading after the child
// exited, before their read ends are closed under them: a grandchild may
// hold the pipes open, and the readers must not wait for it for ever.
const drainWindow = time.Second

// exitReapWindow is how long a closed connection waits for the child's exit
// before it is treated as a live child with a broken connection.
const exitReapWindow = 200 * time.Millisecond

// Supervisor owns the agent child process end to end: it spawns it with its
// own pipes in its own process group, pumps its stderr into the log, dials
// it with the configured Protocol (ACP by default), notices its death at
// once, restarts it with backoff forever, and stops it politely, then
// firmly, on shutdown.
type Supervisor struct {
	cfg Config
	log hclog.Logger

	stopped chan struct{} // closed when Run has returned
	sp      *spawner      // set while Run runs

	mu            sync.Mutex
	state         string
	cur           agentconn.ChildConn // ready connection, nil otherwise
	ready         chan struct{}       // closed and replaced at every state change
	gen           uint64
	pid           int
	restarts      int
	readyAt       time.Time
	lastErr       error
	binaryMissing bool
	info          agentconn.AgentInfo // the current generation's agent, once ready
	infoSrc       agentconn.ChildConn // refreshes info's live parts; nil before ready
	running       bool
	// failed is set when a child fails and cleared when one is ready;
	// unavailable is set once a caller has waited UnavailableGrace for a
	// failed agent, so later callers fail at once until it is ready.
	failed      bool
	unavailable bool
	// plannedGen is the generation Restart asked to end: its end is a
	// deliberate restart, not a failure, so callers wait for the next child.
	plannedGen uint64
	// restartGen is a generation Restart was asked to replace while it was
	// still starting (it may have read the old config); restartWhy says why.
	restartGen uint64
	restartWhy string
}

// NewSupervisor returns a supervisor for cfg; Run starts the agent. It
// panics without cfg.Command: there is nothing to run.
func NewSupervisor(cfg Config) *Supervisor {
	if cfg.Command == "" {
		panic("acp: NewSupervisor needs Config.Command")
	}
	if cfg.Protocol == nil {
		panic("acp: NewSupervisor needs Config.Protocol")
	}
	cfg = cfg.withDefaults()
	return &Supervisor{
		cfg:     cfg,
		log:     cfg.Logger,
		stopped: make(chan struct{}),
		state:   StateStarting,
		ready:   make(chan struct{}),
	}
}

// Restart replaces the running agent child with a fresh one (after a
// config change the agent reads only at start). A child still starting may
// already have read the old config: it is replaced as soon as its
// handshake succeeds, before any turn uses it. Restart reports whether a
// child was there to restart or will be; if not (the agent is down and
// waiting to start again), the next start picks the change up anyway. A
// requested restart is not a failure: Acquire waits for the new child
// within its ctx instead of failing fast with ErrAgentUnavailable.
func (s *Supervisor) Restart(reason string) bool {
	s.mu.Lock()
	cur := s.cur
	switch {
	case cur != nil:
		s.plannedGen = s.gen
	case s.state == StateStarting && s.gen > 0:
		s.restartGen, s.restartWhy = s.gen, reason
		s.mu.Unlock()
		s.log.Info("agent still starting; it will be restarted once its handshake succeeds", "reason", reason)
		return true
	}
	s.mu.Unlock()
	if cur == nil {
		return false
	}
	cur.Recycle(reason)
	return true
}

// Acquire returns the ready connection, waiting for one within ctx. It fails at
// once with ErrBinaryMissing while the executable does not exist, and with
// ErrStopped after Run has returned. While the agent is down after a
// failure it waits at most UnavailableGrace for the restart under way, then
// fails with ErrAgentUnavailable, and later callers fail at once until the
// agent is ready again: a broken agent must not hold every caller for its
// whole turn timeout. The first start is waited for within ctx.
func (s *Supervisor) Acquire(ctx context.Context) (agentconn.Conn, error) {
	var grace <-chan time.Time
	for {
		s.mu.Lock()
		cur, ch, missing, lastErr := s.cur, s.ready, s.binaryMissing, s.lastErr
		failed, unavailable := s.failed, s.unavailable
		s.mu.Unlock()
		if cur != nil && cur.Err() == nil {
			return cur, nil
		}
		if missing {
			return nil, lastErr
		}
		select {
		case <-s.stopped:
			return nil, ErrStopped
		default:
		}
		if unavailable {
			return nil, s.unavailableErr(lastErr)
		}
		if failed && grace == nil {
			grace = s.cfg.Clock.After(s.cfg.UnavailableGrace)
		}
		select {
		case <-ch:
		case <-grace:
			s.mu.Lock()
			// The failed child may still be on its way out (cur set but dead).
			if s.failed && (s.cur == nil || s.cur.Err() != nil) {
				s.unavailable = true
			}
			s.mu.Unlock()
			s.log.Warn("agent still down after its grace; turns answer the offline fallback until it is back",
				"grace", s.cfg.UnavailableGrace, "last_error", errString(lastErr))
			return nil, s.unavailableErr(lastErr)
		case <-s.stopped:
			return nil, ErrStopped
		case <-ctx.Done():
			if lastErr != nil {
				return nil, fmt.Errorf("waiting for agent (last failure: %v): %w", lastErr, ctx.Err())
			}
			return nil, fmt.Errorf("waiting for agent: %w", ctx.Err())
		}
	}
}

func (s *Supervisor) unavailableErr(lastErr error) error {
	if lastErr != nil {
		return fmt.Errorf("%w (last failure: %v)", ErrAgentUnavailable, lastErr)
	}
	return ErrAgentUnavailable
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Health reports the agent's state without blocking on it.
func (s *Supervisor) Health() AgentHealth {
	s.mu.Lock()
	info, src := s.info, s.infoSrc
	h := AgentHealth{
		// The binary's name only: /health is unauthenticated, and the
		// arguments (ZEROCLAW_ARGS) and the path are not its business.
		Command:       filepath.Base(s.cfg.Command),
		PID:           s.pid,
		State:         s.state,
		Running:       s.running,
		Restarts:      s.restarts,
		BinaryMissing: s.binaryMissing,
	}
	if s.state == StateReady {
		h.UptimeSeconds = s.cfg.Clock.Now().Sub(s.readyAt).Seconds()
	}
	if s.lastErr != nil {
		h.LastError = s.lastErr.Error()
	}
	s.mu.Unlock()
	if src != nil {
		info = src.Info() // outside s.mu: a connection's snapshot has its own lock
	}
	h.Dialect, h.AgentName, h.AgentVersion = info.Dialect, info.Name, info.Version
	h.ProtocolVersion, h.AgentStatus = info.ProtocolVersion, info.Status
	h.LoadedProviders, h.LoadedTools = info.LoadedProviders, info.LoadedTools
	h.AgentUptimeSeconds = info.Uptime.Seconds()
	return h
}

// setState changes the state and wakes Acquire waiters. Callers hold s.mu.
func (s *Supervisor) setStateLocked(state string) {
	s.state = state
	close(s.ready)
	s.ready = make(chan struct{})
}

// Run starts the agent and keeps it alive until ctx ends, then stops it.
// Start failures are logged and retried; Run returns nil on shutdown.
func (s *Supervisor) Run(ctx context.Context) error {
	defer close(s.stopped)
	s.sp = newSpawner()
	defer s.sp.stop()
	defer func() {
		s.mu.Lock()
		s.setStateLocked(StateStopped)
		s.mu.Unlock()
		s.metricSet(func(m *Metrics) { m.ChildUp.Set(0); m.Backoff.Set(0) })
	}()

	b := backoff.NewExponentialBackOff()
	b.InitialInterval = s.cfg.BackoffInitial
	b.MaxInterval = s.cfg.BackoffMax
	b.MaxElapsedTime = 0 // never give up (the v4 default stops after 15 min)
	b.Multiplier = 2
	b.RandomizationFactor = 0.2
	b.Clock = s.cfg.Clock
	b.Reset()

	for first := true; ; first = false {
		if ctx.Err() != nil {
			return nil
		}
		reason, ranFor := s.runOnce(ctx, first)
		if ctx.Err() != nil {
			return nil
		}
		if ranFor >= s.cfg.HealthyReset {
			b.Reset()
		}
		delay := b.NextBackOff()
		s.mu.Lock()
		if !s.plannedLocked(s.gen, reason) {
			s.failed = true
		}
		s.restarts++
		s.setStateLocked(StateBackoff)
		s.mu.Unlock()
		s.metricSet(func(m *Metrics) {
			m.Restarts.WithLabelValues(reason).Inc()
			m.Backoff.Set(delay.Seconds())
		})
		lvl := hclog.Info
		switch {
		case reason == "binary_missing":
			// Said once at Error when first seen; the retries that wait
			// for the file to appear are not news.
			lvl = hclog.Debug
		case delay >= 5*time.Second:
			lvl = hclog.Warn
		}
		s.log.Log(lvl, "restarting agent after backoff", "delay", delay, "reason", reason)
		select {
		case <-s.cfg.Clock.After(delay):
		case <-ctx.Done():
			return nil
		}
		s.metricSet(func(m *Metrics) { m.Backoff.Set(0) })
	}
}

// plannedLocked reports whether generation gen ended because Restart
// asked for it. Such a restart is not a failure: turns arriving meanwhile
// wait for the new child as they do for the first one.
func (s *Supervisor) plannedLocked(gen uint64, reason string) bool {
	return reason == "recycled" && s.plannedGen == gen
}

// noteFailed records that generation gen failed the moment it is known,
// before the child's teardown (which can take StopGrace twice over), and
// wakes Acquire's waiters: UnavailableGrace counts from the failure.
func (s *Supervisor) noteFailed(gen uint64, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.plannedLocked(gen, reason) {
		return
	}
	s.failed = true
	s.setStateLocked(s.state)
}

func (s *Supervisor) metricSet(f func(*Metrics)) {
	if s.cfg.Metrics != nil {
		f(s.cfg.Metrics)
	}
}

// runOnce runs one child generation from spawn to death. It returns the
// reason the child ended and how long it was ready.
func (s *Supervisor) runOnce(ctx context.Context, first bool) (reason string, ranFor time.Duration) {
	s.mu.Lock()
	s.gen++
	gen := s.gen
	s.info, s.infoSrc = agentconn.AgentInfo{}, nil
	s.setStateLocked(StateStarting)
	s.mu.Unlock()
	log := s.log.With("gen", gen)

	p, err := s.spawn(gen, log)
	if err != nil {
		missing := errors.Is(err, ErrBinaryMissing)
		s.mu.Lock()
		s.lastErr, s.binaryMissing = err, missing
		s.setStateLocked(StateBackoff)
		s.mu.Unlock()
		if missing {
			if first {
				log.Error("agent binary missing; voice turns will answer the brain-offline fallback until it appears", "error", err)
			} else {
				log.Debug("agent binary still missing", "error", err)
			}
			return "binary_missing", 0
		}
		log.Error("agent failed to start", "error", err)
		return "spawn_failed", 0
	}
	s.mu.Lock()
	s.pid, s.running, s.binaryMissing = p.cmd.Process.Pid, true, false
	s.mu.Unlock()
	log = log.With("pid", p.cmd.Process.Pid)
	log.Info("agent started", "command", s.cfg.Command, "args", s.cfg.Args)

	defer func() {
		s.mu.Lock()
		s.running, s.pid, s.cur = false, 0, nil
		s.mu.Unlock()
		s.metricSet(func(m *Metrics) { m.ChildUp.Set(0); m.Dialect.Reset() })
	}()

	// Handshake (initialize), unless the child dies first.
	initErr := make(chan error, 1)
	go func() { initErr <- p.conn.Handshake(ctx) }()
	select {
	case err = <-initErr:
	case <-p.exited:
		err = <-initErr // the connection closes with the child; the handshake returns promptly
	}
	if err != nil {
		err = fmt.Errorf("agent start: %w", err)
		s.recordEnd(err)
		reason = "init_failed"
		var unsup *agentconn.UnsupportedError
		if errors.As(err, &unsup) {
			reason = "unsupported"
		}
		log.Error("agent did not initialise", "error", err)
		s.noteFailed(gen, reason)
		p.stop(log, false)
		p.report(log)
		return reason, 0
	}

	info := p.conn.Info()
	readyAt := s.cfg.Clock.Now()
	s.mu.Lock()
	if s.restartGen == gen {
		// Restart was asked while this child started: replace it before
		// any turn can use it, as a planned restart.
		why := s.restartWhy
		s.plannedGen, s.lastErr = gen, fmt.Errorf("%w: recycled: %s", agentconn.ErrAgentGone, why)
		s.mu.Unlock()
		log.Info("restarting the agent as asked while it was starting", "reason", why)
		p.stop(log, true)
		return "recycled", 0
	}
	s.cur, s.info, s.infoSrc, s.readyAt, s.lastErr = p.conn, info, p.conn, readyAt, nil
	s.failed, s.unavailable = false, false
	s.setStateLocked(StateReady)
	s.mu.Unlock()
	s.metricSet(func(m *Metrics) {
		m.ChildUp.Set(1)
		m.Dialect.Reset()
		m.Dialect.WithLabelValues(info.Dialect).Set(1)
	})
	log.Info("agent ready", append([]any{"dialect", info.Dialect, "agent", info.Name, "version", info.Version}, info.Details...)...)

	graceful := false
	select {
	case <-p.exited:
		reason = "exit"
		s.recordEnd(fmt.Errorf("%w: %s", agentconn.ErrAgentGone, p.exitStatus()))
		log.Error("agent exited", "status", p.exitStatus())
	case <-p.conn.Done():
		// A dying child closes stdout just before Wait returns; give the
		// exit a moment to be reaped so a crash is reported as one.
		select {
		case <-p.exited:
			reason = "exit"
			s.recordEnd(fmt.Errorf("%w: %s", agentconn.ErrAgentGone, p.exitStatus()))
			log.Error("agent exited", "status", p.exitStatus())
		case <-time.After(exitReapWindow):
			reason = "connection_closed"
			s.recordEnd(fmt.Errorf("%w: connection closed (%s)", agentconn.ErrAgentGone, p.conn.CloseCause()))
			log.Error("agent connection closed while the process lives; restarting it", "cause", p.conn.CloseCause())
		}
	case r := <-p.recycle:
		reason = "recycled"
		s.recordEnd(fmt.Errorf("%w: recycled: %s", agentconn.ErrAgentGone, r))
		log.Warn("recycling the agent", "reason", r)
	case <-ctx.Done():
		reason, graceful = "shutdown", true
		s.mu.Lock()
		s.setStateLocked(StateStopping)
		s.mu.Unlock()
	}
	ranFor = s.cfg.Clock.Now().Sub(readyAt)
	if !graceful {
		// Fail in-flight turns at once; a graceful stop retires sessions first.
		p.conn.Abort(fmt.Errorf("%w: %s", agentconn.ErrAgentGone, reason))
		s.noteFailed(gen, reason)
	}
	p.stop(log, graceful)
	if !graceful {
		p.report(log)
	} else {
		log.Info("agent stopped", "status", p.exitStatus())
	}
	return reason, ranFor
}

func (s *Supervisor) recordEnd(err error) {
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// process is one spawned child with its pipes and reader goroutines.
type process struct {
	cfg  Config
	cmd  *exec.Cmd
	conn agentconn.ChildConn
	kill context.CancelFunc // ends the child's ctx: Cmd.Cancel sends SIGTERM to the group

	stdin   *os.File
	stdout  *os.File
	stderr  *os.File
	readers sync.WaitGroup
	pump    *stderrPump

	exited  chan struct{} // closed when Wait has returned
	waitErr error
	recycle chan string
}

// spawn starts the child and its readers and opens its connection (without
// the handshake).
func (s *Supervisor) spawn(gen uint64, log hclog.Logger) (*process, error) {
	path, err := resolveCommand(s.cfg.Command)
	if err != nil {
		return nil, err
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}

	childCtx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(childCtx, path, s.cfg.Args...) // #nosec G204 -- the agent command is the operator's ZEROCLAW_BIN/ZEROCLAW_ARGS
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	cmd.Dir = s.cfg.Dir
	cmd.Env = append(append(ChildEnv(os.Environ(), s.cfg.DropEnv), "RUST_LOG=error"), s.cfg.Env...)
	cmd.SysProcAttr = childProcAttr()
	cmd.Cancel = func() error {
		// Polite first: SIGTERM to the whole group; stop escalates to a
		// SIGKILL of the whole group (Cmd.WaitDelay would kill the leader only).
		return ignoreESRCH(syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM))
	}
	if err := s.sp.start(cmd); err != nil {
		kill()
		closeAll(inR, inW, outR, outW, errR, errW)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, exec.ErrNotFound) {
			return nil, fmt.Errorf("%w: %s", ErrBinaryMissing, path)
		}
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	closeAll(inR, outW, errW) // the child holds its ends now

	p := &process{
		cfg: s.cfg, cmd: cmd, kill: kill,
		stdin: inW, stdout: outR, stderr: errR,
		exited:  make(chan struct{}),
		recycle: make(chan string, 1),
	}
	recycle := func(reason string) {
		select {
		case p.recycle <- reason:
		default:
		}
	}
	w := &jsonrpc.LockedWriter{
		W:        inW,
		Deadline: func() error { return inW.SetWriteDeadline(time.Now().Add(s.cfg.WriteTimeout)) },
		OnTimeout: func() {
			recycle(fmt.Sprintf("agent did not read stdin for %s", s.cfg.WriteTimeout))
		},
	}
	noise := childlog.NewLimiter(log.Named("child"), 50, clockwork.NewRealClock())
	var m *agentconn.Metrics
	if s.cfg.Metrics != nil {
		m = &s.cfg.Metrics.Metrics
	}
	conn, err := s.cfg.Protocol.Open(agentconn.Child{
		Gen: gen, InitTimeout: s.cfg.InitTimeout, CancelGrace: s.cfg.CancelGrace, StopGrace: s.cfg.StopGrace,
		Clock: s.cfg.Clock, Metrics: m, Stdin: w, Stdout: outR, Log: log,
		Noise: func(line string) { noise.Emit(hclog.Info, childlog.NoiseLine(line)) },
		Go: func(f func()) {
			p.readers.Add(1)
			go func() {
				defer p.readers.Done()
				f()
			}()
		},
		Recycle: recycle,
	})
	if err != nil {
		err = fmt.Errorf("open agent connection: %w", err)
		conn = nil
	}
	p.conn = conn
	p.pump = newStderrPump(log.Named("child"), s.cfg.StderrLinesPerSecond, s.cfg.Clock)
	if conn != nil {
		p.pump.observe = conn.StderrLine
	}
	p.readers.Add(1)
	go func() {
		defer p.readers.Done()
		p.pump.run(errR)
	}()
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err != nil {
		p.kill()
		p.stopUnopened(log)
		return nil, err
	}
	return p, nil
}

// stopUnopened ends a child whose connection could not be opened: SIGTERM
// (already sent), StopGrace, SIGKILL; then its readers.
func (p *process) stopUnopened(log hclog.Logger) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(p.cfg.StopGrace):
		log.Warn("agent did not exit after SIGTERM; sending SIGKILL to its process group")
	}
	_ = ignoreESRCH(syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL))
	<-p.exited
	p.drainReaders()
	closeAll(p.stdout, p.stderr)
}

// stop ends the child. Graceful: the protocol's polite step (ACP: retire
// sessions; steerable: system.shutdown and a bounded wait for the exit),
// close stdin, wait StopGrace unless the polite step already waited,
// SIGTERM the group, wait StopGrace, SIGKILL. Otherwise the polite steps
// are skipped. It returns when the child and every reader goroutine are
// gone.
func (p *process) stop(log hclog.Logger, graceful bool) {
	waited := false
	if graceful {
		select {
		case <-p.exited:
		default:
			waited = p.conn.Shutdown(p.exited)
		}
	}
	p.conn.Abort(fmt.Errorf("%w: stopped", agentconn.ErrAgentGone))
	_ = p.stdin.Close()
	if graceful && !waited {
		select {
		case <-p.exited:
		case <-time.After(p.cfg.StopGrace):
			log.Warn("agent did not exit after stdin closed; sending SIGTERM")
		}
	}
	p.kill() // SIGTERM to the group if still running
	select {
	case <-p.exited:
	case <-time.After(p.cfg.StopGrace):
		log.Warn("agent did not exit after SIGTERM; sending SIGKILL to its process group")
		_ = ignoreESRCH(syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL))
		select {
		case <-p.exited:
		case <-time.After(2 * time.Second):
			log.Error("agent still running after SIGKILL; giving up on it")
		}
	}
	// Grandchildren may still hold the group or the pipes.
	_ = ignoreESRCH(syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL))
	p.drainReaders()
	p.conn.Wait() // the connection is closed, so its background work ends now
	closeAll(p.stdout, p.stderr)
}

// drainReaders waits for the pipe readers, closing the pipes under them
// after drainWindow (a grandchild may hold them open).
func (p *process) drainReaders() {
	done := make(chan struct{})
	go func() {
		p.readers.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(drainWindow):
		_ = p.stdout.Close()
		_ = p.stderr.Close()
		<-done
	}
}

// exitStatus describes how the child ended.
func (p *process) exitStatus() string {
	select {
	case <-p.exited:
	default:
		return "running"
	}
	if p.cmd.ProcessState == nil {
		if p.waitErr != nil {
			return p.waitErr.Error()
		}
		return "unknown"
	}
	return p.cmd.ProcessState.String()
}

// report logs the end of an unexpected exit, with the last stderr lines
// the rate cap kept out of the log (the logged ones are just above it), on
// one line so the log stays greppable.
func (p *process) report(log hclog.Logger) {
	tail := p.pump.Tail()
	args := []any{"status", p.exitStatus()}
	if c := p.conn.CloseCause(); c != "" {
		args = append(args, "connection", c)
	}
	if len(tail) > 0 {
		args = append(args, "stderr_unlogged", strings.Join(tail, " | "))
	}
	log.Warn("agent ended", args...)
}

// resolveCommand finds the executable; a missing one is ErrBinaryMissing.
func resolveCommand(cmd string) (string, error) {
	if strings.ContainsRune(cmd, os.PathSeparator) {
		st, err := os.Stat(cmd)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("%w: %s", ErrBinaryMissing, cmd)
			}
			return "", fmt.Errorf("agent binary %s: %w", cmd, err)
		}
		if st.IsDir() {
			return "", fmt.Errorf("agent binary %s is a directory", cmd)
		}
		return cmd, nil
	}
	p, err := exec.LookPath(cmd)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found on PATH", ErrBinaryMissing, cmd)
	}
	return p, nil
}

// ChildEnv is env without the variables named in drop: the bridge's own
// secrets (dashboard password, admin and sidecar tokens, its model keys)
// must not be readable by an agent that can run shell commands, nor by a
// helper command the operator configured.
func ChildEnv(env, drop []string) []string {
	if len(drop) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			out = append(out, kv)
		}
	}
	return out
}

func ignoreESRCH(err error) error {
	if errors.Is(err, syscall.ESRCH) || errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		if f != nil {
			_ = f.Close()
		}
	}
}
