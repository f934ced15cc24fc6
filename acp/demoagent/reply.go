package demoagent

import (
	"hash/fnv"
	"strings"
	"unicode"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// emojiSet is the nine reply emoji in the bridge's order, one code point
// each and no variation selectors: U+1F60A U+1F606 U+1F622 U+1F62E U+1F914
// U+1F620 U+1F610 U+1F60D U+1F634.
const emojiSet = "\U0001F60A\U0001F606\U0001F622\U0001F62E\U0001F914\U0001F620\U0001F610\U0001F60D\U0001F634"

// emojiCount is the number of code points in emojiSet.
const emojiCount = 9

const (
	// userMarker introduces the user's text in the bridge's prompt sandwich.
	userMarker = "[User] "
	// quoteLimit is the longest quoted user line in runes, ellipsis included.
	quoteLimit = 120
	// nothingSaid is quoted when the prompt has no usable text.
	nothingSaid = "(nothing)"
	// voicePrefix opens the bridge's voice prompt; the user's words sit
	// between its "[Context: …]" line and one of the two suffixes.
	voicePrefix   = "[channel=dotty voice-TTS]\n"
	contextMarker = "[Context: "
	fullSuffix    = "\n\n---\nHARD CONSTRAINTS"
	shortSuffix   = "\n\n[Rules: "
	// replyTail follows the quote in every reply.
	replyTail = `. I'm the demo agent; install ZeroClaw for real answers.`
)

// Emoji returns the nine emoji a reply can start with, in the bridge's
// order: 😊 😆 😢 😮 🤔 😠 😐 😍 😴. Each is a single code point. The slice is
// a fresh copy on every call.
func Emoji() []string {
	out := make([]string, 0, emojiCount)
	for _, r := range emojiSet {
		out = append(out, string(r))
	}
	return out
}

// emojiFor picks the reply emoji for a user line: FNV-1a of the line,
// modulo nine, so the choice is stable across runs and platforms.
func emojiFor(line string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(line)) // hash.Hash writes never fail
	want := int(h.Sum32() % emojiCount)
	i := 0
	for _, r := range emojiSet {
		if i == want {
			return string(r)
		}
		i++
	}
	panic("demoagent: emoji index out of range") // unreachable: want < emojiCount
}

// Reply returns the full reply the demo agent gives for a prompt text: one
// of the nine [Emoji] (chosen deterministically from the user's line), a
// space, and the user's line ([UserLine]) quoted verbatim, e.g.
//
//	😊 You said: "hello robot". I'm the demo agent; install ZeroClaw for real answers.
func Reply(prompt string) string {
	line := UserLine(prompt)
	return emojiFor(line) + ` You said: "` + line + `"` + replyTail
}

// UserLine returns the line of a prompt that the user said, as [Reply]
// quotes it. In the bridge's voice prompt the search is confined to the
// content: the text between the "[Context: …]" line and the suffix (full on
// a session's first turn, short afterwards). If that text contains
// "[User] " (xiaozhi's marker), the line is what follows the last marker up
// to the end of its line; otherwise, in a voice prompt, it is the whole
// content, whatever lines it spans. Otherwise it is the last non-blank
// line that does not start with "[" (bracketed lines are bridge directives),
// or failing that the last non-blank line. The result is trimmed and capped
// at 120 runes, the last of which is "…" when the line was cut; a prompt with
// nothing usable gives "(nothing)".
func UserLine(prompt string) string {
	content, voice := voiceContent(prompt)
	if !voice {
		content = prompt
	}
	var line string
	if i := strings.LastIndex(content, userMarker); i >= 0 {
		line, _, _ = strings.Cut(content[i+len(userMarker):], "\n")
	} else if voice {
		line = content
	} else {
		line = lastSpokenLine(prompt)
	}
	line = strings.TrimSpace(line)
	if line == "" {
		return nothingSaid
	}
	return text.Truncate(line, text.Cut{Max: quoteLimit, Mark: "…", MarkInside: true, Trim: unicode.IsSpace})
}

// voiceContent finds the user's content in the bridge's voice prompt: the
// header lines end with the first "[Context: …]" line, and the suffix is the
// last occurrence of either suffix opening, so content that quotes either
// marker is still found whole.
func voiceContent(prompt string) (string, bool) {
	if !strings.HasPrefix(prompt, voicePrefix) {
		return "", false
	}
	i := strings.Index(prompt, "\n"+contextMarker)
	if i < 0 {
		return "", false
	}
	nl := strings.IndexByte(prompt[i+1:], '\n')
	if nl < 0 {
		return "", false
	}
	rest := prompt[i+1+nl+1:]
	end := max(strings.LastIndex(rest, fullSuffix), strings.LastIndex(rest, shortSuffix))
	if end < 0 {
		return "", false
	}
	return rest[:end], true
}

// lastSpokenLine returns the last non-blank line of reply that is not a
// bracketed directive, else the last non-blank line, else "".
func lastSpokenLine(reply string) string {
	lastNonBlank := ""
	for rest := reply; rest != ""; {
		var line string
		if i := strings.LastIndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[i+1:], rest[:i]
		} else {
			line, rest = rest, ""
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "[") {
			return line
		}
		if lastNonBlank == "" {
			lastNonBlank = line
		}
	}
	return lastNonBlank
}

// Chunks splits a reply into the pieces the agent streams, cutting only
// where a word starts: about one piece per three words, four to eight pieces
// when the reply has that many words. A text of fewer than three words is cut
// between runes instead, so any text of at least three runes gives at least
// three pieces. Concatenating the pieces gives the text back; "" gives none.
func Chunks(reply string) []string {
	// starts holds the byte offset of every word after the first.
	var starts []int
	prevSpace := false
	for i, r := range reply {
		space := unicode.IsSpace(r)
		if i > 0 && prevSpace && !space {
			starts = append(starts, i)
		}
		prevSpace = space
	}
	words := len(starts) + 1
	n := min(max((words+2)/3, 4), 8, words)
	if n < 3 {
		return splitRunes(reply, 3)
	}
	// Piece k starts at word k*words/n; the offsets strictly increase
	// because n <= words, so no piece is empty.
	out := make([]string, 0, n)
	from := 0
	for k := 1; k < n; k++ {
		to := starts[k*words/n-1]
		out = append(out, reply[from:to])
		from = to
	}
	return append(out, reply[from:])
}

// splitRunes cuts s into n pieces of about equal rune counts, or into
// single runes when it has fewer than n. It cuts at byte offsets, so even
// invalid UTF-8 comes back unchanged when the pieces are joined.
func splitRunes(s string, n int) []string {
	var offsets []int
	for i := range s {
		offsets = append(offsets, i)
	}
	n = min(n, len(offsets))
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	from := 0
	for k := 1; k < n; k++ {
		to := offsets[k*len(offsets)/n]
		out = append(out, s[from:to])
		from = to
	}
	return append(out, s[from:])
}
