package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The hostile soak's upload flood, a phase of its own before the other
// abuse, while the 32 conversations talk: 64 clients each send a 1 MB
// photo to /api/vision/explain and hold its last byte back, over and
// over, as the attack of issue 30 did (RSS went from 24 to 1 695 MiB with
// 200 clients, 565 MiB with 64). The bridge's upload budget reads two at a
// time; the rest wait unread and are refused with a 503 when their body
// deadline passes. The soak's RSS bound (hostileRSSLimitMiB) holds: without
// the budget the flood alone would hold 64 MB.
//
// TestUploadFloodStaysInMemoryBound runs the attack itself (200 clients,
// 8 MB photos, the default 8 MiB budget) on the real binary, under
// 100 MiB. The soak's 64 MiB bound was set for the other abusers, which
// reach 46–55 MiB on their own; under the garbage collector's pacing
// (GOGC=100) memory held costs about twice its size in RSS, and so does
// each held connection's (about 25 KiB). Joined with them, a 64-client
// flood with a 2 MiB budget peaked at 62–64.5 MiB; as a phase of its own,
// 200 clients at 61 MiB, 64 clients at 51–55 MiB.
const (
	uploadFloodClients = 64
	uploadFloodSize    = 1_000_000
	uploadBoundary     = "soakfloodboundary"
	// uploadPhaseLength is the phase's length: past the upload deadline
	// below, so waiting uploads are refused within it.
	uploadPhaseLength = 15 * time.Second
)

// The bridge's settings for the flood: held uploads are cut, and waiting
// ones refused, 10 s after they began (the default is 60 s).
const (
	uploadTimeoutEnv = "BRIDGE_UPLOAD_TIMEOUT=10"
	uploadBudgetEnv  = "BRIDGE_UPLOAD_BUDGET=2"
)

// uploadFloodStats counts what the flood's clients saw.
type uploadFloodStats struct {
	answers statusCount
	sent    atomic.Int64 // uploads begun
	busy    atomic.Int64 // 503s with the documented Retry-After and reason
}

// uploadPhoto is the flood's shared, read-only photo.
var uploadPhoto = make([]byte, uploadFloodSize)

// uploadPhase runs the flood for uploadPhaseLength while the
// conversations talk on their kept-alive connections and the bridge's RSS
// is sampled.
func uploadPhase(host string, pid int, convs []*keptConn, st *hostileStats) {
	ctx, cancel := context.WithTimeout(context.Background(), uploadPhaseLength)
	defer cancel()
	var wg sync.WaitGroup
	spawn := func(n int, f func(i int)) {
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f(i)
			}()
		}
	}
	spawn(1, func(int) { rssSampler(ctx, pid, st) })
	spawn(len(convs), func(i int) { conversation(ctx, convs[i], i, st) })
	spawn(uploadFloodClients, func(i int) { uploadFlooder(ctx, host, i, st) })
	wg.Wait()
}

// uploadFlooder sends held-open uploads one after another until ctx ends.
// A 503 must carry Retry-After and the reason; anything else the bridge
// may answer a held upload is a 400 (cut at its deadline), a 413 or a
// closed connection. After a refusal it comes back shortly, not after the
// Retry-After, to keep the budget contended.
func uploadFlooder(ctx context.Context, host string, i int, st *hostileStats) {
	u := &st.uploads
	head := "--" + uploadBoundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"flood.jpg\"\r\n" +
		"Content-Type: image/jpeg\r\n\r\n"
	length := len(head) + uploadFloodSize + len("\r\n--"+uploadBoundary+"--\r\n")
	redial(ctx, host, func(conn net.Conn) {
		stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
		_ = conn.SetDeadline(time.Now().Add(hostileTurnBound))
		u.sent.Add(1)
		_, err := fmt.Fprintf(conn, "POST /api/vision/explain HTTP/1.1\r\nHost: %s\r\ndevice-id: upload-flood-%d\r\n"+
			"Content-Type: multipart/form-data; boundary=%s\r\nContent-Length: %d\r\n\r\n%s",
			host, i, uploadBoundary, length, head)
		if err == nil {
			go func() { _, _ = conn.Write(uploadPhoto[:uploadFloodSize-1]) }()
			code := 0
			if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				code = resp.StatusCode
				body := strings.TrimSpace(string(b))
				switch {
				case code == http.StatusServiceUnavailable:
					if resp.Header.Get("Retry-After") != "5" || body != `{"detail":"too many uploads in flight; try again later"}` {
						st.problem("upload flood: 503 with Retry-After %q and %s", resp.Header.Get("Retry-After"), body)
					} else {
						u.busy.Add(1)
					}
				case code == http.StatusOK:
					st.problem("upload flood: a held-open upload was answered 200: %s", body)
				}
			}
			if ctx.Err() == nil {
				u.answers.add(code)
			}
		}
		stop()
		conn.Close()
		sleepCtx(ctx, 200*time.Millisecond)
	})
}

// report is the flood's line of the soak's report.
func (u *uploadFloodStats) report() string {
	return fmt.Sprintf("upload flood (%d clients × %d-byte photos held open, %s): %d begun, %s; %d refused with the reason",
		uploadFloodClients, uploadFloodSize, uploadBudgetEnv, u.sent.Load(), u.answers.String(), u.busy.Load())
}

// check is the flood's verdict: the budget refused some uploads (so the
// flood contended it) and no answer was a server error other than 503.
func (u *uploadFloodStats) check() error {
	if n := u.answers.serverErrors(); n > 0 {
		return fmt.Errorf("upload flood: %d server errors (%s)", n, u.answers.String())
	}
	if u.busy.Load() == 0 {
		return fmt.Errorf("upload flood: no upload was refused with a 503 (%s): the budget was never contended", u.answers.String())
	}
	return nil
}
