package perception

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Error codes of a security record, bridge.py's: what a cycle could not do.
const (
	ErrPhotoDispatch    = "photo_dispatch_failed"       // xiaozhi refused take-photo (or has no such route)
	ErrPhotoPollMiss    = "photo_poll_miss"             // no description came back in time
	ErrAudioCapture     = "audio_capture_pending"       // xiaozhi refused capture-audio (no firmware supports it yet)
	ErrAudioPollPending = "audio_poll_endpoint_pending" // the clip was asked for but no caption came back in time
)

// SecurityRecord is one security-watch cycle, in bridge.py's key order.
type SecurityRecord struct {
	TS                  string   `json:"ts"`
	Device              string   `json:"device"`
	PhotoDesc           string   `json:"photo_desc"`
	AudioTranscript     *string  `json:"audio_transcript"`
	AudioClassification *string  `json:"audio_classification"`
	Errors              []string `json:"errors"`
}

// journals are the consumers' daily NDJSON files; a nil one writes nothing.
type journals struct {
	security, scene, idle *convolog.Daily
}

func newJournals(cfg Config) journals {
	if cfg.JournalDir == "" {
		return journals{}
	}
	mk := func(prefix string, loc *time.Location, what string) *convolog.Daily {
		return convolog.NewDaily(convolog.DailyConfig{Dir: cfg.JournalDir, Prefix: prefix, Location: loc,
			Logger: cfg.Logger.Named("journal"), Failures: cfg.JournalMetrics.Failures(prefix), What: what, Health: cfg.Health})
	}
	return journals{
		security: mk("security", cfg.SecurityLocation, "the security log; the watch goes on without it"),
		scene:    mk("scene-synthesis", cfg.Location, "the scene log; scenes are still kept in memory"),
		idle:     mk("perception", cfg.Location, "the idle perception log"),
	}
}

func appendTo(d *convolog.Daily, t time.Time, v any) {
	if d != nil {
		d.Append(t, v)
	}
}

// watch holds the security watch's running loops (at most one per device
// in the table: a device leaving the table stops its loop) and the ring of
// recent records shared by all devices, as bridge.py kept it.
type watch struct {
	mu    sync.Mutex
	loops map[string]context.CancelFunc
	wg    sync.WaitGroup
	ring  []SecurityRecord // oldest first, at most size
	size  int
}

func newWatch(size int) *watch {
	return &watch{loops: map[string]context.CancelFunc{}, size: size}
}

func (w *watch) keep(r SecurityRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ring) == w.size {
		copy(w.ring, w.ring[1:])
		w.ring = w.ring[:w.size-1]
	}
	w.ring = append(w.ring, r)
}

// Recent returns the kept records of device ("" for all), newest first,
// at most limit of them (0: all).
func (w *watch) recent(device string, limit int) []SecurityRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := []SecurityRecord{}
	for i := len(w.ring) - 1; i >= 0; i-- {
		if device != "" && w.ring[i].Device != device {
			continue
		}
		out = append(out, w.ring[i])
		if limit > 0 && len(out) == limit {
			break
		}
	}
	return out
}

// Watching lists the devices whose security loop runs, for tests and the
// operator's log.
func (s *Service) Watching() []string {
	w := s.consumers.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.loops))
	for d := range w.loops {
		out = append(out, d)
	}
	return out
}

// SecurityRecent returns the security watch's kept records of device (""
// for every device), newest first, at most limit (0: all).
func (s *Service) SecurityRecent(device string, limit int) []SecurityRecord {
	return s.consumers.watch.recent(device, limit)
}

// securityWatch starts a device's capture loop when it enters the
// security state and stops it on any other state.
func (c *consumers) securityWatch(ctx context.Context, ev Event) {
	if ev.Name != "state_changed" || NoDevice(ev) {
		return
	}
	state := EventState(ev)
	if state == "security" {
		c.startWatch(ctx, ev.DeviceID)
		return
	}
	c.stopWatch(ev.DeviceID, state)
}

// startWatch starts device's loop, which ends with ctx (Run's) or stopWatch.
func (c *consumers) startWatch(ctx context.Context, device string) {
	w := c.watch
	w.mu.Lock()
	if _, running := w.loops[device]; running || ctx.Err() != nil {
		w.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	w.loops[device] = cancel
	w.wg.Add(1)
	w.mu.Unlock()
	log := c.s.log.Named(SecurityWatch)
	log.Info("security watch started", "device", device, "interval", c.cfg.SecurityInterval)
	go func() {
		defer w.wg.Done()
		c.securityLoop(ctx, device)
	}()
	// The device may have been evicted since its event was applied; its
	// eviction found no loop to stop, so look again now the loop is
	// registered (a flood of new devices must not leave loops behind).
	if _, ok := c.s.states.Get(device); !ok {
		c.stopWatch(device, "forgotten")
	}
}

// stopWatch ends device's loop, if one runs; a cycle in progress is
// abandoned without a record.
func (c *consumers) stopWatch(device, why string) {
	w := c.watch
	w.mu.Lock()
	cancel, ok := w.loops[device]
	delete(w.loops, device)
	w.mu.Unlock()
	if ok {
		cancel()
		c.s.log.Named(SecurityWatch).Info("security watch stopped", "device", device, "state", why)
	}
}

// stopWatches ends every loop and waits for them (shutdown).
func (c *consumers) stopWatches() {
	w := c.watch
	w.mu.Lock()
	for d, cancel := range w.loops {
		cancel()
		delete(w.loops, d)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// securityLoop runs a cycle at once, then one SecurityInterval after each
// cycle ends, until ctx ends.
func (c *consumers) securityLoop(ctx context.Context, device string) {
	log := c.s.log.Named(SecurityWatch)
	for {
		Safely(log, SecurityWatch, func() { c.securityCycle(ctx, device) })
		if !clockSleep(ctx, c.clock, c.cfg.SecurityInterval) {
			return
		}
	}
}

// securityCycle photographs the room, asks for a sound clip, and records
// what came back: the record goes to the day's security file, the ring
// and the perception bus. A cycle cut short by a state change or shutdown
// records nothing.
func (c *consumers) securityCycle(ctx context.Context, device string) {
	cam := c.s.cfg.Camera
	rec := SecurityRecord{Device: device, Errors: []string{}}

	mark := markOf(cam)
	if err := c.call(ctx, SecurityWatch, "take-photo", func(ctx context.Context, r Robot) error {
		return r.TakePhoto(ctx, device, c.cfg.SecurityPrompt)
	}); err != nil {
		rec.Errors = append(rec.Errors, ErrPhotoDispatch)
	} else if desc := c.await(ctx, cam, device, mark, c.cfg.SecurityPhotoWait, Camera.NextPhoto); desc != "" {
		rec.PhotoDesc = desc
	} else {
		rec.Errors = append(rec.Errors, ErrPhotoPollMiss)
	}
	if ctx.Err() != nil {
		return
	}

	mark = markOf(cam)
	if err := c.call(ctx, SecurityWatch, "capture-audio", func(ctx context.Context, r Robot) error {
		return r.CaptureAudio(ctx, device, c.cfg.SecurityAudioDuration)
	}); err != nil {
		rec.Errors = append(rec.Errors, ErrAudioCapture)
	} else if caption := c.await(ctx, cam, device, mark, c.cfg.SecuritySoundWait, Camera.NextSound); caption != "" {
		// The caption describes the sounds (speech paraphrased, alarms
		// flagged first), which is a classification, not a transcript.
		rec.AudioClassification = &caption
	} else {
		rec.Errors = append(rec.Errors, ErrAudioPollPending)
	}
	if ctx.Err() != nil {
		return
	}

	now := c.clock.Now()
	rec.TS = convolog.Timestamp(now.In(c.s.cfg.SecurityLocation))
	appendTo(c.journals.security, now, rec)
	c.watch.keep(rec)
	c.s.Broadcast(Event{DeviceID: device, TS: epochSeconds(now), Name: "security_capture",
		Data: DataOf(map[string]any{"photo_desc": text.Truncate(rec.PhotoDesc, text.Cut{Max: 80}), "errors": rec.Errors})})
	c.s.log.Named(SecurityWatch).Info("security cycle", "device", device, "desc_len", len(rec.PhotoDesc), "errors", strings.Join(rec.Errors, ","))
}

func markOf(cam Camera) uint64 {
	if cam == nil {
		return 0
	}
	return cam.Mark()
}

// await waits up to d (on the clock) for a result stored after mark; ""
// when none came, or there is no camera.
func (c *consumers) await(ctx context.Context, cam Camera, device string, mark uint64, d time.Duration,
	next func(Camera, context.Context, string, uint64) (string, bool)) string {
	if cam == nil {
		return ""
	}
	wctx, cancel := ClockTimeout(ctx, c.clock, d)
	defer cancel()
	desc, _ := next(cam, wctx, device, mark)
	return desc
}

// call makes one robot call on the caller's goroutine, for the loops that
// need its result. It shares the consumers' bound on calls in flight, but
// where a fire-and-forget dispatch is dropped when all are taken, call
// waits for a slot (first come, first served) within ctx.
func (c *consumers) call(ctx context.Context, consumer, action string, fn func(ctx context.Context, r Robot) error) error {
	r := c.s.cfg.Robot
	if r == nil || !r.Enabled() {
		c.s.log.Named(consumer).Debug("XIAOZHI_HOST is empty; robot action skipped", "action", action)
		return xiaozhi.ErrDisabled
	}
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-c.sem }()
	return fn(ctx, r)
}

// getSecurityRecent is GET /api/security/recent[?device_id=][&limit=]: the
// security watch's recent records, newest first.
func (s *Service) getSecurityRecent(c echo.Context) error {
	device, limit, err := deviceAndLimit(c)
	if err != nil {
		return err
	}
	return httpapi.WriteJSON(c, http.StatusOK, s.SecurityRecent(device, limit))
}
