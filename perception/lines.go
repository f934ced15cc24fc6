package perception

import (
	"fmt"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
)

// StoryTimeLine is the perception line while the robot tells a story.
const StoryTimeLine = "You are inside the story you're telling — not narrating from outside. Describe what you see, hear, and feel as a character in the story. Use rich sensory language. Save vivid moments to memory when they happen."

// IdentityTTL is how long a recognised face or a mood stays in the prompt
// (and in the robot tools' who_is_here).
const IdentityTTL = 30 * time.Second

// PerceptionLines returns the voice prompt's perception lines for a device
// (bridge.py's order): the story-time line, the face line, then the scene
// synthesised in the last ten minutes, or else the fresh vision and audio
// descriptions. The identity, mood, scene and descriptions are outside
// text: each stands in its line only as prompttext.Line made it. A panic
// while building them is logged and yields none, so the turn goes on.
func (s *Service) PerceptionLines(deviceID string) (lines []string) {
	defer func() {
		if r := recover(); r != nil {
			s.log.Error("building the perception block failed; the turn goes on without it", "device", deviceID, "panic", fmt.Sprint(r))
			lines = nil
		}
	}()
	st, _ := s.states.Get(deviceID)
	now := s.clock.Now()
	if strings.ToLower(st.State()) == "story_time" {
		lines = append(lines, StoryTimeLine)
	}
	id, fresh := st.FreshIdentity(now, IdentityTTL)
	if who := prompttext.Line(id, prompttext.Name); fresh && who != "" {
		line := "You see " + who + " in front of you."
		if st.FaceMood != nil && st.FaceMoodT != nil && epochSeconds(now)-*st.FaceMoodT <= IdentityTTL.Seconds() {
			if mood := prompttext.Line(strings.ToLower(*st.FaceMood), prompttext.Name); mood != "" {
				line += " They look " + mood + "."
			}
		}
		lines = append(lines, line)
	} else if isTrue(st.FacePresent) {
		lines = append(lines, "You see an unrecognised face in front of you.")
	}
	if sc := st.Scene; sc != nil && epochSeconds(now)-sc.TSWall <= sceneTTL.Seconds() {
		if text := prompttext.Line(sc.Text, prompttext.Scene); text != "" {
			// The scene already says what the robot sees and hears.
			return append(lines, text)
		}
	}
	if s.cfg.Senses != nil {
		vision, audio := s.cfg.Senses.Fresh(deviceID)
		if v := prompttext.Line(vision, prompttext.Answer); v != "" {
			lines = append(lines, "You see: "+v)
		}
		if a := prompttext.Line(audio, prompttext.Answer); a != "" {
			lines = append(lines, "You hear: "+a)
		}
	}
	return lines
}
