package social

import (
	"context"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// The dance reflector's model-visible prompts, bridge.py's byte for byte.
const (
	DanceSystemPrompt = "You are Dotty, a small family robot, reflecting privately on a dance you just finished. Write 2–3 sentences in first person, present tense, internal monologue (not spoken). Capture the joy, the rhythm, the silliness. Keep it under 300 characters."
	danceUserPrefix   = "You just finished dancing to "
	danceUserSuffix   = ". How did it feel?"
	// DefaultDance names a dance the firmware did not name.
	DefaultDance = "the dance"
)

// DanceUserPrompt is the reflection request for one dance.
func DanceUserPrompt(dance string) string { return danceUserPrefix + dance + danceUserSuffix }

// Dance model settings: short and playful.
const (
	danceMaxTokens   = 200
	danceTemperature = 0.85
)

const dancesPrefix = "dances"

// DanceRecord is one reflection in the day's file, in bridge.py's key order.
type DanceRecord struct {
	TS         string `json:"ts"`
	Type       string `json:"type"` // "dance"
	Device     string `json:"device"`
	Dance      string `json:"dance"`
	Reflection string `json:"reflection"`
}

// onDanceEnded starts a reflection on the dance a device just finished.
func (s *Service) onDanceEnded(ctx context.Context, ev perception.Event) {
	if ev.Name != "dance_ended" || perception.NoDevice(ev) {
		return
	}
	raw, _ := ev.Data.Text("dance")
	dance := prompttext.Line(raw, prompttext.Name) // it stands in the narrator's prompt
	if dance == "" {
		dance = DefaultDance
	}
	device := ev.DeviceID
	select {
	case s.dancesIn <- struct{}{}:
	default:
		s.danceLog.Warn("too many dance reflections in flight; this one is dropped", "device", device, "dance", dance)
		return
	}
	if !s.spawn(ctx, s.danceLog, DanceReflector, func(ctx context.Context) {
		defer func() { <-s.dancesIn }()
		s.reflect(ctx, device, dance)
	}) {
		<-s.dancesIn
	}
}

// reflect asks the narrative model for the reflection and records it.
func (s *Service) reflect(ctx context.Context, device, dance string) {
	if s.cfg.Narrator == nil {
		return
	}
	text, err := s.cfg.Narrator.Complete(ctx, DanceSystemPrompt, DanceUserPrompt(dance), danceMaxTokens, danceTemperature)
	if err != nil || text == "" || ctx.Err() != nil {
		s.danceLog.Debug("dance reflection skipped: no text", "device", device, "dance", dance, "error", err)
		return
	}
	now := s.clock.Now()
	rec := DanceRecord{TS: convolog.Timestamp(now.In(s.loc)), Type: "dance", Device: device, Dance: dance, Reflection: text}
	// The card first, then the file: once a record is on disk the card
	// already shows it.
	s.journal.addDance(now, rec)
	if s.danceFile != nil {
		s.danceFile.Append(now, rec)
	}
	s.danceLog.Info("dance reflection saved", "device", device, "dance", dance, "chars", len([]rune(text)))
}
