package vision

import (
	"slices"
	"strings"
	"testing"
)

// FuzzParseRoomView: any model reply parses without panicking into a name
// that is lower case and a mood from the vocabulary.
func FuzzParseRoomView(f *testing.F) {
	for _, seed := range []string{
		"DESC: A girl | NAME: Alex | MOOD: tired", "no one in view", "", "DESC: | NAME: |",
		"DESC: x\ny | NAME: b_2 | MOOD: Happy!", "DESC: a | NAME: 9 | MOOD: tired",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		_, name, mood := ParseRoomView(reply)
		if name != strings.ToLower(name) {
			t.Fatalf("name %q not lower case", name)
		}
		if mood != "" && !slices.Contains(Moods, mood) {
			t.Fatalf("mood %q off the vocabulary", mood)
		}
	})
}
