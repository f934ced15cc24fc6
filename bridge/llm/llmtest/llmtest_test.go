package llmtest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

func post(ctx context.Context, url, auth, body string) (int, string, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct{ Message struct{ Content string } }
	}
	b, _ := io.ReadAll(resp.Body)
	if json.Unmarshal(b, &out) != nil || len(out.Choices) != 1 {
		return resp.StatusCode, string(b), nil
	}
	return resp.StatusCode, out.Choices[0].Message.Content, nil
}

func TestServer(t *testing.T) {
	s := New(t, "hello")
	ctx := context.Background()
	chat := s.URL + "/v1/chat/completions"
	if code, text, err := post(ctx, chat, "Bearer k", `{"model":"m"}`); err != nil || code != 200 || text != "hello" {
		t.Fatalf("default: %d %q %v", code, text, err)
	}
	if r := s.Request(0); r.Path != "/v1/chat/completions" || r.Auth != "Bearer k" || r.Body["model"] != "m" {
		t.Errorf("recorded %+v", r)
	}
	if code, _, _ := post(ctx, s.URL+"/v1/models", "", `{}`); code != 404 {
		t.Errorf("another path: %d", code)
	}
	s.Set(Reply{Status: 500, Text: "boom"})
	s.SetAudio(Reply{Text: "a dog"})
	if code, text, _ := post(ctx, chat, "", `{"messages":[]}`); code != 500 || text != "boom" {
		t.Errorf("scripted: %d %q", code, text)
	}
	if code, text, _ := post(ctx, chat, "", `{"messages":[{"content":[{"type":"input_audio"}]}]}`); code != 200 || text != "a dog" {
		t.Errorf("audio: %d %q", code, text)
	}
	s.Set(Reply{Func: func(w http.ResponseWriter, r *http.Request) { http.Error(w, "teapot", http.StatusTeapot) }})
	if code, _, _ := post(ctx, chat, "", `{}`); code != http.StatusTeapot {
		t.Errorf("func: %d", code)
	}
	s.Set(Reply{Text: "late", Delay: 50 * time.Millisecond})
	start := time.Now()
	if _, text, _ := post(ctx, chat, "", `{}`); text != "late" || time.Since(start) < 50*time.Millisecond {
		t.Errorf("delay: %q after %s", text, time.Since(start))
	}
	s.Set(Reply{Block: true})
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, _, err := post(cctx, chat, "", `{}`); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("block: %v", err)
	}
	if n := s.Count(); n != 7 || len(s.Requests()) != 7 {
		t.Errorf("%d requests recorded, want 7", n)
	}
}

// TestBlockEndsWithTheTest: a held request is released when the test ends,
// so the server closes.
func TestBlockEndsWithTheTest(t *testing.T) {
	done := make(chan error, 1)
	t.Run("held", func(t *testing.T) {
		s := New(t, "")
		s.Set(Reply{Block: true})
		go func() {
			_, _, err := post(context.Background(), s.URL+"/v1/chat/completions", "", `{}`)
			done <- err
		}()
		for s.Count() == 0 {
			time.Sleep(time.Millisecond)
		}
	})
	testkit.Recv(t, 5*time.Second, done, "the held request was not released")
}
