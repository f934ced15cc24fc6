package voice

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore/memstoretest"
)

// TestPersonMemoryInARealTurn wires the real parts: the household file,
// perception's speaker resolver and brain.db (both schemas) through the
// memory writer. A fact about an adult reaches the prompt of the turn in
// which he names himself; a fact held for review does not until it is
// approved.
func TestPersonMemoryInARealTurn(t *testing.T) {
	for name, mk := range map[string]func(testing.TB) string{"V1": memstoretest.V1, "V3": func(t testing.TB) string { return memstoretest.V3(t, "default") }} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			house := filepath.Join(dir, "household.yaml")
			if err := os.WriteFile(house, []byte("people:\n  alex:\n    display_name: Alex\n    relation: dad\n    self_id_phrases: [\"it's alex\"]\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cons := perception.DefaultConsumers()
			cons.HouseholdPath = house
			percep := perception.New(perception.Config{Consumers: cons, Location: brisbane, Clock: clockwork.NewFakeClockAt(fixedNow)})

			store := memstore.New(memstore.Config{Path: mk(t), WriteBusyTimeout: 50 * time.Millisecond})
			testkit.Run(t, store, 10*time.Second)
			for _, w := range []memstore.PersonWrite{{PersonID: "alex", Fact: "takes his coffee black"},
				{PersonID: "alex", Fact: "is planning a surprise", Pending: true}} {
				if err := store.EnqueuePerson(w); err != nil {
					t.Fatal(err)
				}
			}
			testkit.WaitFor(t, 10*time.Second, "both facts in brain.db", func() bool {
				recs, _, err := store.PersonRecords(context.Background())
				return err == nil && len(recs) == 2
			})

			env := newVoiceEnv(t, nil, Config{Speaker: percep, PersonMemory: store}, acp.PoolConfig{})
			turn := func(session string) string {
				env.message(t, map[string]any{"content": "[User] it's Alex, what should I cook?", "channel": "dotty", "session_id": session})
				p := env.agent.Prompts()
				return p[len(p)-1].Text
			}
			got := turn("s1")
			want := "[channel=dotty voice-TTS]\n[Speaking with] Alex — dad  (signals: self_id, conf=0.95)\n[Person memory]\n- takes his coffee black\n[Context: "
			if !strings.HasPrefix(got, want) || strings.Contains(got, "surprise") {
				t.Fatalf("prompt:\n%s\nwant it to start %q without the held fact", got, want)
			}

			recs, _, _ := store.PersonRecords(context.Background())
			var held string
			for _, r := range recs {
				if r.Pending {
					held = r.ID
				}
			}
			if ok, err := store.Approve(context.Background(), held); !ok || err != nil {
				t.Fatalf("approve: %v %v", ok, err)
			}
			if got := turn("s2"); !strings.Contains(got, "[Person memory]\n- ") || !strings.Contains(got, "- is planning a surprise\n") {
				t.Errorf("after approval:\n%s", got)
			}
		})
	}
}
