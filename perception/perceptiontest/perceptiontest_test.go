package perceptiontest

import (
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

func TestExpectInOrderSkippingOthers(t *testing.T) {
	b := perception.NewBus(perception.BusConfig{})
	w := NewWatcher(t, b)
	for _, n := range []string{"face_detected", "sound_event", "face_lost", "head_turn"} {
		b.Publish(perception.Event{DeviceID: "d", Name: n})
	}
	got := w.Expect(time.Second, Named("face_detected"), Named("face_lost"))
	if len(got) != 2 || got[0].Name != "face_detected" || got[1].Name != "face_lost" {
		t.Fatalf("matched %+v", got)
	}
	w.ExpectNoMore(Named("sound_event")) // head_turn is queued, but is not matched
}

func TestExpectFailsNamingWhatItSaw(t *testing.T) {
	b := perception.NewBus(perception.BusConfig{})
	r := &testkit.Recorder{TB: t}
	w := NewWatcher(r, b)
	b.Publish(perception.Event{DeviceID: "d", Name: "sound_event"})
	if got := w.Expect(50*time.Millisecond, Named("face_lost")); got != nil {
		t.Errorf("returned %+v on failure", got)
	}
	if len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "matched 0 of 1") || !strings.Contains(r.Failures[0], "sound_event") {
		t.Errorf("failure %q", r.Failures)
	}
	b.Publish(perception.Event{DeviceID: "d", Name: "face_lost"})
	w.ExpectNoMore(Named("face_lost"))
	if len(r.Failures) != 2 || !strings.Contains(r.Failures[1], "unexpected face_lost") {
		t.Errorf("ExpectNoMore failures %q", r.Failures)
	}
}
