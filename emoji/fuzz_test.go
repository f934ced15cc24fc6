package emoji

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

const fuzzCap = 6

// checkReply asserts the invariants every finished reply holds.
func checkReply(t *testing.T, in, out string) {
	t.Helper()
	if out == "" {
		t.Fatalf("empty reply for %q", in)
	}
	if utf8.ValidString(in) && !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 out of valid input %q: %q", in, out)
	}
	e, ok := Leading(out)
	if !ok {
		t.Fatalf("reply %q does not start with an allowed emoji", out)
	}
	if n := strings.Count(out, ".") + strings.Count(out, "!") + strings.Count(out, "?"); n > fuzzCap {
		t.Fatalf("reply %q has %d sentence ends", out, n)
	}
	rest := text.StripLeft(out)[len(e):]
	if strings.IndexFunc(rest, isEmojiRune) >= 0 {
		t.Fatalf("reply %q has an emoji after the first", out)
	}
}

func FuzzBuffered(f *testing.F) {
	for _, s := range []string{"", "   ", "Hello there.", "😊 Hi! 🎉 Great.", "🙂 hello", "❤️ love", "1️⃣ one",
		"One. Two. Three. Four. Five. Six. Seven.", "What the fuck", "scunthorpe", "\u001f😊\u200d", "\xff\xfe😊."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		checkReply(t, in, Pipeline{MaxSentences: fuzzCap}.Buffered(in))
	})
}

func FuzzStream(f *testing.F) {
	f.Add("😊 Hello there! How are you?", uint8(5), uint8(11))
	f.Add("  Hello **world**.", uint8(2), uint8(0))
	f.Add("Oh fuck no.", uint8(5), uint8(0))
	f.Add("A. B. C. D. E. F. G. H.", uint8(9), uint8(3))
	f.Add("\n 🤔 Hmm 🎉 ok.", uint8(1), uint8(4))
	f.Fuzz(func(t *testing.T, in string, cut1, cut2 uint8) {
		if !utf8.ValidString(in) {
			return
		}
		// Split at up to two rune boundaries chosen by the fuzzer.
		var deltas []string
		rest := in
		for _, c := range []uint8{cut1, cut2} {
			i := int(c) % (len(rest) + 1)
			for i > 0 && !utf8.RuneStart(rest[i%max(len(rest), 1)]) && i < len(rest) {
				i--
			}
			deltas = append(deltas, rest[:i])
			rest = rest[i:]
		}
		deltas = append(deltas, rest)
		s := Pipeline{MaxSentences: fuzzCap}.Stream()
		ends := 0
		sawText := false
		for _, d := range deltas {
			c, _ := s.Push(d)
			if !utf8.ValidString(c) {
				t.Fatalf("chunk %q is invalid UTF-8", c)
			}
			if !sawText && text.Strip(c) != "" {
				sawText = true
				if _, ok := Leading(c); !ok && c != Replacement {
					t.Fatalf("first spoken chunk %q lacks an allowed emoji", c)
				}
			}
			if c != Replacement {
				ends += strings.Count(c, ".") + strings.Count(c, "!") + strings.Count(c, "?")
			}
		}
		if ends > fuzzCap {
			t.Fatalf("%d sentence ends streamed", ends)
		}
		full, _ := s.Final(in)
		checkReply(t, in, full)
	})
}

func FuzzFilter(f *testing.F) {
	for _, s := range []string{"what the fuck", "éfuck", "ſhit", "heroin", "porno", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		h, ok := Filter(in)
		if !ok {
			return
		}
		runes := []rune(in)
		word := []rune(h.Word)
		if h.Pos+len(word) > len(runes) || string(runes[h.Pos:h.Pos+len(word)]) != h.Word {
			t.Fatalf("hit %+v is not at its position in %q", h, in)
		}
	})
}

// FuzzLed: with any lead, a finished reply keeps its invariants and, unless
// the content filter replaced it, starts with the lead when it is allowed.
func FuzzLed(f *testing.F) {
	f.Add("😊 Hello there!", "😢")
	f.Add("  Hello **world**.", "😴")
	f.Add("Oh fuck no.", "😢")
	f.Add("\n 🤔 Hmm 🎉 ok.", "🙂")
	f.Add("", "😍")
	f.Fuzz(func(t *testing.T, in, lead string) {
		led := func() (string, bool) { return lead, true }
		p := Pipeline{MaxSentences: fuzzCap}
		out := p.BufferedLed(in, led)
		checkReply(t, in, out)
		s := p.Stream().Lead(led)
		s.Push(in)
		full, _ := s.Final(in)
		checkReply(t, in, full)
		for _, got := range []string{out, full} {
			if e, _ := Leading(got); got != Replacement && slices.Contains(Allowed[:], lead) && e != lead {
				t.Fatalf("reply %q is not led by %q", got, lead)
			}
		}
	})
}
