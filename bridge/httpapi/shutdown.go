package httpapi

import (
	"context"
	"errors"
	"net/http"
)

// ErrShuttingDown is the cause (context.Cause) of a request context the
// server ended because its shutdown grace ran out. A handler that finds it
// answers its route's failure reply (the voice fallback, an NDJSON error
// frame) instead of treating the end as the caller hanging up.
var ErrShuttingDown = errors.New("server shutting down: the shutdown grace ran out")

// ShuttingDown reports whether ctx, a request context or one derived from
// it, ended because the server's shutdown grace ran out.
func ShuttingDown(ctx context.Context) bool {
	return errors.Is(context.Cause(ctx), ErrShuttingDown)
}

// ShuttingDownDetail is the detail of the 503 a route answers instead of
// starting new work once the server is stopping.
const ShuttingDownDetail = "the bridge is shutting down; try again in a moment"

// RefuseWhileStopping returns the 503 {"detail": ShuttingDownDetail} once
// stopping (the server's Stopping channel) is closed, and nil before; a
// nil channel never refuses. Routes that start a voice turn call it first,
// so a turn never starts that the shutdown would then cut.
func RefuseWhileStopping(stopping <-chan struct{}) error {
	select {
	case <-stopping:
		return NewError(http.StatusServiceUnavailable, ShuttingDownDetail)
	default:
		return nil
	}
}
