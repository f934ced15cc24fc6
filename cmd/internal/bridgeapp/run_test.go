package bridgeapp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestRunInProcess runs the whole wiring in-process with an agent binary
// that does not exist: the bridge serves /health and /metrics, reports the
// missing binary, and run returns nil without leaking a goroutine once its
// ctx ends.
func TestRunInProcess(t *testing.T) {
	defer goleak.VerifyNone(t,
		// os/signal starts one process-wide goroutine on first use.
		goleak.IgnoreTopFunction("os/signal.signal_recv"),
		goleak.IgnoreTopFunction("os/signal.loop"),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr testkit.LogBuffer
	getenv := isolatedEnv(t, "BRIDGE_HOST", "127.0.0.1", "PORT", "0", "ZEROCLAW_BIN", "/nonexistent/zeroclaw",
		"LOG_LEVEL", "debug", "LOG_FORMAT", "text")
	done := make(chan error, 1)
	go func() { done <- Run(ctx, nil, getenv, &stdout, &stderr) }()

	listening := regexp.MustCompile(`http server listening: addr=(\S+)`)
	var addr string
	testkit.WaitFor(t, 10*time.Second, "the listening line", func() bool {
		if m := listening.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	get := func(path string) string {
		t.Helper()
		code, body := testkit.Get(t, "http://"+addr+path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, body)
		}
		return body
	}
	testkit.WaitFor(t, 10*time.Second, "binary_missing on /health", func() bool {
		return strings.Contains(get("/health"), `"binary_missing":true`)
	})
	body := get("/health")
	if !strings.HasPrefix(body, `{"status":"ok","service":"zeroclaw-bridge","acp_running":false,"cached_session":false,"session_turns":0,"agent":{`) {
		t.Errorf("/health = %s", body)
	}
	m := get("/metrics")
	for _, want := range []string{"dotty_kid_mode_active 1\n", "dotty_acp_child_up 0\n", `dotty_acp_child_restarts_total{reason="binary_missing"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// At debug the whole configuration is one line; the banner names the
	// dashboard and the agent.
	for _, want := range []string{"configuration: version=", "zeroclaw_bin=/nonexistent/zeroclaw", "port=0", "tz=Australia/Brisbane",
		"listening: addr=" + addr + " dashboard=http://" + addr + "/ui", "agent: command=\"zeroclaw acp\"", "docs: "} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("start-up log lacks %q", want)
		}
	}
	if strings.Count(stderr.String(), "configuration: version=") != 1 {
		t.Error("effective configuration not logged exactly once")
	}

	cancel()
	awaitRun(t, done, "run")
	if stdout.String() != "" {
		t.Errorf("serve wrote to stdout: %q", stdout.String())
	}
}

// TestRunReportsListenFailure checks that a port already in use ends run
// with an error (exit status 1) instead of hanging.
func TestRunReportsListenFailure(t *testing.T) {
	var first testkit.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	getenv := isolatedEnv(t, "BRIDGE_HOST", "127.0.0.1", "PORT", "0", "ZEROCLAW_BIN", "/nonexistent/zeroclaw")
	go func() { done <- Run(ctx, nil, getenv, io.Discard, &first) }()
	listening := regexp.MustCompile(`http server listening: addr=127\.0\.0\.1:(\d+)`)
	var port string
	testkit.WaitFor(t, 10*time.Second, "the first bridge to listen", func() bool {
		if m := listening.FindStringSubmatch(first.String()); m != nil {
			port = m[1]
		}
		return port != ""
	})

	var second testkit.LogBuffer
	err := Run(context.Background(), nil, isolatedEnv(t, "BRIDGE_HOST", "127.0.0.1", "PORT", port, "ZEROCLAW_BIN", "/nonexistent/zeroclaw"), io.Discard, &second)
	if err == nil || !strings.HasPrefix(err.Error(), "port "+port+" is in use — is bridge.py still running? (listen on 127.0.0.1:"+port+": address already in use)") {
		t.Errorf("second run = %v, want the port-in-use message", err)
	}
	var stderr strings.Builder
	if code := exitCode(err, &stderr); code != 1 || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit code %d, printed %q; want 1 and one line", code, stderr.String())
	}
	// Nothing was started for the second bridge: no agent, no error lines.
	if strings.Contains(second.String(), "agent started") || strings.Contains(second.String(), "[ERROR]") {
		t.Errorf("the second bridge started things or logged errors:\n%s", second.String())
	}
	cancel()
	awaitRun(t, done, "first run")
}

// awaitRun waits (≤ 10 s) for what, a run whose ctx was cancelled, to
// return its error on done, and checks it is nil.
func awaitRun(t *testing.T, done <-chan error, what string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s = %v, want nil after ctx ends", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not return within 10 s of cancel", what)
	}
}

// TestRunNamesTheHostItCannotListenOn: an address that is not this
// machine's is a configuration error naming BRIDGE_HOST (exit status 2),
// reported before anything starts.
func TestRunNamesTheHostItCannotListenOn(t *testing.T) {
	var logs testkit.LogBuffer
	// 192.0.2.1 is TEST-NET-1 (RFC 5737): never an address of this machine.
	err := Run(context.Background(), []string{"-bridge-host", "192.0.2.1"}, isolatedEnv(t, "PORT", "0", "ZEROCLAW_BIN", "/nonexistent/zeroclaw"), io.Discard, &logs)
	var stderr strings.Builder
	code := exitCode(err, &stderr)
	want := `zeroclaw-bridge: invalid -bridge-host "192.0.2.1": not a name or address of this machine (listen on 192.0.2.1:0: listen tcp 192.0.2.1:0: bind: cannot assign requested address)` + "\n"
	if code != 2 || stderr.String() != want {
		t.Errorf("exit %d, printed %q; want 2 and %q", code, stderr.String(), want)
	}
	if strings.Contains(logs.String(), "agent started") {
		t.Errorf("the agent was started:\n%s", logs.String())
	}
}

// TestListenError: a name that does not resolve names BRIDGE_HOST, a port
// the process may not bind names PORT, each as it was given; anything
// else passes through.
func TestListenError(t *testing.T) {
	cfg, err := parseConfig([]string{"-port", "80"}, env("BRIDGE_HOST", "nonsense"))
	if err != nil {
		t.Fatal(err)
	}
	dns := fmt.Errorf("listen on nonsense:80: %w", &net.OpError{Op: "listen", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "nonsense", IsNotFound: true}})
	denied := fmt.Errorf("listen on nonsense:80: %w", &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)})
	other := errors.New("listen on nonsense:80: too many open files")
	for _, tt := range []struct {
		err  error
		want string
		code int
	}{
		{dns, `invalid BRIDGE_HOST "nonsense": not a name or address of this machine (listen on nonsense:80: listen tcp: lookup nonsense: no such host)`, 2},
		{denied, `invalid -port "80": a port below 1024 needs root or CAP_NET_BIND_SERVICE (listen on nonsense:80: listen tcp: bind: permission denied)`, 2},
		{other, other.Error(), 1},
	} {
		var stderr strings.Builder
		if code := exitCode(listenError(cfg, tt.err), &stderr); code != tt.code || stderr.String() != "zeroclaw-bridge: "+tt.want+"\n" {
			t.Errorf("exit %d, %q; want %d, %q", code, stderr.String(), tt.code, tt.want)
		}
	}
}

// isolatedEnv is env plus settings that keep a test bridge's files in the
// test's directory and its weather lookups off the network.
func isolatedEnv(t *testing.T, kv ...string) func(string) (string, bool) {
	t.Helper()
	dir := t.TempDir()
	return env(append(kv, "CONVO_LOG_DIR", filepath.Join(dir, "logs"), "DOTTY_KID_MODE_STATE", filepath.Join(dir, "kid-mode"),
		"DOTTY_SMART_MODE_STATE", filepath.Join(dir, "smart-mode"), "WEATHER_LOCATION", "-",
		"VOICE_MEMORY_DB", filepath.Join(dir, "memory", "brain.db"), "HOUSEHOLD_YAML_PATH", filepath.Join(dir, "household.yaml"),
		"ZEROCLAW_WORKSPACE", filepath.Join(dir, "workspace"), "ZEROCLAW_VOICE_CFG", filepath.Join(dir, "config.toml"),
		"DOTTY_TOOL_ALLOWLIST", filepath.Join(dir, "tool-allowlist"), "GREETER_STATE_PATH", filepath.Join(dir, "greeter_state.json"))...)
}
