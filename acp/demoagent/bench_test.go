package demoagent

import (
	"context"
	"testing"

	acp "github.com/coder/acp-go-sdk"
)

// BenchmarkTurn measures one full prompt round trip over io.Pipe pairs with
// an SDK client: session/prompt out, every agent_message_chunk in, then the
// end_turn result. ChunkDelay is 0, so this is protocol and SDK overhead.
func BenchmarkTurn(b *testing.B) {
	hs := startAgent(b, Options{}, hooks{})
	sid := hs.newSession()
	ctx := context.Background()
	req := acp.PromptRequest{SessionId: sid, Prompt: []acp.ContentBlock{acp.TextBlock("[Context] be nice\n\n[User] hello robot")}}
	b.ReportAllocs()
	for b.Loop() {
		r, err := hs.conn.Prompt(ctx, req)
		if err != nil || r.StopReason != acp.StopReasonEndTurn {
			b.Fatalf("prompt = %+v, %v", r, err)
		}
	}
	b.StopTimer()
	if err := hs.shutdown(); err != nil {
		b.Fatal(err)
	}
}
