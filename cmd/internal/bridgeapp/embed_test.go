package bridgeapp

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestEveryClockIsTheOne builds the bridge with an embedding program's
// clock and transport (the robot tools' listener open, as serve opens
// it) and walks every completed config: each clockwork.Clock field,
// however deep, is that clock, and each *http.Client carries that
// transport. A component added with a clock or a client build forgets
// fails here.
func TestEveryClockIsTheOne(t *testing.T) {
	clock := clockwork.NewFakeClock()
	cfg, err := parseConfig(nil, isolatedEnv(t, "BRIDGE_HOST", "127.0.0.1", "PORT", "0", "ZEROCLAW_BIN", "/nonexistent/zeroclaw"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MCP.listener = listenTools(cfg.MCP, hclog.NewNullLogger())
	defer cfg.MCP.listener.close()
	notFound := func(string) (string, error) { return "", exec.ErrNotFound }
	self := func() (string, error) { return "/usr/local/bin/zeroclaw-bridge", nil }
	transport := &http.Transport{}
	app, err := build(cfg, hclog.NewNullLogger(), lookups{lookPath: notFound, executable: self, opts: Options{Clock: clock, Transport: transport}})
	if err != nil {
		t.Fatal(err)
	}
	clockType, clientType := reflect.TypeFor[clockwork.Clock](), reflect.TypeFor[*http.Client]()
	var found, clients int
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		if v.Kind() != reflect.Struct {
			return
		}
		for i := range v.NumField() {
			f, ft := v.Field(i), v.Type().Field(i)
			switch {
			case ft.Type == clockType:
				found++
				if f.IsNil() {
					t.Errorf("%s.%s is nil: build gives it no clock", path, ft.Name)
				} else if !f.CanInterface() || f.Interface() != clockwork.Clock(clock) {
					t.Errorf("%s.%s is not the embedding program's clock", path, ft.Name)
				}
			case ft.Type == clientType:
				clients++
				if f.IsNil() {
					t.Errorf("%s.%s is nil: build gives it no client", path, ft.Name)
				} else if !f.CanInterface() || f.Interface().(*http.Client).Transport != http.RoundTripper(transport) {
					t.Errorf("%s.%s does not carry the embedding program's transport", path, ft.Name)
				}
			case ft.Type.Kind() == reflect.Struct:
				walk(path+"."+ft.Name, f)
			}
		}
	}
	for _, c := range app.wired {
		walk(reflect.TypeOf(c).Name(), reflect.ValueOf(c))
	}
	if found < 15 || clients < 7 {
		t.Errorf("found %d clock fields and %d clients, want the 15 and 7 or more build wires: is the walk blind?", found, clients)
	}
}

// TestRunWithEmbedsTheBridge runs the bridge in process through RunWith
// with a fake clock and a scripted agent given by AgentEnv: Ready hands
// over an App whose address serves, whose agent pid is the child's and
// whose tables grow with a conversation; the conversation's record is
// dated by the fake clock, /health's uptime follows it, and nothing is
// left running once its context ends.
func TestRunWithEmbedsTheBridge(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreTopFunction("os/signal.signal_recv"), goleak.IgnoreTopFunction("os/signal.loop"))
	clock := clockwork.NewFakeClockAt(time.Date(2031, 5, 4, 9, 30, 0, 0, time.UTC))
	bin, _, agentEnv := acptest.Command("echo")
	getenv := isolatedEnv(t, "BRIDGE_HOST", "127.0.0.1", "PORT", "0", "ZEROCLAW_BIN", bin, "TZ", "UTC")
	logs, _ := getenv("CONVO_LOG_DIR")
	ready := make(chan *App, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr testkit.LogBuffer
	done := make(chan error, 1)
	go func() {
		done <- RunWith(ctx, nil, getenv, io.Discard, &stderr, Options{Clock: clock, AgentEnv: agentEnv, Ready: func(a *App) { ready <- a }})
	}()
	var app *App
	select {
	case app = <-ready:
	case err := <-done:
		t.Fatalf("RunWith returned before Ready: %v\n%s", err, stderr.String())
	case <-time.After(10 * time.Second):
		t.Fatalf("no Ready within 10 s\n%s", stderr.String())
	}
	p := &bridgeProc{t: t, addr: app.Addr()}
	health := func() map[string]any { // one read of /health
		_, h := p.health("a read", func(map[string]any) bool { return true })
		return h
	}
	testkit.WaitFor(t, 10*time.Second, "the agent ready", func() bool { return agentOf(health())["state"] == "ready" })
	if pid := app.AgentPID(); pid <= 0 || float64(pid) != agentOf(health())["pid"] {
		t.Errorf("AgentPID = %d, /health says %v", pid, agentOf(health())["pid"])
	}
	before := app.Tables()
	if r := realTurnOn(t, p, "kitchen", "", "hello there"); !strings.Contains(r, "hello there") {
		t.Errorf("the turn answered %q", r)
	}
	if b := app.Busy(); b != 0 {
		t.Errorf("Busy = %d once the turn answered", b)
	}
	after := app.Tables()
	if after["pool.keys"] != before["pool.keys"]+1 || after["pool.sessions"] < 1 {
		t.Errorf("tables before %v, after a conversation %v: want one more pool key and a live session", before, after)
	}
	for _, name := range []string{"robots", "bus.rings", "security.watching", "dreams.pending", "greeter.greeted", "vision.images", "tools.tokens"} {
		if _, ok := after[name]; !ok {
			t.Errorf("Tables lacks %q: %v", name, after)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "the conversation's record, dated by the fake clock", func() bool {
		_, err := os.Stat(filepath.Join(logs, "convo-2031-05-04.ndjson"))
		return err == nil
	})
	clock.Advance(time.Hour)
	if up, _ := agentOf(health())["uptime_s"].(float64); up < 3600 {
		t.Errorf("uptime %v s after the fake clock moved an hour", up)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("RunWith = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("RunWith did not return within 20 s of its context's end")
	}
	if app.AgentPID() != 0 {
		t.Errorf("AgentPID = %d after the stop", app.AgentPID())
	}
}
