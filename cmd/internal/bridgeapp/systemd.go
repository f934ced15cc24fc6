package bridgeapp

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

// notifier speaks systemd's notify protocol when the bridge runs as a
// Type=notify service (NOTIFY_SOCKET set): READY=1 once HTTP is listening
// and the agent is initialised (or after readyWait, so a broken agent does
// not make systemd kill a bridge that still serves /health), WATCHDOG=1
// from a loop that checks /health answers, STOPPING=1 at shutdown. Without
// NOTIFY_SOCKET it does nothing.
type notifier struct {
	addr      func() string // the bound HTTP address, "" until listening
	agent     func() acp.AgentHealth
	readyWait time.Duration
	log       hclog.Logger
	notify    func(state string) (bool, error)
	watchdog  func() (time.Duration, error)
}

func newNotifier(addr func() string, agent func() acp.AgentHealth, log hclog.Logger) *notifier {
	return &notifier{
		addr: addr, agent: agent, readyWait: 30 * time.Second, log: log,
		notify:   func(state string) (bool, error) { return daemon.SdNotify(false, state) },
		watchdog: func() (time.Duration, error) { return daemon.SdWatchdogEnabled(false) },
	}
}

// Run reports readiness, then pings the watchdog until ctx ends.
func (n *notifier) Run(ctx context.Context) error {
	if ok, err := n.notify("STATUS=starting"); !ok {
		if err != nil {
			n.log.Warn("systemd notify socket unusable", "error", err)
		}
		<-ctx.Done()
		return nil
	}
	if !n.waitReady(ctx) {
		return nil
	}
	interval, err := n.watchdog()
	if err != nil {
		n.log.Warn("systemd watchdog settings unusable", "error", err)
	}
	if interval <= 0 {
		<-ctx.Done()
		_, _ = n.notify("STOPPING=1")
		return nil
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	client := &http.Client{Timeout: interval / 4}
	for {
		select {
		case <-ctx.Done():
			_, _ = n.notify("STOPPING=1")
			return nil
		case <-tick.C:
			if err := n.healthy(ctx, client); err != nil {
				n.log.Warn("health check failed; not pinging the systemd watchdog", "error", err)
				continue
			}
			_, _ = n.notify("WATCHDOG=1")
		}
	}
}

// waitReady sends READY=1 when HTTP listens and the agent is ready, or
// after readyWait; it reports false when ctx ended first.
func (n *notifier) waitReady(ctx context.Context) bool {
	deadline := time.Now().Add(n.readyWait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		addr, agent := n.addr(), n.agent()
		switch {
		case addr != "" && agent.State == acp.StateReady:
			_, _ = n.notify(fmt.Sprintf("READY=1\nSTATUS=serving on %s; agent %s ready (pid %d)", addr, agent.Dialect, agent.PID))
			n.log.Info("told systemd the bridge is ready")
			return true
		case addr != "" && time.Now().After(deadline):
			_, _ = n.notify(fmt.Sprintf("READY=1\nSTATUS=serving on %s; agent not ready: %s %s", addr, agent.State, agent.LastError))
			n.log.Warn("told systemd the bridge is ready without a ready agent", "agent_state", agent.State)
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// healthy asks our own /health.
func (n *notifier) healthy(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+n.addr()+"/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/health answered %d", resp.StatusCode)
	}
	return nil
}
