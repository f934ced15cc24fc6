package tier1

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// household stands in for perception.Household: only the listed ids are
// adults; everyone else (a child, a stranger) needs review.
type household struct {
	adults []string

	mu    sync.Mutex
	asked []string
}

func (h *household) NeedsReview(id string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.asked = append(h.asked, id)
	return !slices.Contains(h.adults, id)
}

type brokenHousehold struct{}

func (brokenHousehold) NeedsReview(string) bool { panic("roster unreadable") }

func bothSchemas(t *testing.T) map[string]string {
	return map[string]string{"V1": memstoretest.V1(t), "V3": memstoretest.V3(t, "default")}
}

// waitRows waits for n rows in db.
func waitRows(t *testing.T, db string, n int) []memstoretest.Row {
	t.Helper()
	var rows []memstoretest.Row
	testkit.WaitFor(t, 10*time.Second, "the memory rows", func() bool {
		rows = memstoretest.Rows(t, db)
		return len(rows) >= n
	})
	return rows
}

func byContent(rows []memstoretest.Row) map[string]memstoretest.Row {
	m := map[string]memstoretest.Row{}
	for _, r := range rows {
		m[r.Content] = r
	}
	return m
}

func TestRememberPersonTool(t *testing.T) {
	for name, db := range bothSchemas(t) {
		t.Run(name, func(t *testing.T) {
			people := &household{adults: []string{"brett"}}
			e := newEnvAt(t, db, nil, func(c *Config) { c.People = people })
			for _, tt := range []struct {
				args map[string]any
				want string
			}{
				{map[string]any{"name": " Brett ", "fact": "  takes his coffee black "}, "(remembered about Brett)"},
				{map[string]any{"name": "Alex", "fact": "is scared of thunder"}, HeldForReview},
				{map[string]any{"name": "Zed", "fact": "came to fix the sink"}, HeldForReview},
				{map[string]any{"person_id": "brett", "fact": "said through person_id"}, "(remembered about brett)"},
				{map[string]any{"name": "", "person_id": "Brett", "fact": "an empty name falls through"}, "(remembered about Brett)"},
				{map[string]any{"name": nil, "person_id": "brett", "fact": "a null name falls through"}, "(remembered about brett)"},
				{map[string]any{"name": "   ", "person_id": "brett", "fact": "a blank name does not"}, NoPerson},
				{map[string]any{}, NoPerson},
				{map[string]any{"fact": "about nobody"}, NoPerson},
				{map[string]any{"name": "brett"}, EmptyFact},
				{map[string]any{"name": "brett", "fact": " \n"}, EmptyFact},
				{map[string]any{"name": "brett", "fact": nil}, EmptyFact},
				{map[string]any{"name": "brett", "fact": 0}, EmptyFact},
				{map[string]any{"name": 5, "fact": "f"}, "(remember_person failed)"},
				{map[string]any{"name": false, "person_id": 7, "fact": "f"}, "(remember_person failed)"},
				{map[string]any{"name": "brett", "fact": []string{"x"}}, "(remember_person failed)"},
				{map[string]any{"name": strings.Repeat("n", memstore.MaxPersonIDLen+1), "fact": "f"}, RememberFailed},
			} {
				if got := e.escalate(t, "remember_person", tt.args); got != tt.want {
					t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
				}
			}
			rows := byContent(waitRows(t, e.db, 6))
			for content, ns := range map[string]string{
				"takes his coffee black":      "person:brett",
				"is scared of thunder":        "person_pending:alex",
				"came to fix the sink":        "person_pending:zed",
				"said through person_id":      "person:brett",
				"an empty name falls through": "person:brett",
				"a null name falls through":   "person:brett",
			} {
				r, ok := rows[content]
				if !ok || r.Namespace != ns || r.Category != "core" || r.Importance != 0.7 || r.SessionID.Valid {
					t.Errorf("%q: %+v (want %s, no session)", content, r, ns)
				}
			}
			if len(rows) != 6 {
				t.Errorf("%d rows, want 6", len(rows))
			}
			people.mu.Lock()
			defer people.mu.Unlock()
			// The gate runs before the store checks the id, as in bridge.py.
			want := []string{"brett", "alex", "zed", "brett", "brett", "brett", strings.Repeat("n", memstore.MaxPersonIDLen+1)}
			if !slices.Equal(people.asked, want) {
				t.Errorf("the gate was asked about %v, want %v (lowercased ids, once a fact)", people.asked, want)
			}
		})
	}
}

// The escalation's session id is stored; "" (no session) is NULL.
func TestRememberPersonToolSession(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.People = &household{adults: []string{"brett"}} })
	code, body, _ := e.post(t, "/api/voice/escalate", `{"tool":"remember_person","args":{"name":"brett","fact":"in session"},"session_id":"s9"}`)
	if code != 200 || body != `{"result":"(remembered about brett)"}` {
		t.Fatalf("%d %s", code, body)
	}
	if r := waitRows(t, e.db, 1)[0]; r.SessionID.String != "s9" {
		t.Errorf("session %+v", r.SessionID)
	}
}

func TestRememberPersonRoute(t *testing.T) {
	for name, db := range bothSchemas(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnvAt(t, db, nil, func(c *Config) { c.People = &household{adults: []string{"brett"}} })
			long := strings.Repeat("n", memstore.MaxPersonIDLen+1)
			for _, tt := range []struct{ body, want string }{
				{`{"person_id":"Brett","fact":" likes coffee ","session_id":"s1"}`, `{"ok":true,"pending_review":false}`},
				{`{"person_id":"alex","fact":"loses teeth","session_id":null}`, `{"ok":true,"pending_review":true}`},
				{`{"person_id":"stranger","fact":"rang the bell","session_id":""}`, `{"ok":true,"pending_review":true}`},
				{`{"person_id":"  ","fact":"x"}`, `{"ok":false,"pending_review":false,"error":"empty"}`},
				{`{"person_id":"brett","fact":"\t"}`, `{"ok":false,"pending_review":false,"error":"empty"}`},
				{`{"person_id":"` + long + `","fact":"x"}`, `{"ok":false,"pending_review":true}`},
			} {
				code, body, h := e.post(t, "/api/voice/remember_person", tt.body)
				if code != 200 || body != tt.want || h.Get("Content-Type") != "application/json" {
					t.Errorf("%s: %d %s, want %s", tt.body, code, body, tt.want)
				}
			}
			for _, tt := range []struct{ body, want string }{
				{`{"fact":"x"}`, `{"detail":[{"type":"missing","loc":["body","person_id"],"msg":"Field required","input":{"fact":"x"}}]}`},
				{`{"person_id":5,"fact":"x"}`, `{"detail":[{"type":"string_type","loc":["body","person_id"],"msg":"Input should be a valid string","input":5}]}`},
				{`{"person_id":"a","fact":"x","session_id":5}`, `{"detail":[{"type":"string_type","loc":["body","session_id"],"msg":"Input should be a valid string","input":5}]}`},
				{`{"person_id":"a"}`, ""},
				{`{"person_id":"a","fact":null}`, ""},
				{`[]`, ""},
				{`{"person_id":`, ""},
				{``, ""},
			} {
				code, body, _ := e.post(t, "/api/voice/remember_person", tt.body)
				if code != 422 || (tt.want != "" && body != tt.want) || !strings.HasPrefix(body, `{"detail":[`) {
					t.Errorf("%q: %d %s", tt.body, code, body)
				}
			}
			rows := byContent(waitRows(t, e.db, 3))
			if len(rows) != 3 {
				t.Errorf("%d rows, want 3", len(rows))
			}
			for content, want := range map[string]struct {
				ns      string
				session *string
			}{
				"likes coffee":  {"person:brett", ptr("s1")},
				"loses teeth":   {"person_pending:alex", nil},
				"rang the bell": {"person_pending:stranger", ptr("")},
			} {
				r := rows[content]
				if r.Namespace != want.ns || r.SessionID.Valid != (want.session != nil) || (want.session != nil && r.SessionID.String != *want.session) {
					t.Errorf("%q: %+v", content, r)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Without a household every fact is held; a household that fails holds
// it too.
func TestRememberPersonFailsClosed(t *testing.T) {
	for name, people := range map[string]People{"no household": nil, "broken household": brokenHousehold{}} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(c *Config) { c.People = people })
			if got := e.escalate(t, "remember_person", map[string]any{"name": "brett", "fact": "owns the house"}); got != HeldForReview {
				t.Errorf("tool: %q", got)
			}
			if _, body, _ := e.post(t, "/api/voice/remember_person", `{"person_id":"brett","fact":"pays the bills"}`); body != `{"ok":true,"pending_review":true}` {
				t.Errorf("route: %s", body)
			}
			for _, r := range waitRows(t, e.db, 2) {
				if r.Namespace != "person_pending:brett" {
					t.Errorf("%q in %s", r.Content, r.Namespace)
				}
			}
		})
	}
}

// A full writer queue is refused as /remember's writes are: 503 on the
// route, "(remember failed)" from the tool, both counted.
func TestRememberPersonQueueFull(t *testing.T) {
	e := newEnvAt(t, memstoretest.V1(t), func(c *memstore.Config) { c.QueueSize = 1 }, func(c *Config) { c.People = &household{adults: []string{"brett"}} })
	release := memstoretest.Lock(t, e.db)
	accepted := 0
	code, body := 0, ""
	for i := 0; i < 5 && code != 503; i++ {
		code, body, _ = e.post(t, "/api/voice/remember_person", `{"person_id":"brett","fact":"fact `+string(rune('a'+i))+`"}`)
		if code == 200 {
			accepted++
		}
	}
	if code != 503 || body != `{"detail":"memory writer busy; write not accepted"}` || accepted == 0 {
		t.Fatalf("queue never refused: %d %s after %d accepted", code, body, accepted)
	}
	if got := e.escalate(t, "remember_person", map[string]any{"name": "brett", "fact": "one more"}); got != RememberFailed {
		t.Errorf("tool with a full queue: %q", got)
	}
	if n := testutil.ToFloat64(e.dropped); n != 2 {
		t.Errorf("dotty_memory_writes_dropped_total %v, want 2", n)
	}
	release()
	if rows := waitRows(t, e.db, accepted); len(rows) != accepted {
		t.Errorf("%d rows, want every accepted write (%d)", len(rows), accepted)
	}
}

// The gate's decision is logged at Info with the person; the fact never is.
func TestRememberPersonLogs(t *testing.T) {
	var logs testkit.LogBuffer
	e := newEnv(t, func(c *Config) {
		c.People = &household{adults: []string{"brett"}}
		c.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	})
	e.escalate(t, "remember_person", map[string]any{"name": "Alex", "fact": "SECRET-ABOUT-A-CHILD"})
	e.post(t, "/api/voice/remember_person", `{"person_id":"Brett","fact":"SECRET-ABOUT-AN-ADULT"}`)
	out := logs.String()
	for _, want := range []string{"person memory queued: person=alex review=true", "person memory stored: person=brett review=false"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "SECRET") {
		t.Errorf("a fact reached the log:\n%s", out)
	}
}

// The whole review cycle through the HTTP routes and the store's API: a
// child's fact stays out of the person block and of memory_lookup until
// approved; redacted, it is gone from both.
func TestPersonMemoryReviewCycle(t *testing.T) {
	for name, db := range bothSchemas(t) {
		t.Run(name, func(t *testing.T) {
			e := newEnvAt(t, db, nil, func(c *Config) { c.People = &household{adults: []string{"brett"}} })
			ctx := context.Background()
			e.post(t, "/api/voice/remember_person", `{"person_id":"brett","fact":"Brett takes his coffee black"}`)
			e.post(t, "/api/voice/remember_person", `{"person_id":"alex","fact":"Alex's best friend is Sam"}`)
			waitRows(t, e.db, 2)
			if got := e.store.PersonBlock(ctx, "Brett"); got != "[Person memory]\n- Brett takes his coffee black\n" {
				t.Errorf("adult's block %q", got)
			}
			if got := e.store.PersonBlock(ctx, "alex"); got != "" {
				t.Errorf("held fact in the child's block: %q", got)
			}
			if got := e.escalate(t, "memory_lookup", map[string]any{"query": "coffee black"}); got != "Brett takes his coffee black" {
				t.Errorf("lookup of the adult's fact: %q", got)
			}
			if got := e.escalate(t, "memory_lookup", map[string]any{"query": "best friend"}); got != NoMemories {
				t.Errorf("lookup found a held fact: %q", got)
			}

			recs, more, err := e.store.PersonRecords(ctx)
			if err != nil || more || len(recs) != 2 || !recs[0].Pending || recs[0].PersonID != "alex" {
				t.Fatalf("records %+v %v %v", recs, more, err)
			}
			b, _ := json.Marshal(recs[0])
			var shape map[string]any
			_ = json.Unmarshal(b, &shape)
			for _, k := range []string{"id", "person_id", "content", "namespace", "pending", "importance", "created_at", "updated_at"} {
				if _, ok := shape[k]; !ok {
					t.Errorf("record JSON lacks %q: %s", k, b)
				}
			}
			if ok, err := e.store.Approve(ctx, recs[0].ID); !ok || err != nil {
				t.Fatalf("approve: %v %v", ok, err)
			}
			if got := e.store.PersonBlock(ctx, "alex"); got != "[Person memory]\n- Alex's best friend is Sam\n" {
				t.Errorf("approved fact not in the block: %q", got)
			}
			if got := e.escalate(t, "memory_lookup", map[string]any{"query": "best friend"}); got != "Alex's best friend is Sam" {
				t.Errorf("approved fact not found: %q", got)
			}
			if ok, err := e.store.Redact(ctx, recs[0].ID); !ok || err != nil {
				t.Fatalf("redact: %v %v", ok, err)
			}
			if got := e.store.PersonBlock(ctx, "alex"); got != "" {
				t.Errorf("redacted fact in the block: %q", got)
			}
			if got := e.escalate(t, "memory_lookup", map[string]any{"query": "best friend"}); got != NoMemories {
				t.Errorf("redacted fact found: %q", got)
			}
			for _, id := range []string{recs[0].ID, "", "nope", "x'; DROP TABLE memories; --"} {
				if ok, err := e.store.Approve(ctx, id); ok || err != nil {
					t.Errorf("approve %q: %v %v", id, ok, err)
				}
				if ok, err := e.store.Redact(ctx, id); ok || err != nil {
					t.Errorf("redact %q: %v %v", id, ok, err)
				}
			}
			memstoretest.CheckFTS(t, e.db)
		})
	}
}
