package bridgeapp

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acpclient"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/robottools"
)

// TestMCPTokenFile: while the bridge runs, mcp-token.json beside the
// memory database holds the URL and a live standing token, mode 0600 even
// where a wider file was; at stop the token is dead.
func TestMCPTokenFile(t *testing.T) {
	srv, url, _ := robotToolsServer(t)
	db := filepath.Join(t.TempDir(), "memory", "brain.db")
	path := filepath.Join(filepath.Dir(db), mcpTokenFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(`{"url":"old","token":"old"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	log := hclog.NewNullLogger()
	stop := startStandingToken(srv, url, db, health.New(), log)
	c, err := robottools.ReadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || c.URL != url {
		t.Errorf("token file %v %v, url %q; want mode 0600 and url %q", fi.Mode(), err, c.URL, url)
	}
	if got := mcpStatus(t, url, "Bearer "+c.Token); got != http.StatusOK {
		t.Errorf("standing token: %d, want 200", got)
	}
	stop()
	if got := mcpStatus(t, url, "Bearer "+c.Token); got != http.StatusUnauthorized {
		t.Errorf("standing token after stop: %d, want 401", got)
	}

	// The actor: the file at its start, the token revoked when it ends.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := mcpTokenFileActor(srv, url, db, health.New(), log)(ctx); err != nil {
		t.Errorf("actor: %v", err)
	}
	next, err := robottools.ReadCredentials(path)
	if err != nil || next.Token == c.Token {
		t.Fatalf("token file after the actor: %+v %v, want a new token", next, err)
	}
	if got := mcpStatus(t, url, "Bearer "+next.Token); got != http.StatusUnauthorized {
		t.Errorf("the actor's token after it ended: %d, want 401", got)
	}
}

// TestMCPTokenFileUnwritable: a token file that cannot be written is one
// logged reason and a failing condition; its re-check writes the file
// once the directory can be made, with the token still live.
func TestMCPTokenFileUnwritable(t *testing.T) {
	srv, url, _ := robotToolsServer(t)
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testkit.LogBuffer
	clock := testkit.NewClock()
	conds := health.NewWith(health.Config{Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- conds.Run(ctx) }()
	defer func() { cancel(); testkit.Recv(t, testkit.MinWait, done, "conditions stopped") }()
	stop := startStandingToken(srv, url, filepath.Join(blocker, "brain.db"), conds, hclog.New(&hclog.LoggerOptions{Output: &logs}))
	defer stop()
	if got := logs.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "no robot tools until their token file can be written") ||
		!strings.Contains(got, filepath.Join(blocker, mcpTokenFile)) {
		t.Errorf("log %q: want one line naming the file", got)
	}
	if p := conds.Problems(); len(p) != 1 || !strings.HasPrefix(p[0], "robot tools token file: ") {
		t.Errorf("problems %q, want the token file's", p)
	}

	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	clock.BlockUntilContext(ctx, 1)
	clock.Advance(health.RecheckInterval)
	path := filepath.Join(blocker, mcpTokenFile)
	testkit.WaitFor(t, testkit.MinWait, "the re-check's write", func() bool { return len(conds.Problems()) == 0 })
	c, err := robottools.ReadCredentials(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpStatus(t, url, "Bearer "+c.Token); got != http.StatusOK {
		t.Errorf("the re-written file's token: %d, want 200", got)
	}
}

// TestOneToolsName: the ACP client offers the tools under the name the
// server and ZeroClaw's registration use (acp cannot import tier1).
func TestOneToolsName(t *testing.T) {
	if acpclient.ToolsName != robottools.Name {
		t.Errorf("acpclient.ToolsName %q, robottools.Name %q", acpclient.ToolsName, robottools.Name)
	}
}
