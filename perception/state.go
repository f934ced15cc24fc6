package perception

import (
	"bytes"
	"encoding/json"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/internal/lru"
)

// DeviceState is what the bridge knows about one robot, written from event
// timestamps (wall-clock seconds). A nil pointer is a field never written;
// GET /api/perception/state omits it, as bridge.py's dict did.
type DeviceState struct {
	FacePresent         *bool
	LastFaceT           *float64
	LastFaceLostT       *float64
	LastSoundDir        any // data.direction as sent, nil for JSON null
	LastSoundT          *float64
	LastSoundEnergy     any
	soundSet            bool
	CurrentState        *string
	LastStateChangeT    *float64
	DanceActive         *bool
	LastDanceStartedT   *float64
	LastDanceEndedT     *float64
	Listening           *bool
	LastChatStatusT     *float64
	LastFaceID          *string
	LastFaceRecognizedT *float64
	LastEventT          *float64
	LastEventName       *string

	// Written by the consumers.
	LastFaceGreetT *float64
	LastNameGreetT map[string]float64
	LastSoundTurnT *float64
	LastPurrT      *float64
	LastChatT      *float64

	// Written by the vision paths (vision issue).
	FaceMood               *string
	FaceMoodT              *float64
	LastRoomViewCaptureT   *float64
	LastIdlePerceptionText *string
	LastIdlePerceptionT    *float64

	// Written by scene synthesis; not part of /api/perception/state (its
	// own route serves it). A Scene is never changed once stored, so
	// copies share it.
	Scene *Scene
}

// Scene is a device's latest scene synthesis: the one-line summary the
// prompt's perception block and the dashboard read.
type Scene struct {
	Text   string  `json:"text"`
	TSWall float64 `json:"ts_wall"`
	FaceID *string `json:"face_id"`
	State  string  `json:"state"`
}

// MaxNameGreets bounds LastNameGreetT: the household is a few people, and
// a stream of invented identities must not grow a device's state.
const MaxNameGreets = 32

// NoteNameGreet records a named greeting of id at t, forgetting the
// longest-ago greeted identity when MaxNameGreets are already kept.
func (d *DeviceState) NoteNameGreet(id string, t float64) {
	if d.LastNameGreetT == nil {
		d.LastNameGreetT = map[string]float64{}
	}
	if _, ok := d.LastNameGreetT[id]; !ok && len(d.LastNameGreetT) >= MaxNameGreets {
		oldest, at := "", 0.0
		for k, v := range d.LastNameGreetT {
			if oldest == "" || v < at {
				oldest, at = k, v
			}
		}
		delete(d.LastNameGreetT, oldest)
	}
	d.LastNameGreetT[id] = t
}

// State returns the current state, "idle" when never set.
func (d *DeviceState) State() string {
	if d.CurrentState == nil || *d.CurrentState == "" {
		return "idle"
	}
	return *d.CurrentState
}

// FreshIdentity returns the recognised person when last_face_id is set,
// not "unknown", and recognised at most ttl before now.
func (d *DeviceState) FreshIdentity(now time.Time, ttl time.Duration) (string, bool) {
	if d.LastFaceID == nil || d.LastFaceRecognizedT == nil {
		return "", false
	}
	id := strings.TrimSpace(*d.LastFaceID)
	if id == "" || id == "unknown" {
		return "", false
	}
	if epochSeconds(now)-*d.LastFaceRecognizedT > ttl.Seconds() {
		return "", false
	}
	return id, true
}

// clone returns a deep copy.
func (d *DeviceState) clone() DeviceState {
	c := *d
	c.LastNameGreetT = maps.Clone(d.LastNameGreetT)
	return c
}

func ptr[T any](v T) *T { return &v }

// EventState is a state_changed event's state as the state table and the
// consumers compare it: surrounding whitespace stripped (Python's strip),
// in lower case; "" when absent or not a string.
func EventState(ev Event) string {
	s, _ := ev.Data.Text("state")
	return strings.ToLower(text.Strip(s))
}

// orZero is a state timestamp, 0 when never written ("missing counts as 0").
func orZero(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

func isTrue(p *bool) bool { return p != nil && *p }

// apply writes ev into d: the fields each event name sets, as bridge.py.
func (d *DeviceState) apply(ev Event) {
	ts := ev.TS
	d.LastEventT, d.LastEventName = ptr(ts), ptr(ev.Name)
	switch ev.Name {
	case "face_detected":
		d.FacePresent, d.LastFaceT = ptr(true), ptr(ts)
	case "face_lost":
		d.FacePresent, d.LastFaceLostT = ptr(false), ptr(ts)
	case "sound_event":
		d.LastSoundDir, d.LastSoundEnergy, d.soundSet = ev.Data.Get("direction"), ev.Data.Get("energy"), true
		d.LastSoundT = ptr(ts)
	case "state_changed":
		s := EventState(ev)
		if s == "" {
			return
		}
		d.CurrentState, d.LastStateChangeT = ptr(s), ptr(ts)
		if s == "dance" {
			d.DanceActive = ptr(true)
		} else if isTrue(d.DanceActive) {
			d.DanceActive = ptr(false)
		}
	case "dance_started":
		d.DanceActive, d.LastDanceStartedT = ptr(true), ptr(ts)
	case "dance_ended":
		d.DanceActive, d.LastDanceEndedT = ptr(false), ptr(ts)
	case "chat_status":
		d.Listening, d.LastChatStatusT = ptr(pyTruthy(ev.Data.Get("listening"))), ptr(ts)
	case "face_recognized":
		id, _ := ev.Data.Text("identity")
		if id = text.Strip(id); id != "" {
			d.LastFaceID, d.LastFaceRecognizedT = ptr(id), ptr(ts)
		}
	}
}

// pyTruthy is Python's bool() of a decoded JSON value.
func pyTruthy(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

// StaleAfter is the age past which a device's sensors count as stale.
const StaleAfter = 30 * time.Second

// appendJSON writes d's set fields, then sensor_age_s and sensor_stale
// computed at now.
func (d *DeviceState) appendJSON(b *bytes.Buffer, now time.Time) {
	first := true
	key := func(k string) {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteByte('"')
		b.WriteString(k)
		b.WriteString(`":`)
	}
	val := func(v any) {
		enc, err := json.Marshal(v)
		if err != nil {
			enc = []byte("null")
		}
		b.Write(enc)
	}
	f := func(k string, p *float64) {
		if p != nil {
			key(k)
			b.WriteString(formatSeconds(*p))
		}
	}
	bo := func(k string, p *bool) {
		if p != nil {
			key(k)
			val(*p)
		}
	}
	s := func(k string, p *string) {
		if p != nil {
			key(k)
			val(*p)
		}
	}
	b.WriteByte('{')
	bo("face_present", d.FacePresent)
	f("last_face_t", d.LastFaceT)
	f("last_face_lost_t", d.LastFaceLostT)
	if d.soundSet {
		key("last_sound_dir")
		val(d.LastSoundDir)
	}
	f("last_sound_t", d.LastSoundT)
	if d.soundSet {
		key("last_sound_energy")
		val(d.LastSoundEnergy)
	}
	s("current_state", d.CurrentState)
	f("last_state_change_t", d.LastStateChangeT)
	bo("dance_active", d.DanceActive)
	f("last_dance_started_t", d.LastDanceStartedT)
	f("last_dance_ended_t", d.LastDanceEndedT)
	bo("listening", d.Listening)
	f("last_chat_status_t", d.LastChatStatusT)
	s("last_face_id", d.LastFaceID)
	f("last_face_recognized_t", d.LastFaceRecognizedT)
	f("last_face_greet_t", d.LastFaceGreetT)
	if d.LastNameGreetT != nil {
		key("last_name_greet_t")
		ids := make([]string, 0, len(d.LastNameGreetT))
		for id := range d.LastNameGreetT {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		b.WriteByte('{')
		for i, id := range ids {
			if i > 0 {
				b.WriteByte(',')
			}
			val(id)
			b.WriteByte(':')
			b.WriteString(formatSeconds(d.LastNameGreetT[id]))
		}
		b.WriteByte('}')
	}
	f("last_sound_turn_t", d.LastSoundTurnT)
	f("last_purr_t", d.LastPurrT)
	f("last_chat_t", d.LastChatT)
	s("face_mood", d.FaceMood)
	f("face_mood_t", d.FaceMoodT)
	f("last_room_view_capture_t", d.LastRoomViewCaptureT)
	s("last_idle_perception_text", d.LastIdlePerceptionText)
	f("last_idle_perception_t", d.LastIdlePerceptionT)
	f("last_event_t", d.LastEventT)
	s("last_event_name", d.LastEventName)
	age, stale := sensorAge(d.LastEventT, now)
	key("sensor_age_s")
	if age == nil {
		b.WriteString("null")
	} else {
		b.WriteString(formatSeconds(*age))
	}
	key("sensor_stale")
	val(stale)
	b.WriteByte('}')
}

// sensorAge is /api/perception/state's annotation: max(0, now − last_event_t), nil
// when there is no event time; stale when the age is over 30 s or unknown.
func sensorAge(last *float64, now time.Time) (*float64, bool) {
	if last == nil {
		return nil, true
	}
	age := max(0, epochSeconds(now)-*last)
	return &age, age > StaleAfter.Seconds()
}

// DefaultMaxDevices is the default bound of the device table.
const DefaultMaxDevices = 256

// States holds every device's state behind one mutex. Readers get copies.
// It keeps at most max devices: a new one past that evicts the least
// recently seen, and onEvict (called after the lock is released) forgets
// everything else keyed by it.
type States struct {
	mu      sync.Mutex
	devices *lru.Cache[string, *DeviceState]
	onEvict func(device string)
}

func newStates(max int) *States {
	if max <= 0 {
		max = DefaultMaxDevices
	}
	return &States{devices: lru.New[string, *DeviceState](max)}
}

func newDeviceState() *DeviceState { return &DeviceState{} }

// apply is DeviceState.apply for ev's device, returning the device
// evicted to make room, if any; the caller (Ingest) forgets it, so that
// the forgetting is ordered with its broadcasts.
func (s *States) apply(ev Event) (gone string, evicted bool) {
	s.mu.Lock()
	d, gone, evicted := s.devices.Use(ev.DeviceID, newDeviceState)
	d.apply(ev)
	s.mu.Unlock()
	return gone, evicted
}

// Len reports how many devices are kept.
func (s *States) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.devices.Len()
}

// Get returns a copy of a device's state; ok is false for a device never
// seen or forgotten.
func (s *States) Get(device string) (DeviceState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices.Get(device)
	if !ok {
		return DeviceState{}, false
	}
	return d.clone(), true
}

// Update runs fn on a device's state under the lock (creating it, which
// may evict the least recently seen device), for check-and-set gates. fn
// must not block.
func (s *States) Update(device string, fn func(d *DeviceState)) {
	s.mu.Lock()
	d, gone, evicted := s.devices.Use(device, newDeviceState)
	fn(d)
	s.mu.Unlock()
	if evicted && s.onEvict != nil {
		s.onEvict(gone)
	}
}

// Amend runs fn on a kept device's state under the lock, for the
// consumers that finish their work after a wait: unlike Update it never
// brings back a device forgotten meanwhile. It reports whether the device
// was there. fn must not block.
func (s *States) Amend(device string, fn func(d *DeviceState)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.devices.Get(device)
	if ok {
		fn(d)
	}
	return ok
}

// Latest returns the most recently seen device with a real id (not "" or
// "unknown").
func (s *States) Latest() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.devices.All() {
		if id != "" && id != "unknown" {
			return id, true
		}
	}
	return "", false
}

// Devices returns the ids of every device kept, sorted.
func (s *States) Devices() []string {
	s.mu.Lock()
	ids := make([]string, 0, s.devices.Len())
	for id := range s.devices.All() {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	sort.Strings(ids)
	return ids
}

// snapshotJSON writes {"<device>": <annotated state>, …} for every device
// seen, or for only the one named (also when never seen).
func (s *States) snapshotJSON(device string, only bool, now time.Time) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	if only {
		st, _ := s.Get(device)
		writeString(&b, device)
		b.WriteByte(':')
		st.appendJSON(&b, now)
	} else {
		for i, id := range s.Devices() {
			st, ok := s.Get(id)
			if !ok {
				continue
			}
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(&b, id)
			b.WriteByte(':')
			st.appendJSON(&b, now)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}
