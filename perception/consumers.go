package perception

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Robot is what the consumers do to the robot through xiaozhi's admin API
// (*xiaozhi.Client). Every call has its own timeout.
type Robot interface {
	Enabled() bool
	InjectText(ctx context.Context, deviceID, text string) error
	Say(ctx context.Context, deviceID, text string) error
	SetFaceIdentified(ctx context.Context, deviceID string) error
	SetHeadAngles(ctx context.Context, deviceID string, yaw, pitch, speed int) error
	Abort(ctx context.Context, deviceID string) error
	PlayAsset(ctx context.Context, deviceID, asset string) (xiaozhi.Response, error)
	TakePhoto(ctx context.Context, deviceID, question string) error
	CaptureAudio(ctx context.Context, deviceID string, duration time.Duration) error
}

// Camera is what the camera consumers need from the vision cache
// (*vision.Cache): the robot's photos and clips come back to the bridge
// over /api/vision/explain and /api/audio/explain, and the consumers wait
// for them here, in process.
type Camera interface {
	// Mark numbers the newest stored result; NextPhoto and NextSound wait
	// for one stored after it.
	Mark() uint64
	// NextPhoto waits until device has a camera description stored after
	// mark; ok is false when ctx ends first. One already stored is
	// returned even when ctx has ended.
	NextPhoto(ctx context.Context, device string, mark uint64) (desc string, ok bool)
	// NextSound is NextPhoto for audio captions.
	NextSound(ctx context.Context, device string, mark uint64) (desc string, ok bool)
	// NewestPhotoDevice is the device whose description was stored last.
	NewestPhotoDevice() (string, bool)
}

// Consumers are the robot-behaviour consumers' settings, with bridge.py's
// names and defaults (DefaultConsumers, the one place they are written).
// Start from DefaultConsumers and change the fields you need: a field
// left zero means zero ("always greet" for the hours, no cooldown, off),
// except the few a zero means nothing for, which New fills one by one.
type Consumers struct {
	GreetMinInterval time.Duration // FACE_GREET_MIN_INTERVAL_SEC
	GreetText        string        // FACE_GREET_TEXT; "" greets with the mic only
	GreetHourStart   int           // FACE_GREET_HOUR_START
	GreetHourEnd     int           // FACE_GREET_HOUR_END

	NameGreetMinInterval time.Duration // FACE_NAME_GREET_MIN_INTERVAL_SEC (per identity)
	NameGreetTemplate    string        // FACE_NAME_GREET_TEMPLATE, {name} is the display name
	NameGreetQuiet       time.Duration // FACE_NAME_GREET_QUIET_AFTER_CHAT_SEC

	IdentityTTL     time.Duration // FACE_IDENTITY_TTL_SEC
	RefreshInterval time.Duration // FACE_IDENTITY_REFRESH_INTERVAL_SEC
	RefreshQuiet    time.Duration // FACE_IDENTITY_REFRESH_QUIET_SEC

	AbortWindow time.Duration // FACE_LOST_ABORT_WINDOW_SEC
	AbortGrace  time.Duration // FACE_LOST_ABORT_GRACE_SEC

	WakeTurnEnabled bool // WAKE_TURN_ENABLED
	WakeTurnYaw     int  // WAKE_TURN_YAW_DEG
	WakeTurnSpeed   int  // WAKE_TURN_SPEED

	SoundTurnerEnabled bool          // DOTTY_SOUND_TURNER_ENABLED
	SoundTurnCooldown  time.Duration // SOUND_TURN_COOLDOWN_SEC
	SoundTurnYaw       int           // SOUND_TURN_YAW_DEG
	SoundTurnSpeed     int           // SOUND_TURN_SPEED

	PurrAudioPath string        // PURR_AUDIO_PATH (on the xiaozhi host)
	PurrCooldown  time.Duration // PURR_COOLDOWN_SEC
	PurrDuration  time.Duration // PURR_DURATION_SEC

	SecurityEnabled       bool          // SECURITY_WATCH_ENABLED
	SecurityInterval      time.Duration // SECURITY_CAPTURE_INTERVAL_SEC, between the end of a cycle and the next
	SecurityPrompt        string        // SECURITY_VLM_PROMPT, the take-photo question
	SecurityPhotoWait     time.Duration // SECURITY_VLM_TIMEOUT_SEC, for the photo's description
	SecuritySoundWait     time.Duration // SECURITY_AUDIO_TIMEOUT_SEC, for the clip's caption
	SecurityAudioDuration time.Duration // SECURITY_AUDIO_DURATION_MS, the clip asked for
	SecurityRingSize      int           // SECURITY_RING_BUFFER_SIZE, records kept for /api/security/recent

	IdleEnabled    bool          // IDLE_PHOTOGRAPHER_ENABLED
	IdleSleepMin   time.Duration // IDLE_PHOTOGRAPHER_SLEEP_MIN_SEC
	IdleSleepMax   time.Duration // IDLE_PHOTOGRAPHER_SLEEP_MAX_SEC
	IdleResultWait time.Duration // IDLE_PHOTOGRAPHER_RESULT_WAIT_SEC
	IdleJaccard    float64       // IDLE_PHOTOGRAPHER_NOTABLE_JACCARD: at or above it a description repeats the last

	SceneEnabled  bool          // SCENE_SYNTHESIS_ENABLED
	SceneInterval time.Duration // SCENE_SYNTHESIS_INTERVAL_SEC: a tick after this long without a trigger
	SceneMinGap   time.Duration // SCENE_SYNTHESIS_MIN_GAP_SEC, per device

	// HouseholdPath is HOUSEHOLD_YAML_PATH, used as given (the bridge
	// expands its default, ~/.zeroclaw/household.yaml); "" means no
	// roster.
	HouseholdPath string
	// QueueSize is each consumer's bus queue (ConsumerQueue).
	QueueSize int
}

// DefaultConsumers returns bridge.py's defaults, without a household file
// (bridge.py's is under the home directory, which the bridge's
// configuration resolves).
func DefaultConsumers() Consumers {
	return Consumers{
		GreetMinInterval: 30 * time.Second, GreetText: "Hi!", GreetHourStart: 6, GreetHourEnd: 21,
		NameGreetMinInterval: 30 * time.Second, NameGreetTemplate: "Oh, it's {name}!", NameGreetQuiet: 10 * time.Second,
		IdentityTTL: 30 * time.Second, RefreshInterval: 3 * time.Second, RefreshQuiet: 2 * time.Second,
		AbortWindow: 12 * time.Second, AbortGrace: 4 * time.Second,
		WakeTurnEnabled: true, WakeTurnYaw: 45, WakeTurnSpeed: 200,
		SoundTurnCooldown: 3 * time.Second, SoundTurnYaw: 45, SoundTurnSpeed: 250,
		PurrAudioPath: "bridge/assets/purr.opus", PurrCooldown: 5 * time.Second, PurrDuration: 2 * time.Second,
		SecurityEnabled: true, SecurityInterval: 20 * time.Second, SecurityPrompt: SecurityPrompt,
		SecurityPhotoWait: 20 * time.Second, SecuritySoundWait: 20 * time.Second,
		SecurityAudioDuration: 5 * time.Second, SecurityRingSize: 60,
		IdleEnabled: true, IdleSleepMin: 180 * time.Second, IdleSleepMax: 300 * time.Second,
		IdleResultWait: 20 * time.Second, IdleJaccard: 0.7,
		SceneEnabled: true, SceneInterval: 300 * time.Second, SceneMinGap: 120 * time.Second,
	}
}

// Model-visible prompts of the camera consumers, bridge.py's byte for byte.
const (
	// SecurityPrompt is SECURITY_VLM_PROMPT's default.
	SecurityPrompt = "Describe everything visible in this image. Note any people, movements, or items of interest. Be concise."
	// IdlePrompt is the idle photographer's question.
	IdlePrompt = "Describe what you see in 1–3 sentences as a curious robot would notice it — light, objects, the room's mood. No people identification needed. Stay short and concrete."
)

// Validate reports every field outside its range as a *fieldcheck.Error
// naming the field: hours outside a day, periods and waits of 0 or less,
// cooldowns and windows below 0, a maximum idle sleep below its minimum.
// It holds the one range check of each field; the bridge's command line
// names the variable a value came from.
func (c Consumers) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("GreetHourStart", c.GreetHourStart >= 0 && c.GreetHourStart <= 24, c.GreetHourStart, "an hour from 0 to 24")
	errs.Check("GreetHourEnd", c.GreetHourEnd >= 0 && c.GreetHourEnd <= 24, c.GreetHourEnd, "an hour from 0 to 24")
	// Loops sleep or wait these: never 0.
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"RefreshInterval", c.RefreshInterval}, {"SecurityInterval", c.SecurityInterval},
		{"SecurityPhotoWait", c.SecurityPhotoWait}, {"SecuritySoundWait", c.SecuritySoundWait},
		{"SecurityAudioDuration", c.SecurityAudioDuration}, {"IdleSleepMax", c.IdleSleepMax},
		{"IdleResultWait", c.IdleResultWait}, {"SceneInterval", c.SceneInterval},
	} {
		errs.Check(d.field, d.v > 0, d.v, "more than 0")
	}
	// Cooldowns and windows may be 0 (none), never negative.
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"GreetMinInterval", c.GreetMinInterval}, {"NameGreetMinInterval", c.NameGreetMinInterval},
		{"NameGreetQuiet", c.NameGreetQuiet}, {"IdentityTTL", c.IdentityTTL}, {"RefreshQuiet", c.RefreshQuiet},
		{"AbortWindow", c.AbortWindow}, {"AbortGrace", c.AbortGrace}, {"SoundTurnCooldown", c.SoundTurnCooldown},
		{"PurrCooldown", c.PurrCooldown}, {"PurrDuration", c.PurrDuration}, {"IdleSleepMin", c.IdleSleepMin},
		{"SceneMinGap", c.SceneMinGap},
	} {
		errs.Check(d.field, d.v >= 0, d.v, "0 or more")
	}
	errs.CheckRef("IdleSleepMax", c.IdleSleepMax >= c.IdleSleepMin, c.IdleSleepMax, "at least", "IdleSleepMin")
	errs.Check("IdleJaccard", c.IdleJaccard >= 0 && c.IdleJaccard <= 1, c.IdleJaccard, "a number from 0 to 1")
	errs.Check("SecurityRingSize", c.SecurityRingSize >= 1, c.SecurityRingSize, "at least 1")
	errs.Check("QueueSize", c.QueueSize >= 0, c.QueueSize, "0 or more")
	return errs.Err()
}

// withDefaults fills the fields a zero cannot mean anything for, one by
// one: the queue, the prompt, the ring and the periods and waits the loops
// sleep (so a loop never spins). Every other field is used as it is, its
// zero meaning "none" or "off": a Consumers starts from DefaultConsumers.
func (c Consumers) withDefaults() Consumers {
	if c.QueueSize <= 0 {
		c.QueueSize = ConsumerQueue
	}
	def := DefaultConsumers()
	for _, p := range []struct{ v, d *time.Duration }{
		{&c.RefreshInterval, &def.RefreshInterval}, {&c.SecurityInterval, &def.SecurityInterval},
		{&c.SecurityPhotoWait, &def.SecurityPhotoWait}, {&c.SecuritySoundWait, &def.SecuritySoundWait},
		{&c.IdleResultWait, &def.IdleResultWait}, {&c.SceneInterval, &def.SceneInterval},
	} {
		if *p.v <= 0 {
			*p.v = *p.d
		}
	}
	if c.IdleSleepMax <= 0 {
		c.IdleSleepMin, c.IdleSleepMax = def.IdleSleepMin, def.IdleSleepMax
	}
	if c.SecurityRingSize <= 0 {
		c.SecurityRingSize = def.SecurityRingSize
	}
	if c.SecurityPrompt == "" {
		c.SecurityPrompt = SecurityPrompt
	}
	return c
}

// Consumer names, the label values of dotty_perception_dropped_total.
const (
	FaceGreeter       = "face_greeter"
	WakeWordTurner    = "wake_word_turner"
	FaceLostAborter   = "face_lost_aborter"
	PurrPlayer        = "purr_player"
	IdentityRefresher = "face_identified_refresher"
	SoundTurner       = "sound_turner"
	SecurityWatch     = "security_watch"
	SceneSynthesis    = "scene_synthesis"
	IdlePhotographer  = "idle_photographer"
)

// consumerRow is one perception consumer. Adding one is its own file (its
// name, its handler) and a row of consumerTable.
type consumerRow struct {
	name string
	// triggers are the events it is given; the bus filters on them, so a
	// consumer is never woken (or made to drop) for others.
	triggers []string
	// enabled reads its setting; nil means always on.
	enabled func(Consumers) bool
	// build makes its behaviour from the shared parts.
	build func(c *consumers) behaviour
}

// behaviour is what a consumer does: handle each of its events, with an
// idle tick after every without one when tick is set (both on the bus's
// read loop, Consumer.Run); or, for a consumer that keeps its own time and
// takes no events, loop until ctx ends.
type behaviour struct {
	handle Handler
	every  time.Duration
	tick   func(ctx context.Context)
	loop   func(ctx context.Context)
}

// consumerTable is every perception consumer, subscribed in this order.
var consumerTable = []consumerRow{
	{FaceGreeter, []string{"face_detected", "face_recognized"}, nil,
		func(c *consumers) behaviour { return behaviour{handle: c.faceGreeter} }},
	{FaceLostAborter, []string{"face_lost", "face_detected"}, nil,
		func(c *consumers) behaviour { return behaviour{handle: c.faceLostAborter} }},
	{PurrPlayer, []string{"head_pet_started"}, nil,
		func(c *consumers) behaviour { return behaviour{handle: c.purrPlayer} }},
	{WakeWordTurner, []string{"wake_word_detected"}, func(c Consumers) bool { return c.WakeTurnEnabled },
		func(c *consumers) behaviour { return behaviour{handle: c.wakeWordTurner} }},
	{SoundTurner, []string{"sound_event"}, func(c Consumers) bool { return c.SoundTurnerEnabled },
		func(c *consumers) behaviour { return behaviour{handle: c.soundTurner} }},
	{SecurityWatch, []string{"state_changed"}, func(c Consumers) bool { return c.SecurityEnabled },
		func(c *consumers) behaviour { return behaviour{handle: c.securityWatch} }},
	{SceneSynthesis, []string{"face_recognized", "audio_captioned", "state_changed"}, func(c Consumers) bool { return c.SceneEnabled },
		func(c *consumers) behaviour {
			return behaviour{handle: c.sceneEvent, every: c.cfg.SceneInterval, tick: c.sceneTick}
		}},
	{IdentityRefresher, nil, nil,
		func(c *consumers) behaviour { return behaviour{loop: c.refresher} }},
	{IdlePhotographer, nil, func(c Consumers) bool { return c.IdleEnabled },
		func(c *consumers) behaviour { return behaviour{loop: c.idleLoop} }},
}

// maxInFlight bounds concurrent outbound calls of all consumers together;
// past it a call is dropped with a warning rather than queued.
const maxInFlight = 16

// consumers holds the running consumers' shared parts.
type consumers struct {
	s     *Service
	cfg   Consumers
	clock clockwork.Clock
	house *Household

	subs  []*Consumer                 // the enabled consumers that take events
	loops []func(ctx context.Context) // the enabled consumers that keep their own time

	sem      chan struct{}
	inflight sync.WaitGroup

	abortMu sync.Mutex
	aborts  map[string]clockwork.Timer

	watch    *watch // the security watch's loops and ring
	journals journals

	// idleShot is when the idle photographer last shot each robot (its
	// loop's own; robots no longer kept are dropped at each pick).
	idleShot map[string]time.Time
}

// newConsumers subscribes the enabled consumers at once, so no event
// published after New is missed.
func newConsumers(s *Service) *consumers {
	c := &consumers{s: s, cfg: s.cfg.Consumers, clock: s.clock,
		sem: make(chan struct{}, maxInFlight), aborts: map[string]clockwork.Timer{}, idleShot: map[string]time.Time{}}
	c.house = NewHousehold(c.cfg.HouseholdPath, s.log.Named("household"))
	for _, row := range consumerTable {
		if row.enabled != nil && !row.enabled(c.cfg) {
			continue
		}
		b := row.build(c)
		if b.loop != nil {
			c.loops = append(c.loops, b.loop)
			continue
		}
		c.subs = append(c.subs, s.bus.SubscribeFunc(row.name, c.cfg.QueueSize, row.triggers, s.log.Named(row.name), b.handle).Every(b.every, b.tick))
	}
	c.watch = newWatch(c.cfg.SecurityRingSize)
	c.journals = newJournals(s.cfg)
	return c
}

// runConsumers runs every consumer on its own goroutine until ctx ends,
// then stops pending timers and waits for calls in flight.
func (s *Service) runConsumers(ctx context.Context) error {
	c := s.consumers
	var wg sync.WaitGroup
	for _, sub := range c.subs {
		wg.Go(func() { sub.Run(ctx) })
	}
	for _, loop := range c.loops {
		wg.Go(func() { loop(ctx) })
	}
	<-ctx.Done()
	wg.Wait()
	c.stopWatches()
	c.abortMu.Lock()
	for dev, t := range c.aborts {
		t.Stop()
		delete(c.aborts, dev)
	}
	c.abortMu.Unlock()
	c.inflight.Wait()
	return nil
}

// Safely runs fn, logging a panic (with its stack, under the consumer's
// name) instead of ending the consumer.
func Safely(log interface{ Error(string, ...any) }, name string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("consumer panicked; it goes on with the next event", "consumer", name, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

// ClockTimeout is context.WithTimeout on clock. Its timer is stopped on
// cancel, so a fake clock in a test counts only live waits (clockwork's own
// WithTimeout leaves its timer behind, and its context's Err blocks until
// the context is done).
func ClockTimeout(ctx context.Context, clock clockwork.Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	t := clock.NewTimer(d)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-t.Chan():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		t.Stop()
		<-stopped
	}
}

// clockSleep waits d on clock and reports whether it did: false means ctx
// ended first (the timer is stopped, so a fake clock counts no stale wait).
func clockSleep(ctx context.Context, clock clockwork.Clock, d time.Duration) bool {
	t := clock.NewTimer(d)
	select {
	case <-ctx.Done():
		t.Stop()
		return false
	case <-t.Chan():
		return true
	}
}

// robot reports whether outbound calls are possible, warning when not
// (once a minute per consumer and action: a robot without xiaozhi sees
// every event skipped).
func (c *consumers) robot(consumer, action string) bool {
	if r := c.s.cfg.Robot; r != nil && r.Enabled() {
		return true
	}
	c.s.warns.warn(c.s.log.Named(consumer), "no-host/"+consumer+"/"+action, "XIAOZHI_HOST is empty; robot action skipped", "action", action)
	return false
}

// warnEvery is how often one repeated problem is logged again.
const warnEvery = time.Minute

// warnings paces problems that repeat with every event (a robot without
// xiaozhi, a device flood): each is logged once per warnEvery, saying how
// often it happened meanwhile. Keys are made of names from the code, so the
// table stays small.
type warnings struct {
	clock clockwork.Clock

	mu   sync.Mutex
	seen map[string]*warnState
}

type warnState struct {
	last  time.Time
	count int // occurrences since the last line
}

// due counts one occurrence of key's problem and reports whether it is to
// be logged now, with the occurrences since the last line, this one
// included.
func (w *warnings) due(key string) (int, bool) {
	now := w.clock.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]*warnState{}
	}
	st := w.seen[key]
	if st == nil {
		st = &warnState{}
		w.seen[key] = st
	}
	st.count++
	if !st.last.IsZero() && now.Sub(st.last) < warnEvery {
		return 0, false
	}
	n := st.count
	st.last, st.count = now, 0
	return n, true
}

// warn logs msg when key's problem is due, adding how many times it was
// skipped since the last line.
func (w *warnings) warn(log interface{ Warn(string, ...any) }, key, msg string, kv ...any) {
	n, ok := w.due(key)
	if !ok {
		return
	}
	if n > 1 {
		kv = append(kv, "repeated", n-1, "over", warnEvery)
	}
	log.Warn(msg, kv...)
}

// dispatch runs call on its own goroutine so the consumer never waits on
// xiaozhi. Failures are logged; nothing is retried.
func (c *consumers) dispatch(ctx context.Context, consumer, action, device string, call func(ctx context.Context, r Robot) error) {
	r := c.s.cfg.Robot
	if r == nil || !r.Enabled() || ctx.Err() != nil { // Run is over: its Wait must not race a new call
		return
	}
	log := c.s.log.Named(consumer)
	select {
	case c.sem <- struct{}{}:
	default:
		c.s.warns.warn(log, "busy/"+consumer+"/"+action, "too many robot calls in flight; action dropped", "action", action, "device", device)
		return
	}
	c.inflight.Add(1)
	go func() {
		defer c.inflight.Done()
		defer func() { <-c.sem }()
		if err := call(ctx, r); err != nil {
			c.s.warns.warn(log, "failed/"+consumer+"/"+action, "robot action failed", "action", action, "device", device, "error", err)
			return
		}
		log.Debug("robot action sent", "action", action, "device", device)
	}()
}

// NoDevice is true for events without a real device (no device id, or
// "unknown"); the consumers ignore them.
func NoDevice(ev Event) bool { return ev.DeviceID == "" || ev.DeviceID == "unknown" }

// since is ts − state timestamp in seconds, a missing timestamp being 0.
func since(ts float64, p *float64) float64 { return ts - orZero(p) }

// faceGreeter greets a detected face (#1) and names a recognised household
// member (#1b).
func (c *consumers) faceGreeter(ctx context.Context, ev Event) {
	if NoDevice(ev) {
		return
	}
	switch ev.Name {
	case "face_detected":
		c.greetFace(ctx, ev)
	case "face_recognized":
		c.acknowledgeName(ctx, ev)
	}
}

func (c *consumers) greetFace(ctx context.Context, ev Event) {
	h := c.clock.Now().In(c.s.cfg.Location).Hour()
	if h < c.cfg.GreetHourStart || h >= c.cfg.GreetHourEnd {
		return
	}
	if c.house.AnyAppearance() {
		return
	}
	greet, dancing := false, false
	c.s.states.Update(ev.DeviceID, func(d *DeviceState) {
		if since(ev.TS, d.LastFaceGreetT) < c.cfg.GreetMinInterval.Seconds() {
			return
		}
		d.LastFaceGreetT = ptr(ev.TS)
		greet, dancing = true, isTrue(d.DanceActive)
	})
	if !greet || c.cfg.GreetText == "" {
		return
	}
	if !c.robot(FaceGreeter, "inject-text") {
		return
	}
	if dancing {
		c.s.log.Named(FaceGreeter).Debug("greeting suppressed while dancing", "device", ev.DeviceID)
		return
	}
	greeting := c.cfg.GreetText
	c.dispatch(ctx, FaceGreeter, "inject-text", ev.DeviceID, func(ctx context.Context, r Robot) error {
		return r.InjectText(ctx, ev.DeviceID, greeting)
	})
}

func (c *consumers) acknowledgeName(ctx context.Context, ev Event) {
	raw, _ := ev.Data.Text("identity")
	if raw == "" {
		return
	}
	person, ok := c.house.Lookup(raw)
	if !ok {
		return
	}
	key := strings.ToLower(text.Strip(raw)) // one cooldown per person however the id is spelled
	greet, dancing := false, false
	c.s.states.Update(ev.DeviceID, func(d *DeviceState) {
		if since(ev.TS, d.LastChatT) < c.cfg.NameGreetQuiet.Seconds() {
			return
		}
		if last, ok := d.LastNameGreetT[key]; ok && ev.TS-last < c.cfg.NameGreetMinInterval.Seconds() {
			return
		}
		d.NoteNameGreet(key, ev.TS)
		greet, dancing = true, isTrue(d.DanceActive)
	})
	if !greet || !c.robot(FaceGreeter, "say") {
		return
	}
	greeting := strings.ReplaceAll(c.cfg.NameGreetTemplate, "{name}", person.DisplayName)
	// One task, in order: the greeting (not while dancing), then the pip
	// (even if the greeting failed).
	c.dispatch(ctx, FaceGreeter, "say+set-face-identified", ev.DeviceID, func(ctx context.Context, r Robot) error {
		var sayErr error
		if !dancing {
			sayErr = r.Say(ctx, ev.DeviceID, greeting)
		}
		return errors.Join(sayErr, r.SetFaceIdentified(ctx, ev.DeviceID))
	})
}

// wakeWordTurner turns the head toward a wake word heard left or right (#2).
func (c *consumers) wakeWordTurner(ctx context.Context, ev Event) {
	dir, yaw, ok := c.turnYaw(ev, "wake_word_detected", c.cfg.WakeTurnYaw, false, 0)
	if !ok {
		return
	}
	phrase, ok := ev.Data.Lookup("phrase")
	if !ok {
		phrase = ""
	}
	c.turnHead(ctx, WakeWordTurner, ev, yaw, c.cfg.WakeTurnSpeed, map[string]any{"reason": "wake_word", "direction": dir, "phrase": phrase})
}

// soundTurner turns the head toward a sound (#6).
func (c *consumers) soundTurner(ctx context.Context, ev Event) {
	dir, yaw, ok := c.turnYaw(ev, "sound_event", c.cfg.SoundTurnYaw, true, c.cfg.SoundTurnCooldown)
	if !ok {
		return
	}
	c.turnHead(ctx, SoundTurner, ev, yaw, c.cfg.SoundTurnSpeed, map[string]any{"reason": "sound_localizer", "direction": dir, "energy": ev.Data.Get("energy")})
}

// turnYaw reads a turner's event: the direction ev reports and the yaw
// toward it (sideYaw), ok once turnGate let the turn through; false for
// another event than name, a direction it does not turn to, or a turn the
// gate holds back.
func (c *consumers) turnYaw(ev Event, name string, yaw int, centre bool, cooldown time.Duration) (dir string, turn int, ok bool) {
	if ev.Name != name || NoDevice(ev) {
		return "", 0, false
	}
	dir, _ = ev.Data.Text("direction")
	turn, ok = sideYaw(dir, yaw, centre)
	return dir, turn, ok && c.turnGate(ev, cooldown)
}

// sideYaw is the head yaw toward a direction the firmware reported: -yaw
// for "left", yaw for "right" and, when centre is true, 0 for "centre" or
// "center"; ok is false for any other direction (no turn).
func sideYaw(dir string, yaw int, centre bool) (turn int, ok bool) {
	switch dir {
	case "left":
		return -yaw, true
	case "right":
		return yaw, true
	case "centre", "center":
		return 0, centre
	}
	return 0, false
}

// soundQuietAfterChat is the sound turner's hard-coded quiet time.
const soundQuietAfterChat = 30.0

// turnGate checks face_present (and for the sound turner the chat quiet
// time and cooldown), then records last_sound_turn_t.
func (c *consumers) turnGate(ev Event, cooldown time.Duration) bool {
	sound := ev.Name == "sound_event"
	pass := false
	c.s.states.Update(ev.DeviceID, func(d *DeviceState) {
		if isTrue(d.FacePresent) {
			return
		}
		if sound && (since(ev.TS, d.LastChatT) < soundQuietAfterChat || since(ev.TS, d.LastSoundTurnT) < cooldown.Seconds()) {
			return
		}
		d.LastSoundTurnT = ptr(ev.TS)
		pass = true
	})
	return pass
}

// turnHead sends set-head-angles and puts a synthetic head_turn on the bus.
func (c *consumers) turnHead(ctx context.Context, consumer string, ev Event, yaw, speed int, extra map[string]any) {
	if c.robot(consumer, "set-head-angles") {
		c.dispatch(ctx, consumer, "set-head-angles", ev.DeviceID, func(ctx context.Context, r Robot) error {
			return r.SetHeadAngles(ctx, ev.DeviceID, yaw, 0, speed)
		})
	}
	data := map[string]any{"yaw": yaw, "pitch": 0, "speed": speed}
	for k, v := range extra {
		data[k] = v
	}
	c.s.Ingest(Event{DeviceID: ev.DeviceID, TS: ev.TS, Name: "head_turn", Data: DataOf(data)})
}

// faceLostAborter aborts a greeting conversation when the face leaves
// soon after a bare greeting (#3).
func (c *consumers) faceLostAborter(ctx context.Context, ev Event) {
	if NoDevice(ev) {
		return
	}
	switch ev.Name {
	case "face_detected":
		c.cancelAbort(ev.DeviceID)
	case "face_lost":
		st, ok := c.s.states.Get(ev.DeviceID)
		if !ok || since(ev.TS, st.LastFaceGreetT) > c.cfg.AbortWindow.Seconds() {
			return // a forgotten device has no conversation to abort
		}
		device := ev.DeviceID
		c.abortMu.Lock()
		if t := c.aborts[device]; t != nil {
			t.Stop()
		}
		var t clockwork.Timer
		t = c.clock.AfterFunc(c.cfg.AbortGrace, func() {
			c.abortMu.Lock()
			mine := c.aborts[device] == t
			if mine {
				delete(c.aborts, device)
			}
			c.abortMu.Unlock()
			if !mine || ctx.Err() != nil {
				return
			}
			c.s.log.Named(FaceLostAborter).Info("face gone after a greeting; aborting the conversation", "device", device)
			c.dispatch(ctx, FaceLostAborter, "abort", device, func(ctx context.Context, r Robot) error {
				return r.Abort(ctx, device)
			})
		})
		c.aborts[device] = t
		c.abortMu.Unlock()
		// The device may have been evicted since the Get above, its
		// eviction cancelling nothing; checking again after arming keeps
		// the timers to devices in the table, so a flood of face_lost
		// events cannot pile them up.
		if _, ok := c.s.states.Get(device); !ok {
			c.cancelAbort(device)
		}
	}
}

func (c *consumers) cancelAbort(device string) {
	c.abortMu.Lock()
	defer c.abortMu.Unlock()
	if t := c.aborts[device]; t != nil {
		t.Stop()
		delete(c.aborts, device)
	}
}

// purrPlayer purrs when the head is petted (#4).
func (c *consumers) purrPlayer(ctx context.Context, ev Event) {
	if ev.Name != "head_pet_started" || NoDevice(ev) {
		return
	}
	purr := false
	c.s.states.Update(ev.DeviceID, func(d *DeviceState) {
		if since(ev.TS, d.LastPurrT) < c.cfg.PurrCooldown.Seconds() {
			return
		}
		d.LastPurrT = ptr(ev.TS)
		d.LastChatT = ptr(ev.TS + c.cfg.PurrDuration.Seconds())
		purr = true
	})
	if !purr || !c.robot(PurrPlayer, "play-asset") {
		return
	}
	asset := c.cfg.PurrAudioPath
	c.dispatch(ctx, PurrPlayer, "play-asset", ev.DeviceID, func(ctx context.Context, r Robot) error {
		_, err := r.PlayAsset(ctx, ev.DeviceID, asset)
		return err
	})
}

// refresher keeps the firmware's identity pip lit while a recognised face
// is fresh (#5).
func (c *consumers) refresher(ctx context.Context) {
	t := c.clock.NewTicker(c.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			Safely(c.s.log.Named(IdentityRefresher), IdentityRefresher, func() { c.refreshOnce(ctx) })
		}
	}
}

func (c *consumers) refreshOnce(ctx context.Context) {
	now := c.clock.Now()
	wall := epochSeconds(now)
	for _, dev := range c.s.states.Devices() {
		if dev == "" || dev == "unknown" { // events without a device id: no robot to refresh
			continue
		}
		st, _ := c.s.states.Get(dev)
		if _, ok := st.FreshIdentity(now, c.cfg.IdentityTTL); !ok {
			continue
		}
		if st.FacePresent != nil && !*st.FacePresent && st.LastFaceLostT != nil && wall-*st.LastFaceLostT > c.cfg.RefreshQuiet.Seconds() {
			continue
		}
		c.dispatch(ctx, IdentityRefresher, "set-face-identified", dev, func(ctx context.Context, r Robot) error {
			return r.SetFaceIdentified(ctx, dev)
		})
	}
}
