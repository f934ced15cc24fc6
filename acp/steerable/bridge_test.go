package steerable_test

import (
	"bytes"
	"encoding/json"
	"fmt"
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
)

// The sidecar's error codes, through the real voice route: each is
// counted under its own kind and answered with its fallback.
func TestSidecarErrorsReachTheVoiceRoute(t *testing.T) {
	for _, tt := range []struct {
		mode string
		code int
		kind string
		want string
	}{
		{"error", -32001, bridge.KindBudgetExhausted, bridge.FallbackOffline},
		{"stream-error", -32005, bridge.KindTransport, bridge.FallbackOffline},
		{"error", -32002, bridge.KindPolicyDenied, bridge.FallbackError},
		{"stream-error", -32003, bridge.KindToolDispatch, bridge.FallbackError},
		{"error", -32004, bridge.KindStorage, bridge.FallbackError},
	} {
		t.Run(fmt.Sprintf("%s/%d", tt.mode, tt.code), func(t *testing.T) {
			h := start(t, setup{mode: tt.mode, env: []string{fmt.Sprint("ZCB_STEERTEST_CODE=", tt.code)}})
			metrics := bridge.NewMetrics(prometheus.NewRegistry())
			e := echo.New()
			e.HTTPErrorHandler = httpapi.ErrorHandler(hclog.NewNullLogger())
			bridge.NewVoice(bridge.VoiceConfig{Agent: h.pool, Metrics: metrics}).Routes(e)
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
