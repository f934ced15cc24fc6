package acp_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/agenttest"
)

// BenchmarkPoolTurn is one whole turn through the pool: lease, prompt over
// ACP, several streamed chunks forwarded, result.
func BenchmarkPoolTurn(b *testing.B) {
	p := agenttest.DemoPool(b, acp.PoolConfig{MaxSessions: 64})
	ctx := context.Background()
	req := acp.TurnRequest{Key: "k", Prompt: func(int) string { return "[User] hello robot" }, OnChunk: func(string) {}}
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
	p := agenttest.DemoPool(b, acp.PoolConfig{MaxSessions: 64})
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8) // 16 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("k%d", n.Add(1)%16)
		req := acp.TurnRequest{Key: key, Prompt: func(int) string { return "[User] hello robot" }, OnChunk: func(string) {}}
		for pb.Next() {
			if _, err := p.Turn(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
