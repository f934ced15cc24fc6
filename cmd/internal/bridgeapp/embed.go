package bridgeapp

import (
	"context"
	"io"
	"maps"
	"net/http"

	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/social"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/vision"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// Options are what a program embedding the bridge (the household
// simulator) sets besides its environment.
type Options struct {
	// Clock is every component's clock; nil is the real one.
	Clock clockwork.Clock
	// AgentEnv holds KEY=VALUE pairs added to the agent child's
	// environment.
	AgentEnv []string
	// Transport, if set, carries every request the bridge makes over
	// HTTP (xiaozhi, the vision, audio, narrative and thinker models,
	// the weather, the sidecar's speech-to-text), so the embedding
	// program can see them in flight.
	Transport http.RoundTripper
	// Ready, if set, is called once the HTTP server listens, before any
	// component starts.
	Ready func(*App)
}

// RunWith is Run with Options: the same parsing, build and lifecycle.
func RunWith(ctx context.Context, args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer, o Options) error {
	return run(ctx, args, lookupEnv, stdout, stderr, o)
}

// App is a look into a running bridge for the program embedding it.
type App struct {
	addr  string
	parts appParts
}

// appParts are the components App reads.
type appParts struct {
	sup    *acp.Supervisor
	pool   *acp.Pool
	sight  *vision.Cache
	percep *perception.Service
	social *social.Service
	tools  *robottools.Server
}

// Addr is the address the HTTP server listens on (host:port).
func (a *App) Addr() string { return a.addr }

// Busy is the bridge's work in progress that no count of HTTP requests
// shows: agent turns (voice turns, greetings) and perception events
// queued for or being handled by a consumer. A program driving the
// bridge's fake clock moves it only when Busy is 0.
func (a *App) Busy() int { return a.parts.pool.Turns() + a.parts.percep.Bus().Pending() }

// AgentPID is the agent child's process id; 0 while none runs.
func (a *App) AgentPID() int { return a.parts.sup.Health().PID }

// Tables reports the size of every table the bridge keys by caller
// input or by device, by a stable name: "pool.keys", "pool.sessions",
// "robots", "bus.rings", "bus.watchers", "bus.subscribers",
// "security.watching", "dreams.pending", "greeter.greeted",
// "vision.images", "vision.sounds", "vision.photos", "vision.waiters",
// and with the robot tools "tools.tokens", "tools.keys".
func (a *App) Tables() map[string]int {
	p := a.parts
	t := map[string]int{
		"pool.keys":         p.pool.Keys(),
		"pool.sessions":     p.pool.Health().Sessions,
		"robots":            p.percep.States().Len(),
		"bus.rings":         p.percep.Bus().Rings(),
		"bus.watchers":      p.percep.Bus().Watchers(),
		"bus.subscribers":   p.percep.Bus().Subscribers(),
		"security.watching": len(p.percep.Watching()),
		"dreams.pending":    sum(p.social.Pending()),
		"greeter.greeted":   len(p.social.Greeted()),
	}
	s := p.sight.Sizes()
	t["vision.images"], t["vision.sounds"], t["vision.photos"], t["vision.waiters"] = s.Images, s.Sounds, s.Photos, s.Waiters
	if p.tools != nil {
		t["tools.tokens"], t["tools.keys"] = p.tools.Sizes()
	}
	return t
}

func sum(m map[string]int) int {
	n := 0
	for v := range maps.Values(m) {
		n += v
	}
	return n
}
