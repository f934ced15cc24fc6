// Package bridge is the HTTP face of zeroclaw-bridge and the home of the
// plumbing every feature shares. It owns the echo server (FastAPI-shaped
// errors, recovery, request logging, body deadlines, the upload budget,
// the connection limit), GET /health and GET /metrics (also /metrics/),
// and the server's dotty_* series, among them the request series every
// feature records its routes in. Its sub-packages are the kit every
// feature uses: httpapi (errors, the request binder, SSE headers), fanout
// (the one publish/subscribe bus and its lag policy), health (the
// conditions that make /health "degraded"), convolog, turnbus, llm,
// periphery, sidecar, and testkit for tests; and voice, the voice routes.
// Feature packages mount their routes on the same echo instance through
// Server.Echo.
//
// # Lifecycle
//
// New builds the server; Run listens and serves until its ctx ends. Then it
// closes the Stopping channel and keeps serving for at most
// Config.ShutdownGrace while requests in flight finish: routes that start
// voice turns answer 503 from then on, /health says "stopping", and feeds
// (SSE) end, as they select on Stopping. Requests still running when the
// grace is over have their context ended with httpapi.ErrShuttingDown as
// its cause, so a turn is cancelled and its handler writes the route's
// failure reply (the NDJSON error frame, the fallback); they get a short
// while more to write it, then the connections left are closed.
//
// # Concurrency
//
// /health reads snapshots through AgentStatus and SessionStatus, which must
// never block, and the health conditions (one short lock); the handlers
// hold no locks of their own.
package bridge

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// ServiceName is the "service" value of /health, kept from bridge.py.
const ServiceName = "zeroclaw-bridge"

// DefaultShutdownGrace is how long requests in flight may run on once the
// server is stopping.
const DefaultShutdownGrace = 10 * time.Second

// lastWordTimeout is how long, once the grace is over and the requests
// left have had their context ended, their handlers have to write their
// last frame before the connections still open are closed.
const lastWordTimeout = 3 * time.Second

// Connection and body defaults: a LAN client must not be able to hold
// connections, buffers or goroutines for ever.
const (
	DefaultIdleTimeout   = 90 * time.Second
	DefaultBodyTimeout   = 10 * time.Second
	DefaultUploadTimeout = 60 * time.Second
	DefaultMaxConns      = 512
	// loopbackReserve is how many connections beyond MaxConns only
	// loopback peers may open, so an operator's curl and a local scraper
	// still get in while LAN clients hold every ordinary slot.
	loopbackReserve = 32
	// maxHeaderBytes bounds a request's header block; real callers send
	// well under 2 KiB.
	maxHeaderBytes = 64 << 10
	// readHeaderTimeout bounds the wait for a request's header block.
	readHeaderTimeout = 10 * time.Second
)

// uploadPaths are the routes whose bodies are recordings or photos, read
// under UploadTimeout instead of BodyTimeout; Config.UploadPaths adds more.
var uploadPaths = []string{"/api/vision/explain", "/api/audio/explain", "/v1/listen"}

// AgentStatus reports the supervised agent; *acp.Supervisor implements it.
// Health must not block.
type AgentStatus interface{ Health() acp.AgentHealth }

// SessionStatus reports the agent session pool; *acp.Pool implements it.
// Health must not block.
type SessionStatus interface{ Health() acp.PoolHealth }

// Config configures the HTTP server. New takes the zero value (it listens
// on all interfaces at a free port and reports an idle agent) and fills
// each bound left zero; Validate checks a Config as the bridge's settings
// fill it, starting from DefaultConfig.
type Config struct {
	// Version is the bridge's version, shown on /health.
	Version string
	// Host is the listen host (BRIDGE_HOST); empty means all interfaces.
	Host string
	// Port is the listen port (PORT); 0 picks a free port.
	Port int
	// Logger receives lifecycle and request logs. Nil discards them.
	Logger hclog.Logger
	// Gatherer is the metrics registry served on /metrics and /metrics/.
	// Nil serves an empty registry.
	Gatherer prometheus.Gatherer
	// Agent feeds acp_running and the agent object of /health. Nil reports
	// a zero acp.AgentHealth.
	Agent AgentStatus
	// Sessions feeds cached_session, session_turns and sessions of /health.
	// Nil reports a zero acp.PoolHealth.
	Sessions SessionStatus
	// Health is the conditions set the components that write files mark
	// (the same set is in their configs): while any is failing, /health
	// says "degraded" and lists the problems. Nil reports none.
	Health *health.Conditions
	// ShutdownGrace is how long requests in flight, voice turns above all,
	// may run on once the server is stopping (BRIDGE_SHUTDOWN_GRACE,
	// default 10 s); Run returns as soon as none is left.
	ShutdownGrace time.Duration
	// IdleTimeout closes a kept-alive connection with no request for this
	// long (BRIDGE_IDLE_TIMEOUT, default 90 s).
	IdleTimeout time.Duration
	// BodyTimeout bounds the reading of a JSON request body from its first
	// byte to its last (BRIDGE_BODY_TIMEOUT, default 10 s).
	BodyTimeout time.Duration
	// UploadTimeout is BodyTimeout for uploads: photos, audio clips and the
	// firmware's recordings (BRIDGE_UPLOAD_TIMEOUT, default 60 s).
	UploadTimeout time.Duration
	// MaxConns bounds open connections (BRIDGE_MAX_CONNS, default 512);
	// loopback peers get a few more. Past it a new connection waits for a
	// free slot, at most readHeaderTimeout, then is closed.
	MaxConns int
	// TurnedAway counts connections the connection limit closed without
	// serving them (dotty_http_connections_turned_away_total); nil counts
	// none.
	TurnedAway prometheus.Counter
	// UploadBudget bounds the bytes of request bodies held in memory, all
	// requests together (BRIDGE_UPLOAD_BUDGET, DefaultUploadBudget); a
	// body larger than FreeBody waits for room, first come first served,
	// within its body deadline, then gets a 503 with a Retry-After. An
	// upload larger than the whole budget gets 413.
	UploadBudget int64
	// UploadBudgetInUse, UploadBudgetWaiting and UploadsRefused are
	// dotty_http_upload_budget_in_use_bytes, dotty_http_upload_budget_waiting
	// and dotty_http_upload_budget_refused_total; nil ones record nothing.
	UploadBudgetInUse, UploadBudgetWaiting prometheus.Gauge
	UploadsRefused                         prometheus.Counter
	// UploadPaths are more routes read under UploadTimeout, besides the
	// photo and audio routes and /v1/listen: the firmware sidecar's path
	// when SIDECAR_PATH moves it, so its recordings are not cut at
	// BodyTimeout. Uploads are also the routes that read a body of their
	// own type (multipart photos, audio), exempt from the JSON rule.
	UploadPaths []string
	// Access is the host, origin and credentials rule; the server applies
	// its CheckWrite to every state-changing request. Nil: this machine's
	// own names, no public hosts, no credentials.
	Access *httpapi.Access
}

// zeroAgent and zeroPool stand in for an absent AgentStatus or SessionStatus.
type zeroAgent struct{}

func (zeroAgent) Health() acp.AgentHealth { return acp.AgentHealth{} }

type zeroPool struct{}

func (zeroPool) Health() acp.PoolHealth { return acp.PoolHealth{} }

// DefaultConfig returns the listener's settings as bridge.py had them
// (0.0.0.0:8080) with the connection, body and shutdown bounds: the one
// place their defaults are written. Its zero fields (no logger, metrics or
// agent) are New's to fill.
func DefaultConfig() Config {
	return Config{Host: "0.0.0.0", Port: 8080, ShutdownGrace: DefaultShutdownGrace, IdleTimeout: DefaultIdleTimeout,
		BodyTimeout: DefaultBodyTimeout, UploadTimeout: DefaultUploadTimeout, MaxConns: DefaultMaxConns, UploadBudget: DefaultUploadBudget}
}

// withDefaults fills each bound left zero with its DefaultConfig value,
// field by field; Host and Port are used as they are ("" and 0: every
// interface, a free port).
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Gatherer == nil {
		c.Gatherer = prometheus.NewRegistry()
	}
	if c.Agent == nil {
		c.Agent = zeroAgent{}
	}
	if c.Sessions == nil {
		c.Sessions = zeroPool{}
	}
	fieldcheck.Fill(&c, DefaultConfig(), "ShutdownGrace", "IdleTimeout", "BodyTimeout", "UploadTimeout", "MaxConns", "UploadBudget")
	if c.Access == nil {
		c.Access = httpapi.NewAccess(httpapi.AccessConfig{Logger: c.Logger})
	}
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("Port"): the one range check of each field; the
// bridge's command line names the variable a value came from. The bounds
// want more than 0 (New fills a zero one with its default, but a setting
// of 0 is a mistake), the upload budget at least the largest JSON body.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("Host", !strings.ContainsAny(c.Host, " /"), c.Host, "a host name or address")
	errs.Check("Port", c.Port >= 0 && c.Port <= 65535, c.Port, "a port from 0 to 65535")
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"IdleTimeout", c.IdleTimeout}, {"BodyTimeout", c.BodyTimeout}, {"UploadTimeout", c.UploadTimeout}, {"ShutdownGrace", c.ShutdownGrace}} {
		errs.Check(d.field, d.v > 0, d.v, "more than 0")
	}
	errs.Check("MaxConns", c.MaxConns >= 1, c.MaxConns, "at least 1")
	// httpapi.MaxBody is 1 MiB: BRIDGE_UPLOAD_BUDGET's unit.
	errs.Check("UploadBudget", c.UploadBudget >= httpapi.MaxBody, c.UploadBudget, "at least 1 (MiB)")
	for _, p := range c.UploadPaths {
		errs.Check("UploadPaths", strings.HasPrefix(p, "/"), p, "paths starting with /")
	}
	return errs.Err()
}

// Server is the bridge's HTTP server. Build it with New; mount more routes
// on Echo before calling Run.
type Server struct {
	cfg Config
	e   *echo.Echo
	log hclog.Logger

	// uploads are the paths read under UploadTimeout, whose bodies are
	// not JSON; fixed after New.
	uploads map[string]bool
	// budget bounds the request bodies in memory (limitUploads).
	budget *uploadBudget

	stopping     chan struct{}
	stoppingOnce sync.Once
	inFlight     inFlight // requests being served, for the shutdown grace

	mu   sync.Mutex
	addr string
	ln   net.Listener // bound by Listen, served by Run
}

// ErrPortInUse means the listen address is taken, most often by the
// bridge.py being replaced, still running.
var ErrPortInUse = errors.New("address already in use")

// Listen binds the listen address now, so a start can fail on a taken
// port before anything else (the agent child) is started. Run listens
// itself when Listen was not called.
func (s *Server) Listen() error {
	addr := net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("listen on %s: %w", addr, ErrPortInUse)
		}
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.mu.Lock()
	s.ln, s.addr = ln, ln.Addr().String()
	s.mu.Unlock()
	return nil
}

// New builds the server with its middleware and the /health and /metrics
// routes. cfg is used with defaults applied; call cfg.Validate first.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.Logger.SetOutput(io.Discard)
	e.StdLogger = httpErrorLog(cfg.Logger)
	e.HTTPErrorHandler = httpapi.ErrorHandler(cfg.Logger)

	s := &Server{cfg: cfg, e: e, log: cfg.Logger, stopping: make(chan struct{}), uploads: map[string]bool{}}
	s.budget = newUploadBudget(cfg, s.stopping)
	for _, p := range slices.Concat(uploadPaths, cfg.UploadPaths) {
		s.uploads[p] = true
	}
	// Counting comes first, so the shutdown grace waits for the error
	// writer too; logging is next so it sees the final status, panics
	// included; a refused write is answered before its body is read or
	// room for it reserved.
	e.Use(s.inFlight.track, s.logRequests, s.recoverPanics, s.guardWrites, s.bodyDeadline, s.limitUploads)

	e.GET("/health", s.health)
	metrics := echo.WrapHandler(pythonBuckets(promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:           promLog{cfg.Logger},
		ErrorHandling:      promhttp.ContinueOnError,
		EnableOpenMetrics:  true, // what bridge.py's client answered a scraper asking for it
		DisableCompression: true, // the text is rewritten below; a scrape is a few KiB
	})))
	e.GET("/metrics", metrics)
	e.GET("/metrics/", metrics)
	return s
}

// Echo returns the echo instance, for feature packages' Routes(e).
func (s *Server) Echo() *echo.Echo { return s.e }

// Stopping is closed when Run begins shutting down. Feeds (SSE) select on
// it as well as on their request ctx, because a graceful shutdown waits for
// them instead of interrupting them; routes that start voice turns refuse
// new ones once it is closed (httpapi.RefuseWhileStopping). A turn in
// flight runs on: its request ctx ends, with httpapi.ErrShuttingDown as
// the cause, if it is still running when the grace is over.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

func (s *Server) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// Addr is the bound listen address (host:port) once Run is listening,
// "" before.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run listens on Host:Port, logs "http server listening" with the bound
// address, and serves until ctx ends. It then closes Stopping and stops
// keeping connections alive, serves on while requests are in flight, at
// most ShutdownGrace, ends the requests still running then (their ctx's
// cause is httpapi.ErrShuttingDown), gives them lastWordTimeout to write
// their last frame, and closes any connection left. It returns nil after a
// shutdown and an error when it cannot listen or serving fails. Call it
// once.
func (s *Server) Run(ctx context.Context) error {
	defer s.stoppingOnce.Do(func() { close(s.stopping) })
	// Every request's ctx descends from base, so ending it ends them all.
	base, endRequests := context.WithCancelCause(context.Background())
	defer endRequests(nil)

	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln == nil {
		if err := s.Listen(); err != nil {
			return err
		}
		s.mu.Lock()
		ln = s.ln
		s.mu.Unlock()
	}
	bound := ln.Addr().String()

	var counted func()
	if s.cfg.TurnedAway != nil {
		counted = s.cfg.TurnedAway.Inc
	}
	lim := newLimitListener(ln, s.cfg.MaxConns, loopbackReserve, readHeaderTimeout, s.connRefused, counted)
	s.e.Listener = lim
	s.e.Server.ReadHeaderTimeout = readHeaderTimeout
	s.e.Server.IdleTimeout = s.cfg.IdleTimeout
	s.e.Server.MaxHeaderBytes = maxHeaderBytes
	s.e.Server.BaseContext = func(net.Listener) context.Context { return base }
	served := make(chan error, 1)
	go func() { served <- s.e.StartServer(s.e.Server) }()
	s.log.Info("http server listening", "addr", bound)

	select {
	case err := <-served:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}

	start := time.Now()
	// Each response from now on closes its connection. This comes before
	// the stop is announced: a request the stop ends (a body waiting for
	// the upload budget) answers at once, and with keep-alives still on
	// net/http would first try to read the rest of its unread body, which
	// the client may never send, so the answer would be lost at Close.
	s.e.Server.SetKeepAlivesEnabled(false)
	s.stoppingOnce.Do(func() { close(s.stopping) })
	s.awaitInFlight(endRequests)
	sctx, cancel := context.WithTimeout(context.Background(), lastWordTimeout)
	defer cancel()
	if err := s.e.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown did not finish in time; closing open connections",
			"timeout", lastWordTimeout, "error", err)
	}
	if err := s.e.Close(); err != nil {
		s.log.Debug("closing http server", "error", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", err)
	}
	s.log.Info("http server stopped", "elapsed", time.Since(start))
	return nil
}

// awaitInFlight waits, at most ShutdownGrace, until no request is in
// flight; past the grace it ends the requests left with
// httpapi.ErrShuttingDown as their ctx's cause.
func (s *Server) awaitInFlight(endRequests context.CancelCauseFunc) {
	idle, n := s.inFlight.idle()
	if n == 0 {
		return
	}
	s.log.Info("stopping: new voice turns refused; waiting for the requests in flight",
		"in_flight", n, "grace", s.cfg.ShutdownGrace)
	t := time.NewTimer(s.cfg.ShutdownGrace)
	defer t.Stop()
	select {
	case <-idle:
		s.log.Info("the requests in flight finished within the shutdown grace")
	case <-t.C:
		s.log.Warn("shutdown grace over; ending the requests still in flight with their failure reply",
			"in_flight", s.inFlight.count(), "grace", s.cfg.ShutdownGrace)
		endRequests(httpapi.ErrShuttingDown)
	}
}

// inFlight counts the requests being served.
type inFlight struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n next drops to 0; nil when nobody waits
}

// track is the middleware that counts a request while it is served.
func (f *inFlight) track(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		f.mu.Lock()
		f.n++
		f.mu.Unlock()
		defer f.done()
		return next(c)
	}
}

func (f *inFlight) done() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n--
	if f.n == 0 && f.zero != nil {
		close(f.zero)
		f.zero = nil
	}
}

// idle returns a channel closed once no request is in flight, and how many
// are now.
func (f *inFlight) idle() (<-chan struct{}, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		ch := make(chan struct{})
		close(ch)
		return ch, 0
	}
	if f.zero == nil {
		f.zero = make(chan struct{})
	}
	return f.zero, f.n
}

func (f *inFlight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// healthBody is GET /health: bridge.py's five keys first and in its order,
// then the Go additions.
type healthBody struct {
	Status        string          `json:"status"`
	Service       string          `json:"service"`
	ACPRunning    bool            `json:"acp_running"`
	CachedSession bool            `json:"cached_session"`
	SessionTurns  int             `json:"session_turns"`
	Problems      []string        `json:"problems,omitempty"`
	Agent         acp.AgentHealth `json:"agent"`
	Sessions      int             `json:"sessions"`
	// Sessions whose agent restarted under them: reopened or lost.
	SessionsResumed   int    `json:"sessions_resumed"`
	SessionsRecreated int    `json:"sessions_recreated"`
	SessionsLost      int    `json:"sessions_lost"`
	Version           string `json:"version,omitempty"`
}

// Status values of /health: "degraded" while a condition is failing (a
// log, the voice memory or a state file cannot be written), "stopping"
// once shutdown has begun (new voice turns are refused); the answer is 200
// whatever the status, as callers check only for a 2xx JSON body.
const (
	StatusOK       = "ok"
	StatusDegraded = "degraded"
	StatusStopping = "stopping"
)

func (s *Server) health(c echo.Context) error {
	a, p := s.cfg.Agent.Health(), s.cfg.Sessions.Health()
	problems := s.cfg.Health.Problems()
	status := StatusOK
	switch {
	case s.isStopping():
		status = StatusStopping
	case len(problems) > 0:
		status = StatusDegraded
	}
	return httpapi.WriteJSON(c, http.StatusOK, healthBody{
		Status:            status,
		Service:           ServiceName,
		ACPRunning:        a.Running,
		CachedSession:     p.CachedSession,
		SessionTurns:      p.SessionTurns,
		Problems:          problems,
		Agent:             a,
		Sessions:          p.Sessions,
		SessionsResumed:   p.SessionsResumed,
		SessionsRecreated: p.SessionsRecreated,
		SessionsLost:      p.SessionsLost,
		Version:           s.cfg.Version,
	})
}

// bodyDeadline gives a request with a body until BodyTimeout (UploadTimeout
// for uploads) to deliver all of it, so a client trickling one byte at a
// time cannot hold a handler. The deadline is lifted once the body has been
// read to its end: net/http then watches the idle connection for the
// client's hang-up, and a deadline firing there would cancel a long NDJSON
// turn as if the caller had barged in.
func (s *Server) bodyDeadline(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 {
			return next(c)
		}
		rc := http.NewResponseController(c.Response().Writer)
		if err := rc.SetReadDeadline(time.Now().Add(s.bodyTimeout(req.URL.Path))); err != nil {
			return next(c) // not a real connection (tests through ServeHTTP)
		}
		orig := req.Body
		req.Body = &deadlineBody{ReadCloser: orig, rc: rc}
		defer func() { req.Body = orig }() // net/http's own type, for its handling of an unread rest (see limitUploads)
		return next(c)
	}
}

// guardWrites applies Access.CheckWrite to every state-changing request,
// on every route present and future: a page on another site gets 403, a
// body declared as anything but JSON 415, except on the upload routes,
// which check their own types.
func (s *Server) guardWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if httpapi.SafeMethod(req.Method) {
			return next(c)
		}
		if err := s.cfg.Access.CheckWrite(req, s.uploads[req.URL.Path]); err != nil {
			return err
		}
		return next(c)
	}
}

// deadlineBody lifts the connection's read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.done {
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{})
	}
	return n, err
}

// connRefused logs, at most once a minute, that the connection limit
// turned connections away.
func (s *Server) connRefused(n int64) {
	s.log.Warn("connection limit reached; closed connections that waited too long for a slot",
		"limit", s.cfg.MaxConns, "closed_since_last_report", n)
}

// recoverPanics turns a handler panic into an error, so the error handler
// answers the plain-text 500. http.ErrAbortHandler is re-raised: it is how
// a handler asks net/http to drop the connection.
func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			r := recover()
			if r == nil {
				return
			}
			if r == http.ErrAbortHandler {
				panic(r)
			}
			s.log.Error("handler panicked", "method", c.Request().Method, "path", c.Request().URL.Path,
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panic: %v", r)
		}()
		return next(c)
	}
}

// logRequests logs one line per request, after the error handler has
// written any error. Bodies are never logged. The level says whether an
// operator needs the line:
//
//   - Debug: a read that succeeded (GET or HEAD answered below 400: the
//     dashboard's polling, scrapes, /health) and perception events (a
//     robot's sensor stream) unless they fail with a 5xx; they change
//     nothing an operator needs to see, and an open dashboard would
//     otherwise log dozens of lines a minute;
//   - Warn: any 5xx, with the handler's error when it is an answer (an
//     unhandled error is logged at Error by the error handler);
//   - Info: the rest — writes, and reads that failed.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		req, status := c.Request(), c.Response().Status
		level := requestLevel(req.Method, req.URL.Path, status)
		if level == hclog.Debug && !s.log.IsDebug() {
			return nil
		}
		args := []any{"method", req.Method, "path", req.URL.Path, "status", status, "elapsed", time.Since(start)}
		if level == hclog.Warn && err != nil && httpapi.IsAnswer(err) {
			args = append(args, "error", err)
		}
		s.log.Log(level, "request", args...)
		return nil
	}
}

// perceptionEventPath is the robots' event route, logged at Debug.
const perceptionEventPath = "/api/perception/event"

// requestLevel is the level of a request's log line (see logRequests).
func requestLevel(method, path string, status int) hclog.Level {
	switch {
	case status >= http.StatusInternalServerError:
		return hclog.Warn
	case path == perceptionEventPath,
		status < http.StatusBadRequest && (method == http.MethodGet || method == http.MethodHead):
		return hclog.Debug
	}
	return hclog.Info
}

// pythonBuckets makes the text format's histogram bucket labels read as
// bridge.py's client wrote them: a whole-number bound is le="1.0", not
// le="1", so saved queries and alerts naming le="1.0" still match after
// the switch. OpenMetrics (served when the scraper asks) writes them so
// already.
func pythonBuckets(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferedResponse{header: w.Header()}
		next.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		if strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
			body = wholeBucket().ReplaceAll(body, []byte(`${1}${2}.0"`))
		}
		w.Header().Del("Content-Length")
		w.WriteHeader(cmp.Or(rec.status, http.StatusOK))
		_, _ = w.Write(body)
	})
}

// wholeBucket is a bucket sample's le label with a whole-number bound.
var wholeBucket = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*_bucket\{(?:[^}]*,)?le=")(-?[0-9]+)"`)
})

// bufferedResponse keeps a handler's response to rewrite it.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedResponse) Header() http.Header         { return b.header }
func (b *bufferedResponse) WriteHeader(status int)      { b.status = status }
func (b *bufferedResponse) Write(p []byte) (int, error) { return b.body.Write(p) }

// promLog adapts hclog to promhttp's error logger.
type promLog struct{ log hclog.Logger }

func (p promLog) Println(v ...any) { p.log.Error("metrics scrape", "error", fmt.Sprint(v...)) }

// httpErrorLog routes net/http's own messages (mostly clients hanging up
// or sending garbage) into hclog at Debug.
func httpErrorLog(log hclog.Logger) *stdlog.Logger {
	return log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug})
}
