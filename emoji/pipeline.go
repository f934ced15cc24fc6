package emoji

import (
	"slices"
	"strings"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Pipeline applies bridge.py's orders of post-processing.
type Pipeline struct {
	// MaxSentences is MAX_SENTENCES; <= 0 means 6.
	MaxSentences int
	// OnHit, if set, is called once per content-filter hit.
	OnHit func(Hit)
}

func (p Pipeline) cap() int {
	if p.MaxSentences <= 0 {
		return 6
	}
	return p.MaxSentences
}

func (p Pipeline) filter(t string) bool {
	h, ok := Filter(t)
	if ok && p.OnHit != nil {
		p.OnHit(h)
	}
	return ok
}

// Buffered processes a whole reply for /api/message: filter (a hit
// replaces the text) → EnsurePrefix → CleanForTTS → StripExtra → TruncateSentences.
func (p Pipeline) Buffered(raw string) string { return p.BufferedLed(raw, nil) }

// Lead gives the emoji a reply must start with (the face's mood), or
// false for none. A pipeline consults it at most once per reply, and
// ignores an answer that is not one of Allowed.
type Lead func() (string, bool)

// emoji consults l: its allowed emoji, or false (l nil included).
func (l Lead) emoji() (string, bool) {
	if l == nil {
		return "", false
	}
	if e, ok := l(); ok && slices.Contains(Allowed[:], e) {
		return e, true
	}
	return "", false
}

// withLead returns t led by the allowed emoji e: t's own leading allowed emoji
// (after whitespace) replaced by e, or e and a space put in front.
func withLead(t, e string) string {
	own, ok := Leading(t)
	if !ok {
		return e + " " + t
	}
	ws := len(t) - len(text.StripLeft(t))
	return t[:ws] + e + t[ws+len(own):]
}

// BufferedLed is Buffered with the reply led by lead's emoji, consulted
// once unless the content filter replaces the reply.
func (p Pipeline) BufferedLed(raw string, lead Lead) string {
	t := raw
	if p.filter(t) {
		t = Replacement
	} else {
		t = EnsurePrefix(t)
		if e, ok := lead.emoji(); ok {
			t = withLead(t, e)
		}
	}
	return TruncateSentences(StripExtra(CleanForTTS(t)), p.cap())
}

// Stream returns a processor for one streamed reply.
func (p Pipeline) Stream() *Stream { return &Stream{p: p} }

// Stream processes one streamed reply: agent deltas with Push, then the
// agent's final text with Final. Not safe for concurrent use.
type Stream struct {
	p         Pipeline
	seenNonWS bool
	blocked   bool
	truncated bool
	ends      int // '.', '!', '?' emitted so far

	lead      Lead
	leadTaken bool   // lead consulted
	leadEmoji string // its allowed emoji, "" for none
}

// Lead sets the lead of the reply (see BufferedLed): consulted once, when
// the first chunk carrying non-whitespace is formed (or at Final when no
// chunk did), and applied to that chunk and to the final text. It returns
// s. Call it before Push.
func (s *Stream) Lead(l Lead) *Stream {
	s.lead = l
	return s
}

// led applies the stream's lead to t (the first spoken chunk or the final
// text), consulting it the first time.
func (s *Stream) led(t string) string {
	if !s.leadTaken {
		s.leadTaken = true
		s.leadEmoji, _ = s.lead.emoji()
	}
	if s.leadEmoji == "" {
		return t
	}
	return withLead(t, s.leadEmoji)
}

// Push processes one agent delta. It returns the chunk to send ("" sends
// nothing) and whether this is the first chunk carrying non-whitespace
// text (the moment first audio is measured; false for a filter hit).
func (s *Stream) Push(delta string) (chunk string, firstAudio bool) {
	c := CleanForTTS(delta)
	if c == "" || s.blocked || s.truncated {
		return "", false
	}
	if s.p.filter(c) {
		s.blocked, s.seenNonWS = true, true
		return Replacement, false
	}
	if !s.seenNonWS && strings.IndexFunc(c, func(r rune) bool { return !text.IsSpace(r) }) >= 0 {
		s.seenNonWS, firstAudio = true, true
		c = s.led(EnsurePrefix(c))
	}
	n := s.p.cap()
	for i, r := range c {
		if r == '.' || r == '!' || r == '?' {
			s.ends++
			if s.ends >= n {
				s.truncated = true
				c = c[:i+1]
				break
			}
		}
	}
	return c, firstAudio
}

// Final processes the agent's whole final text. It returns the text of the
// final frame, and synth=true when no chunk so far carried non-whitespace,
// in which case the caller must send full as one chunk first.
func (s *Stream) Final(raw string) (full string, synth bool) {
	full = CleanForTTS(raw)
	if !s.blocked && s.p.filter(full) {
		s.blocked = true
	}
	if s.blocked {
		full = Replacement
	} else {
		full = s.led(EnsurePrefix(full))
	}
	full = TruncateSentences(StripExtra(full), s.p.cap())
	return full, !s.seenNonWS
}
