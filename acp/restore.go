package acp

import "github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agentconn"

// restoreCounts are what /health reports of the sessions whose agent
// process restarted under them; the metrics count the same.
type restoreCounts struct {
	resumed, recreated, lost int
}

// restoredLocked counts a session reopened after its agent restarted:
// resumed when the agent kept its id, recreated when a new session carries
// the conversation over (see Conn.ResumeSession). Called with p.mu held.
func (p *Pool) restoredLocked(was, sid string) {
	how := RestoreResumed
	if sid != was {
		how = RestoreRecreated
		p.restores.recreated++
	} else {
		p.restores.resumed++
	}
	p.metricAdd(func(m *Metrics) { m.SessionsRestored.WithLabelValues(how).Inc() })
}

// lostLocked counts a conversation lost to a restart of its agent, for
// reason (one of LossReasons). Called with p.mu held.
func (p *Pool) lostLocked(reason string) {
	p.restores.lost++
	p.metricAdd(func(m *Metrics) { m.SessionsLost.WithLabelValues(reason).Inc() })
}

// agentGone settles e's session sid after its agent process c died under
// a turn (the turn failed, or its cancel was being settled). An agent
// whose sessions outlive its process (Traits.Resume) keeps the session
// bound to the key, so the key's next turn reopens it on the next process
// with its conversation. Otherwise it is forgotten and, unless it was due
// for rotation anyway, counted lost.
func (p *Pool) agentGone(e *entry, c agentconn.Conn, sid string) {
	if c.Traits().Resume {
		p.log.Info("agent process gone under a turn; its session waits for the next process", "key", e.key, "session", sid)
		return
	}
	p.mu.Lock()
	if e.sid == sid && e.client == c && p.rotationLocked(e, p.cfg.Clock.Now()) == "" {
		p.lostLocked(LossAgentRestart)
	}
	p.mu.Unlock()
	p.dropSession(e, c, sid, false)
}
