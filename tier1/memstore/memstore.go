// Package memstore is the voice memory in ZeroClaw's SQLite brain.db,
// shared with the agent: facts and turn summaries written by Tier1Slim's
// remember and memory_log calls, the FTS5 phrase search behind
// memory_lookup, and per-person memory — facts about one household member
// in namespace person:<id>, or person_pending:<id> while a grown-up has
// not yet approved them (see person.go).
//
// ZeroClaw owns the schema. An existing file is never migrated or altered;
// a missing one is created with ZeroClaw's table, FTS5 index and sync
// triggers so memory works without the agent. Writes on ZeroClaw ≥ 0.8
// databases (agent_id NOT NULL, per-agent unique keys) carry the agent id
// of the configured alias.
//
// # Concurrency
//
// Enqueue appends the write to an fsynced journal beside the database,
// then hands it to one bounded queue and one writer goroutine (Run) that
// owns the read-write connection and drains the queue when Run's ctx
// ends. A row leaves the queue, and the journal, only once it is in
// brain.db: the writer waits out a busy database, and retries a failing
// one (full, read-only, unopenable, corrupt) with backoff, marking its
// health condition and counting the failures, until it takes the row. An
// accepted write therefore survives a crash, a power loss and a full or
// read-only disk as well as a clean stop: Run replays the journal at
// start, and a row's id is fixed at Enqueue, so a replay never duplicates
// one. The journal is emptied whenever the queue is. Enqueue answers an
// error instead of dropping a write silently: ErrJournal when the journal
// cannot take it (nothing was accepted), ErrQueueFull when QueueSize
// writes already wait (with the database's cause when it is failing). Search and the
// person-memory reads use a separate read-only connection and may run
// concurrently with writes. The review actions (Approve, Redact) are run
// by the same writer goroutine, between queued writes, so every change to
// brain.db made by the bridge is serialised and waits out ZeroClaw's locks
// the same way.
package memstore

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/health"
)

// Errors callers branch on.
var (
	// ErrQueueFull means the writer is behind; the write was not accepted.
	ErrQueueFull = errors.New("memory write queue full")
	// ErrClosed means the writer has stopped; the write was not accepted.
	ErrClosed = errors.New("memory writer stopped")
	// ErrBusy means the database stayed locked (by ZeroClaw, usually)
	// until the caller stopped waiting.
	ErrBusy = errors.New("memory database busy")
	// ErrJournal means the journal could not be written; the write was
	// not accepted. The store has logged the cause, which the error wraps.
	ErrJournal = errors.New("memory journal not writable")
	// ErrDatabase means the writer cannot write brain.db for another
	// reason than a lock (the error wraps the cause, logged by the store
	// and named on /health): accepted rows wait in the journal.
	ErrDatabase = errors.New("memory database not writable")
)

// Config configures the store.
type Config struct {
	// Path is VOICE_MEMORY_DB.
	Path string
	// AgentAlias picks agents.id for agent_id on ZeroClaw ≥ 0.8 databases
	// (ZEROCLAW_AGENT_ALIAS); empty means "default".
	AgentAlias string
	// QueueSize bounds accepted writes not yet in brain.db (256).
	QueueSize int
	// WriteBusyTimeout is SQLite's busy timeout for one insert (5 s).
	WriteBusyTimeout time.Duration
	// ReadBusyTimeout is SQLite's busy timeout for a search (2 s).
	ReadBusyTimeout time.Duration
	// DrainTimeout bounds the final drain at shutdown (30 s).
	DrainTimeout time.Duration
	// Journal is the file accepted writes are appended to before Enqueue
	// returns (Path + ".voice-journal").
	Journal string
	// Logger receives failures. Nil discards.
	Logger hclog.Logger
	// Clock stamps the rows and times the drain and the busy retries; nil
	// is the real clock.
	Clock clockwork.Clock
	// PersonMaxFacts is how many facts PersonBlock loads
	// (PERSON_MEMORY_MAX_FACTS): 0 means DefaultConfig's, a negative value
	// turns the block off.
	PersonMaxFacts int
	// Health is the conditions set: the journal's key fails while an
	// accepted write cannot be journaled (writes are refused), the
	// compaction's while the journal cannot be emptied, the database's
	// while rows cannot be written to it (created, opened or inserted:
	// they wait in the journal),
	// the review's while the memory review cannot read it. Each cause is
	// logged once, when its condition begins; a cause with an honest
	// re-check (a directory that takes files again, a database file that
	// opens for writing again) carries it (see databaseCheck). Nil keeps
	// a private set.
	Health *health.Conditions
	// Metrics are the writer's series; nil keeps unregistered ones.
	Metrics *Metrics
}

func (c Config) withDefaults() Config {
	if c.AgentAlias == "" {
		c.AgentAlias = "default"
	}
	if c.QueueSize <= 0 {
		c.QueueSize = 256
	}
	if c.WriteBusyTimeout <= 0 {
		c.WriteBusyTimeout = 5 * time.Second
	}
	if c.ReadBusyTimeout <= 0 {
		c.ReadBusyTimeout = 2 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.Journal == "" && c.Path != "" {
		c.Journal = c.Path + ".voice-journal"
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.PersonMaxFacts == 0 {
		c.PersonMaxFacts = DefaultConfig().PersonMaxFacts
	}
	if c.Health == nil {
		c.Health = health.New()
	}
	if c.Metrics == nil {
		c.Metrics = NewMetrics(nil)
	}
	return c
}

// The store's health conditions: the journal (appends), its compaction,
// the database (writes) and the review's reads of it.
func (c Config) journalKey() string    { return "memory journal " + c.Journal }
func (c Config) compactionKey() string { return "memory journal compaction " + c.Journal }
func (c Config) databaseKey() string   { return "memory database " + c.Path }
func (c Config) reviewKey() string     { return "memory review " + c.Path }

// databaseFailed marks the database failing with err and logs msg at
// level the first time, at Debug while the condition lasts. A re-check
// of it that passes also tells a waiting writer to try again at once.
func (s *Store) databaseFailed(level hclog.Level, msg string, err error, args ...any) {
	check := s.cfg.databaseCheck(err)
	if check != nil {
		probe := check
		check = func() error {
			if err := probe(); err != nil {
				return err
			}
			select {
			case s.recheck <- struct{}{}:
			default:
			}
			return nil
		}
	}
	s.cfg.Health.Failed(s.log, level, s.cfg.databaseKey(), "memory database", err, check, msg, args...)
}

// databaseCheck picks the re-check of a database failure. Its directory's
// trouble (health.DirCheck: creating brain.db in a read-only or full
// directory) and SQLite's read-only, cannot-open and full errors are
// re-checked by probeDatabase. Anything else — a corrupt file, a schema
// ZeroClaw changed — has no cheap honest re-check and is cleared by the
// next row written.
func (c Config) databaseCheck(err error) health.Check {
	if check := health.DirCheck(filepath.Dir(c.Path), err); check != nil {
		return check
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL:
		return c.probeDatabase
	}
	return nil
}

// probeDatabase opens brain.db for writing (when it exists) and probes
// its directory, where SQLite writes its rollback journal or WAL.
func (c Config) probeDatabase() error {
	f, err := os.OpenFile(c.Path, os.O_RDWR, 0) // #nosec G304 -- VOICE_MEMORY_DB
	switch {
	case errors.Is(err, fs.ErrNotExist): // the next write creates it
	case err != nil:
		return err
	default:
		_ = f.Close()
	}
	return health.Writable(filepath.Dir(c.Path))
}

// explain adds the file system's reason to a SQLite error that hides it,
// so errors.Is finds the errno (and health.Cause names it): a full
// database is syscall.ENOSPC; a read-only or unopenable one is what
// probeDatabase meets now, when it fails.
func (c Config) explain(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return err
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("%w (%w)", err, syscall.ENOSPC)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN:
		if perr := c.probeDatabase(); perr != nil {
			return fmt.Errorf("%w (%w)", err, perr)
		}
	}
	return err
}

// DefaultConfig returns bridge.py's person-memory setting: the one place
// it is written. Its Path is the bridge's to give.
func DefaultConfig() Config { return Config{PersonMaxFacts: 8} }

// Validate reports an unusable configuration: an empty Path, and every
// setting outside its range as a *fieldcheck.Error naming the field
// ("PersonMaxFacts"), the one range check of each field; the bridge's
// command line names the variable a value came from.
func (c Config) Validate() error {
	var errs fieldcheck.Errors
	if c.Path == "" {
		errs = append(errs, errors.New("memory database path is empty"))
	}
	errs.Check("PersonMaxFacts", c.PersonMaxFacts <= MaxPersonFacts, c.PersonMaxFacts, fmt.Sprintf("at most %d", MaxPersonFacts))
	return errs.Err()
}

// Write is one memory row to insert.
type Write struct {
	Content    string
	Category   string // "conversation" or "core"
	Importance float64
	// Namespace is "voice" when empty; person memory is written through
	// EnqueuePerson, which builds it.
	Namespace string
	// SessionID is stored when HasSession is set, NULL otherwise.
	SessionID  string
	HasSession bool
}

// entry is an accepted write with the identity it keeps through replays.
type entry struct {
	ID         string  `json:"id"`
	TS         string  `json:"ts"`
	Content    string  `json:"content"`
	Category   string  `json:"category"`
	Importance float64 `json:"importance"`
	Namespace  string  `json:"namespace,omitempty"` // absent in journals of older versions: "voice"
	SessionID  string  `json:"session_id,omitempty"`
	HasSession bool    `json:"has_session,omitempty"`
}

// Row is one search hit.
type Row struct {
	Key, Content, Category, Namespace, CreatedAt string
}

// Store is the voice memory.
type Store struct {
	cfg     Config
	log     hclog.Logger
	metrics *Metrics
	// notify wakes the writer when a write is queued, recheck when a
	// re-check of the database's failure passed (buffered: a sender never
	// waits).
	notify, recheck chan struct{}
	// ops carries review actions to the writer goroutine; halt is closed
	// once it stops taking them.
	ops      chan op
	halt     chan struct{}
	haltOnce sync.Once

	mu sync.Mutex
	// pending are the journaled rows not yet in brain.db, oldest first;
	// the writer removes one only once it is written.
	pending []entry
	// stalled is why the writer cannot write the oldest row, a lock
	// excepted; nil once it could.
	stalled  error
	journal  *os.File // opened by the first Enqueue
	size     int64    // bytes of whole lines in the journal
	torn     bool     // a failed append may have left part of a line after size
	closed   bool     // no more writes accepted
	ro       *sql.DB  // cached read-only handle, opened lazily
	finished bool     // Run has returned: searches use one-off handles
}

// New returns a store; Run starts its writer.
func New(cfg Config) *Store {
	cfg = cfg.withDefaults()
	return &Store{cfg: cfg, log: cfg.Logger, metrics: cfg.Metrics, notify: make(chan struct{}, 1),
		recheck: make(chan struct{}, 1), ops: make(chan op), halt: make(chan struct{})}
}

// tsLayout is the created_at format of ZeroClaw's rows.
const tsLayout = "2006-01-02T15:04:05.000000+00:00"

// Enqueue accepts w for the writer: once it returns nil, w is in the
// fsynced journal and will reach the database even if the process dies
// first. It waits only for that fsync, never for the database. Its
// errors: ErrClosed; ErrQueueFull when QueueSize writes wait, which also
// wraps ErrDatabase and the cause while the writer cannot write them; and
// ErrJournal wrapping the file system's error (a full disk is
// syscall.ENOSPC) when w could not be journaled.
func (s *Store) Enqueue(w Write) error {
	e := entry{ID: uuid.NewString(), TS: s.cfg.Clock.Now().UTC().Format(tsLayout), Content: w.Content, Category: w.Category,
		Importance: w.Importance, Namespace: w.Namespace, SessionID: w.SessionID, HasSession: w.HasSession}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode memory write: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if n := len(s.pending); n >= s.cfg.QueueSize {
		if s.stalled != nil {
			return fmt.Errorf("%w (%d writes wait): %w: %w", ErrQueueFull, n, ErrDatabase, s.stalled)
		}
		return ErrQueueFull
	}
	if err := s.appendLocked(append(line, '\n')); err != nil {
		check := health.DirCheck(filepath.Dir(s.cfg.Journal), err)
		if check == nil && s.journal == nil { // it could not be opened
			check = health.Appendable(s.cfg.Journal)
		}
		s.cfg.Health.Failed(s.log, hclog.Error, s.cfg.journalKey(), "memory journal", err, check,
			"voice memory journal not writable; memory writes are refused until it is", "path", s.cfg.Journal)
		return fmt.Errorf("%w: %w", ErrJournal, err)
	}
	s.cfg.Health.Recovered(s.log, s.cfg.journalKey(), "voice memory journal writable again; memory writes are accepted", "path", s.cfg.Journal)
	s.pending = append(s.pending, e)
	s.metrics.Pending.Set(float64(len(s.pending)))
	s.wake()
	return nil
}

// wake tells the writer to look at the queue again.
func (s *Store) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// appendLocked appends line to the journal and fsyncs it. Its errors are
// the file system's, naming the path. A failed append is cut off again,
// so the next line starts where the last whole one ended; when that fails
// too, the next append starts a new line, and the part left behind is an
// unreadable line a replay skips, as it skips one a crash cut.
func (s *Store) appendLocked(line []byte) error {
	if s.journal == nil {
		dir := filepath.Dir(s.cfg.Journal)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(s.cfg.Journal, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		syncDir(dir) // the new file's name must survive a power loss too
		s.journal, s.size, s.torn = f, 0, false
		if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
			// A crash may have cut the last line: never continue it.
			last := make([]byte, 1)
			_, rerr := f.ReadAt(last, fi.Size()-1)
			s.size, s.torn = fi.Size(), rerr != nil || last[0] != '\n'
		}
	}
	if s.torn {
		// What a failed append left is of unknown length: start after it.
		fi, err := s.journal.Stat()
		if err != nil {
			return err
		}
		s.size = fi.Size()
		line = append([]byte{'\n'}, line...)
	}
	_, err := s.journal.Write(line)
	if err == nil {
		err = s.journal.Sync()
	}
	if err != nil {
		if terr := s.journal.Truncate(s.size); terr == nil {
			_ = s.journal.Sync()
		} else {
			s.torn = true
		}
		return err
	}
	s.size += int64(len(line))
	s.torn = false
	return nil
}

// written removes e, the oldest pending row, now in brain.db, and empties
// the journal when no row waits any more.
func (s *Store) written(e entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 && s.pending[0].ID == e.ID {
		s.pending[0] = entry{}
		s.pending = s.pending[1:]
	}
	s.metrics.Pending.Set(float64(len(s.pending)))
	if len(s.pending) == 0 {
		s.pending = nil
		s.compactLocked()
	}
}

// head is the oldest pending row.
func (s *Store) head() (entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return entry{}, false
	}
	return s.pending[0], true
}

// compactLocked empties the journal; every row in it has reached the
// database.
func (s *Store) compactLocked() {
	var err error
	if s.journal == nil { // nothing accepted yet in this process: a replayed file
		if err = os.Truncate(s.cfg.Journal, 0); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else if err = s.journal.Truncate(0); err == nil {
		_ = s.journal.Sync()
		s.size, s.torn = 0, false
	}
	if err == nil {
		s.cfg.Health.Recovered(s.log, s.cfg.compactionKey(), "voice memory journal emptied again", "path", s.cfg.Journal)
		return
	}
	// Its own condition: appends that work must not clear it (nor it
	// them). No re-check: only emptying it, after the next write, proves
	// the journal holds no row already written (a redacted one included).
	s.cfg.Health.Failed(s.log, hclog.Warn, s.cfg.compactionKey(), "memory journal compaction", err, nil,
		"voice memory journal not emptied", "path", s.cfg.Journal)
}

// replay queues what an unclean stop left in the journal, ahead of the
// writes accepted since; a row accepted by this process before Run is in
// the file too, and is queued once.
func (s *Store) replay() {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := os.ReadFile(s.cfg.Journal)
	if err != nil || len(b) == 0 {
		return
	}
	queued := make(map[string]bool, len(s.pending))
	for _, e := range s.pending {
		queued[e.ID] = true
	}
	var rows []entry
	torn := 0
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e entry
		if json.Unmarshal(line, &e) != nil || e.ID == "" {
			torn++ // a line cut by a crash or a failed append was never acknowledged
			continue
		}
		if !queued[e.ID] {
			queued[e.ID] = true
			rows = append(rows, e)
		}
	}
	if len(rows) > 0 || torn > 0 {
		s.log.Info("replaying the voice memory journal after an unclean stop", "rows", len(rows), "unreadable_lines", torn)
	}
	s.pending = append(rows, s.pending...)
	s.metrics.Pending.Set(float64(len(s.pending)))
	if len(s.pending) == 0 {
		s.compactLocked()
	}
}

// syncDir fsyncs a directory, so a file created or renamed in it survives
// a power loss.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil { // #nosec G304 -- the configured database's own directory
		_ = d.Sync()
		_ = d.Close()
	}
}

// Accepting reports whether Enqueue still takes writes (false once
// shutdown has begun).
func (s *Store) Accepting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.closed
}

// Pending reports how many accepted writes are not yet in brain.db.
func (s *Store) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// Run creates the database when it is missing, then writes the journal's
// rows, oldest first, and runs review actions until ctx ends, drains the
// queue and returns. A row leaves the journal only once it is in brain.db:
// one that cannot be written is retried with backoff (a lock is waited
// out; any other failure is the database's health condition, and review
// actions are refused meanwhile). A write in progress when ctx ends is
// finished, not abandoned, unless its database is failing; the whole drain
// is bounded by DrainTimeout after ctx ends, and what it leaves stays in
// the journal for the next start.
func (s *Store) Run(ctx context.Context) error {
	defer s.finish()
	defer s.stopOps()
	w := &writer{cfg: s.cfg}
	defer w.close()
	defer s.closeJournal()
	if err := s.cfg.ensure(); err != nil {
		s.databaseFailed(hclog.Error, "voice memory database unavailable; memory writes wait for it", err, "path", s.cfg.Path)
	}
	// No write is accepted once shutdown has begun, even while the writer
	// is still busy with an earlier one.
	stopAccepting := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stopOps()
	})
	defer stopAccepting()
	// wctx bounds writes: it ends DrainTimeout after ctx does.
	wctx, wcancel := context.WithCancel(context.Background())
	defer wcancel()
	go func() {
		select {
		case <-ctx.Done():
			t := s.cfg.Clock.NewTimer(s.cfg.DrainTimeout)
			defer t.Stop()
			select {
			case <-t.Chan():
				wcancel()
			case <-wctx.Done():
			}
		case <-wctx.Done():
		}
	}()
	s.replay()
	for {
		// Once stopping, the drain takes over.
		if ctx.Err() != nil {
			return s.drain(ctx, wctx, w)
		}
		// Queued writes go first: a review action then runs only once the
		// journal has been emptied of every row already written, so a
		// redacted row can never come back from a replay after a crash.
		if e, ok := s.head(); ok {
			if s.deliver(ctx, wctx, w, e) == nil {
				s.written(e)
			}
			continue
		}
		select {
		case <-s.notify:
		case o := <-s.ops:
			s.runOp(ctx, w, o)
		case <-ctx.Done():
		}
	}
}

// stopOps makes waiting and later review actions fail with ErrClosed.
func (s *Store) stopOps() { s.haltOnce.Do(func() { close(s.halt) }) }

func (s *Store) closeJournal() { closeHeld(&s.mu, &s.journal) }

// closeHeld closes the handle *h, if any, under mu and forgets it.
func closeHeld[H interface {
	comparable
	io.Closer
}](mu *sync.Mutex, h *H) {
	mu.Lock()
	defer mu.Unlock()
	var none H
	if *h != none {
		_ = (*h).Close()
		*h = none
	}
}

// drain writes everything still pending, refusing new writes. It stops at
// the first row the database refuses for another reason than a lock, or
// the drain deadline cuts short, and leaves the rest in the journal.
func (s *Store) drain(ctx, wctx context.Context, w *writer) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if n := s.Pending(); n > 0 {
		s.log.Info("writing queued voice memories before exit", "pending", n)
	}
	for {
		e, ok := s.head()
		if !ok {
			return nil
		}
		if err := s.deliver(ctx, wctx, w, e); err != nil {
			left := s.Pending()
			s.log.Error("voice memories not written at shutdown; they stay in the journal for the next start",
				"pending", left, "journal", s.cfg.Journal, "error", err)
			return fmt.Errorf("drain memory queue: %d writes left in the journal: %w", left, err)
		}
		s.written(e)
	}
}

// ensure creates a missing database with ZeroClaw's schema: at start,
// and when a write finds it missing (its directory may have become
// writable since). The file system's errors name their path and are
// returned as they are.
func (c Config) ensure() error {
	if _, err := os.Stat(c.Path); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.Path), 0o700); err != nil {
		return err
	}
	// Created here, not by SQLite, so it is private (0600) like the logs:
	// it holds what the family told the robot.
	f, err := os.OpenFile(c.Path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_ = f.Close()
	db, err := sql.Open("sqlite", dsn(c.Path, "rw", c.WriteBusyTimeout))
	if err != nil {
		return fmt.Errorf("create %s: %w", c.Path, err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		return fmt.Errorf("create %s: %w", c.Path, err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range Schema {
		if _, err := tx.Exec(stmt); err != nil {
			return fmt.Errorf("create %s: %w", c.Path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("create %s: %w", c.Path, err)
	}
	c.Logger.Info("created the voice memory database with ZeroClaw's schema (no ZeroClaw database was there)", "path", c.Path)
	return nil
}

// Schema is ZeroClaw's memory schema before 0.8: the table, its FTS5
// external-content index over (key, content), and the triggers that keep
// the index in step.
var Schema = []string{
	`CREATE TABLE IF NOT EXISTS memories (
		id TEXT PRIMARY KEY,
		key TEXT NOT NULL UNIQUE,
		content TEXT NOT NULL,
		category TEXT NOT NULL DEFAULT 'core',
		embedding BLOB,
		created_at TEXT NOT NULL,
		updated_at TEXT NOT NULL,
		session_id TEXT,
		namespace TEXT DEFAULT 'default',
		importance REAL DEFAULT 0.5,
		superseded_by TEXT
	)`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(key, content, content='memories', content_rowid='rowid')`,
	`CREATE TRIGGER IF NOT EXISTS memories_ai AFTER INSERT ON memories BEGIN
		INSERT INTO memories_fts(rowid, key, content) VALUES (new.rowid, new.key, new.content);
	END`,
	`CREATE TRIGGER IF NOT EXISTS memories_ad AFTER DELETE ON memories BEGIN
		INSERT INTO memories_fts(memories_fts, rowid, key, content) VALUES ('delete', old.rowid, old.key, old.content);
	END`,
	`CREATE TRIGGER IF NOT EXISTS memories_au AFTER UPDATE ON memories BEGIN
		INSERT INTO memories_fts(memories_fts, rowid, key, content) VALUES ('delete', old.rowid, old.key, old.content);
		INSERT INTO memories_fts(rowid, key, content) VALUES (new.rowid, new.key, new.content);
	END`,
}

// dsn is the driver's URI for path; "%", "?" and "#" in the path are
// escaped so they are not read as URI syntax.
func dsn(path, mode string, busy time.Duration) string {
	path = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	return fmt.Sprintf("file:%s?mode=%s&_pragma=busy_timeout(%d)", path, mode, busy.Milliseconds())
}

// isBusy reports SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	return false
}

// Search runs an FTS5 phrase search for query and returns up to limit rows,
// best first. Any SQLite problem, a missing file included, is an error
// (callers answer "no memories found"). Facts held for review
// (person_pending:<id>) are never found: what a grown-up has not approved
// must not reach the model through memory_lookup either.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]Row, error) {
	db, release, err := s.reader()
	if err != nil {
		return nil, err
	}
	defer release()
	rows, err := db.QueryContext(ctx, `SELECT m.key, m.content, m.category, COALESCE(m.namespace, ''), m.created_at
		FROM memories_fts f JOIN memories m ON m.rowid = f.rowid
		WHERE memories_fts MATCH ? AND (m.namespace IS NULL OR substr(m.namespace, 1, ?) <> ?)
		ORDER BY f.rank LIMIT ?`, PhraseQuery(query), len(pendingPrefix), pendingPrefix, limit)
	if err != nil {
		s.resetReader()
		return nil, fmt.Errorf("search memories: %w", err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Key, &r.Content, &r.Category, &r.Namespace, &r.CreatedAt); err != nil {
			return nil, fmt.Errorf("search memories: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search memories: %w", err)
	}
	return out, nil
}

// PhraseQuery makes query one FTS5 phrase: quotes doubled, then wrapped.
func PhraseQuery(query string) string {
	return `"` + strings.ReplaceAll(query, `"`, `""`) + `"`
}

// reader returns the read-only handle and a release func: the cached
// handle while the store runs, a one-off one after Run has returned.
func (s *Store) reader() (*sql.DB, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ro != nil {
		return s.ro, func() {}, nil
	}
	if _, err := os.Stat(s.cfg.Path); err != nil {
		return nil, nil, fmt.Errorf("memory database: %w", err)
	}
	db, err := sql.Open("sqlite", dsn(s.cfg.Path, "ro", s.cfg.ReadBusyTimeout))
	if err != nil {
		return nil, nil, fmt.Errorf("open memory database: %w", err)
	}
	if s.finished {
		return db, func() { _ = db.Close() }, nil
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	s.ro = db
	return db, func() {}, nil
}

// resetReader drops the cached read handle so the next search reopens the
// file (it may have been replaced, or created by ZeroClaw meanwhile).
func (s *Store) resetReader() { closeHeld(&s.mu, &s.ro) }

// finish closes the cached handle for good.
func (s *Store) finish() {
	s.mu.Lock()
	s.finished = true
	s.mu.Unlock()
	s.resetReader()
}

// writer owns the read-write connection; only Run's goroutine uses it.
type writer struct {
	cfg Config
	db  *sql.DB

	schemaKnown bool
	agentCol    bool
}

func (w *writer) close() {
	if w.db != nil {
		_ = w.db.Close()
	}
}

func (w *writer) open() error {
	if w.db != nil {
		return nil
	}
	if _, err := os.Stat(w.cfg.Path); err != nil {
		return err // names the path
	}
	db, err := sql.Open("sqlite", dsn(w.cfg.Path, "rw", w.cfg.WriteBusyTimeout))
	if err != nil {
		return fmt.Errorf("open memory database: %w", err)
	}
	db.SetMaxOpenConns(1)
	w.db = db
	return nil
}

func (w *writer) reset() {
	w.close()
	w.db, w.schemaKnown = nil, false
}

// maxRetryWait caps the wait between two attempts at a row or a review
// action: a lock is usually gone long before, and a failing database is
// tried again at least this often (one open and one query), and at once
// when the re-check of its condition passes.
const maxRetryWait = 2 * time.Second

// backOff is the wait between two attempts: 100 ms doubling to
// maxRetryWait, ±20 %, on the store's clock, never giving up.
func (s *Store) backOff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.Multiplier, b.RandomizationFactor = 100*time.Millisecond, 2, 0.2
	b.MaxInterval, b.MaxElapsedTime = maxRetryWait, 0 // the v4 default gives up after 15 min
	b.Clock = s.cfg.Clock
	b.Reset()
	return b
}

// deliver writes e to brain.db, trying until it is there. A lock is
// waited out as long as wctx lasts. Any other failure is the database's
// health condition, counts in dotty_memory_write_failures_total, and is
// tried again with backoff until Run's ctx ends too; meanwhile review
// actions are refused with its cause. A missing brain.db is created
// again. It returns nil once e is written, else why not.
func (s *Store) deliver(ctx, wctx context.Context, w *writer, e entry) error {
	b := s.backOff()
	for attempt := 1; ; attempt++ {
		err := w.insert(wctx, e)
		if err == nil {
			s.recovered()
			return nil
		}
		var refuse error // what review actions are told while the writer waits
		switch {
		case isBusy(err): // ZeroClaw at work
			if attempt == 1 || attempt%10 == 0 {
				s.log.Warn("voice memory database busy; retrying", "attempt", attempt, "error", err)
			}
			err = fmt.Errorf("%w (%v)", ErrBusy, err)
		default:
			w.reset()
			if errors.Is(err, fs.ErrNotExist) {
				cerr := s.cfg.ensure()
				if cerr == nil {
					break // created again: the next attempt writes there
				}
				err = cerr
			}
			err = s.failed(err)
			if ctx.Err() != nil {
				return err // stopping: it stays in the journal
			}
			refuse = fmt.Errorf("%w: %w", ErrDatabase, err)
		}
		if !s.pause(ctx, wctx, b.NextBackOff(), refuse) {
			return fmt.Errorf("%w: %w", err, wctx.Err())
		}
	}
}

// pause waits d on the store's clock between two attempts, or less: until
// a re-check of the database's condition passes, or, when refuse is set
// (the database is failing), until Run's ctx ends; meanwhile it answers
// review actions with refuse. It reports false when wctx ended.
func (s *Store) pause(ctx, wctx context.Context, d time.Duration, refuse error) bool {
	t := s.cfg.Clock.NewTimer(d)
	defer t.Stop()
	var ops chan op
	var stopping <-chan struct{}
	if refuse != nil {
		ops, stopping = s.ops, ctx.Done()
	}
	for {
		select {
		case <-t.Chan():
			return true
		case <-s.recheck:
			return true
		case <-stopping:
			return true
		case <-wctx.Done():
			return false
		case o := <-ops:
			o.done <- opResult{err: refuse}
		}
	}
}

// failed records a failed attempt at a row: the failure counter, the
// cause Enqueue and review actions report while it lasts, and the
// database's condition (logged at Error when it begins). It returns err
// explained.
func (s *Store) failed(err error) error {
	err = s.cfg.explain(err)
	s.metrics.WriteFailures.Inc()
	s.mu.Lock()
	s.stalled = err
	n := len(s.pending)
	s.mu.Unlock()
	s.databaseFailed(hclog.Error, "voice memory write failed; it stays in the journal and is retried", err, "pending", n)
	return err
}

// recovered notes a row written.
func (s *Store) recovered() {
	s.mu.Lock()
	s.stalled = nil
	s.mu.Unlock()
	s.cfg.Health.Recovered(s.log, s.cfg.databaseKey(), "voice memory database written again", "path", s.cfg.Path)
}

// insert writes one row in ZeroClaw's shape with bridge.py's key format,
// in namespace "voice" unless the write names another.
func (w *writer) insert(ctx context.Context, item entry) error {
	if err := w.open(); err != nil {
		return err
	}
	if !w.schemaKnown {
		has, err := hasColumn(ctx, w.db, "memories", "agent_id")
		if err != nil {
			return err
		}
		w.agentCol, w.schemaKnown = has, true
	}
	id, ts := item.ID, item.TS
	key := "voice_" + item.Category + "_" + ts + "_" + id[:8]
	var session any
	if item.HasSession {
		session = item.SessionID
	}
	namespace := item.Namespace
	if namespace == "" {
		namespace = "voice"
	}
	cols := "id, key, content, category, created_at, updated_at, session_id, namespace, importance"
	vals := "?, ?, ?, ?, ?, ?, ?, ?, ?"
	args := []any{id, key, item.Content, item.Category, ts, ts, session, namespace, item.Importance}
	if w.agentCol {
		agent, err := w.agentID(ctx)
		if err != nil {
			return err
		}
		cols += ", agent_id"
		vals += ", ?"
		args = append(args, agent)
	}
	// A replayed row that reached the database before the crash is
	// already there under the same id.
	_, err := w.db.ExecContext(ctx, "INSERT INTO memories ("+cols+") VALUES ("+vals+") ON CONFLICT(id) DO NOTHING", args...)
	if err != nil && !isBusy(err) {
		// The schema may have changed under us (ZeroClaw migrates on start).
		w.schemaKnown = false
	}
	if err != nil {
		return fmt.Errorf("insert memory: %w", err)
	}
	return nil
}

// agentID is agents.id of the configured alias, else of "default".
func (w *writer) agentID(ctx context.Context) (string, error) {
	var id string
	for _, alias := range []string{w.cfg.AgentAlias, "default"} {
		err := w.db.QueryRowContext(ctx, `SELECT id FROM agents WHERE alias = ?`, alias).Scan(&id)
		if err == nil {
			return id, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("look up agent %q: %w", alias, err)
		}
	}
	return "", fmt.Errorf("no agents row for alias %q or \"default\"", w.cfg.AgentAlias)
}

func hasColumn(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return false, fmt.Errorf("read schema: %w", err)
	}
	defer rows.Close()
	found := false
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return false, fmt.Errorf("read schema: %w", err)
		}
		found = found || name == column
	}
	return found, rows.Err()
}
