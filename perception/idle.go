package perception

import (
	"context"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
)

// IdleRecord is one notable idle photo, in bridge.py's key order.
type IdleRecord struct {
	TS     string `json:"ts"`
	Device string `json:"device"`
	Type   string `json:"type"` // "perception"
	Mode   string `json:"mode"` // "idle"
	Text   string `json:"text"`
}

// idleLoop sleeps a random time between IdleSleepMin and IdleSleepMax,
// then tries one silent photo, until ctx ends.
func (c *consumers) idleLoop(ctx context.Context) {
	log := c.s.log.Named(IdlePhotographer)
	log.Debug("idle photographer started", "sleep_min", c.cfg.IdleSleepMin, "sleep_max", c.cfg.IdleSleepMax,
		"jaccard", c.cfg.IdleJaccard, "wait", c.cfg.IdleResultWait)
	for clockSleep(ctx, c.clock, c.idleSleep()) {
		Safely(log, IdlePhotographer, func() { c.idleOnce(ctx) })
	}
}

// idleSleep is uniform in [IdleSleepMin, IdleSleepMax]: the photos come at
// no fixed rhythm, so they never line up with anything in the house.
func (c *consumers) idleSleep() time.Duration {
	span := c.cfg.IdleSleepMax - c.cfg.IdleSleepMin
	if span <= 0 {
		return c.cfg.IdleSleepMin
	}
	return c.cfg.IdleSleepMin + time.Duration(rand.Int64N(int64(span)+1)) // #nosec G404 -- timing jitter, not a secret
}

// idleTarget picks the robot to photograph: of those idle, not
// listening and seeing no face, the one shot longest ago (never first),
// a tie going to bridge.py's one robot: the newest photo's, else the
// latest seen. bridge.py only ever looked at that one, so in a house of
// several robots one of them took every idle photo, and none was taken
// while someone stood in front of it.
func (c *consumers) idleTarget(cam Camera) (string, bool) {
	preferred, ok := cam.NewestPhotoDevice()
	if !ok {
		preferred, _ = c.s.states.Latest()
	}
	devices := c.s.states.Devices()
	kept := make(map[string]bool, len(devices))
	best, bestAt, found := "", time.Time{}, false
	for _, d := range devices {
		kept[d] = true
		st, ok := c.s.states.Get(d)
		if d == "" || d == "unknown" || !ok || strings.ToLower(st.State()) != "idle" || isTrue(st.Listening) || isTrue(st.FacePresent) {
			continue
		}
		at := c.idleShot[d]
		if !found || at.Before(bestAt) || at.Equal(bestAt) && d == preferred {
			best, bestAt, found = d, at, true
		}
	}
	for d := range c.idleShot {
		if !kept[d] {
			delete(c.idleShot, d)
		}
	}
	return best, found
}

// idleOnce photographs the room of an idle robot and keeps the description
// when it says something new.
func (c *consumers) idleOnce(ctx context.Context) {
	log := c.s.log.Named(IdlePhotographer)
	cam := c.s.cfg.Camera
	if cam == nil || c.s.cfg.Robot == nil || !c.s.cfg.Robot.Enabled() {
		return
	}
	device, ok := c.idleTarget(cam)
	if !ok {
		return // someone is there, or the robots are busy: the room view and the talk own the camera
	}
	c.idleShot[device] = c.clock.Now()
	mark := cam.Mark()
	if err := c.call(ctx, IdlePhotographer, "take-photo", func(ctx context.Context, r Robot) error {
		return r.TakePhoto(ctx, device, IdlePrompt)
	}); err != nil {
		return // the client logged it (a missing route once)
	}
	// As bridge.py: the whole wait after every shot, however soon the
	// description comes, so the next sleep starts only after it; then
	// the newest description since the shot is judged.
	if !clockSleep(ctx, c.clock, c.cfg.IdleResultWait) {
		return
	}
	ended, cancel := context.WithCancel(ctx)
	cancel() // so NextPhoto returns what is there without waiting
	desc, _ := cam.NextPhoto(ended, device, mark)
	if desc == "" {
		if ctx.Err() == nil {
			log.Info("no fresh description of the idle photo", "device", device)
		}
		return
	}
	now := c.clock.Now()
	notable := false
	c.s.states.Amend(device, func(d *DeviceState) {
		last := ""
		if d.LastIdlePerceptionText != nil {
			last = *d.LastIdlePerceptionText
		}
		if notable = Notable(desc, last, c.cfg.IdleJaccard); notable {
			d.LastIdlePerceptionText, d.LastIdlePerceptionT = ptr(desc), ptr(epochSeconds(now))
		}
	})
	if !notable {
		log.Info("idle photo not notable", "device", device, "len", utf8.RuneCountInString(desc))
		return
	}
	appendTo(c.journals.idle, now, IdleRecord{TS: convolog.Timestamp(now.In(c.s.cfg.Location)), Device: device,
		Type: "perception", Mode: "idle", Text: desc})
	log.Info("idle photo kept", "device", device, "len", utf8.RuneCountInString(desc))
}

// wordRE is Python's Unicode \w: letters, digits and numbers of any
// script, and the underscore.
var wordRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\p{L}\p{N}_]+`) })

// Notable reports whether an idle description is worth keeping: at least
// 20 characters, not a "same as before", and a lower-cased word-set
// Jaccard similarity with the last kept one below threshold (no last one,
// or no words on either side, counts as new).
func Notable(desc, last string, threshold float64) bool {
	if utf8.RuneCountInString(desc) < 20 || strings.Contains(strings.ToLower(desc), "same as before") {
		return false
	}
	if last == "" {
		return true
	}
	cur, prev := words(desc), words(last)
	if len(cur) == 0 || len(prev) == 0 {
		return true
	}
	both := 0
	for w := range cur {
		if prev[w] {
			both++
		}
	}
	union := len(cur) + len(prev) - both
	return float64(both)/float64(union) < threshold
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range wordRE().FindAllString(s, -1) {
		out[strings.ToLower(w)] = true
	}
	return out
}
