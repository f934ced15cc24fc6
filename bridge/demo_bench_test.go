package bridge

import (
	"context"
	"io"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/demoagent"
)

// demoPool is a pool on an in-process demo agent without chunk delays.
func demoPool(b *testing.B) *acp.Pool {
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
	c, err := acp.Dial(context.Background(), acp.Config{Command: "demo", Logger: hclog.NewNullLogger()}, toAgentW, fromAgentR)
	if err != nil {
		b.Fatal(err)
	}
	p := acp.NewPool(acp.PoolConfig{SessionMaxTurns: 1 << 30}, c)
	b.Cleanup(func() {
		_ = toAgentW.Close()
		<-served
		cancel()
	})
	return p
}
