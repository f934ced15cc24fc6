package steerable

import (
	"strings"
	"sync"
	"unicode/utf8"
)

// Message is one chat message of agent.chat.stream's messages.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Chat roles.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// interrupted ends the kept part of a reply cut short by a barge-in, so
// the model knows it did not finish.
const interrupted = "…"

// maxHistories bounds the store whatever happens: every session the pool
// forgets or closes is dropped from it at once, so this is a safety net.
const maxHistories = 4096

// exchange is one user prompt and the reply the user heard.
type exchange struct {
	user, assistant string
	size            int  // characters of both
	first           bool // the session's first exchange: its prompt has the full instructions
}

// history is one session's conversation, oldest exchange first.
type history struct {
	ex      []exchange
	trimmed bool   // an exchange was dropped: none kept is the session's first
	used    uint64 // store.clock at last use, for the safety net's eviction
}

// store keeps the histories of every session the bridge has open on the
// sidecar, across sidecar restarts (the sidecar itself is sent the whole
// conversation with every turn). Its lock is never held across I/O.
type store struct {
	limit int // HistoryChars

	mu    sync.Mutex
	clock uint64
	h     map[string]*history
}

func newStore(limit int) *store { return &store{limit: limit, h: make(map[string]*history)} }

// create starts an empty history for a new session.
func (s *store) create(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock++
	s.h[sid] = &history{used: s.clock}
	s.evictLocked()
}

// forget drops sid's history.
func (s *store) forget(sid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.h, sid)
}

// rename moves from's history to to (a session reopened under a new id);
// with none kept under from, to starts empty.
func (s *store) rename(from, to string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.h[from]
	delete(s.h, from)
	if h == nil {
		h = &history{}
	}
	s.clock++
	h.used = s.clock
	s.h[to] = h
	s.evictLocked()
}

// len reports how many histories are kept.
func (s *store) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.h)
}

// evictLocked drops the least recently used history past maxHistories.
func (s *store) evictLocked() {
	for len(s.h) > maxHistories {
		oldest := ""
		var at uint64
		for sid, h := range s.h {
			if oldest == "" || h.used < at {
				oldest, at = sid, h.used
			}
		}
		delete(s.h, oldest)
	}
}

// messages returns what agent.chat.stream sends for prompt on sid: the
// kept history that fits beside the prompt within the cap, then the
// prompt.
func (s *store) messages(sid, prompt string) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var kept []exchange
	if h := s.h[sid]; h != nil {
		s.clock++
		h.used = s.clock
		kept = fit(h.ex, s.limit-utf8.RuneCountInString(prompt))
	}
	out := make([]Message, 0, 2*len(kept)+1)
	for _, e := range kept {
		out = append(out, Message{RoleUser, e.user}, Message{RoleAssistant, e.assistant})
	}
	return append(out, Message{RoleUser, prompt})
}

// add records a finished exchange on sid. A reply cut short by a barge-in
// is kept as far as it was delivered, marked as interrupted; an exchange
// without any reply is not kept (the model said nothing to remember).
func (s *store) add(sid, prompt, reply string, cut bool) {
	if strings.TrimSpace(reply) == "" {
		return
	}
	if cut && !strings.HasSuffix(reply, interrupted) {
		reply += interrupted
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	h := s.h[sid]
	if h == nil {
		return // closed or forgotten meanwhile
	}
	e := exchange{user: prompt, assistant: reply,
		size:  utf8.RuneCountInString(prompt) + utf8.RuneCountInString(reply),
		first: len(h.ex) == 0 && !h.trimmed}
	// Only exchanges that could still be sent are kept.
	all := len(h.ex) + 1
	h.ex = keep(append(h.ex, e), s.limit)
	h.trimmed = h.trimmed || len(h.ex) < all
}

// keep returns what may still be sent of a history within limit: the
// newest exchanges that fit together, and the session's first when it fits
// alone. Which of them go with a turn depends on its prompt (see fit), so
// both are kept: at most twice limit.
func keep(ex []exchange, limit int) []exchange {
	from, budget := len(ex), limit
	for i := len(ex) - 1; i >= 0 && ex[i].size <= budget; i-- {
		budget -= ex[i].size
		from = i
	}
	if from > 0 && ex[0].first && ex[0].size <= limit {
		return append([]exchange{ex[0]}, ex[from:]...)
	}
	return append([]exchange(nil), ex[from:]...)
}

// fit returns the exchanges that fit within budget characters: the
// session's first exchange when it fits, then as many of the newest as fit
// after it, contiguous, so the oldest after the first are dropped first.
func fit(ex []exchange, budget int) []exchange {
	if len(ex) == 0 || budget <= 0 {
		return nil
	}
	start := 0
	pinned := ex[0].first && ex[0].size <= budget
	if pinned {
		budget -= ex[0].size
		start = 1
	}
	from := len(ex)
	for i := len(ex) - 1; i >= start && ex[i].size <= budget; i-- {
		budget -= ex[i].size
		from = i
	}
	out := make([]exchange, 0, len(ex)-from+1)
	if pinned {
		out = append(out, ex[0])
	}
	return append(out, ex[from:]...)
}
