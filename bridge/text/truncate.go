package text

import (
	"strings"
	"unicode/utf8"
)

// Cut says how Truncate shortens a text that is over its bound. The zero
// Cut keeps nothing: set Max.
type Cut struct {
	// Max is the bound: code points, or UTF-8 bytes when Bytes is set.
	Max int
	// Bytes makes Max count UTF-8 bytes; a cut still never splits a code
	// point.
	Bytes bool
	// Mark ends a text that was cut ("…", "...").
	Mark string
	// MarkInside counts Mark toward Max; when Mark leaves no room, the
	// text is cut to Max and left without it.
	MarkInside bool
	// AtSpace moves the cut back to the last space of the kept text when
	// that space is in its second half, so a word is not split.
	AtSpace bool
	// Trim, when set, strips the runes it reports from the end of the kept
	// text, before the Mark.
	Trim func(rune) bool
}

// Truncate returns s when it is within c.Max, else its first units (code
// points, or bytes on a rune boundary) as c says, then c.Mark. It is the
// one text-shortening function: Python's s[:n] is Cut{Max: n}.
func Truncate(s string, c Cut) string {
	size := utf8.RuneCountInString
	if c.Bytes {
		size = func(s string) int { return len(s) }
	}
	if len(s) <= c.Max || size(s) <= c.Max {
		return s
	}
	keep, mark := c.Max, c.Mark
	if c.MarkInside {
		if keep -= size(mark); keep < 1 {
			keep, mark = c.Max, ""
		}
	}
	cut := prefix(s, keep, c.Bytes)
	if c.AtSpace {
		if i := strings.LastIndexByte(cut, ' '); i >= keep/2 {
			cut = cut[:i]
		}
	}
	if c.Trim != nil {
		cut = strings.TrimRightFunc(cut, c.Trim)
	}
	return cut + mark
}

// prefix is the longest start of s with at most n code points (bytes when
// bytes is set) that does not split a code point.
func prefix(s string, n int, bytes bool) string {
	if bytes {
		for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
			n--
		}
		return s[:max(n, 0)]
	}
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}
