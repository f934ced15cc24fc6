package text

import "testing"

func TestIsSpace(t *testing.T) {
	for _, r := range []rune{' ', '\t', '\n', '\v', '\f', '\r', 0x1C, 0x1D, 0x1E, 0x1F, 0x85, 0xA0, 0x2028, 0x3000} {
		if !IsSpace(r) {
			t.Errorf("IsSpace(%U) = false", r)
		}
	}
	for _, r := range []rune{'a', 0x1B, 0x200B, 0xFEFF, '😊'} {
		if IsSpace(r) {
			t.Errorf("IsSpace(%U) = true", r)
		}
	}
}

// TestStrip pins Python's strip, lstrip and rstrip (bridge.py's outputs):
// U+001C–U+001F are whitespace, U+200B and U+FEFF are not.
func TestStrip(t *testing.T) {
	funcs := [...]struct {
		name string
		f    func(string) string
	}{{"Strip", Strip}, {"StripLeft", StripLeft}, {"StripRight", StripRight}}
	for in, want := range map[string][len(funcs)]string{
		"":                          {"", "", ""},
		" \t\n ":                    {"", "", ""},
		"a":                         {"a", "a", "a"},
		"  a b  ":                   {"a b", "a b  ", "  a b"},
		"\x1c\x1fhi\x1e\x1d":        {"hi", "hi\x1e\x1d", "\x1c\x1fhi"},
		"\u00a0\u3000x\u2028\u0085": {"x", "x\u2028\u0085", "\u00a0\u3000x"},
		"\u200bx\ufeff":             {"\u200bx\ufeff", "\u200bx\ufeff", "\u200bx\ufeff"},
		"\x1b x \x1b":               {"\x1b x \x1b", "\x1b x \x1b", "\x1b x \x1b"},
		" 😊 hi ":                    {"😊 hi", "😊 hi ", " 😊 hi"},
	} {
		for i, fn := range funcs {
			if got := fn.f(in); got != want[i] {
				t.Errorf("%s(%q) = %q, want %q", fn.name, in, got, want[i])
			}
		}
	}
}
