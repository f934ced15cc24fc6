package social

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// The dreamer's model-visible prompts, bridge.py's byte for byte.
const (
	DreamSystemPrompt = "You are Dotty, a small family robot, asleep. You are dreaming. Write rich, multi-paragraph robot dreams in first person, present tense — perception is strange, time bends, identity is fluid. Draw on the seed's atmosphere without retelling it. End with a half-thought, not a wrap. After the dream, on a new line starting with 'SUMMARY:', give a 1–2 sentence summary suitable for memory."
	// dreamUserPrompt has the seed between its two parts.
	dreamUserPrefix = "Tonight's seed: "
	dreamUserSuffix = "\n\nWrite a dream of 4–7 paragraphs as Dotty would dream it.\n"
)

// DreamUserPrompt is the dream request for one seed.
func DreamUserPrompt(seed string) string { return dreamUserPrefix + seed + dreamUserSuffix }

// DreamSeeds are the literary seeds a dream draws its atmosphere from.
var DreamSeeds = [...]string{
	"The Fifth Element", "Murakami", "Dune", "Blade Runner", "Do Androids Dream of Electric Sheep?",
	"Asimov", "The Last Question", "Slaughterhouse-Five", "Cat's Cradle",
}

// Dream model settings: long and loose.
const (
	dreamMaxTokens   = 1200
	dreamTemperature = 0.9
)

const dreamsPrefix = "dreams"

// DreamRecord is one dream in the day's file, in bridge.py's key order;
// dreams belong to the robot, not to one device, so no device is kept.
type DreamRecord struct {
	TS       string `json:"ts"`
	Type     string `json:"type"` // "dream"
	DreamID  string `json:"dream_id"`
	Seed     string `json:"seed"`
	Summary  string `json:"summary"`
	FullText string `json:"full_text"`
}

// dreamer holds each sleeping device's pending dreams.
type dreamer struct {
	mu      sync.Mutex
	pending map[string][]*pendingDream
}

type pendingDream struct {
	timer clockwork.Timer
	seed  string
}

func newDreamer() *dreamer { return &dreamer{pending: map[string][]*pendingDream{}} }

// onStateChanged schedules a night of dreams when a device goes to sleep
// and cancels them on any other state.
func (s *Service) onStateChanged(ctx context.Context, ev perception.Event) {
	if ev.Name != "state_changed" || perception.NoDevice(ev) {
		return
	}
	state := perception.EventState(ev)
	if state == "sleep" {
		s.scheduleDreams(ctx, ev.DeviceID)
		return
	}
	if s.dreams.cancel(ev.DeviceID) {
		s.dreamLog.Info("dreams cancelled", "device", ev.DeviceID, "state", state)
	}
}

// scheduleDreams replaces device's pending dreams with DreamCount new
// ones at DreamWindow × i/(N+1); they are written within ctx (Run's).
func (s *Service) scheduleDreams(ctx context.Context, device string) {
	d := s.dreams
	d.cancel(device)
	n := s.set.DreamCount
	if n <= 0 {
		return
	}
	s.forgetGoneDevices(device)
	delays := make([]time.Duration, 0, n)
	d.mu.Lock()
	batch := make([]*pendingDream, 0, n)
	for i := 1; i <= n; i++ {
		delay := time.Duration(float64(s.set.DreamWindow) * float64(i) / float64(n+1))
		p := &pendingDream{seed: DreamSeeds[mrand.IntN(len(DreamSeeds))]} // #nosec G404 -- a story seed, not a secret
		// The callback runs on its own goroutine and takes d.mu, so it
		// sees p.timer set even when it fires at once.
		p.timer = s.clock.AfterFunc(delay, func() { s.fireDream(ctx, device, p) })
		batch = append(batch, p)
		delays = append(delays, delay)
	}
	d.pending[device] = batch
	d.mu.Unlock()
	s.dreamLog.Info("dreams scheduled", "device", device, "count", n, "delays", delays)
	// The device may have left the table since its event was applied;
	// its timers must not outlive it.
	if !s.known(device) {
		d.cancel(device)
	}
}

// forgetGoneDevices drops the pending dreams of devices perception has
// forgotten, so the table holds only devices in its bounded device table
// (plus the one being scheduled).
func (s *Service) forgetGoneDevices(except string) {
	d := s.dreams
	d.mu.Lock()
	devices := make([]string, 0, len(d.pending))
	for dev := range d.pending {
		if dev != except {
			devices = append(devices, dev)
		}
	}
	d.mu.Unlock()
	for _, dev := range devices {
		if !s.known(dev) {
			d.cancel(dev)
			s.dreamLog.Debug("dreams dropped for a forgotten device", "device", dev)
		}
	}
}

// fireDream runs when p's timer fires: still pending and its device still
// known, the dream is written by a task.
func (s *Service) fireDream(ctx context.Context, device string, p *pendingDream) {
	d := s.dreams
	d.mu.Lock()
	list := d.pending[device]
	i := -1
	for j, q := range list {
		if q == p {
			i = j
			break
		}
	}
	if i < 0 {
		d.mu.Unlock()
		return // cancelled, replaced or shut down meanwhile
	}
	list = append(list[:i:i], list[i+1:]...)
	if len(list) == 0 {
		delete(d.pending, device)
	} else {
		d.pending[device] = list
	}
	d.mu.Unlock()
	if !s.known(device) {
		d.cancel(device)
		s.dreamLog.Info("dream dropped: the device was forgotten", "device", device)
		return
	}
	s.spawn(ctx, s.dreamLog, SleepDreamer, func(ctx context.Context) { s.dream(ctx, device, p.seed) })
}

// dream asks the narrative model for one dream and records it.
func (s *Service) dream(ctx context.Context, device, seed string) {
	id := newDreamID()
	s.dreamLog.Info("dream firing", "device", device, "seed", seed, "id", id)
	if s.cfg.Narrator == nil {
		return
	}
	dream, err := s.cfg.Narrator.Complete(ctx, DreamSystemPrompt, DreamUserPrompt(seed), dreamMaxTokens, dreamTemperature)
	if err != nil || dream == "" || ctx.Err() != nil {
		s.dreamLog.Debug("dream skipped: no text", "id", id, "error", err)
		return
	}
	full, summary := SplitDream(dream)
	now := s.clock.Now()
	rec := DreamRecord{TS: convolog.Timestamp(now.In(s.loc)), Type: "dream", DreamID: id, Seed: seed, Summary: summary, FullText: full}
	s.journal.addDream(now, rec) // the card first, as for dances
	if s.dreamFile != nil {
		s.dreamFile.Append(now, rec)
	}
	s.dreamLog.Info("dream saved", "id", id, "seed", seed, "chars", len([]rune(full)), "summary", text.Truncate(summary, text.Cut{Max: 80}))
}

// cancel stops device's pending dreams, reporting whether there were any.
func (d *dreamer) cancel(device string) bool {
	d.mu.Lock()
	list, ok := d.pending[device]
	delete(d.pending, device)
	d.mu.Unlock()
	for _, p := range list {
		p.timer.Stop()
	}
	return ok
}

// stopAll stops every pending dream (shutdown).
func (d *dreamer) stopAll() {
	d.mu.Lock()
	all := d.pending
	d.pending = map[string][]*pendingDream{}
	d.mu.Unlock()
	for _, list := range all {
		for _, p := range list {
			p.timer.Stop()
		}
	}
}

// Pending reports how many dreams each device has scheduled.
func (s *Service) Pending() map[string]int {
	d := s.dreams
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]int, len(d.pending))
	for dev, list := range d.pending {
		out[dev] = len(list)
	}
	return out
}

// SplitDream separates a dream from its summary: the last line that
// starts (after whitespace, in any case) with "SUMMARY:" gives the summary
// after the colon, and the lines before it are the dream (lines after it
// are dropped). Without such a line the whole text is the dream and the
// summary is "".
func SplitDream(raw string) (full, summary string) {
	body := text.StripRight(raw)
	lines := splitLines(body)
	for i := len(lines) - 1; i >= 0; i-- {
		line := text.Strip(lines[i])
		if strings.HasPrefix(strings.ToLower(line), "summary:") {
			_, after, _ := strings.Cut(line, ":")
			return text.StripRight(strings.Join(lines[:i], "\n")), text.Strip(after)
		}
	}
	return body, ""
}

// splitLines is Python's str.splitlines(): lines end at \n, \r, \r\n,
// \v, \f, \x1c–\x1e, \x85, U+2028 and U+2029, and the breaks are dropped.
func splitLines(s string) []string {
	var out []string
	start := 0
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		switch rs[i] {
		case '\n', '\v', '\f', 0x1c, 0x1d, 0x1e, 0x85, 0x2028, 0x2029:
			out = append(out, string(rs[start:i]))
			start = i + 1
		case '\r':
			out = append(out, string(rs[start:i]))
			if i+1 < len(rs) && rs[i+1] == '\n' {
				i++
			}
			start = i + 1
		}
	}
	if start < len(rs) {
		out = append(out, string(rs[start:]))
	}
	return out
}

// newDreamID is 32 random hex digits, like a uuid4's hex.
func newDreamID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}
