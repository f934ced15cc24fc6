package bridgeapp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/periphery"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// mcpConfig is the robot's tools served over MCP to the agent
// (DOTTY_MCP_*): whether they are, where, and their bounds.
type mcpConfig struct {
	// Enabled serves the tools and offers them to every agent session.
	Enabled bool
	// Listen is the loopback address of their own listener ("127.0.0.1:0":
	// a free port).
	Listen string
	// Tools are the tools' bounds (robottools.DefaultConfig).
	Tools robottools.Config

	// listener is bound by serve before build; nil: no tools are served
	// (off, unbindable, or a build that is never run).
	listener *toolsListener
}

// mcpPath is the path the tools are served on.
const mcpPath = "/mcp"

// defaultMCPConfig returns the defaults: the one place they are written.
func defaultMCPConfig() mcpConfig {
	return mcpConfig{Enabled: true, Listen: "127.0.0.1:0", Tools: robottools.DefaultConfig()}
}

// withDefaults fills the tools' bounds no setting sets with their
// defaults.
func (c mcpConfig) withDefaults() mcpConfig {
	fieldcheck.Fill(&c.Tools, robottools.DefaultConfig(), "MaxTokens", "MaxKeys", "MoodTTL", "RateWait", "PhotoWait")
	return c
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("Listen", "Tools.Burst").
func (c mcpConfig) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("Listen", loopbackAddr(c.Listen), c.Listen, "a loopback address and port, such as 127.0.0.1:0")
	return errors.Join(errs.Err(), fieldcheck.Under("Tools", c.withDefaults().Tools.Validate()))
}

// loopbackAddr reports whether v is host:port with a loopback IP or
// localhost as its host.
func loopbackAddr(v string) bool {
	host, port, err := net.SplitHostPort(v)
	if err != nil || port == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// toolsListener serves the robot's tools on their own loopback listener.
type toolsListener struct {
	ln  net.Listener
	url string
	log hclog.Logger
}

// toolsShutdown bounds the wait for tool calls in flight at stop.
const toolsShutdown = 5 * time.Second

// listenTools binds the tools' listener when they are enabled. A listener
// that cannot be bound is one logged reason: the bridge runs without the
// tools (nil).
func listenTools(c mcpConfig, log hclog.Logger) *toolsListener {
	if !c.Enabled {
		return nil
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		log.Error("the robot's tools are not served: agents get none (DOTTY_MCP_LISTEN)", "error", err)
		return nil
	}
	return &toolsListener{ln: ln, url: "http://" + ln.Addr().String() + mcpPath, log: log}
}

// close releases a listener never served (serve failed before run).
func (t *toolsListener) close() {
	if t != nil {
		_ = t.ln.Close()
	}
}

// serveFunc returns the actor serving h until ctx ends, then stopping
// gracefully within toolsShutdown.
func (t *toolsListener) serveFunc(h http.Handler) func(context.Context) error {
	return func(ctx context.Context) error {
		mux := http.NewServeMux()
		mux.Handle(mcpPath, h)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		served := make(chan error, 1)
		go func() { served <- srv.Serve(t.ln) }()
		t.log.Info("robot tools served over MCP", "url", t.url)
		select {
		case err := <-served:
			return fmt.Errorf("serve the robot's tools: %w", err)
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.Background(), toolsShutdown)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			t.log.Warn("robot tool calls still running at stop were cut", "error", err)
			_ = srv.Close()
		}
		<-served
		return nil
	}
}

// toolTokens is the robot's tool server as the ACP client gets it: build
// makes the client before the server (the server's dependencies need the
// HTTP server, which needs the agent's supervisor) and sets Server before
// anything runs.
type toolTokens struct{ *robottools.Server }

// poolRobot tells the tools each voice turn's robot and takes the mood
// they recorded for its reply, under the pool's own key for the turn
// (voice.Robot).
type poolRobot struct {
	pool  *acp.Pool
	tools *robottools.Server
}

func (d poolRobot) SetDevice(key, deviceID string) { d.tools.SetDevice(d.pool.KeyFor(key), deviceID) }

func (d poolRobot) TakeMood(key string) (string, bool) { return d.tools.TakeMood(d.pool.KeyFor(key)) }

// roomPeople is who_is_here's view of a robot's room: perception's Present
// (the face recognised in front of it, whoever told it their name), named
// and described from the household roster.
type roomPeople struct{ percep *perception.Service }

// personDescription bounds a person's roster description.
const personDescription = 160

func (r roomPeople) People(_ context.Context, deviceID string) ([]robottools.Person, error) {
	var out []robottools.Person
	for _, p := range r.percep.Present(deviceID) {
		out = append(out, robottools.Person{Name: cmp.Or(p.DisplayName, p.ID), Description: p.CompactDescription(personDescription)})
	}
	return out, nil
}

// calendarToday is today's calendar for the today tool: every event,
// person events tagged.
type calendarToday struct{ peri *periphery.Periphery }

func (c calendarToday) Today(context.Context) ([]string, error) { return c.peri.Today("", true), nil }
