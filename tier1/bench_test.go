package tier1

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// bigBrain writes n rows of 12 words from a 2000-word vocabulary into a
// fresh brain.db; the phrase "likes dinosaurs" appears in about 1 row in 500.
func bigBrain(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "brain.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for _, s := range memstore.Schema {
		if _, err := db.Exec(s); err != nil {
			b.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 2000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%03dx", i)
	}
	tx, _ := db.Begin()
	stmt, _ := tx.Prepare(`INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance) VALUES (?, ?, ?, 'core', 't', 't', 'voice', 0.7)`)
	for i := 0; i < n; i++ {
		words := make([]string, 12)
		for j := range words {
			words[j] = vocab[r.IntN(len(vocab))]
		}
		if i%500 == 0 {
			words[3], words[4] = "likes", "dinosaurs"
		}
		if _, err := stmt.Exec(fmt.Sprint(i), fmt.Sprint("k", i), strings.Join(words, " ")); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchServer serves store's routes and runs its writer until the
// benchmark ends. The client it returns is the server's own, so its
// kept-alive connections close with it and the package's leak check stays
// quiet.
func benchServer(b *testing.B, store *memstore.Store) (string, *http.Client) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = store.Run(ctx) }()
	b.Cleanup(func() { cancel(); <-done })
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	New(Config{Memory: store}).Routes(e)
	ts := httptest.NewServer(e)
	b.Cleanup(ts.Close)
	return ts.URL, ts.Client()
}

// BenchmarkMemoryLookup100k is one memory_lookup escalation over HTTP
// against a 100 000-row brain.db.
func BenchmarkMemoryLookup100k(b *testing.B) {
	store := memstore.New(memstore.Config{Path: bigBrain(b, 100_000)})
	url, client := benchServer(b, store)
	url += "/api/voice/escalate"
	body := `{"tool":"memory_lookup","args":{"query":"likes dinosaurs"},"session_id":""}`
	samples := testkit.TimePosts(b, client, url, body, func(_ int, out []byte) {
		if !strings.Contains(string(out), "likes dinosaurs") {
			b.Fatalf("no hit: %s", out)
		}
	})
	testkit.ReportPercentiles(b, samples, "")
}

// BenchmarkRememberUnderLock is POST /api/voice/remember while another
// connection holds brain.db locked: the reply must not wait for the lock.
func BenchmarkRememberUnderLock(b *testing.B) {
	path := memstoretest.V1(b)
	store := memstore.New(memstore.Config{Path: path, QueueSize: b.N + 1, WriteBusyTimeout: 50 * time.Millisecond})
	release := memstoretest.Lock(b, path)
	url, client := benchServer(b, store)
	url += "/api/voice/remember"
	samples := testkit.TimePosts(b, client, url, `{"fact":"the cat is called Miso","session_id":"s"}`, func(status int, _ []byte) {
		if status != 204 {
			b.Fatalf("status %d", status)
		}
	})
	b.StopTimer()
	testkit.ReportPercentiles(b, samples, "")
	release() // before the writer's drain at cleanup
	b.ReportMetric(fsyncFloor(b, filepath.Dir(path)), "fsync-p50-µs")
}

// fsyncFloor is the median of 200 appends of a journal-sized line, each
// followed by fsync, to a file in dir: the least an accepted remember can
// cost on this disk, since its journal line must reach the disk before the
// 204. The benchmark prints it beside its own figures.
func fsyncFloor(b *testing.B, dir string) float64 {
	b.Helper()
	f, err := os.CreateTemp(dir, "fsync-floor-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	line := []byte(strings.Repeat("x", 200) + "\n")
	samples := make([]time.Duration, 200)
	for i := range samples {
		start := time.Now()
		if _, err := f.Write(line); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		samples[i] = time.Since(start)
	}
	slices.Sort(samples)
	return float64(samples[len(samples)/2].Microseconds())
}
