package steerable_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/voice"
)

// The sidecar's failure classes, through the real voice route: each is
// counted under its own kind and answered with its fallback.
func TestSidecarErrorsReachTheVoiceRoute(t *testing.T) {
	for _, tt := range []struct {
		mode string
		env  string
		kind string
		want string
	}{
		{"error", "ZCB_STEERTEST_CODE=-32021", voice.KindBudgetExhausted, voice.FallbackOffline},
		{"stream-error", "ZCB_STEERTEST_KIND=ConnectError", voice.KindTransport, voice.FallbackOffline},
		{"error", "ZCB_STEERTEST_CODE=-32020", voice.KindPolicyDenied, voice.FallbackError},
		{"stream-error", "ZCB_STEERTEST_KIND=ToolDispatchError", voice.KindToolDispatch, voice.FallbackError},
		{"error", "ZCB_STEERTEST_CODE=-32011", voice.KindStorage, voice.FallbackError},
	} {
		t.Run(tt.mode+"/"+tt.env, func(t *testing.T) {
			h := start(t, setup{mode: tt.mode, env: []string{tt.env}})
			reg := prometheus.NewRegistry()
			metrics := voice.NewMetrics(reg, bridge.NewMetrics(reg))
			e := echo.New()
			e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
			voice.New(voice.Config{Agent: h.pool, Metrics: metrics}).Routes(e)
			ts := httptest.NewServer(e)
			defer ts.Close()
			b, _ := json.Marshal(map[string]string{"content": "hello", "session_id": "s1"})
			resp, err := http.Post(ts.URL+"/api/message", "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = resp.Body.Close() }()
			var out struct {
				Response string `json:"response"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
				t.Fatalf("status %d, %v", resp.StatusCode, err)
			}
			if out.Response != tt.want {
				t.Errorf("reply %q, want %q", out.Response, tt.want)
			}
			// The turn is recorded just after its reply is sent.
			testkit.WaitFor(t, 5*time.Second, "the error counted under "+tt.kind, func() bool {
				return testutil.ToFloat64(metrics.RequestErrors.WithLabelValues("message", tt.kind)) == 1
			})
		})
	}
}
