package perception

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// FuzzDecodeEvent feeds arbitrary bodies to the ingest decoder: it never
// panics, answers either an event or a 4xx error, an accepted event
// encodes to valid JSON for the feed and the ring, and every field a
// consumer reads from its data is the field the feed shows.
func FuzzDecodeEvent(f *testing.F) {
	for _, seed := range []string{
		`{"device_id":"d","ts":1.5,"name":"face_detected","data":{}}`,
		`{"name":""}`, `{"name":"x","data":null,"ts":null}`, `{"name":"x","ts":"12"}`,
		`[1]`, `null`, `{"name":5}`, `{"name":"x","data":[1]}`, `{"name":"x","ts":1e400}`,
		"{\"name\":\"\xff\"}", `{"name":"x","data":{"a":{"b":[1,2,{"c":null}]}}}`,
		`{"device_id":"d","ts":1,"name":"n","data":{"x":1},"NAME":"m","Data":{"y":2}}`,
		`{"device_id":"d","ts":1,"name":"n","data":{"x":1},"d\u0061ta":{"y":2}}`, `{"device_id":"d","ts":1,"name":"data","data":{}}`,
		`{"device_id":" ","ts":2,"name":"n","data":{}}`, "{\"device_id\":\"d\xff\",\"ts\":-0,\"name\":\"\",\"data\":{\"\":[]}}",
		`{"device_id":"d","ts":1,"name":"n","data":{"a":"x","a":"y","b":[1,"2",[true,null]]}}`, "{\"device_id\":\"d\",\"ts\":1,\"name\":\"n\",\"data\":{\"a\":\"\xff\"}}",
		`{"device_id":"d","ts":1,"name":"n","data":{"a":1e400}}`, `{"name":"n","data":{"a":"x\ny\u0041\"","b":["\t"]}}`, `{"name":"n","data":{"a":"x\ny"}}`, `{"device_id":"d","ts":1,"name":"n","data":{"a":-0.5E3, "b" : "c d"}}`,
	} {
		f.Add([]byte(seed))
	}
	s := New(Config{Logger: hclog.NewNullLogger()})
	f.Fuzz(func(t *testing.T, body []byte) {
		ev, err := s.decodeEvent(body)
		if _, ferr, fast := decodeEventFast(body); fast && ferr != nil {
			// A rejected device id: the binder's error, word for word.
			_, serr := s.decodeEventSlow(body)
			if serr == nil || serr.Error() != ferr.Error() {
				t.Fatalf("fast path error %v, binder %v, for %q", ferr, serr, body)
			}
		}
		if err != nil {
			var apiErr *httpapi.APIError
			if !errors.As(err, &apiErr) || apiErr.Status < 400 || apiErr.Status >= 500 {
				t.Fatalf("error %v for %q", err, body)
			}
			return
		}
		for _, enc := range [][]byte{mustJSON(t, ev), mustJSON(t, recentJSON(ev))} {
			if !json.Valid(enc) {
				t.Fatalf("invalid JSON %q for %q", enc, body)
			}
		}
		var shown map[string]any
		if err := json.Unmarshal([]byte(ev.Data.String()), &shown); err != nil || len(shown) != ev.Data.Len() {
			t.Fatalf("data %s (%v) has %d fields for %q", ev.Data, err, ev.Data.Len(), body)
		}
		for k, v := range shown {
			got, ok := ev.Data.Lookup(k)
			if !ok || string(mustMarshal(t, got)) != string(mustMarshal(t, v)) {
				t.Fatalf("field %q reads %#v, the feed shows %#v, for %q", k, got, v, body)
			}
		}
		// The one-pass decoding of common bodies is the binder's, exactly.
		if _, _, fast := decodeEventFast(body); fast {
			slow, err := s.decodeEventSlow(body)
			if err != nil || !reflect.DeepEqual(slow, ev) {
				t.Fatalf("fast and binder paths differ for %q:\n fast %#v\n slow %#v (%v)", body, ev, slow, err)
			}
		}
	})
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

func mustJSON(t *testing.T, v json.Marshaler) []byte {
	t.Helper()
	b, err := v.MarshalJSON()
	if err != nil {
		t.Fatalf("encode: %v", err)
	}
	return b
}

// TestWriteString: writeString quotes exactly as encoding/json does.
func TestWriteString(t *testing.T) {
	strs := []string{"", "dotty-aa:bb:cc:dd:ee:01", "sound_event", "é", "a\u2028b", "\xff", "<b>&", "~\x7f"}
	for c := 0; c < 0x80; c++ {
		strs = append(strs, "x"+string(rune(c))+"y")
	}
	for _, s := range strs {
		var b bytes.Buffer
		writeString(&b, s)
		if want := mustMarshal(t, s); b.String() != string(want) {
			t.Errorf("writeString(%q) = %s, encoding/json %s", s, b.String(), want)
		}
	}
}
