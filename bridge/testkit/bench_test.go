package testkit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TimePosts posts the JSON body b.N times, one latency each, handing check
// every answer; ReportPercentiles names its two figures after name.
func TestTimePostsReportsPercentiles(t *testing.T) {
	var posts, good atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("Content-Type") != "application/json" || string(body) != `{"a":1}` {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	client := srv.Client()
	client.Timeout = MinWait
	var lost atomic.Int64 // b.N minus the samples, over every round
	res := testing.Benchmark(func(b *testing.B) {
		samples := TimePosts(b, client, srv.URL, `{"a":1}`, func(status int, body []byte) {
			if status == http.StatusCreated && string(body) == "ok" {
				good.Add(1)
			}
		})
		lost.Add(int64(b.N - len(samples)))
		ReportPercentiles(b, samples, "post")
	})
	if n := posts.Load(); n == 0 || good.Load() != n || lost.Load() != 0 {
		t.Errorf("%d posts, %d answered as sent, %d samples missing", n, good.Load(), lost.Load())
	}
	p50, ok50 := res.Extra["post-p50-µs"]
	p99, ok99 := res.Extra["post-p99-µs"]
	if !ok50 || !ok99 || p99 < p50 {
		t.Errorf("figures %v", res.Extra)
	}
	res = testing.Benchmark(func(b *testing.B) { ReportPercentiles(b, nil, "") })
	if len(res.Extra) != 0 {
		t.Errorf("no samples reported %v", res.Extra)
	}
}
