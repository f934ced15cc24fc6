package ui

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// MemoryRecord is one per-person fact for the review card.
type MemoryRecord struct {
	ID       string `json:"id"`
	PersonID string `json:"person_id"`
	Content  string `json:"content"`
	// Pending is true while the fact waits for a grown-up's approval.
	Pending    bool    `json:"pending"`
	Importance float64 `json:"importance"`
	// CreatedAt and UpdatedAt are as stored (ISO 8601).
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

// Limits of the memory review routes.
const (
	// MaxMemoryID is the longest fact id the approve and redact actions
	// take, in characters (the store's ids are 36-character UUIDs).
	MaxMemoryID = 128
	// memoryWait bounds one call to the memory store, so a locked
	// database answers 503 instead of holding the page's button.
	memoryWait = 10 * time.Second
	// noMemory is the answer when memory is not configured.
	noMemory = "Memory not configured"
	// memoryUnreadable is the answer while the store cannot be read for a
	// cause /health names.
	memoryUnreadable = "Could not read the memory store (the Agent card's problems say why). Try again once that is fixed."
)

// memoryList is GET /ui/api/memory.
type memoryList struct {
	Records []MemoryRecord `json:"records"`
	// More is true when the store left some records off.
	More bool `json:"more"`
}

// memoryResult is what the approve and redact actions answer on success.
type memoryResult struct {
	OK bool   `json:"ok"`
	ID string `json:"id"`
	// Action is "approved" or "redacted".
	Action string `json:"action"`
}

// memory is GET /ui/api/memory: the per-person facts, held-for-review
// first, as the store gives them; 503 with the reason when memory is not
// configured or the store fails. A failure the store reports as a health
// condition (health.ErrReported: logged once, named on /health) is not
// logged again, nor repeated in the answer, which an open dashboard polls
// every minute and the request's log line carries.
func (u *UI) memory(c echo.Context) error {
	if u.cfg.MemoryRecords == nil {
		return httpapi.NewError(http.StatusServiceUnavailable, noMemory)
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), memoryWait)
	defer cancel()
	records, more, err := u.cfg.MemoryRecords(ctx)
	if errors.Is(err, health.ErrReported) {
		return httpapi.NewError(http.StatusServiceUnavailable, memoryUnreadable)
	}
	if err != nil {
		u.log.Warn("memory review: listing failed", "error", err)
		return httpapi.NewError(http.StatusServiceUnavailable, "Could not read the memory store ("+err.Error()+"). Try again in a moment.")
	}
	if records == nil {
		records = []MemoryRecord{}
	}
	return httpapi.WriteJSON(c, http.StatusOK, memoryList{Records: records, More: more})
}

// approveMemory is POST /ui/api/memory/approve: {id}; a held fact becomes
// one Dotty may use.
func (u *UI) approveMemory(c echo.Context) error {
	return u.reviewMemory(c, u.cfg.ApproveMemory, "approve", "approved",
		"That fact is not waiting for review any more: it was approved or redacted already.")
}

// redactMemory is POST /ui/api/memory/redact: {id}; the fact, held or
// approved, is deleted.
func (u *UI) redactMemory(c echo.Context) error {
	return u.reviewMemory(c, u.cfg.RedactMemory, "redact", "redacted",
		"That fact is not stored any more: it was redacted already.")
}

// reviewMemory is the body of both review actions: it binds {id}, calls
// fn and answers 200, 404 with gone when fn found no such fact, or 503
// with the reason when the store is not configured or failed (507 when
// the disk is full).
func (u *UI) reviewMemory(c echo.Context, fn func(context.Context, string) (bool, error), verb, done, gone string) error {
	if fn == nil {
		return httpapi.NewError(http.StatusServiceUnavailable, noMemory)
	}
	var id string
	if err := httpapi.BindFields(c.Request().Body, 4<<10, func(b *httpapi.Binder) {
		id = b.String("id")
		b.MaxRunes("id", id, MaxMemoryID)
	}); err != nil {
		return err
	}
	if strings.TrimSpace(id) == "" {
		return httpapi.NewError(http.StatusBadRequest, "The fact id is empty.")
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), memoryWait)
	defer cancel()
	found, err := fn(ctx, id)
	if err != nil {
		u.log.Warn("memory review: action failed", "action", verb, "id", id, "error", err)
		status := http.StatusServiceUnavailable
		if _, full := health.Cause(err); full {
			status = http.StatusInsufficientStorage
		}
		return httpapi.NewError(status, "Could not "+verb+" the fact ("+err.Error()+"). Try again in a moment.")
	}
	if !found {
		return httpapi.NewError(http.StatusNotFound, gone)
	}
	return httpapi.WriteJSON(c, http.StatusOK, memoryResult{OK: true, ID: id, Action: done})
}
