package emoji

import (
	"strings"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Allowed are the nine reply emoji, in bridge.py's order.
var Allowed = [...]string{"😊", "😆", "😢", "😮", "🤔", "😠", "😐", "😍", "😴"}

// Reply literals (spec http-api.md Appendix A).
const (
	// Fallback is the emoji put in front of replies that lack an allowed one.
	Fallback = "😐"
	// Prefix is what EnsurePrefix adds.
	Prefix = Fallback + " "
	// EmptyReply replaces an empty reply.
	EmptyReply = "😐 (no response)"
	// Replacement is spoken instead of a reply the content filter blocks.
	Replacement = "😐 Let's talk about something fun instead! What's your favorite animal?"
)

// allowedRune is the set of allowed emoji (each a single code point).
var allowedRune = func() map[rune]bool {
	m := make(map[rune]bool, len(Allowed))
	for _, e := range Allowed {
		r, _ := utf8.DecodeRuneInString(e)
		m[r] = true
	}
	return m
}()

// Leading returns the allowed emoji that starts t after its leading
// whitespace.
func Leading(t string) (string, bool) {
	r, size := utf8.DecodeRuneInString(text.StripLeft(t))
	if size == 0 || !allowedRune[r] {
		return "", false
	}
	return string(r), true
}

// EnsurePrefix guarantees an allowed emoji in front: "" becomes
// EmptyReply, a text already starting (after whitespace) with an allowed
// emoji is kept, anything else gets Prefix in front.
func EnsurePrefix(t string) string {
	if t == "" {
		return EmptyReply
	}
	if _, ok := Leading(t); ok {
		return t
	}
	return Prefix + t
}

// CleanForTTS deletes U+200D, U+FE0F, '*', '#' and '>' everywhere.
func CleanForTTS(t string) string {
	if !strings.ContainsAny(t, "\u200d\ufe0f*#>") {
		return t
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '\u200d', '\ufe0f', '*', '#', '>':
			return -1
		}
		return r
	}, t)
}

// isEmojiRune reports membership in bridge.py's emoji ranges:
// U+1F300–U+1FAFF, U+2600–U+27BF, U+1F000–U+1F0FF, U+1F100–U+1F1FF.
func isEmojiRune(r rune) bool {
	return (r >= 0x1F000 && r <= 0x1F1FF) || (r >= 0x1F300 && r <= 0x1FAFF) || (r >= 0x2600 && r <= 0x27BF)
}

// StripExtra keeps a leading allowed emoji and deletes every other emoji
// code point.
func StripExtra(t string) string {
	if t == "" {
		return t
	}
	head := ""
	rest := t
	if e, ok := Leading(t); ok {
		ws := len(t) - len(text.StripLeft(t))
		head = t[:ws+len(e)]
		rest = t[ws+len(e):]
	}
	if strings.IndexFunc(rest, isEmojiRune) < 0 {
		return t
	}
	return head + strings.Map(func(r rune) rune {
		if isEmojiRune(r) {
			return -1
		}
		return r
	}, rest)
}

// TruncateSentences cuts t after its n-th '.', '!' or '?' (each one
// counts: "..." is three). n <= 0 means no cap.
func TruncateSentences(t string, n int) string {
	if n <= 0 {
		return t
	}
	count := 0
	for i, r := range t {
		if r == '.' || r == '!' || r == '?' {
			count++
			if count == n {
				return t[:i+1]
			}
		}
	}
	return t
}
