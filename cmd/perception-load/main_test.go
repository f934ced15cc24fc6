package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestPostCountsEveryEvent runs the load loop against a stand-in server:
// every event arrives once and every request has a latency sample.
func TestPostCountsEveryEvent(t *testing.T) {
	var got atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/api/perception/event" && strings.Contains(string(b), `"name":`) {
			got.Add(1)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	for _, depth := range []int{1, 8} {
		got.Store(0)
		res, err := post(srv.URL, makeBodies(3, 64), 2000, 4, depth)
		if err != nil {
			t.Fatal(err)
		}
		if got.Load() != 2000 || len(res.lat) != 2000 || res.errors != 0 {
			t.Errorf("depth %d: server got %d, %d latencies, %d errors", depth, got.Load(), len(res.lat), res.errors)
		}
	}
	res, _ := post(srv.URL, makeBodies(3, 64), 100, 2, 1)
	for i := 1; i < len(res.lat); i++ {
		if res.lat[i] < res.lat[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
}

func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "# HELP x\ndotty_perception_dropped_total{consumer=\"purr_player\"} 3\ndotty_sse_evictions_total 1\nother 5\n")
	}))
	defer srv.Close()
	m, err := scrape(srv.Client(), srv.URL)
	if err != nil || m["purr_player"] != 3 || m["sse_evictions"] != 1 || len(m) != 2 {
		t.Errorf("scrape = %v, %v", m, err)
	}
}
