package httpapi

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRefuseWhileStopping(t *testing.T) {
	open, closed := make(chan struct{}), make(chan struct{})
	close(closed)
	if RefuseWhileStopping(nil) != nil || RefuseWhileStopping(open) != nil {
		t.Error("refused before stopping")
	}
	var apiErr *APIError
	if err := RefuseWhileStopping(closed); !errors.As(err, &apiErr) ||
		apiErr.Status != http.StatusServiceUnavailable || apiErr.Detail != ShuttingDownDetail {
		t.Errorf("while stopping: %v, want 503 %q", err, ShuttingDownDetail)
	}
}

func TestShuttingDown(t *testing.T) {
	base, end := context.WithCancelCause(context.Background())
	req, cancelReq := context.WithCancel(base) // a request's ctx under the server's base
	defer cancelReq()
	turn, cancelTurn := context.WithTimeout(req, time.Minute) // a turn's, under the request's
	defer cancelTurn()
	if ShuttingDown(turn) {
		t.Error("a live ctx reported as shut down")
	}
	end(ErrShuttingDown)
	if !ShuttingDown(req) || !ShuttingDown(turn) {
		t.Error("the cause does not reach the request's and the turn's ctx")
	}
	left, leave := context.WithCancel(context.Background()) // a caller who hung up
	leave()
	if ShuttingDown(left) {
		t.Error("a caller leaving reported as a shutdown")
	}
}
