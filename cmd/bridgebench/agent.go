package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/internal/benchkit"
)

// agentBaseline times prompt round trips against the demo agent alone
// (`<bin> acp -chunk-delay 0s` over its pipes, no bridge), so the bridge's
// added latency is the whole request minus this.
// It also returns the time to the first streamed chunk of each turn, and
// this process's CPU time per prompt: what an ACP client using the SDK
// alone costs, the second half of what a bridge turn cannot avoid.
func agentBaseline(bin string, n int) (roundTrips, firstChunks []time.Duration, clientCPU time.Duration, err error) {
	cmd := exec.Command(bin, "acp", "-chunk-delay", "0s")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, 0, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, 0, err
	}
	defer func() {
		_ = stdin.Close()
		benchkit.Reap(cmd, 5*time.Second)
	}()
	qc := &quietClient{chunk: make(chan time.Time, 64)}
	conn := acpsdk.NewClientSideConnection(qc, stdin, stdout)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := conn.Initialize(ctx, acpsdk.InitializeRequest{ProtocolVersion: acpsdk.ProtocolVersionNumber}); err != nil {
		return nil, nil, 0, fmt.Errorf("initialize the demo agent: %w", err)
	}
	s, err := conn.NewSession(ctx, acpsdk.NewSessionRequest{Cwd: "/", McpServers: []acpsdk.McpServer{}})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("new session: %w", err)
	}
	lat := make([]time.Duration, 0, n)
	first := make([]time.Duration, 0, n)
	cpu0 := benchkit.CPUTime(os.Getpid())
	for range n {
		for len(qc.chunk) > 0 { // updates of the previous turn
			<-qc.chunk
		}
		t := time.Now()
		done := make(chan error, 1)
		go func() {
			_, err := conn.Prompt(ctx, acpsdk.PromptRequest{SessionId: s.SessionId, Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock("hello from bench")}})
			done <- err
		}()
		// The prompt's answer and its chunk notifications travel
		// separately, so the answer may be handled first; the chunk carries
		// its own arrival time, which makes the order irrelevant.
		err := <-done
		end := time.Now()
		if err != nil {
			return nil, nil, 0, fmt.Errorf("prompt: %w", err)
		}
		select {
		case at := <-qc.chunk:
			first = append(first, at.Sub(t))
		case <-time.After(5 * time.Second):
			return nil, nil, 0, errors.New("prompt ended without a chunk")
		}
		lat = append(lat, end.Sub(t))
	}
	clientCPU = (benchkit.CPUTime(os.Getpid()) - cpu0) / time.Duration(max(n, 1))
	slices.Sort(lat)
	slices.Sort(first)
	return lat, first, clientCPU, nil
}

// quietClient signals session updates and refuses everything else.
type quietClient struct {
	demoagent.UnsupportedClient
	chunk chan time.Time
}

func (q *quietClient) SessionUpdate(context.Context, acpsdk.SessionNotification) error {
	select {
	case q.chunk <- time.Now():
	default:
	}
	return nil
}
