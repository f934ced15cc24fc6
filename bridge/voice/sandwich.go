package voice

import (
	"strings"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
)

// Sandwich literals, bridge.py's byte for byte.
const (
	promptPrefix     = "[channel=dotty voice-TTS]\n"
	contextDateStyle = "Monday 02 January 2006, 15:04 MST"
)

// sandwichChannel reports whether a channel gets the prompt sandwich.
func sandwichChannel(ch string) bool { return ch == "dotty" || ch == "stackchan" }

// promptInput is what a voice request contributes to its prompt.
type promptInput struct {
	channel  string
	content  string
	roomView string // metadata.room_description, "" when absent or not a string
	deviceID string // metadata.device_id

	speaker      string // the speaker line, resolved before the lease
	personMemory string // the resolved person's memory block
}

// buildPrompt assembles the text sent to the agent for turn turnIndex:
// prefix, speaker, person memory, room view, perception, context, content,
// suffix — or the content unchanged on other channels: who is talking
// first, then what the robot knows about them, then what it sees, then
// the time. It runs after the session lease is held, so the turn index,
// kid mode and the perception and context snapshots are those at send
// time; the speaker and their memory were read once before the lease.
// Outside text stands in it only as prompttext.Line made it: the room view
// here, the other blocks in their producers (perception, tier1's memory,
// the periphery). content is the user's turn, passed as received.
func (v *Voice) buildPrompt(in promptInput, turnIndex int) string {
	if !sandwichChannel(in.channel) {
		return in.content
	}
	var b strings.Builder
	b.Grow(len(in.content) + 2048)
	b.WriteString(promptPrefix)
	b.WriteString(in.speaker)
	b.WriteString(in.personMemory)
	if rv := roomViewLine(in.roomView); rv != "" {
		b.WriteString(rv)
	}
	if in.deviceID != "" && v.cfg.Perception != nil {
		if lines := v.cfg.Perception.PerceptionLines(in.deviceID); len(lines) > 0 {
			b.WriteString("[Current perception] ")
			b.WriteString(strings.Join(lines, " "))
			b.WriteByte('\n')
		}
	}
	b.WriteString("[Context: ")
	b.WriteString(v.cfg.Clock.Now().In(v.cfg.Location).Format(contextDateStyle))
	if v.cfg.Context != nil {
		for _, part := range v.cfg.Context.ContextParts() {
			b.WriteString(" | ")
			b.WriteString(part)
		}
	}
	b.WriteString("]\n")
	b.WriteString(in.content)
	b.WriteString(Suffix(turnIndex, v.kidMode()))
	return b.String()
}

// roomViewLine is "[Room view] <text>\n", the text made one safe line and
// capped at 240 code points (237 right-stripped plus "..."); "" for a
// blank description.
func roomViewLine(desc string) string {
	desc = prompttext.Line(desc, prompttext.RoomView)
	if desc == "" {
		return ""
	}
	return "[Room view] " + desc + "\n"
}
