// Package prompttext makes outside text safe to stand in a prompt line.
//
// Outside text is anything the bridge did not write itself: a LAN
// client's perception event (a recognised identity, a dance name), a
// camera or microphone description, a caller's question to the vision
// model, a remembered fact, a calendar summary, the weather. It enters a
// prompt only through Line, which keeps it on the line the bridge put it
// on: no line breaks or control characters, no bracketed marker that the
// agent could take for one of the bridge's own ("[System]", "[Speaking
// with]", "<|im_start|>"), and no more than the field's cap.
package prompttext

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Cap bounds one field of a prompt line.
type Cap struct {
	// Runes is the most code points the field may take, the ellipsis
	// included; 0 or less means no cap.
	Runes int
	// Ellipsis ends a field that was cut; "" means "…" (U+2026). It is
	// the bridge's own text, never outside text.
	Ellipsis string
}

// The fields' caps. Names are short; what the robot saw, heard or was
// told may take a sentence or two. The caps of bridge.py's truncations
// (Description, Fact, RoomView) are bridge.py's.
var (
	// Name is a person's name or recognised identity, a mood, a dance.
	Name = Cap{Runes: 64}
	// Description is a person's one-line roster description (the
	// speaker line, the greeter).
	Description = Cap{Runes: 180}
	// Fact is one remembered fact in the person-memory block.
	Fact = Cap{Runes: 160}
	// Answer is a camera or microphone description (bridge.py's
	// take_photo cap).
	Answer = Cap{Runes: 300}
	// Scene is a synthesised scene: who is there, what was seen and
	// heard, the state.
	Scene = Cap{Runes: 800}
	// Question is a caller's question to the vision or audio model.
	Question = Cap{Runes: 500}
	// Event is one calendar event's text.
	Event = Cap{Runes: 120}
	// Calendar is the context line's whole calendar part.
	Calendar = Cap{Runes: 1000}
	// Weather is the weather service's text.
	Weather = Cap{Runes: 120}
	// RoomView is metadata.room_description (bridge.py's 237 + "...").
	RoomView = Cap{Runes: 240, Ellipsis: "..."}
)

// Line returns s made safe to stand in a prompt line, capped by c:
//
//   - invalid UTF-8 becomes U+FFFD;
//   - invisible format characters (bidi controls, zero-width spaces, the
//     byte-order mark, Unicode tag characters, the supplementary
//     variation selectors) are dropped; the zero-width joiner and
//     non-joiner stay, since emoji and some scripts need them;
//   - a run of whitespace holding a line break or another control
//     character (U+2028 and U+2029 included) becomes one space; other
//     whitespace is kept as it is;
//   - square and angle brackets, ASCII and fullwidth, become parentheses
//     and single guillemets ("[System]" reads "(System)", "<|im_start|>"
//     reads "‹|im_start|›"), so no marker survives;
//   - leading and trailing whitespace is stripped (Python's strip);
//   - past c.Runes code points the text is cut on a rune boundary,
//     right-stripped and ended with c's ellipsis (Cut).
//
// Line is idempotent, and text that needs none of this (as the bridge's
// own callers and the household's usual answers do) comes back unchanged.
func Line(s string, c Cap) string {
	if !plain(s) {
		s = clean(s)
	}
	return Cut(s, c)
}

// Cut is Line's cap alone, for text Line already made safe to which the
// bridge then added markers of its own (the calendar's "[email]"): past
// c.Runes code points, the first ones that leave room for the ellipsis,
// right-stripped, then the ellipsis. With no room for the ellipsis the
// text is cut to c.Runes, right-stripped.
func Cut(s string, c Cap) string {
	if c.Runes <= 0 {
		return s
	}
	ell := c.Ellipsis
	if ell == "" {
		ell = "…"
	}
	return text.Truncate(s, text.Cut{Max: c.Runes, Mark: ell, MarkInside: true, Trim: text.IsSpace})
}

// plain reports whether s is printable ASCII without brackets and with
// nothing to strip at either end: Line's common case, returned as is.
func plain(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[len(s)-1] == ' ' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch b := s[i]; {
		case b < 0x20 || b >= 0x7f:
			return false
		case b == '[' || b == ']' || b == '<' || b == '>':
			return false
		}
	}
	return true
}

// clean is Line without the cap.
func clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	// run holds the whitespace since the last kept character; broken
	// records that it held a line break or a control character.
	var run strings.Builder
	broken := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			r = utf8.RuneError // invalid UTF-8: kept visible as U+FFFD
		case dropped(r):
			continue
		case isBreak(r):
			broken = true
			continue
		case text.IsSpace(r):
			run.WriteRune(r)
			continue
		}
		if b.Len() > 0 { // leading whitespace is stripped
			if broken {
				b.WriteByte(' ')
			} else {
				b.WriteString(run.String())
			}
		}
		run.Reset()
		broken = false
		b.WriteRune(neutral(r))
	}
	return b.String() // trailing whitespace was never written
}

// isBreak reports a line break or another control character: C0 and C1
// controls (tab, CR, LF, NEL and the rest) and the Unicode line and
// paragraph separators.
func isBreak(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// dropped reports an invisible character that only hides text: a format
// character (bidi controls and isolates, zero-width space, word joiner,
// byte-order mark, soft hyphen, tag characters) other than the
// zero-width joiner and non-joiner, or a supplementary variation selector.
func dropped(r rune) bool {
	switch {
	case r == '\u200c' || r == '\u200d':
		return false
	case r >= 0xE0100 && r <= 0xE01EF:
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// neutral maps the bracket characters markers are made of to harmless
// look-alikes.
func neutral(r rune) rune {
	switch r {
	case '[', '［':
		return '('
	case ']', '］':
		return ')'
	case '<', '＜':
		return '‹'
	case '>', '＞':
		return '›'
	}
	return r
}
