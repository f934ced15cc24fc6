package steerable

import "github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"

// Protocol is the steerable sidecar's protocol for an acp.Supervisor: set
// it as acp.Config.Protocol. One Protocol serves every child generation of
// one supervisor, because what it keeps outlives a sidecar restart: the
// conversation histories the bridge sends with every turn.
type Protocol struct {
	cfg  Config
	hist *store
}

var _ agentconn.Protocol = (*Protocol)(nil)

// New returns the protocol for cfg.
func New(cfg Config) *Protocol {
	cfg = cfg.withDefaults()
	return &Protocol{cfg: cfg, hist: newStore(cfg.HistoryChars)}
}

// Open implements agentconn.Protocol: it starts reading the child's stdout and
// waits for nothing; Handshake waits for the ready signal.
func (p *Protocol) Open(ch agentconn.Child) (agentconn.ChildConn, error) {
	c := newConn(p, ch)
	ch.Go(func() { c.read(ch.Stdout) })
	return c, nil
}

// Histories reports how many session histories the protocol keeps (for
// tests and diagnostics).
func (p *Protocol) Histories() int { return p.hist.len() }
