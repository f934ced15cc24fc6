package perception

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// Config configures the perception service. Zero values take the spec's
// defaults; see Consumers for the consumer settings.
type Config struct {
	// Robot acts on the robot (the xiaozhi admin client). Nil disables
	// every outbound call, like an empty XIAOZHI_HOST.
	Robot Robot
	// Senses gives fresh vision and audio descriptions for the prompt's
	// perception block (the vision package); nil means none.
	Senses Senses
	// Camera is the vision cache the security watch and the idle
	// photographer wait on for the photos they ask for; nil leaves the
	// idle photographer idle and records every security photo as missed.
	Camera Camera
	// Consumers holds the consumers' settings.
	Consumers Consumers
	// Speaker tunes the speaker resolver (SPEAKER_*).
	Speaker SpeakerConfig
	// Calendar gives today's person-tagged events for the speaker
	// resolver (bridge/periphery); nil means no calendar signal.
	Calendar CalendarPeople
	// JournalDir is CONVO_LOG_DIR: the security, scene-synthesis and idle
	// perception daily NDJSON files are written there; "" writes none.
	JournalDir string
	// JournalMetrics counts records those files lost; nil counts nothing.
	JournalMetrics *convolog.Metrics
	// Health is the conditions set those files mark while they cannot be
	// written (GET /health); nil keeps a private set.
	Health *health.Conditions
	// SecurityLocation is DOTTY_LOCAL_TZ, the zone of the security
	// records' timestamps and file dates; nil means Location.
	SecurityLocation *time.Location
	// Location is TZ, for the greeter's hour window.
	Location *time.Location
	// Clock is the time source (wall now, timers); nil is the real clock.
	Clock clockwork.Clock
	// Stopping closes when the HTTP server shuts down; feed streams end then.
	Stopping <-chan struct{}
	// Keepalive is the feed's idle comment interval (15 s).
	Keepalive time.Duration
	// MaxDevices bounds the device table (PERCEPTION_MAX_DEVICES, 256);
	// past it the least recently seen device is forgotten with everything
	// keyed by it.
	MaxDevices int
	// MaxFeedClients bounds concurrent /api/perception/feed clients
	// (PERCEPTION_FEED_MAX_CLIENTS, 64); past it a client gets 503.
	MaxFeedClients int

	// Metrics are perception's series (NewMetrics); nil ones record
	// nothing.
	Metrics *Metrics
	// RequestDuration is
	// dotty_request_duration_seconds{endpoint="perception_event"}; nil
	// records nothing.
	RequestDuration prometheus.Observer
	// Access guards the routes that show the household (state, recent events, the feed, scenes, security records): the
	// Host must name this machine, and the dashboard's credentials are
	// asked for when set. Nil: this machine's names, no credentials.
	Access *httpapi.Access

	Logger hclog.Logger
}

// DefaultConfig is the service's settings as bridge.py had them: the
// device and feed-client bounds, the consumers' and the speaker
// resolver's settings, the feed's keepalive. New fills each of these left
// zero from here, field by field.
func DefaultConfig() Config {
	return Config{Consumers: DefaultConsumers(), Speaker: DefaultSpeakerConfig(), Keepalive: 15 * time.Second,
		MaxDevices: DefaultMaxDevices, MaxFeedClients: DefaultMaxFeedClients}
}

// Validate reports every setting outside its range as a *fieldcheck.Error
// naming the field ("MaxDevices", "Consumers.GreetHourEnd",
// "Speaker.MaxLatches"): the one range check of each field; the bridge's
// command line names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	errs.Check("MaxDevices", c.MaxDevices >= 1, c.MaxDevices, "at least 1")
	errs.Check("MaxFeedClients", c.MaxFeedClients >= 1, c.MaxFeedClients, "at least 1")
	errs.Check("Keepalive", c.Keepalive >= 0, c.Keepalive, "0 or more")
	return errors.Join(errs.Err(), fieldcheck.Under("Consumers", c.Consumers.Validate()), fieldcheck.Under("Speaker", c.Speaker.validate()))
}

// Senses gives the freshest camera and microphone descriptions of a device.
type Senses interface {
	// Fresh returns the vision description if at most 60 s old and the
	// audio description if at most 120 s old ("" for none).
	Fresh(deviceID string) (vision, audio string)
	// Forget drops what is cached for a device evicted from the device
	// table; its long-poll waiters get their 404.
	Forget(deviceID string)
}

// Service is the perception feature: ingest, state, bus, routes and
// consumers.
type Service struct {
	cfg    Config
	log    hclog.Logger
	clock  clockwork.Clock
	states *States
	bus    *Bus

	consumers *consumers
	speaker   *speaker

	// order makes state updates and broadcasts one total order.
	order sync.Mutex

	feedSlots chan struct{} // one per connected feed client

	warns warnings // repeated problems (evictions, robot failures), logged once a minute
}

// New builds the service; Run starts its consumers.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	if cfg.Access == nil {
		cfg.Access = httpapi.NewAccess(httpapi.AccessConfig{Logger: cfg.Logger})
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Location == nil {
		cfg.Location = time.Local
	}
	if cfg.SecurityLocation == nil {
		cfg.SecurityLocation = cfg.Location
	}
	fieldcheck.Fill(&cfg, DefaultConfig(), "Keepalive", "MaxDevices", "MaxFeedClients")
	cfg.Consumers = cfg.Consumers.withDefaults()
	s := &Service{
		cfg:    cfg,
		log:    cfg.Logger,
		clock:  cfg.Clock,
		states: newStates(cfg.MaxDevices),
		bus:    NewBus(cfg.busConfig()),

		feedSlots: make(chan struct{}, cfg.MaxFeedClients),
		warns:     warnings{clock: cfg.Clock},
	}
	s.states.onEvict = func(device string) {
		s.forgetDevice(device)
		s.logEviction(device)
	}
	s.consumers = newConsumers(s)
	s.speaker = newSpeaker(cfg.Speaker, cfg.Calendar, cfg.Location)
	return s
}

// busConfig is the bus's part of the service's config.
func (c Config) busConfig() BusConfig {
	bc := BusConfig{MaxRings: c.MaxDevices, Clock: c.Clock, Logger: c.Logger.Named("bus")}
	if m := c.Metrics; m != nil {
		bc.Events, bc.Dropped, bc.Evictions = m.Events, m.Dropped, m.Evictions
	}
	return bc
}

// DefaultMaxFeedClients is the default bound on feed clients.
const DefaultMaxFeedClients = 64

// forgetDevice drops everything keyed by a device evicted from the table:
// its recent ring, its pending face-lost abort, and the vision and audio
// caches (whose long-poll waiters get their 404). It does no I/O, so
// Ingest runs it in order with its broadcasts.
func (s *Service) forgetDevice(device string) {
	s.bus.Forget(device)
	s.consumers.cancelAbort(device)
	s.consumers.stopWatch(device, "forgotten")
	if x := s.cfg.Senses; x != nil {
		x.Forget(device)
	}
	if m := s.cfg.Metrics; m != nil && m.DevicesEvicted != nil {
		m.DevicesEvicted.Inc()
	}
}

// logEviction logs evictions at most once a minute, with how many there
// were since the last line: a flood evicts thousands a second. It writes
// the log, so it runs with no lock held.
func (s *Service) logEviction(device string) {
	n, ok := s.warns.due("evicted")
	if !ok {
		return
	}
	s.log.Warn("perception device table full; forgot the least recently seen devices",
		"evicted", n, "limit", s.cfg.MaxDevices, "last", device)
}

// States is the per-device state store.
func (s *Service) States() *States { return s.states }

// Household is the roster the consumers use (HOUSEHOLD_YAML_PATH).
func (s *Service) Household() *Household { return s.consumers.house }

// Bus is the event bus.
func (s *Service) Bus() *Bus { return s.bus }

// Ingest applies ev to its device's state, then broadcasts it; the two
// happen in one total order across callers, so every subscriber sees state
// at least as new as the event. POSTed events, synthetic head_turns and
// face_recognized events from any source all come through here; their
// data was bounded to MaxData when it was made (Data). A new device past
// MaxDevices evicts the least recently seen one, which is forgotten in the
// same order.
//
// Freshness is judged on the bridge's clock: ev.TS is clamped to it first
// (clampTS), so a sender's clock cannot keep anything fresh.
func (s *Service) Ingest(ev Event) {
	ev.TS = clampTS(ev.TS, s.clock.Now())
	s.order.Lock()
	gone, evicted := s.states.apply(ev)
	if evicted {
		s.forgetDevice(gone)
	}
	s.bus.Publish(ev)
	s.order.Unlock()
	if evicted {
		s.logEviction(gone)
	}
}

// Broadcast publishes ev without touching state (audio_captioned,
// scene_synthesised).
func (s *Service) Broadcast(ev Event) {
	s.order.Lock()
	s.bus.Publish(ev)
	s.order.Unlock()
}

// Routes mounts the perception routes: the robots' event route, open to
// the relay, and the reads that show the household, behind Access.Private.
func (s *Service) Routes(e *echo.Echo) {
	private := s.cfg.Access.Private
	e.POST("/api/perception/event", s.postEvent)
	e.GET("/api/perception/state", s.getState, private)
	e.GET("/api/perception/recent", s.getRecent, private)
	e.GET("/api/perception/feed", s.feed, private)
	e.GET("/api/perception/scene", s.getScene, private)
	e.GET("/api/security/recent", s.getSecurityRecent, private)
}

// maxEventBody bounds a POSTed event: real events are a few hundred bytes.
const maxEventBody = 64 << 10

// eventBody is POST /api/perception/event, fields kept raw for validation.
type eventBody struct {
	DeviceID json.RawMessage `json:"device_id"`
	TS       json.RawMessage `json:"ts"`
	Name     json.RawMessage `json:"name"`
	Data     json.RawMessage `json:"data"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// postEvent is POST /api/perception/event: 204 with no body.
func (s *Service) postEvent(c echo.Context) error {
	start := time.Now()
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	req := c.Request()
	if req.ContentLength > maxEventBody { // refused unread: it takes nothing from the upload budget
		return httpapi.BodyError(&http.MaxBytesError{Limit: maxEventBody}, maxEventBody)
	}
	n, err := buf.ReadFrom(io.LimitReader(req.Body, maxEventBody+1))
	if err == nil && n > maxEventBody {
		err = &http.MaxBytesError{Limit: maxEventBody}
	}
	if err != nil {
		return httpapi.BodyError(err, maxEventBody)
	}
	ev, apiErr := s.decodeEvent(buf.Bytes())
	if apiErr != nil {
		return apiErr
	}
	s.Ingest(ev)
	if s.log.IsDebug() {
		s.log.Debug("perception event", "device", ev.DeviceID, "name", ev.Name)
	}
	c.Response().WriteHeader(http.StatusNoContent)
	if s.cfg.RequestDuration != nil {
		s.cfg.RequestDuration.Observe(time.Since(start).Seconds())
	}
	return nil
}

// decodeEvent validates a body the way FastAPI validated bridge.py's
// model: name required (a string, "" allowed), device_id a string
// ("unknown" when absent), ts a number or null (now), data an object (null
// or absent: {}). Unknown fields are ignored.
func (s *Service) decodeEvent(b []byte) (Event, error) {
	if ev, err, ok := decodeEventFast(b); ok {
		return ev, err
	}
	return s.decodeEventSlow(b)
}

// decodeEventFast decodes the shape nearly every event has in two light
// passes over the body (json.Valid, objectFields), decoding no map: all
// four fields present once, spelt as the model spells them, of the right
// types, none null, with no escape anywhere. ok is false for any
// other body, which takes the binder's path: that one words errors as
// FastAPI did, fills in defaults and matches keys as encoding/json does
// (in any case, the last of a repeated key winning).
func decodeEventFast(b []byte) (ev Event, err error, ok bool) {
	if bytes.IndexByte(b, '\\') >= 0 || !json.Valid(b) {
		return Event{}, nil, false
	}
	if i := skipSpace(b, 0); i == len(b) || b[i] != '{' {
		return Event{}, nil, false
	}
	var device, ts, name, data []byte
	ok = true
	objectFields(b, func(key, val []byte) bool {
		var field *[]byte
		switch string(key) {
		case "device_id":
			field = &device
		case "ts":
			field = &ts
		case "name":
			field = &name
		case "data":
			field = &data
		default:
			ok = !modelKey(key)
			return ok
		}
		if *field != nil {
			ok = false // repeated
			return false
		}
		*field = val
		return true
	})
	if !ok || device == nil || ts == nil || name == nil || data == nil ||
		device[0] != '"' || name[0] != '"' || data[0] != '{' || (ts[0] != '-' && (ts[0] < '0' || ts[0] > '9')) ||
		!utf8.Valid(device) || !utf8.Valid(name) {
		return Event{}, nil, false
	}
	ev.TS, err = strconv.ParseFloat(string(ts), 64)
	if err != nil {
		return Event{}, nil, false
	}
	if ev.Data, err = newData(data); err != nil {
		return Event{}, nil, false
	}
	ev.DeviceID = string(device[1 : len(device)-1])
	if item, valid := CheckDeviceID(ev.DeviceID, "body"); !valid {
		return Event{}, httpapi.Validation(item), true
	}
	ev.Name = eventName(name[1 : len(name)-1])
	return ev, nil, true
}

// modelKey reports whether encoding/json could match key to one of the
// model's fields other than by its exact spelling (it folds case, and
// folds some non-ASCII letters to ASCII ones): such a body takes the
// binder's path.
func modelKey(key []byte) bool {
	for _, c := range key {
		if c >= 0x80 {
			return true
		}
	}
	for _, f := range [...]string{"device_id", "ts", "name", "data"} {
		if bytes.EqualFold(key, []byte(f)) {
			return true
		}
	}
	return false
}

// knownNames are the event names a robot sends most (those the events
// counter labels), kept once so that decoding one allocates nothing.
var knownNames = func() map[string]string {
	m := make(map[string]string, len(countedEvents))
	for _, n := range countedEvents {
		m[n] = n
	}
	return m
}()

// eventName is name as a string, a known one without allocating.
func eventName(name []byte) string {
	if n, ok := knownNames[string(name)]; ok {
		return n
	}
	return string(name)
}

// decodeEventSlow is decodeEvent through the binder.
func (s *Service) decodeEventSlow(b []byte) (Event, error) {
	var body eventBody
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' || json.Unmarshal(b, &body) != nil {
		// Not an object, or invalid JSON: the shared decoder words it.
		if _, apiErr := httpapi.DecodeObject(b); apiErr != nil {
			return Event{}, apiErr
		}
		return Event{}, httpapi.Validation(httpapi.NotObject(httpapi.RawValue(b)))
	}
	// The binder reads the fields the struct matched (its keys match
	// case-insensitively, as before), in the model's order.
	obj := make(map[string]json.RawMessage, 4)
	set := func(name string, raw json.RawMessage) {
		if raw != nil {
			obj[name] = raw
		}
	}
	set("name", body.Name)
	set("device_id", body.DeviceID)
	set("ts", body.TS)
	set("data", body.Data)
	bd := httpapi.NewBinder(obj, b)
	ev := Event{Name: bd.String("name"), DeviceID: bd.StringOr("device_id", "unknown")}
	if ts, ok := bd.OptNumber("ts"); ok {
		ev.TS = ts
	} else {
		ev.TS = epochSeconds(s.clock.Now())
	}
	bd.OptObject("data", &ev.Data)
	if err := bd.Err(); err != nil {
		return Event{}, err
	}
	if bd.Has("device_id") {
		if item, ok := CheckDeviceID(ev.DeviceID, "body"); !ok {
			return Event{}, httpapi.Validation(item)
		}
	}
	return ev, nil
}

// getState is GET /api/perception/state[?device_id=].
func (s *Service) getState(c echo.Context) error {
	device := c.QueryParam("device_id")
	if device != "" {
		if item, ok := CheckDeviceID(device, "query"); !ok {
			return httpapi.Validation(item)
		}
	}
	body := s.states.snapshotJSON(device, device != "", s.clock.Now())
	return c.JSONBlob(http.StatusOK, body)
}

// getRecent is GET /api/perception/recent?device_id=[&limit=].
func (s *Service) getRecent(c echo.Context) error {
	device, limit, err := deviceAndLimit(c)
	if err != nil {
		return err
	}
	events := s.bus.Recent(device, limit)
	out := make([]recentJSON, len(events))
	for i, ev := range events {
		out[i] = recentJSON(ev)
	}
	return httpapi.WriteJSON(c, http.StatusOK, out)
}

// deviceAndLimit reads the optional device_id and limit (0: no limit) of
// the read routes, validated like every device id a caller names.
func deviceAndLimit(c echo.Context) (string, int, error) {
	limit := 0
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return "", 0, httpapi.Validation(httpapi.ValidationItem{Type: "int_parsing", Loc: []any{"query", "limit"},
				Msg: "Input should be a valid integer, unable to parse string as an integer", Input: v})
		}
		limit = n
	}
	device := c.QueryParam("device_id")
	if device != "" {
		if item, ok := CheckDeviceID(device, "query"); !ok {
			return "", 0, httpapi.Validation(item)
		}
	}
	return device, limit, nil
}

// Run starts the consumers and blocks until ctx ends and every consumer
// goroutine and outbound call has returned.
func (s *Service) Run(ctx context.Context) error {
	return s.runConsumers(ctx)
}
