package emoji

import (
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
func (p Pipeline) Buffered(raw string) string {
	t := raw
	if p.filter(t) {
		t = Replacement
	}
	return TruncateSentences(StripExtra(CleanForTTS(EnsurePrefix(t))), p.cap())
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
		if _, ok := Leading(c); !ok {
			c = Prefix + c
		}
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
	}
	full = TruncateSentences(StripExtra(EnsurePrefix(full)), s.p.cap())
	return full, !s.seenNonWS
}
