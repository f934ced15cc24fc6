package perception

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Present is who the robot knows is in its room: the face it recognised
// within 30 s, then whoever told it their name within the sticky time, on
// any channel, each once, roster members as their roster entry; nothing of
// another robot's room, nothing expired.
func TestPresent(t *testing.T) {
	s, clock := newSpeakerService(t, tuesday(12, 0), speakerRoster, nil)
	ids := func(dev string) []string {
		var out []string
		for _, p := range s.Present(dev) {
			out = append(out, p.ID+"/"+p.DisplayName)
		}
		return out
	}
	if got := ids("dotty-1"); got != nil {
		t.Fatalf("an empty room: %v", got)
	}
	recognise := func(dev, who string) {
		now := epochSeconds(clock.Now())
		s.states.Update(dev, func(d *DeviceState) { d.LastFaceID, d.LastFaceRecognizedT = &who, &now })
	}
	recognise("dotty-1", "alex")
	s.SpeakerBlock("it's sam", "dotty", "dotty-1", "")
	s.SpeakerBlock("it's alex", "web", "dotty-1", "")  // already seen: listed once
	s.SpeakerBlock("it's sam", "dotty", "dotty-2", "") // another robot
	recognise("dotty-3", "Grandma")                    // not on the roster
	if d := cmp.Diff(ids("dotty-1"), []string{"alex/Alex", "sam/Sam"}); d != "" {
		t.Errorf("dotty-1 (-got +want):\n%s", d)
	}
	if d := cmp.Diff(ids("dotty-3"), []string{"Grandma/"}); d != "" {
		t.Errorf("dotty-3 (-got +want):\n%s", d)
	}
	clock.Advance(identityLineTTL + time.Second) // the face is stale, the latches live on
	if d := cmp.Diff(ids("dotty-1"), []string{"alex/Alex", "sam/Sam"}); d != "" {
		t.Errorf("dotty-1 after the face went stale (-got +want):\n%s", d)
	}
	clock.Advance(DefaultSpeakerSticky)
	if got := ids("dotty-1"); got != nil {
		t.Errorf("dotty-1 after every latch expired: %v", got)
	}
}
