package perception

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// SceneRecord is one scene synthesis in the day's file, in bridge.py's key
// order.
type SceneRecord struct {
	TS              string  `json:"ts"`
	Type            string  `json:"type"` // "scene_synthesis"
	Device          string  `json:"device"`
	Text            string  `json:"text"`
	FaceID          *string `json:"face_id"`
	State           string  `json:"state"`
	HasVision       bool    `json:"has_vision"`
	HasAudioCaption bool    `json:"has_audio_caption"`
}

// sceneStates are the state changes that make a scene, matched as sent:
// the moments worth a line of memory.
var sceneStates = map[string]bool{"story_time": true, "security": true, "sleep": true}

// sceneTTL is how long a scene stands in for the raw vision and audio
// lines of the prompt's perception block.
const sceneTTL = 600 * time.Second

// sceneEvent composes a scene for a device when it is recognised, heard
// or enters one of sceneStates. The bus's read loop also ticks sceneTick
// after SceneInterval without such an event.
func (c *consumers) sceneEvent(_ context.Context, ev Event) {
	if NoDevice(ev) {
		return
	}
	if ev.Name == "state_changed" {
		if s, _ := ev.Data.Text("state"); !sceneStates[s] {
			return
		}
	}
	c.synthesise(ev.DeviceID, ev.Name, true)
}

// sceneTick amends every kept device's scene.
func (c *consumers) sceneTick(context.Context) {
	log := c.s.log.Named(SceneSynthesis)
	for _, dev := range c.s.states.Devices() {
		if dev == "" || dev == "unknown" {
			continue
		}
		Safely(log, SceneSynthesis, func() { c.synthesise(dev, "tick", false) })
	}
}

// synthesise composes device's scene from what the robot saw (60 s) and
// heard (120 s) and who is there, and keeps it unless the device had one
// less than SceneMinGap ago. Nothing fresh seen or heard, no scene. With
// create, a device not in the table yet (a robot whose first sign of
// life is an audio caption) is added, as bridge.py writes its scene too;
// like any new device it may evict the least recently seen one. The tick
// only amends devices still kept.
func (c *consumers) synthesise(device, reason string, create bool) {
	var vision, audio string
	if c.s.cfg.Senses != nil {
		vision, audio = c.s.cfg.Senses.Fresh(device)
		vision, audio = prompttext.Line(vision, prompttext.Answer), prompttext.Line(audio, prompttext.Answer)
	}
	if vision == "" && audio == "" {
		return
	}
	now := c.clock.Now()
	wall := epochSeconds(now)
	var scene *Scene
	compose := func(d *DeviceState) {
		if d.Scene != nil && wall-d.Scene.TSWall < c.cfg.SceneMinGap.Seconds() {
			return
		}
		scene = composeScene(d, now.In(c.s.cfg.Location), c.cfg.IdentityTTL, vision, audio)
		d.Scene = scene
	}
	if create {
		c.s.states.Update(device, compose)
	} else {
		c.s.states.Amend(device, compose)
	}
	if scene == nil {
		return
	}
	appendTo(c.journals.scene, now, SceneRecord{TS: convolog.Timestamp(now.In(c.s.cfg.Location)), Type: "scene_synthesis",
		Device: device, Text: scene.Text, FaceID: scene.FaceID, State: scene.State, HasVision: vision != "", HasAudioCaption: audio != ""})
	c.s.Broadcast(Event{DeviceID: device, TS: wall, Name: "scene_synthesised",
		Data: DataOf(map[string]any{"reason": reason, "preview": text.Truncate(scene.Text, text.Cut{Max: 80})})})
	c.s.log.Named(SceneSynthesis).Info("scene", "device", device, "reason", reason, "text", text.Truncate(scene.Text, text.Cut{Max: 160}))
}

// composeScene is the scene line: "<YYYY-MM-DD HH:MM> — <who>", then
// " Dotty sees <vision>.", " Heard: <audio>." and " State: <state>.".
// vision and audio come made safe (prompttext.Line); so is the identity
// and the state, so the scene is one line, whoever sent what.
func composeScene(d *DeviceState, now time.Time, identityTTL time.Duration, vision, audio string) *Scene {
	sc := &Scene{TSWall: epochSeconds(now), State: d.State()}
	who := "No one is detected."
	id, fresh := d.FreshIdentity(now, identityTTL)
	if name := prompttext.Line(id, prompttext.Name); fresh && name != "" {
		sc.FaceID = ptr(id)
		who = name + " is in the room."
	} else if isTrue(d.FacePresent) {
		who = "Someone is in the room."
	}
	parts := []string{now.Format("2006-01-02 15:04") + " — " + who}
	if vision != "" {
		parts = append(parts, "Dotty sees "+strings.TrimRight(vision, ".")+".")
	}
	if audio != "" {
		parts = append(parts, "Heard: "+strings.TrimRight(audio, ".")+".")
	}
	parts = append(parts, "State: "+prompttext.Line(sc.State, prompttext.Name)+".")
	sc.Text = strings.Join(parts, " ")
	return sc
}

// getScene is GET /api/perception/scene[?device_id=]: each device's latest
// scene, {"<device>": {"text","ts_wall","face_id","state"}}.
func (s *Service) getScene(c echo.Context) error {
	device, _, err := deviceAndLimit(c)
	if err != nil {
		return err
	}
	out := map[string]*Scene{}
	for _, id := range s.states.Devices() {
		if device != "" && id != device {
			continue
		}
		if st, ok := s.states.Get(id); ok && st.Scene != nil {
			out[id] = st.Scene
		}
	}
	return httpapi.WriteJSON(c, http.StatusOK, out)
}
