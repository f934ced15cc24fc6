// Package bridge is the HTTP face of zeroclaw-bridge: the echo server with
// its error handling and middleware, /health and /metrics, and (in later
// issues) the voice routes xiaozhi's ZeroClawLLM provider calls. Other
// feature packages mount their routes on the same server through Echo.
package bridge

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// AgentStatus reports the supervised agent (acp.Supervisor).
type AgentStatus interface{ Health() acp.AgentHealth }

// SessionStatus reports the session pool (acp.Pool).
type SessionStatus interface{ Health() acp.PoolHealth }

// Config configures the HTTP server.
type Config struct {
	// Host and Port are the listen address (BRIDGE_HOST, PORT); port 0 picks a free one.
	Host string
	Port int
	// ShutdownTimeout bounds the drain of in-flight requests on stop (5 s).
	ShutdownTimeout time.Duration
	// Logger receives request and lifecycle logs. Nil discards.
	Logger hclog.Logger
	// Gatherer is the one metrics registry, served on /metrics and /metrics/.
	Gatherer prometheus.Gatherer
	// Agent and Sessions feed /health.
	Agent    AgentStatus
	Sessions SessionStatus
}

func (c Config) withDefaults() Config {
	if c.ShutdownTimeout <= 0 {
		c.ShutdownTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Gatherer == nil {
		c.Gatherer = prometheus.NewRegistry()
	}
	return c
}

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	var errs []error
	if c.Port < 0 || c.Port > 65535 {
		errs = append(errs, fmt.Errorf("port %d is outside 0–65535", c.Port))
	}
	if c.Agent == nil || c.Sessions == nil {
		errs = append(errs, errors.New("agent and session status are required for /health"))
	}
	return errors.Join(errs...)
}

// Server is the bridge's HTTP server.
type Server struct {
	cfg      Config
	e        *echo.Echo
	log      hclog.Logger
	stopping chan struct{}

	mu   sync.Mutex
	addr string
}

// New builds the server and its routes; Run serves them.
func New(cfg Config) *Server {
	cfg = cfg.withDefaults()
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	s := &Server{cfg: cfg, e: e, log: cfg.Logger, stopping: make(chan struct{})}
	e.HTTPErrorHandler = httpapi.ErrorHandler(cfg.Logger)
	e.Use(s.recoverer, s.requestLog)

	e.GET("/health", s.health)
	metrics := echo.WrapHandler(promhttp.HandlerFor(cfg.Gatherer, promhttp.HandlerOpts{
		ErrorLog:      hclogPrinter{cfg.Logger},
		ErrorHandling: promhttp.ContinueOnError,
	}))
	e.GET("/metrics", metrics)
	e.GET("/metrics/", metrics)
	return s
}

// Echo returns the echo instance so other packages can mount routes.
func (s *Server) Echo() *echo.Echo { return s.e }

// Stopping is closed when the server begins shutting down; streaming
// handlers must return when it closes, because Shutdown waits for them.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

// Addr is the bound address once Run is listening, else "".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// Run listens and serves until ctx ends, then drains requests for at most
// ShutdownTimeout and closes whatever is left.
func (s *Server) Run(ctx context.Context) error {
	addr := net.JoinHostPort(s.cfg.Host, strconv.Itoa(s.cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	s.mu.Lock()
	s.addr = ln.Addr().String()
	s.mu.Unlock()
	s.log.Info("http server listening", "addr", ln.Addr().String())

	srv := &http.Server{Handler: s.e, ReadHeaderTimeout: 10 * time.Second, ErrorLog: hclogStd(s.log)}
	s.e.Server = srv
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	close(s.stopping)
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		s.log.Warn("http shutdown timed out; closing open connections", "error", err)
		_ = srv.Close()
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http server: %w", err)
	}
	return nil
}

// healthBody is /health: bridge.py's five keys first, in order, then Go's.
type healthBody struct {
	Status        string          `json:"status"`
	Service       string          `json:"service"`
	ACPRunning    bool            `json:"acp_running"`
	CachedSession bool            `json:"cached_session"`
	SessionTurns  int             `json:"session_turns"`
	Agent         acp.AgentHealth `json:"agent"`
	Sessions      int             `json:"sessions"`
}

func (s *Server) health(c echo.Context) error {
	a, p := s.cfg.Agent.Health(), s.cfg.Sessions.Health()
	return httpapi.WriteJSON(c, http.StatusOK, healthBody{
		Status: "ok", Service: "zeroclaw-bridge",
		ACPRunning: a.Running, CachedSession: p.CachedSession, SessionTurns: p.SessionTurns,
		Agent: a, Sessions: p.Sessions,
	})
}

// recoverer turns a handler panic into the logged 500 of the error handler.
func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				err = fmt.Errorf("panic in handler: %v", r)
			}
		}()
		return next(c)
	}
}

// requestLog logs each request: scrapes at Debug, the rest at Info.
func (s *Server) requestLog(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		path := c.Request().URL.Path
		lvl := hclog.Info
		if path == "/health" || strings.HasPrefix(path, "/metrics") {
			lvl = hclog.Debug
		}
		s.log.Log(lvl, "request", "method", c.Request().Method, "path", path,
			"status", c.Response().Status, "elapsed", time.Since(start))
		return nil
	}
}

// hclogPrinter adapts hclog to promhttp's logger interface.
type hclogPrinter struct{ log hclog.Logger }

func (p hclogPrinter) Println(v ...any) { p.log.Error(fmt.Sprint(v...)) }

// hclogStd routes net/http's internal errors into hclog at Debug (they are
// mostly clients hanging up).
func hclogStd(log hclog.Logger) *stdlog.Logger {
	return log.StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug})
}
