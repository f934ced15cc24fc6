package voice

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agenttest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/turnbus"
)

const benchReply = "😊 A comet is a ball of ice and dust. When it nears the Sun it grows a glowing tail!"

// instantAgent answers at once: the timings are the bridge's own work.
var instantAgent = turnerFunc(func(_ context.Context, req acp.TurnRequest) (acp.TurnResult, error) {
	_ = req.Prompt(1)
	if req.OnChunk != nil {
		for _, w := range strings.SplitAfter(benchReply, " ") {
			req.OnChunk(w)
		}
	}
	return acp.TurnResult{Text: benchReply}, nil
})

func benchServer(b *testing.B, agent Turner) string {
	b.Helper()
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
	New(Config{
		Agent:    agent,
		Location: brisbane,
		Metrics:  newTestMetrics(prometheus.NewRegistry()),
		ConvoLog: convolog.New(convolog.Config{Dir: filepath.Join(b.TempDir(), "logs"), Location: brisbane}),
		Turns:    turnbus.New(nil),
	}).Routes(e)
	ts := httptest.NewServer(e)
	b.Cleanup(ts.Close)
	return ts.URL
}

// timeTurns posts benchBody b.N times and reports the turn time percentiles.
func timeTurns(b *testing.B, url string) {
	b.Helper()
	b.ReportAllocs()
	testkit.ReportPercentiles(b, testkit.TimePosts(b, &http.Client{}, url, benchBody, nil), "turn")
}

const benchBody = `{"content":"[Context] You are Dotty.\n\n[User] what is a comet?","channel":"dotty","session_id":"bench","metadata":{"provider":"zeroclaw"}}`

// BenchmarkAddedLatencyBuffered is one /api/message turn with an agent
// that answers instantly: request parsing, sandwich, pipeline, convo log,
// metrics and HTTP on loopback — what the bridge adds to a turn.
func BenchmarkAddedLatencyBuffered(b *testing.B) {
	url := benchServer(b, instantAgent) + "/api/message"
	timeTurns(b, url)
}

// BenchmarkAddedLatencyStream is the same turn on /api/message/stream,
// timed to the final frame.
func BenchmarkAddedLatencyStream(b *testing.B) {
	url := benchServer(b, instantAgent) + "/api/message/stream"
	timeTurns(b, url)
}

// BenchmarkChunkForwarding measures from the agent handing the bridge a
// chunk to the caller reading its NDJSON line.
func BenchmarkChunkForwarding(b *testing.B) {
	const perTurn = 20
	sent := make(chan time.Time, perTurn)
	agent := turnerFunc(func(_ context.Context, req acp.TurnRequest) (acp.TurnResult, error) {
		_ = req.Prompt(1)
		for i := 0; i < perTurn; i++ {
			sent <- time.Now()
			req.OnChunk(fmt.Sprintf("😊 word%d ", i))
			req.Flush()                        // each chunk arrives on its own, as from the pool
			time.Sleep(200 * time.Microsecond) // let the caller read each line on its own
		}
		return acp.TurnResult{Text: "😊 done"}, nil
	})
	url := benchServer(b, agent) + "/api/message/stream"
	client := &http.Client{}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for n := 0; n < b.N; n += perTurn {
		resp, err := client.Post(url, "application/json", strings.NewReader(benchBody))
		if err != nil {
			b.Fatal(err)
		}
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break
			}
			if strings.Contains(line, `"chunk"`) {
				samples = append(samples, time.Since(<-sent))
			}
		}
		resp.Body.Close()
	}
	testkit.ReportPercentiles(b, samples, "chunk")
}

// BenchmarkTurnThroughDemoAgent is a whole streamed turn through the pool
// and the in-process demo agent (ACP on both SDK sides included).
func BenchmarkTurnThroughDemoAgent(b *testing.B) {
	url := benchServer(b, agenttest.DemoPool(b, acp.PoolConfig{})) + "/api/message/stream"
	timeTurns(b, url)
}

// BenchmarkAddedLatencyStreamOneChunk is a streamed turn whose agent sends
// its reply as one chunk: the stream path's fixed cost per turn (headers,
// one chunk, final), without the per-chunk flushes measured by
// BenchmarkChunkForwarding.
func BenchmarkAddedLatencyStreamOneChunk(b *testing.B) {
	agent := turnerFunc(func(_ context.Context, req acp.TurnRequest) (acp.TurnResult, error) {
		_ = req.Prompt(1)
		req.OnChunk(benchReply)
		return acp.TurnResult{Text: benchReply}, nil
	})
	url := benchServer(b, agent) + "/api/message/stream"
	timeTurns(b, url)
}
