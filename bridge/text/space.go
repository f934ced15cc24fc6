package text

import (
	"strings"
	"unicode"
)

// IsSpace is Python's str.isspace() for one code point: Go's
// unicode.IsSpace plus U+001C–U+001F.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F)
}

// Strip is Python's str.strip(): s without leading and trailing
// whitespace as IsSpace defines it. Every feature that ports a bridge.py
// .strip() uses it, so both agree on what whitespace is.
func Strip(s string) string { return strings.TrimFunc(s, IsSpace) }

// StripLeft is Python's str.lstrip(): s without leading whitespace.
func StripLeft(s string) string { return strings.TrimLeftFunc(s, IsSpace) }

// StripRight is Python's str.rstrip(): s without trailing whitespace.
func StripRight(s string) string { return strings.TrimRightFunc(s, IsSpace) }
