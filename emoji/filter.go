package emoji

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Tier is a content-filter severity, the label of dotty_content_filter_hits_total.
type Tier string

// The tiers, most severe first.
const (
	TierAlert    Tier = "alert"
	TierLog      Tier = "log"
	TierRedirect Tier = "redirect"
)

// Tiers are every tier, the label values of dotty_content_filter_hits_total.
var Tiers = []Tier{TierRedirect, TierLog, TierAlert}

// Hit describes a content-filter match.
type Hit struct {
	// Tier is the most severe tier with a match.
	Tier Tier
	// Word is the matched word as it appears in the text.
	Word string
	// Pos is the word's offset in code points; Len the text's length in code points.
	Pos, Len int
}

// tierWords are bridge.py's lists: whole words, then word prefixes.
var tierWords = []struct {
	tier     Tier
	whole    []string
	prefixes []string
}{
	{TierAlert, []string{"cocaine", "heroin", "methamphetamine", "fentanyl", "ecstasy"}, nil},
	{TierLog, []string{"penis", "vagina", "orgasm", "hentai"}, []string{"porn", "decapitat", "dismember", "mutilat"}},
	{TierRedirect, []string{"bastard", "cunt", "nigger", "nigga", "faggot", "retard", "retarded"}, []string{"fuck", "shit", "bitch"}},
}

// firstLetters marks the ASCII letters (both cases) that start a listed
// word; other ASCII-initial words cannot match. Non-ASCII initials always
// take the full check, since some fold to ASCII (ſ → s, K → k).
var firstLetters = func() (t [128]bool) {
	for _, tw := range tierWords {
		for _, w := range append(append([]string(nil), tw.whole...), tw.prefixes...) {
			t[w[0]] = true
			t[w[0]-'a'+'A'] = true
		}
	}
	return t
}()

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

// Filter checks t for the three tiers in order (alert, log, redirect) and
// reports the first tier with a match. A word is a maximal run of Unicode
// letters, numbers and '_'; whole-word entries must equal a word and
// prefix entries must start one, compared with Unicode case folding.
func Filter(t string) (Hit, bool) {
	best := -1
	var hit Hit
	pos := 0 // code point offset of i
	for i := 0; i < len(t); {
		r, size := utf8.DecodeRuneInString(t[i:])
		if !isWordRune(r) {
			i += size
			pos++
			continue
		}
		start, startPos := i, pos
		for i < len(t) {
			r, size = utf8.DecodeRuneInString(t[i:])
			if !isWordRune(r) {
				break
			}
			i += size
			pos++
		}
		word := t[start:i]
		if c := word[0]; c < utf8.RuneSelf && !firstLetters[c] {
			continue
		}
		// Check only tiers more severe than the best match so far.
		limit := len(tierWords)
		if best >= 0 {
			limit = best
		}
		for ti := 0; ti < limit; ti++ {
			if matchTier(word, ti) {
				best, hit = ti, Hit{Tier: tierWords[ti].tier, Word: word, Pos: startPos}
				break
			}
		}
		if best == 0 {
			break
		}
	}
	if best < 0 {
		return Hit{}, false
	}
	hit.Len = utf8.RuneCountInString(t)
	return hit, true
}

func matchTier(word string, ti int) bool {
	tw := tierWords[ti]
	for _, w := range tw.whole {
		if len(word) >= len(w) && strings.EqualFold(word, w) {
			return true
		}
	}
	for _, p := range tw.prefixes {
		if hasPrefixFold(word, p) {
			return true
		}
	}
	return false
}

// hasPrefixFold reports whether word starts with the ASCII prefix p,
// folding case the way Python's IGNORECASE does (so U+017F ſ matches s and
// U+212A K matches k).
func hasPrefixFold(word, p string) bool {
	i := 0
	for _, pr := range p {
		if i >= len(word) {
			return false
		}
		r, size := utf8.DecodeRuneInString(word[i:])
		if !foldEqual(r, pr) {
			return false
		}
		i += size
	}
	return true
}

// foldEqual reports whether a and b are equal under Unicode simple case folding.
func foldEqual(a, b rune) bool {
	if a == b {
		return true
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}
