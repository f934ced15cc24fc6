package perception

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var brisbane = testkit.Zone("Australia/Brisbane")

// t0 is 10:00 in Brisbane, inside the greeting hours.
var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, brisbane)

func at(sec float64) float64 { return epochSeconds(t0) + sec }

type env struct {
	s     *Service
	c     *consumers
	clock *clockwork.FakeClock
	xz    *xiaozhitest.Server
	url   string

	events, dropped *prometheus.CounterVec
	evictions       prometheus.Counter
}

// newEnv builds a service on a fake clock at t0 whose robot is a recording
// fake xiaozhi, serving its routes on an httptest server.
func newEnv(t *testing.T, edit func(*Config)) *env {
	t.Helper()
	e := &env{clock: clockwork.NewFakeClockAt(t0), xz: xiaozhitest.New(t)}
	e.events = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "events"}, []string{"type"})
	e.dropped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "dropped"}, []string{"consumer"})
	e.evictions = prometheus.NewCounter(prometheus.CounterOpts{Name: "evictions"})
	host, port := e.xz.HostPort()
	cfg := Config{
		Robot:     xiaozhi.New(xiaozhi.Config{Host: host, Port: port}),
		Consumers: DefaultConsumers(),
		Location:  brisbane,
		Clock:     e.clock,
		Metrics:   &Metrics{Events: e.events, Dropped: e.dropped, Evictions: e.evictions},
		Logger:    hclog.NewNullLogger(),
	}
	cfg.Consumers.HouseholdPath = filepath.Join(t.TempDir(), "household.yaml")
	if edit != nil {
		edit(&cfg)
	}
	e.s = New(cfg)
	e.c = e.s.consumers
	ech := echo.New()
	ech.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	e.s.Routes(ech)
	ts := httptest.NewServer(ech)
	t.Cleanup(ts.Close)
	e.url = ts.URL
	return e
}

// fire ingests ev, runs consumer's handler on it synchronously and waits
// for the robot calls it started.
func (e *env) fire(consumer string, ev Event) {
	e.s.Ingest(ev)
	e.c.handler(consumer)(context.Background(), ev)
	e.c.inflight.Wait()
}

// handler is consumer's handler as consumerTable builds it, whether or
// not the consumer is enabled.
func (c *consumers) handler(name string) Handler {
	for _, row := range consumerTable {
		if row.name == name {
			return row.build(c).handle
		}
	}
	return nil
}

// subscribed reports whether consumer name is on the bus.
func (c *consumers) subscribed(name string) bool {
	return slices.ContainsFunc(c.subs, func(s *Consumer) bool { return s.Name() == name })
}

func (e *env) post(t *testing.T, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(e.url+"/api/perception/event", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// get GETs path and returns the body of its 200 answer.
func (e *env) get(t *testing.T, path string) string {
	t.Helper()
	code, body := testkit.Get(t, e.url+path)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return body
}

func ev(device, name string, ts float64, data map[string]any) Event {
	return Event{DeviceID: device, Name: name, TS: ts, Data: DataOf(data)}
}

// calls renders the recorded admin calls as "path body" lines.
func (e *env) calls() []string {
	var out []string
	for _, c := range e.xz.Calls() {
		out = append(out, strings.TrimPrefix(c.Path, "/xiaozhi/admin/")+" "+string(c.Raw))
	}
	return out
}

func wantCalls(t *testing.T, e *env, want ...string) {
	t.Helper()
	got := e.calls()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("admin calls:\n got %q\nwant %q", got, want)
	}
}

func TestPostEvent(t *testing.T) {
	e := newEnv(t, nil)
	tests := []struct {
		name, body string
		status     int
		detail     string
	}{
		{"full", `{"device_id":"d1","ts":1763800000.25,"name":"face_detected","data":{"firmware_ts_ms":123}}`, 204, ""},
		{"extra fields and unknown name", `{"device_id":"d1","ts":1,"name":"mystery","data":{},"extra":true}`, 204, ""},
		{"empty name", `{"name":""}`, 204, ""},
		{"null data and ts", `{"name":"x","data":null,"ts":null,"device_id":"n"}`, 204, ""},
		{"ts as numeric string", `{"name":"x","ts":"12.5"}`, 204, ""},
		{"duplicate names, the last wins", `{"name":"first","name":"dup","device_id":"dups"}`, 204, ""},
		{"invalid UTF-8 is replaced", "{\"name\":\"bad\xff\",\"device_id\":\"utf\"}", 204, ""},
		{"missing name", `{"device_id":"d1"}`, 422, `"type":"missing","loc":["body","name"]`},
		{"name not a string", `{"name":5}`, 422, `"type":"string_type","loc":["body","name"]`},
		{"device_id not a string", `{"name":"x","device_id":null}`, 422, `"loc":["body","device_id"]`},
		{"data not an object", `{"name":"x","data":[1]}`, 422, `"type":"dict_type","loc":["body","data"]`},
		{"ts not a number", `{"name":"x","ts":"soon"}`, 422, `"type":"float_parsing","loc":["body","ts"]`},
		{"not an object", `[1,2]`, 422, `"detail"`},
		{"not JSON", `{"name":`, 422, `"json_invalid"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := e.post(t, tt.body)
			if code != tt.status || (tt.status == 204 && body != "") || !strings.Contains(body, tt.detail) {
				t.Errorf("%d %s", code, body)
			}
		})
	}
	if st, _ := e.s.states.Get("dups"); st.LastEventName == nil || *st.LastEventName != "dup" {
		t.Errorf("duplicate names: %+v", st)
	}
	if st, _ := e.s.states.Get("utf"); st.LastEventName == nil || *st.LastEventName != "bad\ufffd" {
		t.Errorf("invalid UTF-8: %q", *st.LastEventName)
	}
	if st, ok := e.s.states.Get("unknown"); !ok || *st.LastEventT != 12.5 {
		t.Errorf("absent device_id: state %+v", st)
	}
	st, _ := e.s.states.Get("n")
	if st.LastEventT == nil || *st.LastEventT != epochSeconds(t0) {
		t.Errorf("ts null: last_event_t %v, want the clock's now", st.LastEventT)
	}
	d1, _ := e.s.states.Get("d1")
	if *d1.LastEventName != "mystery" || *d1.LastEventT != 1 || !*d1.FacePresent || *d1.LastFaceT != 1763800000.25 {
		t.Errorf("d1 state after an unknown event: %+v", d1)
	}
	if got := testutil.ToFloat64(e.events.WithLabelValues("face_detected")); got != 1 {
		t.Errorf("face_detected counted %v times", got)
	}
	if n := testutil.CollectAndCount(e.events); n != len(countedEvents) {
		t.Errorf("%d event type labels, want only the %d counted names", n, len(countedEvents))
	}
}

func TestStateFields(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.Clock = clockwork.NewFakeClockAt(secondsTime(12)) })
	for _, x := range []Event{
		ev("d", "face_detected", 1, nil),
		ev("d", "face_lost", 2, nil),
		ev("d", "sound_event", 3, map[string]any{"direction": "left", "energy": 0.5}),
		ev("d", "state_changed", 4, map[string]any{"state": "  DANCE "}),
		ev("d", "state_changed", 5, map[string]any{"state": "   "}),
		ev("d", "dance_started", 6, map[string]any{"dance": "robot"}),
		ev("d", "chat_status", 7, map[string]any{"listening": 1.0}),
		ev("d", "face_recognized", 8, map[string]any{"identity": " alex "}),
		ev("d", "face_recognized", 9, map[string]any{"identity": "  "}),
		ev("d", "state_changed", 10, map[string]any{"state": "story_time"}),
	} {
		e.s.Ingest(x)
	}
	got := e.get(t, "/api/perception/state?device_id=d")
	want := `{"d":{"face_present":false,"last_face_t":1,"last_face_lost_t":2,"last_sound_dir":"left","last_sound_t":3,` +
		`"last_sound_energy":0.5,"current_state":"story_time","last_state_change_t":10,"dance_active":false,` +
		`"last_dance_started_t":6,"listening":true,"last_chat_status_t":7,"last_face_id":"alex","last_face_recognized_t":8,` +
		`"last_event_t":10,"last_event_name":"state_changed","sensor_age_s":2,"sensor_stale":false}}`
	if got != want {
		t.Errorf("state:\n got %s\nwant %s", got, want)
	}
	// A sound without direction stores nulls; chat_status uses Python truthiness.
	e.s.Ingest(ev("d", "sound_event", 11, map[string]any{}))
	e.s.Ingest(ev("d", "chat_status", 11, map[string]any{"listening": ""}))
	e.s.Ingest(ev("d", "dance_ended", 11, nil))
	got = e.get(t, "/api/perception/state?device_id=d")
	for _, frag := range []string{`"last_sound_dir":null`, `"last_sound_energy":null`, `"listening":false`, `"dance_active":false`, `"last_dance_ended_t":11`} {
		if !strings.Contains(got, frag) {
			t.Errorf("state lacks %s: %s", frag, got)
		}
	}
}

func TestSensorAge(t *testing.T) {
	now := t0
	base := epochSeconds(now)
	for _, tt := range []struct {
		name  string
		last  *float64
		age   string
		stale bool
	}{
		{"1 s", ptr(base - 1), "1", false},
		{"exactly 30 s", ptr(base - 30), "30", false},
		{"29.999 s", ptr(base - 29.999), "", false},
		{"30.001 s", ptr(base - 30.001), "", true},
		{"31 s", ptr(base - 31), "31", true},
		{"never", nil, "null", true},
		{"future", ptr(base + 100), "0", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := DeviceState{LastEventT: tt.last}
			var b bytes.Buffer
			d.appendJSON(&b, now)
			var got struct {
				Age   *float64 `json:"sensor_age_s"`
				Stale bool     `json:"sensor_stale"`
			}
			if err := json.Unmarshal(b.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.Stale != tt.stale || (tt.age == "null") != (got.Age == nil) {
				t.Errorf("%s", b.String())
			}
			if tt.age != "" && tt.age != "null" && fmt.Sprint(*got.Age) != tt.age {
				t.Errorf("age %v, want %s", *got.Age, tt.age)
			}
		})
	}
}

func TestStateRoute(t *testing.T) {
	e := newEnv(t, nil)
	if got := e.get(t, "/api/perception/state"); got != `{}` {
		t.Errorf("empty state %s", got)
	}
	e.s.Ingest(ev("b", "face_lost", at(-5), nil))
	e.s.Ingest(ev("a", "face_detected", at(-40), nil))
	got := e.get(t, "/api/perception/state")
	var all map[string]map[string]any
	if err := json.Unmarshal([]byte(got), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all["a"]["sensor_stale"] != true || all["b"]["sensor_stale"] != false || all["b"]["sensor_age_s"] != 5.0 {
		t.Errorf("all devices %s", got)
	}
	if got := e.get(t, "/api/perception/state?device_id=nobody"); got != `{"nobody":{"sensor_age_s":null,"sensor_stale":true}}` {
		t.Errorf("never-seen device %s", got)
	}
	// The stored state is not annotated.
	if st, _ := e.s.states.Get("a"); st.LastEventName == nil {
		t.Error("state lost")
	}
}

func TestRecentRing(t *testing.T) {
	e := newEnv(t, nil)
	for i := range 25 {
		e.s.Ingest(ev("d", fmt.Sprintf("e%d", i), float64(i), map[string]any{"i": i}))
	}
	e.s.Ingest(ev("", "x", 1, nil))
	e.s.Ingest(ev("unknown", "x", 1, nil))
	var got []map[string]any
	if err := json.Unmarshal([]byte(e.get(t, "/api/perception/recent?device_id=d")), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 20 || got[0]["name"] != "e24" || got[19]["name"] != "e5" || got[0]["ts"] != 24.0 {
		t.Errorf("ring %v", got)
	}
	if raw := e.get(t, "/api/perception/recent?device_id=d&limit=2"); raw != `[{"ts":24,"name":"e24","data":{"i":24}},{"ts":23,"name":"e23","data":{"i":23}}]` {
		t.Errorf("limit 2: %s", raw)
	}
	for _, dev := range []string{"", "unknown", "nobody"} {
		if raw := e.get(t, "/api/perception/recent?device_id="+dev); raw != `[]` {
			t.Errorf("device %q: %s", dev, raw)
		}
	}
	if code, _ := testkit.Get(t, e.url+"/api/perception/recent?device_id=d&limit=x"); code != 422 {
		t.Errorf("bad limit: %d", code)
	}
}

// TestEventDataKeptAsSent: plain data is kept as the JSON it came in
// (key order, number spelling); data that is not plain is decoded and
// re-encoded, so a key repeated inside data or invalid UTF-8 reads the
// same to a consumer as on the feed: the last key alone, U+FFFD.
func TestEventDataKeptAsSent(t *testing.T) {
	s := New(Config{Logger: hclog.NewNullLogger()})
	for _, tc := range []struct{ data, shown, identity string }{
		{`{"identity":"alex","energy":0.50,"list":[1,"a b",[true]]}`, `{"identity":"alex","energy":0.50,"list":[1,"a b",[true]]}`, "alex"},
		{`{"identity":"alex","identity":"mallory"}`, `{"identity":"mallory"}`, "mallory"},
		{"{\"identity\":\"al\xffex\"}", "{\"identity\":\"al\uFFFDex\"}", "al\uFFFDex"},
		{`{"identity":"al\u0065x","phrase":"hey\ndotty"}`, "{\"identity\":\"alex\",\"phrase\":\"hey\\ndotty\"}", "alex"},
		{`{"identity": "alex", "n": 1e2}`, `{"identity":"alex","n":100}`, "alex"},
		{`{"identity":"alex","nested":{"identity":"sam"}}`, `{"identity":"alex","nested":{"identity":"sam"}}`, "alex"},
		{`{}`, `{}`, ""},
	} {
		for _, body := range []string{
			`{"device_id":"d","ts":1,"name":"face_recognized","data":` + tc.data + `}`, // fast path when plain
			`{"name":"face_recognized","device_id":"d","data":` + tc.data + `}`,        // the binder's
		} {
			ev, err := s.decodeEvent([]byte(body))
			if err != nil {
				t.Fatalf("%s: %v", body, err)
			}
			if got := ev.Data.String(); got != tc.shown {
				t.Errorf("%s: data shown as %s, want %s", body, got, tc.shown)
			}
			if id, _ := ev.Data.Text("identity"); id != tc.identity {
				t.Errorf("%s: identity reads %q, want %q", body, id, tc.identity)
			}
		}
	}
	ev, err := s.decodeEvent([]byte(`{"device_id":"d","ts":1,"name":"n","data":{"x":1e400}}`))
	if err == nil || !strings.Contains(err.Error(), "dict_type") {
		t.Errorf("data with a number out of range: %+v, %v; want the 422 a map gave", ev, err)
	}
}

// TestDecodeEventFastPath: a firmware-shaped body is decoded in one pass,
// and bodies whose data key may be repeated (twice in another case, or
// spelt with an escape) are left to the binder, whose last key wins.
func TestDecodeEventFastPath(t *testing.T) {
	for _, tc := range []struct {
		body string
		fast bool
	}{
		{`{"device_id":"dotty-1","ts":1795600000.5,"name":"sound_event","data":{"direction":"left","energy":0.7}}`, true},
		{`{"device_id":"dotty-1","ts":1,"name":"n","data":{"x":1},"Data":{"y":2}}`, false},
		{`{"device_id":"dotty-1","ts":1,"name":"n","data":{"x":1},"d\u0061ta":{"y":2}}`, false},
		{`{"device_id":"dotty-1","ts":1,"name":"n","data":null}`, false},
	} {
		ev, err, fast := decodeEventFast([]byte(tc.body))
		if fast != tc.fast || err != nil {
			t.Errorf("decodeEventFast(%s): fast %v, error %v; want fast %v", tc.body, fast, err, tc.fast)
		}
		if fast && (ev.Data.Get("direction") != "left" || ev.DeviceID != "dotty-1" || ev.Name != "sound_event") {
			t.Errorf("decodeEventFast(%s) = %+v", tc.body, ev)
		}
	}
	s := New(Config{Logger: hclog.NewNullLogger()})
	ev, err := s.decodeEvent([]byte(`{"device_id":"dotty-1","ts":1,"name":"n","data":{"x":1},"Data":{"y":2}}`))
	if err != nil || ev.Data.Len() != 1 || ev.Data.Get("y") != 2.0 {
		t.Errorf("repeated data key: %+v, %v; want the last object alone", ev.Data, err)
	}
}
