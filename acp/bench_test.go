package acp

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
)

// demoPool returns a pool on an in-process demo agent (no chunk delay).
func demoPool(b *testing.B) *Pool {
	b.Helper()
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = demoagent.Serve(ctx, toAgentR, fromAgentW, demoagent.Options{})
		_ = fromAgentW.Close()
	}()
	c, err := Dial(context.Background(), Config{Command: "demo", Logger: hclog.NewNullLogger()}, toAgentW, fromAgentR)
	if err != nil {
		b.Fatal(err)
	}
	p := NewPool(PoolConfig{MaxSessions: 64, SessionMaxTurns: 1 << 30}, c)
	b.Cleanup(func() {
		_ = toAgentW.Close()
		<-served
		cancel()
	})
	return p
}

// BenchmarkPoolTurn is one whole turn through the pool: lease, prompt over
// ACP, several streamed chunks forwarded, result.
func BenchmarkPoolTurn(b *testing.B) {
	p := demoPool(b)
	ctx := context.Background()
	req := TurnRequest{Key: "k", Prompt: func(int) string { return "[User] hello robot" }, OnChunk: func(string) {}}
	if _, err := p.Turn(ctx, req); err != nil { // create the session outside the timing
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := p.Turn(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPoolTurnParallel runs turns on 16 sessions at once.
func BenchmarkPoolTurnParallel(b *testing.B) {
	p := demoPool(b)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("k%d", n.Add(1)%16)
		req := TurnRequest{Key: key, Prompt: func(int) string { return "[User] hello robot" }, OnChunk: func(string) {}}
		for pb.Next() {
			if _, err := p.Turn(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
