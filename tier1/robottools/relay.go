package robottools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Credentials say where the bridge serves the tools and with which bearer
// token: the content of the token file the bridge writes for ZeroClaw, and
// what the stdio relay is given in its environment.
type Credentials struct {
	// URL is the bridge's MCP endpoint, http://127.0.0.1:<port>/mcp.
	URL string `json:"url"`
	// Token is the bearer token.
	Token string `json:"token"`
}

// ReadCredentials reads a token file: JSON {"url": ..., "token": ...}.
func ReadCredentials(path string) (Credentials, error) {
	b, err := os.ReadFile(path) // #nosec G304 -- the configured token file
	if err != nil {
		return Credentials{}, fmt.Errorf("read the robot tools' token file: %w", err)
	}
	var c Credentials
	if err := json.Unmarshal(b, &c); err != nil {
		return Credentials{}, fmt.Errorf("read the robot tools' token file %s: %w", path, err)
	}
	if c.Token == "" {
		return Credentials{}, fmt.Errorf("read the robot tools' token file %s: no \"token\"", path)
	}
	if err := CheckURL(c.URL); err != nil {
		return Credentials{}, fmt.Errorf("read the robot tools' token file %s: %w", path, err)
	}
	return c, nil
}

// CheckURL accepts the URL of a bridge's MCP endpoint: http on a loopback
// address, where a bearer token may be sent.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("url %q: %w", raw, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); u.Scheme != "http" || (host != "localhost" && (ip == nil || !ip.IsLoopback())) {
		return fmt.Errorf("url %q: want http://127.0.0.1:<port>/mcp (a loopback address)", raw)
	}
	return nil
}

// Texts of a relayed call the bridge did not answer.
const (
	Unreachable = "The robot's tools cannot be reached right now (the bridge is not answering); try again in a minute."
	NoAccess    = "The robot's tools are not available to this agent: "
)

// RelayConfig configures Relay.
type RelayConfig struct {
	// Credentials returns the bridge's endpoint and token. It is called for
	// every request, so a token file the restarted bridge rewrote is read
	// again.
	Credentials func() (Credentials, error)
	// Timeout bounds each relayed request; 0 is RelayTimeout.
	Timeout time.Duration
	// Logger receives the relay's logs (stderr: stdout is the protocol).
	// Nil discards.
	Logger hclog.Logger
}

// RelayTimeout is the default bound of one relayed request: longer than a
// call's rate wait and take_photo's wait together.
const RelayTimeout = time.Minute

// Relay serves the robot's tools on t (the agent's stdio) by relaying every
// tools/list and tools/call to the bridge's MCP endpoint over streamable
// HTTP with the bearer token: the agent gets the bridge's tool list and
// results unchanged. A call the bridge cannot answer (not reachable, the
// token refused, no credentials) is a tool error the model can read; a
// tools/list it cannot answer is a protocol error. Relay returns when the
// agent closes the connection (stdin) or ctx ends.
func Relay(ctx context.Context, cfg RelayConfig, t mcp.Transport) error {
	r := &relay{cfg: cfg, log: cfg.Logger, base: &http.Transport{}}
	if r.log == nil {
		r.log = hclog.NewNullLogger()
	}
	if r.cfg.Timeout <= 0 {
		r.cfg.Timeout = RelayTimeout
	}
	defer r.base.CloseIdleConnections()
	srv := mcp.NewServer(implementation(), &mcp.ServerOptions{Instructions: Instructions,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	srv.AddReceivingMiddleware(r.forward)
	err := srv.Run(ctx, t)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil
	}
	return err
}

type relay struct {
	cfg  RelayConfig
	log  hclog.Logger
	base *http.Transport
}

// forward answers tools/list and tools/call from the bridge; every other
// method is the local server's own (initialize, ping).
func (r *relay) forward(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch req := req.(type) {
		case *mcp.ListToolsRequest:
			var res *mcp.ListToolsResult
			err := r.remote(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
				res, err = cs.ListTools(ctx, req.Params)
				return err
			})
			if u := (*unanswered)(nil); errors.As(err, &u) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: u.text}
			}
			return res, err
		case *mcp.CallToolRequest:
			if req.Params == nil {
				return next(ctx, method, req)
			}
			var res *mcp.CallToolResult
			err := r.remote(ctx, func(ctx context.Context, cs *mcp.ClientSession) (err error) {
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
				return err
			})
			if u := (*unanswered)(nil); errors.As(err, &u) {
				return failed(u.text), nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// unanswered is a request the bridge did not answer; text says why to
// the model.
type unanswered struct {
	text  string
	cause error
}

func (u *unanswered) Error() string { return "the bridge did not answer: " + u.cause.Error() }

func (u *unanswered) Unwrap() error { return u.cause }

// remote runs do on a new client session with the bridge: every request
// stands alone (the bridge's server is stateless), with the credentials
// read now. A request the bridge did not answer is an *unanswered; a
// JSON-RPC error of the bridge is returned unchanged.
func (r *relay) remote(ctx context.Context, do func(context.Context, *mcp.ClientSession) error) error {
	creds, err := r.cfg.Credentials()
	if err != nil {
		r.log.Warn("no credentials for the bridge's robot tools", "error", err)
		return &unanswered{text: NoAccess + err.Error(), cause: err}
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	auth := &bearer{token: creds.Token, next: r.base}
	c := mcp.NewClient(implementation(), nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: creds.URL,
		HTTPClient: &http.Client{Transport: auth}, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err == nil {
		err = do(ctx, cs)
		_ = cs.Close()
	}
	rpc, answered := bridgeError(err)
	switch {
	case err == nil:
		return nil
	case answered:
		return rpc
	case auth.refused.Load():
		r.log.Warn("the bridge refused the robot tools' token", "url", creds.URL)
		return &unanswered{text: AccessEnded, cause: err}
	default:
		r.log.Warn("the bridge's robot tools cannot be reached", "url", creds.URL, "error", err)
		return &unanswered{text: Unreachable, cause: err}
	}
}

// rejectedByTransport is the code of the go-sdk's error for a request
// that got no JSON-RPC answer (its jsonrpc2.ErrRejected, not exported).
const rejectedByTransport = -32005

// bridgeError returns the JSON-RPC error the bridge answered err with, if
// it did (an unknown tool); false for a request it did not answer.
func bridgeError(err error) (*jsonrpc.Error, bool) {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) && rpc.Code != rejectedByTransport {
		return rpc, true
	}
	return nil, false
}

// bearer adds the token to every request and notes a 401 answer.
type bearer struct {
	token   string
	next    http.RoundTripper
	refused atomic.Bool
}

// RoundTrip sends r with the Authorization header.
func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	resp, err := b.next.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		b.refused.Store(true)
	}
	return resp, err
}
