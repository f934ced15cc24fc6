package bridge

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// The upload budget bounds the request bodies held in memory, all
// requests together: photos, audio clips, the firmware's recordings and
// large JSON bodies. A body reserves its bytes before any of them is read,
// waits first come first served while the budget is spent, and gets
// httpapi.ErrBusy (a 503 with a Retry-After) when its body deadline passes
// first. Handlers hold the reservation until they return, so the copies
// they make of a body (a photo's base64 for the vision model) are bounded
// with it.
const (
	// DefaultUploadBudget is BRIDGE_UPLOAD_BUDGET's default: hundreds of a
	// robot's photos (tens of KiB) or recordings at once, a photo of the
	// largest size (8 MiB) alone, since a vision request holds about four
	// times its photo while the model answers (the photo, its base64, the
	// request). 200 clients holding 8 MB uploads open leave the bridge at
	// about 60 MiB (docs/performance.md).
	DefaultUploadBudget = 8 << 20
	// FreeBody is the body size that reserves nothing: every JSON call
	// xiaozhi, Tier1Slim, the robots and the dashboard make is smaller, so
	// a voice turn never waits behind uploads. The connection limit bounds
	// these bodies (544 × 16 KiB = 8.5 MiB).
	FreeBody = 16 << 10
	// budgetStep is how much a body of unknown length (chunked) reserves
	// at a time, past its first FreeBody bytes.
	budgetStep = 64 << 10
)

// uploadBudget is the byte budget shared by every request body. Its
// semaphore queues waiters first come first served: a large body at the
// head is not overtaken by smaller ones.
type uploadBudget struct {
	sem      *semaphore.Weighted
	size     int64
	stopping <-chan struct{} // the server's: waiters give up when it closes
	inUse    prometheus.Gauge
	waiting  prometheus.Gauge
	refused  prometheus.Counter

	stopOnce sync.Once
	stopCtx  context.Context // see stopContext
}

func newUploadBudget(cfg Config, stopping <-chan struct{}) *uploadBudget {
	b := &uploadBudget{sem: semaphore.NewWeighted(cfg.UploadBudget), size: cfg.UploadBudget, stopping: stopping,
		inUse: cfg.UploadBudgetInUse, waiting: cfg.UploadBudgetWaiting, refused: cfg.UploadsRefused}
	// Unregistered stand-ins record nothing anyone reads.
	if b.inUse == nil {
		b.inUse = prometheus.NewGauge(prometheus.GaugeOpts{Name: "unused"})
	}
	if b.waiting == nil {
		b.waiting = prometheus.NewGauge(prometheus.GaugeOpts{Name: "unused"})
	}
	if b.refused == nil {
		b.refused = prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"})
	}
	return b
}

// acquire reserves n bytes (at most size), waiting behind earlier
// requests until ctx ends or the server stops; then it returns an error
// wrapping httpapi.ErrBusy.
func (b *uploadBudget) acquire(ctx context.Context, n int64) error {
	if !b.sem.TryAcquire(n) {
		b.waiting.Inc()
		defer b.waiting.Dec()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(b.stopContext(), cancel)()
		if err := b.sem.Acquire(ctx, n); err != nil {
			b.refused.Inc()
			return fmt.Errorf("%w: %d bytes wanted, the %d-byte budget stayed spent (%w)", httpapi.ErrBusy, n, b.size, err)
		}
	}
	b.inUse.Add(float64(n))
	return nil
}

// stopContext is a context that ends when the server stops, so a waiter
// gives up then without a goroutine of its own watching for it: one
// goroutine, started at the first wait, watches for all of them.
func (b *uploadBudget) stopContext() context.Context {
	b.stopOnce.Do(func() {
		var cancel context.CancelFunc
		b.stopCtx, cancel = context.WithCancel(context.Background())
		go func() {
			<-b.stopping
			cancel()
		}()
	})
	return b.stopCtx
}

// release gives n reserved bytes back.
func (b *uploadBudget) release(n int64) {
	if n <= 0 {
		return
	}
	b.inUse.Sub(float64(n))
	b.sem.Release(n)
}

// limitUploads makes every request body larger than FreeBody, or of
// unknown length, reserve from the upload budget as it is read (see
// budgetBody), and gives the reservation back when the handler returns.
// The wait for room ends with the body's deadline (BodyTimeout or
// UploadTimeout from the request's start), the request's end or the
// server's stop. A JSON route's body declared larger than httpapi.MaxBody
// is refused before it is read; an upload route checks its own limit.
//
// The original body is put back when the handler returns: net/http decides
// by its type what to do with a body left unread when the answer is
// written (an upload refused with a 503 or a 413). With its own type it
// closes the connection gracefully after the answer when much is left,
// instead of first reading up to 256 KiB more, so a refused client gets
// its answer at once.
func (s *Server) limitUploads(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.Body == nil || req.Body == http.NoBody || (req.ContentLength >= 0 && req.ContentLength <= FreeBody) {
			return next(c)
		}
		limit := int64(httpapi.MaxBody)
		if s.uploads[req.URL.Path] {
			limit = math.MaxInt64 // the route checks its own
		}
		ctx, cancel := context.WithTimeout(req.Context(), s.bodyTimeout(req.URL.Path))
		defer cancel()
		orig := req.Body
		body := &budgetBody{ReadCloser: orig, budget: s.budget, ctx: ctx, declared: req.ContentLength, limit: limit}
		req.Body = body
		defer func() {
			req.Body = orig
			s.budget.release(body.held)
		}()
		return next(c)
	}
}

// budgetBody reserves a request body's bytes before reading them: the
// whole declared Content-Length at the first Read (the whole budget for a
// body larger than it, which is then read alone), or, for a body of
// unknown length, budgetStep at a time past its first FreeBody bytes, up
// to the budget. A Read that finds no room in time returns an error
// wrapping httpapi.ErrBusy; a body over limit (or a body of unknown length
// over the budget) gets an *http.MaxBytesError, which routes answer with
// their 413. Handlers that refuse a request before reading its body (a bad
// token, a declared size over their own limit) never wait.
type budgetBody struct {
	io.ReadCloser
	budget   *uploadBudget
	ctx      context.Context
	declared int64 // Content-Length, -1 when unknown
	limit    int64 // the most the route reads
	held     int64 // bytes reserved
	read     int64
	err      error // sticky: the body is not read past a refusal
}

func (b *budgetBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return b.ReadCloser.Read(p)
	}
	if b.declared >= 0 {
		// net/http ends the body at its Content-Length.
		if b.held == 0 && b.declared > FreeBody {
			if b.declared > b.limit {
				b.err = &http.MaxBytesError{Limit: b.limit}
				return 0, b.err
			}
			if b.err = b.reserve(min(b.declared, b.budget.size)); b.err != nil {
				return 0, b.err
			}
		}
	} else {
		room := FreeBody + b.held - b.read
		if room <= 0 {
			// One byte past the limit is let through, so a route reading
			// limit+1 bytes tells "exactly the limit" from "over it".
			most := min(b.limit, b.budget.size)
			if b.read > most {
				b.err = &http.MaxBytesError{Limit: most}
				return 0, b.err
			}
			step := min(budgetStep, most+1-b.read)
			if b.err = b.reserve(step); b.err != nil {
				return 0, b.err
			}
			room = step
		}
		p = p[:min(int64(len(p)), room)]
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *budgetBody) reserve(n int64) error {
	if err := b.budget.acquire(b.ctx, n); err != nil {
		return err
	}
	b.held += n
	return nil
}

// bodyTimeout is how long a request on path has to deliver its body:
// UploadTimeout for uploads, BodyTimeout for the rest.
func (s *Server) bodyTimeout(path string) time.Duration {
	if s.uploads[path] {
		return s.cfg.UploadTimeout
	}
	return s.cfg.BodyTimeout
}
