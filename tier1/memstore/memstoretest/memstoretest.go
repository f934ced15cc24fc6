// Package memstoretest builds brain.db fixtures in ZeroClaw's two schema
// generations and reads them back, for tests of the voice memory.
package memstoretest

import (
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
)

// V1 creates a brain.db with ZeroClaw's pre-0.8 schema and returns its path.
func V1(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "brain.db")
	exec(t, path, memstore.Schema...)
	return path
}

// V3 creates a brain.db shaped like ZeroClaw ≥ 0.8.3: an agents table with
// the given aliases (ids "agent-<alias>"), memories with agent_id NOT NULL,
// UNIQUE(agent_id, key) and the kind, pinned and tenant_id columns.
func V3(t testing.TB, aliases ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "brain.db")
	stmts := []string{
		`CREATE TABLE agents (id TEXT PRIMARY KEY, alias TEXT NOT NULL UNIQUE, created_at TEXT NOT NULL)`,
		`CREATE TABLE memories (
			id TEXT PRIMARY KEY,
			agent_id TEXT NOT NULL REFERENCES agents(id),
			key TEXT NOT NULL,
			content TEXT NOT NULL,
			category TEXT NOT NULL DEFAULT 'core',
			embedding BLOB,
			created_at TEXT NOT NULL,
			updated_at TEXT NOT NULL,
			session_id TEXT,
			namespace TEXT DEFAULT 'default',
			importance REAL DEFAULT 0.5,
			superseded_by TEXT,
			kind TEXT,
			pinned INTEGER NOT NULL DEFAULT 0,
			tenant_id TEXT,
			UNIQUE (agent_id, key)
		)`,
	}
	stmts = append(stmts, memstore.Schema[1:]...) // the FTS index and triggers are unchanged
	for _, a := range aliases {
		stmts = append(stmts, `INSERT INTO agents VALUES ('agent-`+a+`', '`+a+`', '2026-01-01T00:00:00+00:00')`)
	}
	exec(t, path, stmts...)
	return path
}

func exec(t testing.TB, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("fixture: %v\n%s", err, s)
		}
	}
}

// Row is every column the bridge writes, as stored.
type Row struct {
	ID, Key, Content, Category, CreatedAt, UpdatedAt, Namespace string
	SessionID                                                   sql.NullString
	Importance                                                  float64
	AgentID                                                     sql.NullString
}

// Rows reads all memories, oldest insert first, failing the test on error.
func Rows(t testing.TB, path string) []Row {
	t.Helper()
	rows, err := TryRows(path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TryRows reads all memories, oldest insert first.
func TryRows(path string) ([]Row, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(2000)")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var hasAgent int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('memories') WHERE name = 'agent_id'`).Scan(&hasAgent); err != nil {
		return nil, err
	}
	agentCol := "NULL"
	if hasAgent == 1 {
		agentCol = "agent_id"
	}
	rows, err := db.Query(`SELECT id, key, content, category, created_at, updated_at, COALESCE(namespace, ''), session_id, importance, ` + agentCol + ` FROM memories ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.ID, &r.Key, &r.Content, &r.Category, &r.CreatedAt, &r.UpdatedAt, &r.Namespace, &r.SessionID, &r.Importance, &r.AgentID); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SchemaSQL returns the schema's SQL text, to check a file was not altered.
func SchemaSQL(t testing.TB, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT COALESCE(sql, '') FROM sqlite_master ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all string
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		all += s + ";\n"
	}
	return all
}

// Lock holds an exclusive transaction (BEGIN EXCLUSIVE) on path until the
// returned func is called; writers and, in rollback-journal mode, readers
// get SQLITE_BUSY meanwhile.
func Lock(t testing.TB, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=exclusive")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if done {
			return
		}
		done = true
		_ = tx.Rollback()
		_ = db.Close()
	}
	t.Cleanup(release)
	return release
}

// WAL switches path to write-ahead logging, as ZeroClaw runs brain.db:
// readers then never wait for a writer.
func WAL(t testing.TB, path string) {
	t.Helper()
	exec(t, path, `PRAGMA journal_mode=WAL`)
}

// Memory is a row for Insert, as ZeroClaw or an earlier bridge left it.
type Memory struct {
	ID, Key, Content, Namespace, CreatedAt, UpdatedAt string
	Importance                                        float64
}

// Insert writes rows directly (on V3 files under the first agent), for
// fixtures with chosen importances and timestamps.
func Insert(t testing.TB, path string, rows ...Memory) {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	var agent sql.NullString
	var hasAgent int
	if err := db.QueryRow(`SELECT count(*) FROM pragma_table_info('memories') WHERE name = 'agent_id'`).Scan(&hasAgent); err != nil {
		t.Fatal(err)
	}
	if hasAgent == 1 {
		if err := db.QueryRow(`SELECT id FROM agents ORDER BY rowid LIMIT 1`).Scan(&agent); err != nil {
			t.Fatalf("fixture: no agent: %v", err)
		}
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	for _, r := range rows {
		key := r.Key
		if key == "" {
			key = "fixture_" + r.ID
		}
		var err error
		if hasAgent == 1 {
			_, err = tx.Exec(`INSERT INTO memories (id, agent_id, key, content, category, created_at, updated_at, namespace, importance)
				VALUES (?, ?, ?, ?, 'core', ?, ?, ?, ?)`, r.ID, agent, key, r.Content, r.CreatedAt, r.UpdatedAt, r.Namespace, r.Importance)
		} else {
			_, err = tx.Exec(`INSERT INTO memories (id, key, content, category, created_at, updated_at, namespace, importance)
				VALUES (?, ?, ?, 'core', ?, ?, ?, ?)`, r.ID, key, r.Content, r.CreatedAt, r.UpdatedAt, r.Namespace, r.Importance)
		}
		if err != nil {
			t.Fatalf("fixture insert %s: %v", r.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// FTSMatches counts rows the FTS index finds for phrase (an FTS5 phrase
// query, quoted here), with no namespace filter.
func FTSMatches(t testing.TB, path, phrase string) int {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?`, memstore.PhraseQuery(phrase)).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// CheckFTS runs FTS5's integrity check against the content table: it
// fails when the index and memories disagree (a row changed or deleted
// without its trigger).
func CheckFTS(t testing.TB, path string) {
	t.Helper()
	db := open(t, path)
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("FTS index out of step with memories: %v", err)
	}
}

func open(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// Churn stands in for ZeroClaw: until the returned func is called it
// takes an exclusive lock on path, holds it for hold, lets go for gap, and
// again. It waits for the lock rather than failing when the bridge holds
// it. The returned func stops it and reports how many times it locked.
func Churn(t testing.TB, path string, hold, gap time.Duration) (stop func() int) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=exclusive&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	quit, done := make(chan struct{}), make(chan struct{})
	locks := 0
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			default:
			}
			if tx, err := db.Begin(); err == nil {
				locks++
				time.Sleep(hold)
				_ = tx.Rollback()
			}
			select {
			case <-quit:
				return
			case <-time.After(gap):
			}
		}
	}()
	var once sync.Once
	stop = func() int {
		once.Do(func() {
			close(quit)
			<-done
			_ = db.Close()
		})
		return locks
	}
	t.Cleanup(func() { stop() })
	return stop
}
