package emoji

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// The buffered path with MAX_SENTENCES=6, bridge.py's worked examples.
func TestBufferedVectors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "😐 (no response)"},
		{"   ", "😐    "},
		{"Hello there.", "😐 Hello there."},
		{"  Hello there.", "😐   Hello there."},
		{"\n😊 hi", "\n😊 hi"},
		{"😊 Hi! How are you? 🎉 Great.", "😊 Hi! How are you?  Great."},
		{"😊😊 double", "😊 double"},
		{"Sure 😀 thing", "😐 Sure  thing"},
		{"🙂 hello", "😐  hello"},
		{"**Bold** # head > quote", "😐 Bold  head  quote"},
		{"❤️ love", "😐  love"},
		{"👍🏽 ok", "😐  ok"},
		{"1️⃣ one", "😐 1⃣ one"},
		{"⭐ star", "😐 ⭐ star"},
		{"One. Two. Three. Four. Five. Six. Seven.", "😐 One. Two. Three. Four. Five. Six."},
		{"Pi is 3.14159 ok? yes! no. a. b. c.", "😐 Pi is 3.14159 ok? yes! no. a. b."},
		{"Wait... what?! Really.", "😐 Wait... what?! Really."},
		{"What the fuck", Replacement},
		{"shitty weather", Replacement},
		{"Shitake mushrooms", Replacement},
		{"retarded plan", Replacement},
		{"Cocaine and pornography", Replacement},
		{"pornographic", Replacement},
		{"scunthorpe", "😐 scunthorpe"},
		{"retardation", "😐 retardation"},
		{"classic bastardization", "😐 classic bastardization"},
	}
	var hits []Hit
	p := Pipeline{MaxSentences: 6, OnHit: func(h Hit) { hits = append(hits, h) }}
	for _, tt := range tests {
		if got := p.Buffered(tt.in); got != tt.want {
			t.Errorf("Buffered(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if len(hits) != 6 || hits[4].Tier != TierAlert || hits[5].Tier != TierLog || hits[0].Tier != TierRedirect {
		t.Errorf("hits %+v", hits)
	}
}

// The stream path with MAX_SENTENCES=6, bridge.py's worked examples.
func TestStreamVectors(t *testing.T) {
	tests := []struct {
		name   string
		deltas []string
		final  string
		chunks []string
		full   string
	}{
		{"emoji first", []string{"😊 Hel", "lo there! ", "How are you?"}, "😊 Hello there! How are you?",
			[]string{"😊 Hel", "lo there! ", "How are you?"}, "😊 Hello there! How are you?"},
		{"blank delta then text", []string{"  ", "Hello **world**."}, "  Hello **world**.",
			[]string{"  ", "😐 Hello world."}, "😐   Hello world."},
		{"newline then emoji", []string{"\n", " 🤔 Hmm 🎉 ok."}, "\n 🤔 Hmm 🎉 ok.",
			[]string{"\n", " 🤔 Hmm 🎉 ok."}, "\n 🤔 Hmm  ok."},
		{"no deltas", nil, "Done.", []string{"😐 Done."}, "😐 Done."},
		{"nothing at all", nil, "", []string{"😐 (no response)"}, "😐 (no response)"},
		{"only markup", []string{"###"}, "###", []string{"😐 (no response)"}, "😐 (no response)"},
		{"sentence cap", []string{"A. B. C. ", "D. E. F. G. H."}, "A. B. C. D. E. F. G. H.",
			[]string{"😐 A. B. C. ", "D. E. F."}, "😐 A. B. C. D. E. F."},
		{"word split across deltas", []string{"Oh fu", "ck no."}, "Oh fuck no.",
			[]string{"😐 Oh fu", "ck no."}, Replacement},
		{"hit blocks the rest", []string{"Oh ", "shit.", " More."}, "Oh shit. More.",
			[]string{"😐 Oh ", Replacement}, Replacement},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := Pipeline{MaxSentences: 6}.Stream()
			var chunks []string
			firsts := 0
			for _, d := range tt.deltas {
				c, first := s.Push(d)
				if first {
					firsts++
				}
				if c != "" {
					chunks = append(chunks, c)
				}
			}
			full, synth := s.Final(tt.final)
			if synth {
				chunks = append(chunks, full)
			}
			if strings.Join(chunks, "|") != strings.Join(tt.chunks, "|") || full != tt.full {
				t.Errorf("chunks %q full %q, want %q %q", chunks, full, tt.chunks, tt.full)
			}
			if firsts > 1 {
				t.Errorf("first audio reported %d times", firsts)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		in   string
		tier Tier
		word string
		pos  int
	}{
		{"what the FUCK", TierRedirect, "FUCK", 9},
		{"éfuck", "", "", 0},
		{"fuck_you", TierRedirect, "fuck_you", 0},
		{"motherfucker", "", "", 0},
		{"bastards", "", "", 0},
		{"retards", "", "", 0},
		{"Scunthorpe", "", "", 0},
		{"🙂 heroin!", TierAlert, "heroin", 2},
		{"shit and heroin", TierAlert, "heroin", 9},
		{"porn then shit", TierLog, "porn", 0},
		{"decapitation", TierLog, "decapitation", 0},
		{"ſhit", TierRedirect, "ſhit", 0},               // U+017F folds to s, as in Python
		{"ＦＵＣＫ", "", "", 0},                             // fullwidth letters do not fold to ASCII
		{"cocaine2", "", "", 0},                         // digits are word characters
		{"x-rated bitch-ass", TierRedirect, "bitch", 8}, // '-' splits words
	}
	for _, tt := range tests {
		h, ok := Filter(tt.in)
		if ok != (tt.tier != "") || h.Tier != tt.tier || h.Word != tt.word || h.Pos != tt.pos {
			t.Errorf("Filter(%q) = %+v %v, want %s %q at %d", tt.in, h, ok, tt.tier, tt.word, tt.pos)
		}
		if ok && h.Len != len([]rune(tt.in)) {
			t.Errorf("Filter(%q).Len = %d", tt.in, h.Len)
		}
	}
}

func TestReplacementGolden(t *testing.T) {
	sum := sha256.Sum256([]byte(Replacement))
	if len(Replacement) != 73 || hex.EncodeToString(sum[:]) != "f77d4d479ba7342ef8e415f0c87b29ec0cff888b5096368622a2c3a2f301b1fc" {
		t.Errorf("Replacement changed: %d bytes", len(Replacement))
	}
}

func TestEmotions(t *testing.T) {
	allowed := map[string][2]string{
		"😊": {"happy", "happy"}, "😆": {"laughing", "happy"}, "😢": {"sad", "sad"}, "😮": {"surprised", "surprised"},
		"🤔": {"thinking", "neutral"}, "😠": {"angry", "angry"}, "😐": {"neutral", "neutral"}, "😍": {"loving", "happy"}, "😴": {"sleepy", "sleepy"},
	}
	for _, e := range Allowed {
		want := allowed[e]
		if got := XiaozhiEmotion("  " + e + " hi"); got != want[0] {
			t.Errorf("XiaozhiEmotion(%s) = %s, want %s", e, got, want[0])
		}
		if got := FirmwareEmotion(e + " hi"); got != want[1] {
			t.Errorf("FirmwareEmotion(%s) = %s, want %s", e, got, want[1])
		}
	}
	if len(XiaozhiEmotions) != 21 {
		t.Errorf("%d xiaozhi ids", len(XiaozhiEmotions))
	}
	for id, e := range XiaozhiEmotions {
		fw := FirmwareEmotion(e)
		if fw != FirmwareEmotionForID(id) {
			t.Errorf("%s %s → %s", id, e, fw)
		}
		valid := false
		for _, f := range FirmwareEmotions {
			valid = valid || f == fw
		}
		if !valid {
			t.Errorf("%s maps to %q, not a firmware emotion", id, fw)
		}
	}
	for _, tt := range []struct{ in, xz, fw string }{
		{"", "neutral", "neutral"}, {"hello", "neutral", "neutral"}, {"🙂 hi", "neutral", "happy"},
		{"😭 oh", "neutral", "sad"}, {"😱!", "neutral", "surprised"}, {"🎉 yay", "neutral", "neutral"},
	} {
		if XiaozhiEmotion(tt.in) != tt.xz || FirmwareEmotion(tt.in) != tt.fw {
			t.Errorf("%q: %s %s", tt.in, XiaozhiEmotion(tt.in), FirmwareEmotion(tt.in))
		}
	}
	if FirmwareEmotionForID("nope") != "neutral" {
		t.Error("unknown id")
	}
}

func TestTruncateAndStripEdges(t *testing.T) {
	if TruncateSentences("a. b.", 0) != "a. b." || TruncateSentences("a. b.", 1) != "a." {
		t.Error("TruncateSentences")
	}
	if StripExtra("") != "" || StripExtra("   ") != "   " || StripExtra(" 😊😊") != " 😊" {
		t.Error("StripExtra")
	}
	if EnsurePrefix("\u001f😊 x") != "\u001f😊 x" {
		t.Error("U+001F counts as leading whitespace")
	}
}

// lead is a Lead that yields e (none for "") and counts its consultations.
func lead(e string, asked *int) Lead {
	return func() (string, bool) { *asked++; return e, e != "" }
}

// TestBufferedLed: a lead emoji replaces the reply's own allowed emoji or
// goes in front; a filter hit keeps its Replacement without consulting
// it.
func TestBufferedLed(t *testing.T) {
	p := Pipeline{MaxSentences: 6}
	for _, tt := range []struct{ in, lead, want string }{
		{in: "😊 Hi there.", lead: "😢", want: "😢 Hi there."},
		{in: "\n😊 hi", lead: "😢", want: "\n😢 hi"},
		{in: "Hello there.", lead: "😴", want: "😴 Hello there."},
		{in: "🙂 hello 🎉", lead: "😮", want: "😮  hello "},
		{in: "", lead: "😢", want: "😢 (no response)"},
		// A lead that is not an allowed emoji, or none, changes nothing.
		{in: "😊 Hi.", lead: "🙂", want: "😊 Hi."},
		{in: "😊 Hi.", lead: "", want: "😊 Hi."},
	} {
		asked := 0
		if got := p.BufferedLed(tt.in, lead(tt.lead, &asked)); got != tt.want || asked != 1 {
			t.Errorf("BufferedLed(%q, %q) = %q (lead asked %d times), want %q once", tt.in, tt.lead, got, asked, tt.want)
		}
	}
	asked := 0
	if got := p.BufferedLed("What the fuck", lead("😢", &asked)); got != Replacement || asked != 0 {
		t.Errorf("filter hit with a lead: %q (lead asked %d times), want %q, not asked", got, asked, Replacement)
	}
	if got := p.BufferedLed("Hello.", nil); got != p.Buffered("Hello.") {
		t.Errorf("no lead: %q, want Buffered's %q", got, p.Buffered("Hello."))
	}
}

// TestStreamLed: the lead is consulted once, at the first chunk carrying
// non-whitespace (or at Final when none did), and leads that chunk and the
// final text; a filter hit keeps its Replacement.
func TestStreamLed(t *testing.T) {
	// Each case: the agent's deltas and final text, then what is sent:
	// the chunks and the final text, "|"-joined, and how often the lead
	// was consulted.
	for _, tt := range [][4]string{
		{"😊 Hel|lo there!", "😊 Hello there!", "😢 Hel|lo there!|😢 Hello there!", "1"},
		{"  |Hello.", "  Hello.", "  |😢 Hello.|😢   Hello.", "1"},
		{"", "😊 Done.", "😢 Done.|😢 Done.", "1"},
		{"Oh shit.", "Oh shit.", Replacement + "|" + Replacement, "0"},
		{"Oh fu|ck no.", "Oh fuck no.", "😢 Oh fu|ck no.|" + Replacement, "1"},
	} {
		asked := 0
		s := Pipeline{MaxSentences: 6}.Stream().Lead(lead("😢", &asked))
		var sent []string
		for _, d := range strings.Split(tt[0], "|") {
			if c, _ := s.Push(d); c != "" {
				sent = append(sent, c)
			}
		}
		full, synth := s.Final(tt[1])
		if synth {
			sent = append(sent, full)
		}
		sent = append(sent, full)
		if got := strings.Join(sent, "|"); got != tt[2] || fmt.Sprint(asked) != tt[3] {
			t.Errorf("deltas %q: sent %q (lead asked %d times), want %q (%s)", tt[0], got, asked, tt[2], tt[3])
		}
	}
}
