package benchkit

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
		res, err := Post(srv.URL, EventBodies(3, 64), 2000, 4, depth)
		if err != nil {
			t.Fatal(err)
		}
		if got.Load() != 2000 || len(res.Lat) != 2000 || res.Errors != 0 {
			t.Errorf("depth %d: server got %d, %d latencies, %d errors", depth, got.Load(), len(res.Lat), res.Errors)
		}
	}
	res, _ := Post(srv.URL, EventBodies(3, 64), 100, 2, 1)
	for i := 1; i < len(res.Lat); i++ {
		if res.Lat[i] < res.Lat[i-1] {
			t.Fatal("latencies not sorted")
		}
	}
}
