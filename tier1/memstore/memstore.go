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
// owns the read-write connection, retries while the database is busy, and
// drains the queue when Run's ctx ends. An accepted write therefore
// survives a crash or a power loss as well as a clean stop: Run replays the
// journal at start, and a row's id is fixed at Enqueue, so a replay never
// duplicates one. The journal is emptied whenever the queue is. Enqueue
// answers ErrQueueFull instead of dropping a write silently. Search and the
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
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

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
	// not accepted. The store has logged the cause.
	ErrJournal = errors.New("memory journal not writable")
)

// Config configures the store.
type Config struct {
	// Path is VOICE_MEMORY_DB.
	Path string
	// AgentAlias picks agents.id for agent_id on ZeroClaw ≥ 0.8 databases
	// (ZEROCLAW_AGENT_ALIAS); empty means "default".
	AgentAlias string
	// QueueSize bounds accepted but unwritten writes (256).
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
	// (PERSON_MEMORY_MAX_FACTS): 0 means 8, a negative value turns the
	// block off.
	PersonMaxFacts int
	// Health is the conditions set: the journal's key fails while an
	// accepted write cannot be journaled (writes are refused), the
	// compaction's while the journal cannot be emptied, the database's
	// while rows cannot be written to it (created, opened or inserted),
	// the review's while the memory review cannot read it. Each cause is
	// logged once, when its condition begins; a cause with an honest
	// re-check (a directory that takes files again, a database file that
	// opens for writing again) carries it (see databaseCheck). Nil keeps
	// a private set.
	Health *health.Conditions
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
		c.PersonMaxFacts = 8
	}
	if c.Health == nil {
		c.Health = health.New()
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
// level the first time, at Debug while the condition lasts.
func (c Config) databaseFailed(level hclog.Level, msg string, err error, args ...any) {
	c.Health.Failed(c.Logger, level, c.databaseKey(), "memory database", err, c.databaseCheck(err), msg, args...)
}

// databaseCheck picks the re-check of a database failure. Its directory's
// trouble (health.DirCheck: creating brain.db in a read-only or full
// directory) and SQLite's read-only, cannot-open and full errors are
// re-checked by opening the file for writing (when it exists) and probing
// its directory (for the rollback journal or WAL SQLite writes beside it).
// Anything else — a corrupt file, a schema ZeroClaw changed — has no
// cheap honest re-check and is cleared by the next row written.
func (c Config) databaseCheck(err error) health.Check {
	dir := filepath.Dir(c.Path)
	if check := health.DirCheck(dir, err); check != nil {
		return check
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return nil
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_FULL:
		return func() error {
			f, err := os.OpenFile(c.Path, os.O_RDWR, 0) // #nosec G304 -- VOICE_MEMORY_DB
			switch {
			case errors.Is(err, fs.ErrNotExist): // the next write creates it
			case err != nil:
				return err
			default:
				_ = f.Close()
			}
			return health.Writable(dir)
		}
	}
	return nil
}

// Validate reports an unusable configuration.
func (c Config) Validate() error {
	if c.Path == "" {
		return errors.New("memory database path is empty")
	}
	if c.PersonMaxFacts > MaxPersonFacts {
		return fmt.Errorf("person memory facts per turn is %d, more than %d", c.PersonMaxFacts, MaxPersonFacts)
	}
	return nil
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
	cfg   Config
	log   hclog.Logger
	queue chan entry
	// ops carries review actions to the writer goroutine; halt is closed
	// once it stops taking them.
	ops      chan op
	halt     chan struct{}
	haltOnce sync.Once

	mu       sync.Mutex
	journal  *os.File // opened by the first Enqueue
	closed   bool     // no more writes accepted
	ro       *sql.DB  // cached read-only handle, opened lazily
	finished bool     // Run has returned: searches use one-off handles
}

// New returns a store; Run starts its writer.
func New(cfg Config) *Store {
	cfg = cfg.withDefaults()
	return &Store{cfg: cfg, log: cfg.Logger, queue: make(chan entry, cfg.QueueSize), ops: make(chan op), halt: make(chan struct{})}
}

// tsLayout is the created_at format of ZeroClaw's rows.
const tsLayout = "2006-01-02T15:04:05.000000+00:00"

// Enqueue accepts w for the writer: once it returns nil, w is in the
// fsynced journal and will reach the database even if the process dies
// first. It waits only for that fsync, never for the database.
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
	if len(s.queue) == cap(s.queue) {
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
	s.queue <- e // room was checked under s.mu, and only Enqueue sends
	return nil
}

// appendLocked appends line to the journal and fsyncs it. Its errors are
// the file system's, naming the path.
func (s *Store) appendLocked(line []byte) error {
	if s.journal == nil {
		dir := filepath.Dir(s.cfg.Journal)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		f, err := os.OpenFile(s.cfg.Journal, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return err
		}
		syncDir(dir) // the new file's name must survive a power loss too
		s.journal = f
	}
	if _, err := s.journal.Write(line); err != nil {
		return err
	}
	return s.journal.Sync()
}

// compact empties the journal when nothing is queued: every journaled
// write has then reached the database (or been dropped as unwritable).
func (s *Store) compact() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) > 0 {
		return
	}
	var err error
	if s.journal == nil { // nothing accepted yet in this process: a replayed file
		if err = os.Truncate(s.cfg.Journal, 0); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else if err = s.journal.Truncate(0); err == nil {
		_ = s.journal.Sync()
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

// replay writes what a crash left in the journal.
func (s *Store) replay(ctx context.Context, w *writer) {
	b, err := os.ReadFile(s.cfg.Journal)
	if err != nil || len(b) == 0 {
		return
	}
	n, torn := 0, 0
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e entry
		if json.Unmarshal(line, &e) != nil || e.ID == "" {
			torn++ // a line cut by the crash was never acknowledged
			continue
		}
		if w.write(ctx, e) {
			n++
		}
	}
	s.log.Info("replayed the voice memory journal after an unclean stop", "rows", n, "unreadable_lines", torn)
	s.compact()
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

// Pending reports how many accepted writes wait for the writer.
func (s *Store) Pending() int { return len(s.queue) }

// Run creates the database when it is missing, then writes queued rows
// and runs review actions until ctx ends, drains the queue and returns. A
// write in progress when ctx ends is finished, not abandoned; the whole
// drain is bounded by DrainTimeout after ctx ends.
func (s *Store) Run(ctx context.Context) error {
	defer s.finish()
	defer s.stopOps()
	if err := s.cfg.ensure(); err != nil {
		s.cfg.databaseFailed(hclog.Error, "voice memory database unavailable; memory writes wait for it", err, "path", s.cfg.Path)
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
	w := &writer{cfg: s.cfg, log: s.log}
	defer w.close()
	defer s.closeJournal()
	s.replay(wctx, w)
	for {
		// Once stopping, the drain takes over: it stops at the first write
		// the drain deadline cuts short and leaves the rest in the journal.
		if ctx.Err() != nil {
			return s.drain(wctx, w)
		}
		// Queued writes go first: a review action then runs only once the
		// journal has been emptied of every row already written, so a
		// redacted row can never come back from a replay after a crash.
		select {
		case item := <-s.queue:
			w.write(wctx, item)
			s.compact()
			continue
		default:
		}
		select {
		case item := <-s.queue:
			w.write(wctx, item)
			s.compact()
		case o := <-s.ops:
			w.run(ctx, o)
		case <-ctx.Done():
			return s.drain(wctx, w)
		}
	}
}

// stopOps makes waiting and later review actions fail with ErrClosed.
func (s *Store) stopOps() { s.haltOnce.Do(func() { close(s.halt) }) }

func (s *Store) closeJournal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.journal != nil {
		_ = s.journal.Close()
		s.journal = nil
	}
}

// drain writes everything still queued, refusing new writes.
func (s *Store) drain(wctx context.Context, w *writer) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	if n := len(s.queue); n > 0 {
		s.log.Info("writing queued voice memories before exit", "pending", n)
	}
	for {
		select {
		case item := <-s.queue:
			if !w.write(wctx, item) && wctx.Err() != nil {
				left := len(s.queue) + 1
				s.log.Error("voice memories not written at shutdown: database busy for too long; they stay in the journal for the next start",
					"pending", left, "waited", s.cfg.DrainTimeout, "journal", s.cfg.Journal)
				return fmt.Errorf("drain memory queue: %d writes left in the journal: %w", left, wctx.Err())
			}
		default:
			s.compact()
			return nil
		}
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
func (s *Store) resetReader() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ro != nil {
		_ = s.ro.Close()
		s.ro = nil
	}
}

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
	log hclog.Logger
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

// write inserts item, retrying while the database is busy or missing until
// ctx ends. It reports whether the row was written.
func (w *writer) write(ctx context.Context, item entry) bool {
	err := w.retry(ctx, true, func(ctx context.Context) error { return w.insert(ctx, item) })
	switch {
	case err == nil:
		w.cfg.Health.Recovered(w.log, w.cfg.databaseKey(), "voice memory database written again", "path", w.cfg.Path)
	case ctx.Err() == nil:
		w.cfg.databaseFailed(hclog.Error, "voice memory write failed; dropping it", err, "category", item.Category)
	}
	return err == nil
}

// retry runs fn until it succeeds, fails for another reason than a busy
// (or, with missingToo, missing) database, or ctx ends, backing off from
// 100 ms to 2 s between attempts.
func (w *writer) retry(ctx context.Context, missingToo bool, fn func(context.Context) error) error {
	delay := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil {
			return nil
		}
		missing := errors.Is(err, fs.ErrNotExist)
		if !isBusy(err) && !(missingToo && missing) {
			w.reset()
			return err
		}
		switch {
		case missing: // created again, or a problem while it cannot be (said once); busy is ZeroClaw at work
			if cerr := w.cfg.ensure(); cerr != nil {
				w.cfg.databaseFailed(hclog.Warn, "voice memory database missing and cannot be created; retrying", cerr)
			}
		case attempt == 1 || attempt%10 == 0:
			w.log.Warn("voice memory database busy; retrying", "attempt", attempt, "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (%v): %w", ErrBusy, err, ctx.Err())
		case <-w.cfg.Clock.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
		if !isBusy(err) {
			w.reset()
		}
	}
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
