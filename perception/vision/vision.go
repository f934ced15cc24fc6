// Package vision serves the robot's camera and microphone paths: POST
// /api/vision/explain (the firmware uploads a JPEG; an OpenAI-compatible
// vision model describes it), the long-poll GET
// /api/vision/latest/{device_id} that xiaozhi waits on for that
// description, and POST /api/audio/explain for audio clips. Results are
// cached per device in memory only (images are never written to disk) and
// feed the escalate tool take_photo and the voice prompt's perception
// block.
package vision

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/openai/openai-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/llm"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/internal/lru"
)

// Model is an OpenAI-compatible chat completions endpoint.
type Model struct {
	// URL is the full .../chat/completions address.
	URL string
	// Model is the model name sent.
	Model string
	// APIKey is sent as a Bearer token; empty means the model is offline.
	APIKey string
	// Timeout bounds one call.
	Timeout time.Duration
	// HTTPClient defaults to http.DefaultClient.
	HTTPClient *http.Client
}

// Perception is what the room-view and audio paths need from the
// perception service (*perception.Service).
type Perception interface {
	States() *perception.States
	Broadcast(ev perception.Event)
}

// Config configures the vision routes and caches.
type Config struct {
	// Vision is the VLM (VLM_* falling back to VISION_*); Audio is the
	// audio-caption model (AUDIO_CAPTION_*).
	Vision, Audio Model
	// KidMode picks the vision system prompt, read live; nil means off.
	KidMode func() bool
	// Household is the roster of the room-view path; nil means none.
	Household *perception.Household
	// Perception receives face_mood (state) and the face_recognized and
	// audio_captioned broadcasts; nil skips them.
	Perception Perception
	// RoomViewCooldown is DOTTY_IDLE_VISION_COOLDOWN_SEC (120 s).
	RoomViewCooldown time.Duration
	// TalkKickoffGrace is ROOM_VIEW_TALK_KICKOFF_GRACE_SEC (5 s).
	TalkKickoffGrace time.Duration
	// MaxUpload bounds an upload (8 MiB); larger ones get 413.
	MaxUpload int64
	// LongPoll is how long /api/vision/latest waits (15 s, below the caller's 20 s).
	LongPoll time.Duration
	// MaxDevices bounds the per-device caches (PERCEPTION_MAX_DEVICES, 256);
	// a new device past it replaces the oldest entry.
	MaxDevices int
	// Cache is shared with perception and tier1; nil builds one from
	// MaxDevices and Clock.
	Cache *Cache
	// MaxWaiters bounds concurrent /api/vision/latest long-polls
	// (VISION_MAX_WAITERS, 128); past it a poll gets 503.
	MaxWaiters int
	// Clock is the time source; nil is the real clock.
	Clock clockwork.Clock
	// VisionDuration and AudioDuration are
	// dotty_request_duration_seconds{endpoint="vision_explain"|"audio_explain"}.
	VisionDuration, AudioDuration prometheus.Observer
	Logger                        hclog.Logger
}

// DefaultConfig returns bridge.py's models, URLs and timeouts and its
// room-view timings, with the bound on long-poll waiters: the one place
// they are written.
func DefaultConfig() Config {
	const openRouter = "https://openrouter.ai/api/v1/chat/completions"
	return Config{
		Vision:           Model{Model: "google/gemini-2.0-flash-001", URL: openRouter, Timeout: 15 * time.Second},
		Audio:            Model{Model: "google/gemini-2.5-flash", URL: openRouter, Timeout: 20 * time.Second},
		RoomViewCooldown: 120 * time.Second, TalkKickoffGrace: 5 * time.Second, MaxWaiters: DefaultMaxWaiters,
	}
}

// Validate reports every setting outside its range as a
// *fieldcheck.Error naming the field ("Vision.Timeout"): the one range
// check of each field; the bridge's command line names the variable a
// value came from. The bounds the bridge leaves zero (MaxDevices,
// MaxUpload, LongPoll) take their default then.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	for _, m := range []struct {
		field string
		m     Model
	}{{"Vision", c.Vision}, {"Audio", c.Audio}} {
		errs.Check(m.field+".Timeout", m.m.Timeout > 0, m.m.Timeout, "more than 0")
		u, err := url.Parse(m.m.URL)
		errs.Check(m.field+".URL", m.m.URL == "" || (err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""), m.m.URL, "an http or https URL")
	}
	errs.Check("RoomViewCooldown", c.RoomViewCooldown > 0, c.RoomViewCooldown, "more than 0")
	errs.Check("TalkKickoffGrace", c.TalkKickoffGrace > 0, c.TalkKickoffGrace, "more than 0")
	errs.Check("MaxWaiters", c.MaxWaiters >= 1, c.MaxWaiters, "at least 1")
	errs.Check("LongPoll", c.LongPoll >= 0, c.LongPoll, "0 or more")
	errs.Check("MaxDevices", c.MaxDevices >= 0, c.MaxDevices, "0 or more")
	errs.Check("MaxUpload", c.MaxUpload >= 0, c.MaxUpload, "0 or more")
	return errs.Err()
}

// Cache lifetimes, bridge.py's: a photo is current for a minute, a sound
// for two.
const (
	VisionTTL   = 60 * time.Second
	AudioTTL    = 120 * time.Second
	PhotoMaxAge = 30 * time.Second // take_photo's freshness
)

// entry is one cached result.
type entry struct {
	desc     string
	at       time.Time // clock time (monotonic with the real clock)
	roomID   *string   // room_match_person_id
	question string
	source   string
	seq      uint64 // Cache.seq when stored: later results have larger ones
}

// Service is the vision feature: the explain, latest and audio routes
// over a Cache of descriptions.
type Service struct {
	cfg    Config
	log    hclog.Logger
	clock  clockwork.Clock
	vision *modelClient
	audio  *modelClient

	*Cache
}

// CacheConfig configures a Cache.
type CacheConfig struct {
	// MaxDevices bounds each of the two caches (PERCEPTION_MAX_DEVICES,
	// 256); a new device past it replaces the least recently stored one.
	MaxDevices int
	// Clock stamps and ages the entries; nil is the real clock.
	Clock clockwork.Clock
	// PhotoBytes bounds the photos kept for the dashboard, all devices
	// together (DefaultPhotoBytes); the oldest go first.
	PhotoBytes int
}

// DefaultPhotoBytes is the default budget of kept photos: a robot's JPEG
// is tens of KiB, so this keeps the latest photo of dozens of devices.
const DefaultPhotoBytes = 8 << 20

// Photo is a device's latest photo with its description.
type Photo struct {
	JPEG        []byte
	Description string
	At          time.Time
}

// Cache holds each device's latest camera and microphone descriptions and
// the long-polls waiting for the next photo. It is its own value, built
// before perception and the vision routes, because both read it: the
// prompt's perception block and take_photo read it, the routes fill it,
// and perception's device table empties it for an evicted device.
type Cache struct {
	clock clockwork.Clock

	mu       sync.Mutex
	images   *lru.Cache[string, entry]
	sounds   *lru.Cache[string, entry]
	photos   *lru.Cache[string, Photo]
	photoN   int // bytes in photos
	photoMax int
	waiters  map[string][]chan bool // true: a result arrived; false: the device was forgotten
	nWait    int
	// seq numbers stored results, so a consumer can ask for "a result
	// newer than this one" without comparing clock readings (a fake clock
	// gives equal ones).
	seq uint64
	// changed is closed and replaced whenever a result is stored, waking
	// in-process waiters (NextPhoto, NextSound): they are few (one per
	// camera consumer at most per device) and need no table of their own.
	changed chan struct{}
}

// NewCache returns an empty cache.
func NewCache(cfg CacheConfig) *Cache {
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.MaxDevices <= 0 {
		cfg.MaxDevices = perception.DefaultMaxDevices
	}
	if cfg.PhotoBytes <= 0 {
		cfg.PhotoBytes = DefaultPhotoBytes
	}
	return &Cache{
		clock:    cfg.Clock,
		images:   lru.New[string, entry](cfg.MaxDevices),
		sounds:   lru.New[string, entry](cfg.MaxDevices),
		photos:   lru.New[string, Photo](cfg.MaxDevices),
		photoMax: cfg.PhotoBytes,
		waiters:  map[string][]chan bool{},
		changed:  make(chan struct{}),
	}
}

// CacheSizes are a Cache's table sizes.
type CacheSizes struct {
	Images, Sounds, Photos int // devices with an entry in each table
	Waiters                int // long-polls waiting for a photo
}

// Sizes reports the cache's table sizes, for a program watching them
// stay bounded.
func (c *Cache) Sizes() CacheSizes {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheSizes{Images: c.images.Len(), Sounds: c.sounds.Len(), Photos: c.photos.Len(), Waiters: c.nWait}
}

// New returns the service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	def := DefaultConfig()
	if cfg.RoomViewCooldown <= 0 {
		cfg.RoomViewCooldown = def.RoomViewCooldown
	}
	if cfg.TalkKickoffGrace <= 0 {
		cfg.TalkKickoffGrace = def.TalkKickoffGrace
	}
	if cfg.MaxUpload <= 0 {
		cfg.MaxUpload = 8 << 20
	}
	if cfg.LongPoll <= 0 {
		cfg.LongPoll = 15 * time.Second
	}
	if cfg.MaxDevices <= 0 {
		cfg.MaxDevices = perception.DefaultMaxDevices
	}
	if cfg.MaxWaiters <= 0 {
		cfg.MaxWaiters = def.MaxWaiters
	}
	if cfg.Vision.Timeout <= 0 {
		cfg.Vision.Timeout = def.Vision.Timeout
	}
	if cfg.Audio.Timeout <= 0 {
		cfg.Audio.Timeout = def.Audio.Timeout
	}
	cache := cfg.Cache
	if cache == nil {
		cache = NewCache(CacheConfig{MaxDevices: cfg.MaxDevices, Clock: cfg.Clock})
	}
	return &Service{
		cfg: cfg, log: cfg.Logger, clock: cfg.Clock,
		vision: newModelClient(cfg.Vision), audio: newModelClient(cfg.Audio),
		Cache: cache,
	}
}

// Freshest returns the newest non-empty camera description of any device
// and its age (take_photo).
func (s *Cache) Freshest() (string, time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var best entry
	found := false
	for _, e := range s.images.All() {
		if e.desc != "" && (!found || e.at.After(best.at)) {
			best, found = e, true
		}
	}
	if !found {
		return "", 0, false
	}
	return best.desc, now.Sub(best.at), true
}

// Fresh returns a device's camera description if at most 60 s old and its
// audio description if at most 120 s old (the prompt's perception block).
func (s *Cache) Fresh(device string) (vision, audio string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if e, ok := s.images.Get(device); ok && now.Sub(e.at) <= VisionTTL {
		vision = e.desc
	}
	if e, ok := s.sounds.Get(device); ok && now.Sub(e.at) <= AudioTTL {
		audio = e.desc
	}
	return vision, audio
}

// DefaultMaxWaiters is the default bound on long-poll waiters.
const DefaultMaxWaiters = 128

// storeImage caches a description, wakes the device's waiters and purges
// old entries.
func (s *Cache) storeImage(device string, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeLocked(s.images, device, e, VisionTTL)
	s.wakeLocked(device, true)
}

func (s *Cache) storeSound(device string, e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.storeLocked(s.sounds, device, e, AudioTTL)
}

// Mark returns the number of the newest stored result: NextPhoto and
// NextSound with it wait for a result stored after this call.
func (s *Cache) Mark() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seq
}

// NextPhoto waits until device has a camera description stored after mark
// and returns it (stripped); ok is false when ctx ends first. One already
// stored is returned even when ctx has ended.
func (s *Cache) NextPhoto(ctx context.Context, device string, mark uint64) (string, bool) {
	return s.next(ctx, s.images, device, mark)
}

// NextSound is NextPhoto for audio captions.
func (s *Cache) NextSound(ctx context.Context, device string, mark uint64) (string, bool) {
	return s.next(ctx, s.sounds, device, mark)
}

func (s *Cache) next(ctx context.Context, m *lru.Cache[string, entry], device string, mark uint64) (string, bool) {
	for {
		s.mu.Lock()
		e, ok := m.Get(device)
		changed := s.changed
		s.mu.Unlock()
		if ok && e.seq > mark {
			return text.Strip(e.desc), true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", false
		}
	}
}

// NewestPhotoDevice returns the device whose camera description was
// stored last, among those still cached.
func (s *Cache) NewestPhotoDevice() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var best string
	var bestSeq uint64
	for d, e := range s.images.All() {
		if e.seq > bestSeq {
			best, bestSeq = d, e.seq
		}
	}
	return best, bestSeq > 0
}

// keepPhoto keeps jpeg as device's latest photo for the dashboard, the
// oldest photos making room when the byte budget is spent. A photo larger
// than the whole budget is not kept.
func (s *Cache) keepPhoto(device string, p Photo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropPhotoLocked(device)
	if len(p.JPEG) > s.photoMax {
		return
	}
	for s.photoN+len(p.JPEG) > s.photoMax {
		d, _, ok := s.photos.Oldest()
		if !ok {
			break
		}
		s.dropPhotoLocked(d)
	}
	// Put may evict the least recent device past MaxDevices; a recount
	// (at most MaxDevices entries) keeps photoN exact either way.
	s.photos.Put(device, p)
	s.photoN = 0
	for _, q := range s.photos.All() {
		s.photoN += len(q.JPEG)
	}
}

func (s *Cache) dropPhotoLocked(device string) {
	if p, ok := s.photos.Get(device); ok {
		s.photoN -= len(p.JPEG)
		s.photos.Remove(device)
	}
}

// LatestPhoto returns device's latest kept photo; with device "", the
// newest of any device, and its device.
func (s *Cache) LatestPhoto(device string) (string, Photo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if device != "" {
		p, ok := s.photos.Get(device)
		return device, p, ok
	}
	var best Photo
	var bestDev string
	found := false
	for d, p := range s.photos.All() {
		if !found || p.At.After(best.At) {
			best, bestDev, found = p, d, true
		}
	}
	return bestDev, best, found
}

// Photos lists the devices with a kept photo, newest first.
func (s *Cache) Photos() []PhotoInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PhotoInfo, 0, s.photos.Len())
	for d, p := range s.photos.All() {
		out = append(out, PhotoInfo{Device: d, Description: p.Description, At: p.At, Bytes: len(p.JPEG)})
	}
	slices.SortFunc(out, func(a, b PhotoInfo) int { return b.At.Compare(a.At) })
	return out
}

// PhotoInfo describes a kept photo without its bytes.
type PhotoInfo struct {
	Device      string
	Description string
	At          time.Time
	Bytes       int
}

// storeLocked caches e for device in m, first dropping entries older than
// ttl (the cache is in store order, so they are at its old end). A new
// device past MaxDevices replaces the least recently stored one: uploads
// can name devices perception never saw, so the cache keeps its own bound.
func (s *Cache) storeLocked(m *lru.Cache[string, entry], device string, e entry, ttl time.Duration) {
	s.seq++
	e.seq = s.seq
	close(s.changed)
	s.changed = make(chan struct{})
	for {
		d, old, ok := m.Oldest()
		if !ok || e.at.Sub(old.at) <= ttl {
			break
		}
		m.Remove(d)
	}
	m.Put(device, e)
}

// wakeLocked tells device's long-poll waiters a result arrived (true) or
// the device was forgotten (false).
func (s *Cache) wakeLocked(device string, result bool) {
	for _, w := range s.waiters[device] {
		select {
		case w <- result:
		default:
		}
	}
}

// Forget drops a device's cached descriptions and sends its long-poll
// waiters their 404 (the device was evicted from perception's table).
func (s *Cache) Forget(device string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images.Remove(device)
	s.sounds.Remove(device)
	s.dropPhotoLocked(device)
	s.wakeLocked(device, false)
}

// modelClient calls one OpenAI-compatible endpoint.
type modelClient struct {
	cfg    Model
	client openai.Client
}

func newModelClient(m Model) *modelClient {
	return &modelClient{cfg: m, client: llm.NewClient(m.URL, m.APIKey, m.HTTPClient)}
}

// errOffline means no API key is configured.
var errOffline = errors.New("no API key configured")

// ask sends system plus the user parts and returns the stripped answer.
func (m *modelClient) ask(ctx context.Context, system string, parts []openai.ChatCompletionContentPartUnionParam) (string, error) {
	if m.cfg.APIKey == "" {
		return "", errOffline
	}
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Timeout)
	defer cancel()
	return llm.Ask(ctx, m.client, m.cfg.Model, system, openai.UserMessage(parts), 200, 0.3)
}

func imagePart(jpeg []byte) openai.ChatCompletionContentPartUnionParam {
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
		URL: "data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg),
	})
}
