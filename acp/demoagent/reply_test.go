package demoagent

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestEmoji(t *testing.T) {
	want := []string{"\U0001F60A", "\U0001F606", "\U0001F622", "\U0001F62E", "\U0001F914", "\U0001F620", "\U0001F610", "\U0001F60D", "\U0001F634"}
	got := Emoji()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Emoji() mismatch (-want +got):\n%s", diff)
	}
	got[0] = "x"
	if Emoji()[0] != want[0] {
		t.Error("Emoji() shares its slice between calls")
	}
}

func TestUserLine(t *testing.T) {
	long := strings.Repeat("é", 500)
	exact := strings.Repeat("a", quoteLimit)
	tests := []struct{ name, prompt, want string }{
		{"plain text", "hello robot", "hello robot"},
		{"trimmed, CRLF", "  hi there \r\n", "hi there"},
		{"user marker", "[Context] be nice\n\n[User] hello robot", "hello robot"},
		{"last user marker, up to its line end", "[User] first\n[User] second one\nBegin your reply now.", "second one"},
		{"user marker mid-line", "note: [User] inline text\nmore", "inline text"},
		{"user marker with nothing after it", "[User] \nsomething else", "(nothing)"},
		{"directive lines after the user text", "what time is it\n[Reply rules] be brief\n\n[Emotion] pick one", "what time is it"},
		{"indented directive", "hello\n   [x] directive", "hello"},
		{"multi-line, last spoken line", "first line\nsecond line\n", "second line"},
		{"only directives", "[a]\n[b] c\n  \n", "[b] c"},
		{"empty", "", "(nothing)"},
		{"blank", " \n\t\n  ", "(nothing)"},
		{"500 runes capped", long, strings.Repeat("é", quoteLimit-1) + "…"},
		{"120 runes kept", exact, exact},
		{"cap drops the space before the ellipsis", strings.Repeat("a", quoteLimit-2) + " tail", strings.Repeat("a", quoteLimit-2) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UserLine(tt.prompt)
			if got != tt.want {
				t.Errorf("UserLine(%q) = %q, want %q", tt.prompt, got, tt.want)
			}
			if n := utf8.RuneCountInString(got); n > quoteLimit {
				t.Errorf("UserLine has %d runes, cap is %d", n, quoteLimit)
			}
		})
	}
}

func TestReply(t *testing.T) {
	prompts := []string{
		"hello robot",
		"[Context] be nice\n\n[User] hello robot",
		"what time is it\n[Reply rules] be brief",
		"",
		" \n ",
		strings.Repeat("word ", 200),
		`she said "hi" \ bye`,
		"ünïcödé ✓ 🤖",
	}
	allowed := Emoji()
	for _, p := range prompts {
		r := Reply(p)
		if r != Reply(p) {
			t.Errorf("Reply(%q) is not deterministic", p)
		}
		emoji, rest, ok := strings.Cut(r, " ")
		if !ok || !slices.Contains(allowed, emoji) {
			t.Errorf("Reply(%q) = %q: want one of the nine emoji, then a space", p, r)
			continue
		}
		quote := `"` + UserLine(p) + `"`
		before, after, ok := strings.Cut(rest, quote)
		if !ok {
			t.Errorf("Reply(%q) = %q does not quote %s verbatim", p, r, quote)
			continue
		}
		// Outside the emoji and the quote the reply is plain ASCII and at
		// most three sentences.
		frame := before + after
		for _, c := range frame {
			if c > unicode.MaxASCII {
				t.Errorf("Reply(%q) has non-ASCII %q outside the quote", p, c)
			}
		}
		if n := strings.Count(frame, ".") + strings.Count(frame, "!") + strings.Count(frame, "?"); n > 3 {
			t.Errorf("Reply(%q) = %q has %d sentences, want ≤ 3", p, r, n)
		}
	}
}

// TestReplyEmojiSpread checks that the emoji depends on the user's line:
// many lines use all nine, and never anything else.
func TestReplyEmojiSpread(t *testing.T) {
	allowed := Emoji()
	used := map[string]int{}
	for i := range 900 {
		emoji, _, _ := strings.Cut(Reply(fmt.Sprintf("[User] line number %d", i)), " ")
		if !slices.Contains(allowed, emoji) {
			t.Fatalf("emoji %q is not one of the nine", emoji)
		}
		used[emoji]++
	}
	if len(used) != len(allowed) {
		t.Errorf("900 lines used only %d of the nine emoji: %v", len(used), used)
	}
	// The emoji follows the user's line, not the rest of the prompt.
	a, _, _ := strings.Cut(Reply("[Context] one\n[User] same words"), " ")
	b, _, _ := strings.Cut(Reply("[Context] two\n[User] same words"), " ")
	if a != b {
		t.Errorf("same user line, different emoji: %s vs %s", a, b)
	}
}

func TestChunks(t *testing.T) {
	texts := []string{
		Reply("hi"),
		Reply("[User] hello robot"),
		Reply(strings.Repeat("many words here ", 40)),
		Reply(strings.Repeat("x", 500)),
		"one two three four five six seven eight nine ten eleven twelve",
		"  leading and trailing spaces  ",
		"a  b\t\tc\n\nd",
	}
	for _, text := range texts {
		chunks := Chunks(text)
		if got := strings.Join(chunks, ""); got != text {
			t.Errorf("Chunks(%q) joins to %q", text, got)
		}
		if len(chunks) < 4 || len(chunks) > 8 {
			t.Errorf("Chunks(%q) gave %d pieces, want 4 to 8", text, len(chunks))
		}
		for i, c := range chunks {
			if c == "" {
				t.Errorf("Chunks(%q)[%d] is empty", text, i)
			}
			if i > 0 {
				// Cut only where a word starts.
				prev, _ := utf8.DecodeLastRuneInString(chunks[i-1])
				next, _ := utf8.DecodeRuneInString(c)
				if !unicode.IsSpace(prev) || unicode.IsSpace(next) {
					t.Errorf("Chunks(%q) cuts mid-word between %q and %q", text, chunks[i-1], c)
				}
			}
		}
	}
	// Every reply streams as several pieces.
	for _, p := range []string{"", "a", "[User] x", strings.Repeat("y ", 300)} {
		if n := len(Chunks(Reply(p))); n < 3 {
			t.Errorf("Reply(%q) streams as %d chunks, want ≥ 3", p, n)
		}
	}
}

func TestChunksShortText(t *testing.T) {
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"ab", []string{"a", "b"}},
		{"abc", []string{"a", "b", "c"}},
		{"hello", []string{"h", "el", "lo"}},
		{"two words", []string{"two", " wo", "rds"}},
		{"\xff\xfe x", []string{"\xff", "\xfe", " x"}}, // invalid UTF-8 survives
		{"one two three", []string{"one ", "two ", "three"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Chunks(tt.text)); diff != "" {
			t.Errorf("Chunks(%q) mismatch (-want +got):\n%s", tt.text, diff)
		}
	}
}
