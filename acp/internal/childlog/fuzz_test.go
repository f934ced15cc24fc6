package childlog

import (
	"testing"
	"unicode/utf8"
)

// FuzzCleanLine: whatever a child writes, the cleaned line is valid UTF-8
// with no control characters, and a clean line comes back unchanged.
func FuzzCleanLine(f *testing.F) {
	for _, seed := range []string{
		"plain ✓ line", "\x1b[2m2026\x1b[0m \x1b[1;31mERROR\x1b[0m", "a\tb\r\a", "\x1b]0;t\x07x",
		"\x1b]8;;u\x1b\\l", "\x1b(B", "\x1b[31✓", "\x1b", "\xff\xfe", "\u0085c1",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := CleanLine(in)
		if !utf8.ValidString(out) {
			t.Fatalf("CleanLine(%q) = %q: invalid UTF-8", in, out)
		}
		for _, r := range out {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("CleanLine(%q) = %q: control %U left", in, out, r)
			}
		}
		if again := CleanLine(out); again != out {
			t.Fatalf("CleanLine not idempotent on %q: %q then %q", in, out, again)
		}
	})
}
