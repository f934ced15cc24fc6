package testkit

import (
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TimePosts resets the benchmark's timer, then posts the JSON body to url
// b.N times on client and returns each answer's latency. check, when not
// nil, sees each answer's status and whole body; without it the body is
// discarded.
func TimePosts(b *testing.B, client *http.Client, url, body string, check func(status int, body []byte)) []time.Duration {
	b.Helper()
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		resp, err := client.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		var out []byte
		if check != nil {
			out, err = io.ReadAll(resp.Body)
		} else {
			_, err = io.Copy(io.Discard, resp.Body)
		}
		_ = resp.Body.Close()
		samples = append(samples, time.Since(start))
		if err != nil {
			b.Fatalf("read the answer: %v", err)
		}
		if check != nil {
			check(resp.StatusCode, out)
		}
	}
	return samples
}

// ReportPercentiles adds the p50 and p99 of samples, in µs, to the
// benchmark as name-p50-µs and name-p99-µs (p50-µs and p99-µs for no
// name); no samples, no figures.
func ReportPercentiles(b *testing.B, samples []time.Duration, name string) {
	b.Helper()
	if len(samples) == 0 {
		return
	}
	if name != "" {
		name += "-"
	}
	slices.Sort(samples)
	at := func(q float64) float64 {
		return float64(samples[min(len(samples)-1, int(q*float64(len(samples))))].Microseconds())
	}
	b.ReportMetric(at(0.50), name+"p50-µs")
	b.ReportMetric(at(0.99), name+"p99-µs")
}
