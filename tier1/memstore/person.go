package memstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Per-person memory: a fact declared about one household member is a
// "core" row in namespace person:<id> — read into that person's voice
// turns — or, while a grown-up has not approved it, person_pending:<id>,
// which nothing puts in front of the model. Who needs review is decided by
// the caller (the household's kid-safety gate); this file stores, reads,
// lists, approves and redacts.

// Limits of per-person memory.
const (
	// MaxPersonFacts bounds PersonMaxFacts: every fact goes into each of
	// that person's turns.
	MaxPersonFacts = 100
	// MaxPersonRecords caps one review listing, so a huge table cannot
	// produce a huge response.
	MaxPersonRecords = 500
	// MaxPersonIDLen is the longest person id, in characters; household
	// ids are short names.
	MaxPersonIDLen = 64
	// MaxRowIDLen is the longest row id Approve and Redact look up (the
	// bridge's ids are 36-character UUIDs).
	MaxRowIDLen = 128

	personFactCap    = 300 // characters stored, as for /remember
	personImportance = 0.7
	// maxReviewWait bounds one review action even when its ctx does not:
	// the writer goroutine is not held up by a caller that never gives up.
	maxReviewWait = 30 * time.Second
)

// The namespaces of approved and held facts; an id follows the colon.
const (
	personPrefix  = "person:"
	pendingPrefix = "person_pending:"
)

// ErrInvalidPersonFact means a per-person write had no usable person id or
// no fact; nothing was stored.
var ErrInvalidPersonFact = errors.New("invalid person memory write")

// NormalizePersonID is the id facts about a person are kept under: the
// name or household id stripped and lowercased, as household ids are.
func NormalizePersonID(name string) string { return strings.ToLower(text.Strip(name)) }

// checkPersonID reports why a normalised id cannot name a namespace.
func checkPersonID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty person id", ErrInvalidPersonFact)
	case utf8.RuneCountInString(id) > MaxPersonIDLen:
		return fmt.Errorf("%w: person id longer than %d characters", ErrInvalidPersonFact, MaxPersonIDLen)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: person id is not UTF-8", ErrInvalidPersonFact)
	case strings.ContainsFunc(id, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }):
		return fmt.Errorf("%w: person id has control characters", ErrInvalidPersonFact)
	}
	return nil
}

// validRowID accepts the ids the bridge and ZeroClaw give rows (UUIDs)
// and nothing that could be mistaken for anything else.
func validRowID(id string) bool {
	if id == "" || len(id) > MaxRowIDLen {
		return false
	}
	for _, c := range []byte(id) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// PersonWrite is a fact declared about one person.
type PersonWrite struct {
	// PersonID is the person's name or household id; it is stripped and
	// lowercased (NormalizePersonID).
	PersonID string
	// Fact is stripped and cut to 300 characters (bridge.py's); PersonBlock
	// makes it safe where it enters a prompt.
	Fact string
	// Pending holds the fact for review (person_pending:<id>) instead of
	// making it readable (person:<id>).
	Pending bool
	// SessionID is stored when HasSession is set, NULL otherwise.
	SessionID  string
	HasSession bool
}

// EnqueuePerson accepts a per-person fact for the writer, with Enqueue's
// guarantee: once it returns nil the fact is journalled and will reach
// brain.db. A blank or unusable person id or a blank fact is
// ErrInvalidPersonFact; otherwise Enqueue's errors.
func (s *Store) EnqueuePerson(p PersonWrite) error {
	id := NormalizePersonID(p.PersonID)
	if err := checkPersonID(id); err != nil {
		return err
	}
	fact := text.Truncate(text.Strip(p.Fact), text.Cut{Max: personFactCap})
	if fact == "" {
		return fmt.Errorf("%w: empty fact", ErrInvalidPersonFact)
	}
	namespace := personPrefix + id
	if p.Pending {
		namespace = pendingPrefix + id
	}
	return s.Enqueue(Write{Content: fact, Category: "core", Importance: personImportance, Namespace: namespace,
		SessionID: p.SessionID, HasSession: p.HasSession})
}

// PersonRecord is one per-person row of brain.db.
type PersonRecord struct {
	ID       string `json:"id"`
	PersonID string `json:"person_id"`
	Content  string `json:"content"`
	// Namespace is person:<id> or person_pending:<id>.
	Namespace string `json:"namespace"`
	// Pending is true while the fact waits for a grown-up's approval.
	Pending    bool    `json:"pending"`
	Importance float64 `json:"importance"`
	// CreatedAt and UpdatedAt are as stored (ISO 8601, UTC).
	CreatedAt string `json:"created_at"`
	UpdatedAt string `json:"updated_at"`
}

const personColumns = `id, content, COALESCE(namespace, ''), COALESCE(importance, 0), created_at, updated_at`

func scanPersonRecords(rows *sql.Rows) ([]PersonRecord, error) {
	defer rows.Close()
	var out []PersonRecord
	for rows.Next() {
		var r PersonRecord
		if err := rows.Scan(&r.ID, &r.Content, &r.Namespace, &r.Importance, &r.CreatedAt, &r.UpdatedAt); err != nil {
			return nil, err
		}
		if rest, ok := strings.CutPrefix(r.Namespace, pendingPrefix); ok {
			r.PersonID, r.Pending = rest, true
		} else {
			r.PersonID = strings.TrimPrefix(r.Namespace, personPrefix)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// PersonFacts returns up to limit approved facts about personID (never
// the held ones), most important first, then most recently updated. It
// reads through the read-only handle, so a ZeroClaw writer in WAL mode
// never blocks it. It is empty on any error — a missing database, an
// unknown person, a busy file — because a turn goes on without them.
func (s *Store) PersonFacts(ctx context.Context, personID string, limit int) []PersonRecord {
	id := NormalizePersonID(personID)
	if limit <= 0 || checkPersonID(id) != nil {
		return nil
	}
	db, release, err := s.reader()
	if err != nil {
		s.log.Debug("person memory unavailable", "error", err)
		return nil
	}
	defer release()
	rows, err := db.QueryContext(ctx, `SELECT `+personColumns+` FROM memories WHERE namespace = ?
		ORDER BY importance DESC, updated_at DESC LIMIT ?`, personPrefix+id, limit)
	if err != nil {
		s.readFailed(ctx, "person memory read failed", err, "person", id)
		return nil
	}
	out, err := scanPersonRecords(rows)
	if err != nil {
		s.readFailed(ctx, "person memory read failed", err, "person", id)
		return nil
	}
	return out
}

// readFailed logs a failed read and drops the cached handle unless the
// caller just gave up (the file may have been replaced).
func (s *Store) readFailed(ctx context.Context, msg string, err error, kv ...any) {
	if ctx.Err() != nil {
		return
	}
	s.log.Warn(msg, append(kv, "error", err)...)
	s.resetReader()
}

// PersonBlock is the prompt block of what is known about personID:
// "[Person memory]\n" then "- <fact>\n" for each of up to PersonMaxFacts
// approved facts, each made one safe line (prompttext.Line, whatever the
// row holds) of at most 160 characters (159 and "…"). It is "" when
// nothing is known, so a turn with a stranger carries no empty marker.
func (s *Store) PersonBlock(ctx context.Context, personID string) string {
	var b strings.Builder
	for _, f := range s.PersonFacts(ctx, personID, s.cfg.PersonMaxFacts) {
		c := prompttext.Line(f.Content, prompttext.Fact)
		if c == "" {
			continue
		}
		b.WriteString("- " + c + "\n")
	}
	if b.Len() == 0 {
		return ""
	}
	return "[Person memory]\n" + b.String()
}

// PersonRecords lists per-person rows for review, read from brain.db:
// the held ones first, then by person, importance and recency. At most
// MaxPersonRecords are returned; more reports that some were left off. A
// missing database has no records; other failures are errors. One that
// is not a lock or the caller giving up (a path that cannot be read, a
// file that is not a database) is the review's health condition, logged
// once, and wraps health.ErrReported; a listing that succeeds clears it,
// as does its re-check (the file reads again) for a file system cause.
func (s *Store) PersonRecords(ctx context.Context) (records []PersonRecord, more bool, err error) {
	records, more, err = s.personRecords(ctx)
	switch {
	case err == nil:
		s.cfg.Health.Recovered(s.log, s.cfg.reviewKey(), "voice memory database readable again by the memory review", "path", s.cfg.Path)
		return records, more, nil
	case ctx.Err() != nil:
		return nil, false, err
	}
	s.resetReader() // the file may have been replaced
	if isBusy(err) {
		return nil, false, err
	}
	var check health.Check
	var pathErr *fs.PathError
	if errors.As(err, &pathErr) {
		check = health.Readable(s.cfg.Path)
	}
	s.cfg.Health.Failed(s.log, hclog.Warn, s.cfg.reviewKey(), "memory review", err, check,
		"the memory review cannot read the voice memory database", "path", s.cfg.Path)
	return nil, false, fmt.Errorf("%w: %w", health.ErrReported, err)
}

func (s *Store) personRecords(ctx context.Context) (records []PersonRecord, more bool, err error) {
	if _, err := os.Stat(s.cfg.Path); errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	db, release, err := s.reader()
	if err != nil {
		return nil, false, fmt.Errorf("list person memory: %w", err)
	}
	defer release()
	// Ranges rather than LIKE ('_' is a wildcard) or substr (no index):
	// ';' is the byte after ':'.
	rows, err := db.QueryContext(ctx, `SELECT `+personColumns+` FROM memories
		WHERE (namespace >= ? AND namespace < ?) OR (namespace >= ? AND namespace < ?)
		ORDER BY substr(namespace, 1, ?) = ? DESC, namespace, importance DESC, updated_at DESC
		LIMIT ?`,
		personPrefix, "person;", pendingPrefix, "person_pending;", len(pendingPrefix), pendingPrefix, MaxPersonRecords+1)
	if err != nil {
		return nil, false, fmt.Errorf("list person memory: %w", err)
	}
	records, err = scanPersonRecords(rows)
	if err != nil {
		return nil, false, fmt.Errorf("list person memory: %w", err)
	}
	if len(records) > MaxPersonRecords {
		return records[:MaxPersonRecords], true, nil
	}
	return records, false, nil
}

// Approve makes a held fact readable: its row moves from
// person_pending:<id> to person:<id> with updated_at now. A missing row,
// one already approved, any other row or a malformed id is false, nil —
// approving twice is harmless. Errors wrap ErrBusy and ctx's error (the
// database stayed locked until ctx ended, or at most 30 s), ErrClosed (the
// store has stopped) or SQLite's own; ctx also bounds the wait for the
// writer to finish a queued write first.
func (s *Store) Approve(ctx context.Context, id string) (bool, error) {
	if !validRowID(id) {
		return false, nil
	}
	return s.review(ctx, "approve person memory", func(ctx context.Context, db *sql.DB) (bool, error) {
		now := s.cfg.Clock.Now().UTC().Format(tsLayout)
		res, err := db.ExecContext(ctx, `UPDATE memories SET namespace = ? || substr(namespace, ?), updated_at = ?
			WHERE id = ? AND substr(namespace, 1, ?) = ?`,
			personPrefix, len(pendingPrefix)+1, now, id, len(pendingPrefix), pendingPrefix)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	})
}

// Redact deletes a per-person fact, held or approved; ZeroClaw's delete
// trigger drops it from the FTS index too. Only per-person rows can be
// redacted — the review card shows nothing else — so a guessed id cannot
// delete the agent's own memories. A missing or malformed id is false,
// nil; errors as for Approve.
func (s *Store) Redact(ctx context.Context, id string) (bool, error) {
	if !validRowID(id) {
		return false, nil
	}
	return s.review(ctx, "redact person memory", func(ctx context.Context, db *sql.DB) (bool, error) {
		res, err := db.ExecContext(ctx, `DELETE FROM memories WHERE id = ?
			AND (substr(namespace, 1, ?) = ? OR substr(namespace, 1, ?) = ?)`,
			id, len(personPrefix), personPrefix, len(pendingPrefix), pendingPrefix)
		if err != nil {
			return false, err
		}
		n, err := res.RowsAffected()
		return n > 0, err
	})
}

// op is a review action for the writer goroutine.
type op struct {
	ctx  context.Context
	fn   func(context.Context, *sql.DB) (bool, error)
	done chan opResult // buffered: the writer never waits for the caller
}

type opResult struct {
	ok  bool
	err error
}

// review hands fn to the writer goroutine and waits for its answer.
func (s *Store) review(ctx context.Context, what string, fn func(context.Context, *sql.DB) (bool, error)) (bool, error) {
	if _, err := os.Stat(s.cfg.Path); errors.Is(err, fs.ErrNotExist) {
		return false, nil // no database, no such row
	}
	o := op{ctx: ctx, fn: fn, done: make(chan opResult, 1)}
	select {
	case <-s.halt:
		return false, fmt.Errorf("%s: %w", what, ErrClosed)
	default:
	}
	select {
	case s.ops <- o:
	case <-s.halt:
		return false, fmt.Errorf("%s: %w", what, ErrClosed)
	case <-ctx.Done():
		return false, fmt.Errorf("%s: waiting for the memory writer: %w", what, ctx.Err())
	}
	select {
	case r := <-o.done:
		if r.err != nil {
			return false, fmt.Errorf("%s: %w", what, r.err)
		}
		return r.ok, nil
	case <-ctx.Done():
		return false, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// run performs a review action, retrying while the database is busy,
// until the caller's ctx ends, Run's ctx ends or maxReviewWait passes.
// Its other errors are explained (a full disk is syscall.ENOSPC).
func (s *Store) runOp(runCtx context.Context, w *writer, o op) {
	if runCtx.Err() != nil { // shutdown won the race with this action
		o.done <- opResult{err: ErrClosed}
		return
	}
	ctx, cancel := context.WithTimeout(o.ctx, maxReviewWait)
	defer cancel()
	defer context.AfterFunc(runCtx, cancel)()
	if err := ctx.Err(); err != nil {
		o.done <- opResult{err: err}
		return
	}
	b := s.backOff()
	var ok bool
	var err error
	for attempt := 1; ; attempt++ {
		if err = w.open(); err == nil {
			ok, err = o.fn(ctx, w.db)
		}
		if err == nil || !isBusy(err) {
			break
		}
		if attempt == 1 || attempt%10 == 0 {
			s.log.Warn("voice memory database busy; retrying", "attempt", attempt, "error", err)
		}
		t := s.cfg.Clock.NewTimer(b.NextBackOff())
		select {
		case <-ctx.Done():
		case <-t.Chan():
		}
		t.Stop()
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v): %w", ErrBusy, err, ctx.Err())
			break
		}
	}
	if err != nil && !errors.Is(err, ErrBusy) {
		w.reset()
	}
	if errors.Is(err, fs.ErrNotExist) {
		ok, err = false, nil // the file went away: no such row
	}
	err = s.cfg.explain(err)
	o.done <- opResult{ok: ok && err == nil, err: err}
}
