package sse

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fanout"
)

// A stream says hello, writes each value as a frame, a keepalive comment
// when quiet, and one last frame when the bus evicts the client.
func TestServe(t *testing.T) {
	bus := fanout.New[int](fanout.Config{})
	clock := clockwork.NewFakeClock()
	subbed := make(chan struct{}, 1)
	e := echo.New()
	e.GET("/feed", func(c echo.Context) error {
		sub, err := bus.Watch(2)
		if err != nil {
			return err
		}
		defer sub.Close()
		subbed <- struct{}{}
		return Serve(c, Stream[int]{Sub: sub, Hello: "retry: 1\n\n", Keepalive: ": ka\n\n", Every: time.Minute, Clock: clock,
			Frame:      func(buf *bytes.Buffer, v int) { fmt.Fprintf(buf, "data: %d\n\n", v) },
			FellBehind: func(buf *bytes.Buffer) { buf.WriteString("event: fell_behind\ndata: {}\n\n") }})
	})
	ts := httptest.NewServer(e)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+"/feed", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	<-subbed
	r := bufio.NewReader(resp.Body)
	next := func() string {
		t.Helper()
		var b strings.Builder
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended after %q: %v", b.String(), err)
			}
			if line == "\n" {
				return b.String()
			}
			b.WriteString(line)
		}
	}
	if f := next(); f != "retry: 1\n" {
		t.Fatalf("first frame %q, want the hello", f)
	}
	bus.Publish(1)
	if f := next(); f != "data: 1\n" {
		t.Fatalf("frame %q, want data: 1", f)
	}
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if f := next(); f != ": ka\n" {
		t.Fatalf("frame %q, want the keepalive", f)
	}
	// While the client reads nothing, the socket fills, then the queue:
	// the bus evicts the client, and the stream ends with the last frame.
	for i := 0; bus.Watchers() > 0; i++ {
		if i == 50_000_000 {
			t.Fatal("never evicted")
		}
		bus.Publish(i)
	}
	var got []string
	for {
		f := next()
		got = append(got, f)
		if strings.HasPrefix(f, "event: fell_behind") {
			break
		}
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Errorf("the stream went on after fell_behind: %q", got)
	}
	if bus.Watchers() != 0 {
		t.Error("the evicted client is still subscribed")
	}
}
