package text

import (
	"strings"
	"testing"
	"unicode"
)

// TestTruncate pins, for each Cut a caller uses, the outputs of the
// function that Cut replaced (FirstRunes, the ellipsis cuts in periphery
// and llm, prompttext.Cut, tier1's memory snippet, the demo agent's
// quote, convolog.Clip and perception's data-value cut, acp's log snippet
// cut, sidecar.Shorten).
func TestTruncate(t *testing.T) {
	shortenTrim := func(r rune) bool { return strings.ContainsRune(" ,;:-", r) }
	ins := []string{"", "short", "héllo wörld", "abcdef", "éééé", "one two, three", "a    \x1cb  c d e f", "😊😆😢😮🤔😠😐", "word word word word word word word", "Supercalifragilisticexpialidocious"}
	for _, tt := range []struct {
		name string
		cut  Cut
		want []string
	}{
		{"FirstRunes 5", Cut{Max: 5}, []string{"", "short", "héllo", "abcde", "éééé", "one t", "a    ", "😊😆😢😮🤔", "word ", "Super"}},
		{"ellipsis 5", Cut{Max: 5, Mark: "…"}, []string{"", "short", "héllo…", "abcde…", "éééé", "one t…", "a    …", "😊😆😢😮🤔…", "word …", "Super…"}},
		{"prompttext 6", Cut{Max: 6, Mark: "…", MarkInside: true, Trim: IsSpace}, []string{"", "short", "héllo…", "abcdef", "éééé", "one t…", "a…", "😊😆😢😮🤔…", "word…", "Super…"}},
		{"prompttext 7 ...", Cut{Max: 7, Mark: "...", MarkInside: true, Trim: IsSpace}, []string{"", "short", "héll...", "abcdef", "éééé", "one...", "a...", "😊😆😢😮🤔😠😐", "word...", "Supe..."}},
		{"prompttext 2 ...", Cut{Max: 2, Mark: "...", MarkInside: true, Trim: IsSpace}, []string{"", "sh", "hé", "ab", "éé", "on", "a", "😊😆", "wo", "Su"}},
		{"snippet 8", Cut{Max: 8, Mark: "...", MarkInside: true}, []string{"", "short", "héllo...", "abcdef", "éééé", "one t...", "a    ...", "😊😆😢😮🤔😠😐", "word ...", "Super..."}},
		{"quote 7", Cut{Max: 7, Mark: "…", MarkInside: true, Trim: unicode.IsSpace}, []string{"", "short", "héllo…", "abcdef", "éééé", "one tw…", "a    \x1c…", "😊😆😢😮🤔😠😐", "word w…", "Superc…"}},
		{"clipBytes 5", Cut{Max: 5, Bytes: true, Mark: "…", MarkInside: true}, []string{"", "short", "h…", "ab…", "é…", "on…", "a …", "…", "wo…", "Su…"}},
		{"clipBytes 6", Cut{Max: 6, Bytes: true, Mark: "…", MarkInside: true}, []string{"", "short", "hé…", "abcdef", "é…", "one…", "a  …", "…", "wor…", "Sup…"}},
		{"clipBytes 8", Cut{Max: 8, Bytes: true, Mark: "…", MarkInside: true}, []string{"", "short", "héll…", "abcdef", "éééé", "one t…", "a    …", "😊…", "word …", "Super…"}},
		{"shorten 12", Cut{Max: 12, Bytes: true, AtSpace: true, Trim: shortenTrim}, []string{"", "short", "héllo", "abcdef", "éééé", "one two", "a    \x1cb  c", "😊😆😢", "word word", "Supercalifra"}},
		{"acp snippet 5", Cut{Max: 5, Bytes: true}, []string{"", "short", "héll", "abcde", "éé", "one t", "a    ", "😊", "word ", "Super"}},
		{"shorten 24", Cut{Max: 24, Bytes: true, AtSpace: true, Trim: shortenTrim}, []string{"", "short", "héllo wörld", "abcdef", "éééé", "one two, three", "a    \x1cb  c d e f", "😊😆😢😮🤔😠", "word word word word", "Supercalifragilisticexpi"}},
	} {
		for i, in := range ins {
			if got := Truncate(in, tt.cut); got != tt.want[i] {
				t.Errorf("%s: Truncate(%q) = %q, want %q", tt.name, in, got, tt.want[i])
			}
		}
	}
}
