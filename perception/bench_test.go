package perception

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
)

// BenchmarkIngest is the in-process cost of one event: state update and
// broadcast to the five default subscriptions, drained by running consumers.
func BenchmarkIngest(b *testing.B) {
	s := New(Config{Consumers: DefaultConsumers(), Logger: hclog.NewNullLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	data := DataOf(map[string]any{"direction": "left", "energy": 0.4, "firmware_ts_ms": 123456.0})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Ingest(Event{DeviceID: "dotty-aa", TS: float64(i), Name: "sound_event", Data: data})
	}
	b.StopTimer()
	cancel()
	<-done
}

// BenchmarkPostEventHTTP posts events over loopback HTTP with keep-alive
// from parallel clients to an echo server with the perception routes: the
// whole ingest path (router, decoding, state, bus, consumers).
func BenchmarkPostEventHTTP(b *testing.B) {
	s := New(Config{Consumers: DefaultConsumers(), Logger: hclog.NewNullLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	e := echo.New()
	s.Routes(e)
	ts := httptest.NewServer(e)
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := []byte(`{"device_id":"dotty-aa:bb:cc:dd:ee:01","ts":1763800000.25,"name":"sound_event","data":{"direction":"left","energy":0.41,"balance":-0.2,"firmware_ts_ms":123456}}`)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(ts.URL+"/api/perception/event", "application/json", bytes.NewReader(body))
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	})
	b.StopTimer()
	cancel()
	<-done
}

// BenchmarkIngestNewDevices is the flood path: every event names a new
// device, so each one evicts the least recently seen of a full table
// (DefaultMaxDevices) with its ring.
func BenchmarkIngestNewDevices(b *testing.B) {
	s := New(Config{Consumers: DefaultConsumers(), Logger: hclog.NewNullLogger()})
	ids := make([]string, 1<<16)
	for i := range ids {
		ids[i] = "dotty-" + strconv.Itoa(i)
	}
	data := DataOf(map[string]any{"direction": "left", "energy": 0.4})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		s.Ingest(Event{DeviceID: ids[i%len(ids)], TS: float64(i), Name: "sound_event", Data: data})
	}
}

// BenchmarkDecodeEvent: the ingest decoder on a firmware-shaped body.
func BenchmarkDecodeEvent(b *testing.B) {
	s := New(Config{Consumers: DefaultConsumers(), Logger: hclog.NewNullLogger()})
	body := []byte(`{"device_id":"dotty-aa:bb:cc:dd:ee:01","ts":1795600000.123456,"name":"sound_event","data":{"direction":"left","energy":0.731,"balance":-0.204,"firmware_ts_ms":10231}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.decodeEvent(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFeedFrame: one feed client's frame of a firmware event, written
// once per event and client.
func BenchmarkFeedFrame(b *testing.B) {
	s := New(Config{Consumers: DefaultConsumers(), Logger: hclog.NewNullLogger()})
	ev, err := s.decodeEvent([]byte(`{"device_id":"dotty-aa:bb:cc:dd:ee:01","ts":1795600000.123456,"name":"sound_event","data":{"direction":"left","energy":0.731,"balance":-0.204,"firmware_ts_ms":10231}}`))
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		s.frame(&buf, ev)
	}
}
