package perception

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// Event is one perception event: {"device_id", "ts", "name", "data"}. TS is
// wall-clock seconds since the epoch, never later than the bridge's clock
// once ingested (clampTS). Data never changes, so one event is shared by
// every subscriber.
type Event struct {
	DeviceID string
	TS       float64
	Name     string
	Data     Data
}

// Time returns TS as a time.Time.
func (e Event) Time() time.Time { return secondsTime(e.TS) }

// MarshalJSON writes the SSE feed's key order: name, data, device_id, ts.
func (e Event) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.Grow(96)
	if err := e.appendJSON(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (e Event) appendJSON(b *bytes.Buffer) error {
	b.WriteString(`{"name":`)
	writeString(b, e.Name)
	b.WriteString(`,"data":`)
	if err := writeData(b, e.Data); err != nil {
		return err
	}
	b.WriteString(`,"device_id":`)
	writeString(b, e.DeviceID)
	b.WriteString(`,"ts":`)
	writeSeconds(b, e.TS)
	b.WriteByte('}')
	return nil
}

// recentJSON is a ring entry: {"ts", "name", "data"}.
type recentJSON Event

// MarshalJSON writes {"ts","name","data"}.
func (r recentJSON) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"ts":`)
	writeSeconds(&b, r.TS)
	b.WriteString(`,"name":`)
	writeString(&b, r.Name)
	b.WriteString(`,"data":`)
	if err := writeData(&b, r.Data); err != nil {
		return nil, err
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// writeString appends s as encoding/json quotes it. A device id or an
// event name is printable ASCII that needs no escape, written as is.
func writeString(b *bytes.Buffer, s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			b.Write(enc)
			return
		}
	}
	b.WriteByte('"')
	b.WriteString(s)
	b.WriteByte('"')
}

// formatSeconds writes epoch seconds without an exponent.
func formatSeconds(f float64) string {
	return string(appendSeconds(nil, f))
}

// writeSeconds appends formatSeconds(f) to b.
func writeSeconds(b *bytes.Buffer, f float64) {
	b.Write(appendSeconds(b.AvailableBuffer(), f))
}

func appendSeconds(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'f', -1, 64)
}

// clampTS is an event's ts as the bridge keeps it, judged on the bridge's
// clock (now): a ts in the future, or one that is not a number, is now.
// One in the past is kept as sent, however far back: an event can only
// ever count as older than its arrival, never fresher, so what it sets
// (an identity, a mood, a cooldown's start) is as stale as its sender
// says, and nothing else changes.
func clampTS(ts float64, now time.Time) float64 {
	if n := epochSeconds(now); !(ts <= n) {
		return n
	}
	return ts
}

// epochSeconds converts t to float seconds.
func epochSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// secondsTime converts float seconds to a time.
func secondsTime(s float64) time.Time {
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9))
}
