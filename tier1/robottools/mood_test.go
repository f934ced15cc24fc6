package robottools

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
)

// TestSetMoodSchema: set_mood's mood is an enum of the nine moods, one per
// allowed emoji, and its description tells the model when the face shows
// it.
func TestSetMoodSchema(t *testing.T) {
	if len(Moods) != len(emoji.Allowed) {
		t.Fatalf("%d moods for %d allowed emoji", len(Moods), len(emoji.Allowed))
	}
	k := newKit(t, nil)
	cs := k.session(t, "k1", "dev-1")
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name != "set_mood" {
			continue
		}
		sc, _ := tool.InputSchema.(map[string]any)
		props, _ := sc["properties"].(map[string]any)
		mood, _ := props["mood"].(map[string]any)
		if fmt.Sprint(mood["enum"]) != fmt.Sprint(Moods) || fmt.Sprint(sc["required"]) != "[mood]" {
			t.Errorf("set_mood's schema %v: want the required mood, one of %v", sc, Moods)
		}
		if !strings.Contains(tool.Description, "next spoken reply") {
			t.Errorf("set_mood's description %q does not say when the face shows it", tool.Description)
		}
		return
	}
	t.Fatal("set_mood is not listed")
}

// TestSetMood: each mood is recorded for the call's key as its emoji and
// taken once by TakeMood; an unknown mood is a tool error naming the nine;
// the call is counted like every tool's.
func TestSetMood(t *testing.T) {
	k := newKit(t, func(c *Config) { c.Burst = 100 })
	one, two := k.session(t, "k1", "dev-1"), k.session(t, "k2", "")
	for i, m := range Moods {
		got, isErr := callTool(t, one, "set_mood", map[string]any{"mood": m})
		if want := "The face will look " + m + " when you speak."; isErr || got != want {
			t.Errorf("set_mood %s = %q (error %v), want %q", m, got, isErr, want)
		}
		if e, ok := k.srv.TakeMood("k1"); !ok || e != emoji.Allowed[i] {
			t.Errorf("mood %s taken as %q (%v), want %q", m, e, ok, emoji.Allowed[i])
		}
	}
	if e, ok := k.srv.TakeMood("k1"); ok {
		t.Errorf("a mood was taken twice: %q", e)
	}
	// A key with no robot yet (a text conversation) keeps its mood too.
	callTool(t, two, "set_mood", map[string]any{"mood": "sleepy"})
	if e, ok := k.srv.TakeMood("k2"); !ok || e != "😴" {
		t.Errorf("k2's mood %q (%v), want 😴", e, ok)
	}
	if e, ok := k.srv.TakeMood("nobody"); ok {
		t.Errorf("a key that set no mood has %q", e)
	}
	for _, bad := range []map[string]any{{"mood": "grumpy"}, {"mood": 3}, nil} {
		got, isErr := callTool(t, one, "set_mood", bad)
		if !isErr {
			t.Errorf("set_mood %v accepted: %q", bad, got)
		}
		if bad != nil && bad["mood"] == "grumpy" {
			for _, m := range Moods {
				if !strings.Contains(got, m) {
					t.Errorf("set_mood grumpy: %q does not name the mood %s", got, m)
				}
			}
		}
	}
	if e, ok := k.srv.TakeMood("k1"); ok {
		t.Errorf("a refused mood was recorded: %q", e)
	}
	if ok, bad := k.count("set_mood", "ok"), k.count("set_mood", "error"); ok != 10 || bad != 3 {
		t.Errorf("set_mood calls ok %v error %v, want 10 and 3", ok, bad)
	}
	if got := k.robotCalls(); len(got) != 0 {
		t.Errorf("set_mood asked the robot: %q", got)
	}
}

// TestMoodTTL: a mood lives MoodTTL on the server's clock; an older one is
// dropped.
func TestMoodTTL(t *testing.T) {
	clock := testkit.NewClock()
	k := newKit(t, func(c *Config) { c.Clock = clock })
	cs := k.session(t, "k1", "dev-1")
	callTool(t, cs, "set_mood", map[string]any{"mood": "sad"})
	clock.Advance(DefaultConfig().MoodTTL)
	if e, ok := k.srv.TakeMood("k1"); !ok || e != "😢" {
		t.Errorf("a mood MoodTTL old: %q (%v), want 😢", e, ok)
	}
	callTool(t, cs, "set_mood", map[string]any{"mood": "sad"})
	clock.Advance(DefaultConfig().MoodTTL + time.Second)
	if e, ok := k.srv.TakeMood("k1"); ok {
		t.Errorf("a mood past MoodTTL was taken: %q", e)
	}
}

// TestStandingMood: a standing token's mood is for the key whose turn
// named a robot last; before any turn it is a tool error.
func TestStandingMood(t *testing.T) {
	k := newKit(t, nil)
	cs := k.connect(t, k.srv.MintStanding("zeroclaw"))
	if got, isErr := callTool(t, cs, "set_mood", map[string]any{"mood": "happy"}); !isErr || got != MoodNeedsTurn {
		t.Errorf("before any turn: %q (error %v), want %q", got, isErr, MoodNeedsTurn)
	}
	k.srv.SetDevice("kitchen", "dev-1")
	k.srv.SetDevice("desk", "dev-2")
	callTool(t, cs, "set_mood", map[string]any{"mood": "angry"})
	if e, ok := k.srv.TakeMood("desk"); !ok || e != "😠" {
		t.Errorf("desk's mood %q (%v), want 😠", e, ok)
	}
	if e, ok := k.srv.TakeMood("kitchen"); ok {
		t.Errorf("kitchen got the standing token's mood %q", e)
	}
	// A mood of a key without a robot does not become the key set last.
	k.session(t, "text-only", "")
	k.srv.tables.setMood(grant{key: "text-only"}, "😴", k.srv.clock.Now())
	callTool(t, cs, "look", map[string]any{"yaw": 5, "pitch": 0})
	if got := k.robotCalls(); len(got) != 1 || got[0] != "set-head-angles dev-2 5 0 200" {
		t.Errorf("robot calls %q, want desk's robot to look", got)
	}
}

// TestMoodFlood: moods share the device table's bound; setting moods
// never moves a key, so a flood of moods and turns keeps the table at
// MaxKeys and a key whose robot was set longest ago is forgotten however
// often its mood is set.
func TestMoodFlood(t *testing.T) {
	k := newKit(t, func(c *Config) { c.MaxKeys = 4 })
	now := k.srv.clock.Now()
	k.srv.SetDevice("old", "dev-0")
	for i := range 1000 {
		k.srv.tables.setMood(grant{key: "old"}, "😊", now) // churn on the oldest does not save it
		k.srv.tables.setMood(grant{key: fmt.Sprintf("mood-%d", i)}, "😢", now)
		if i%3 == 0 {
			k.srv.SetDevice(fmt.Sprintf("key-%d", i), "dev")
		}
	}
	if _, keys := k.srv.Sizes(); keys != 4 {
		t.Errorf("device table holds %d, want 4", keys)
	}
	if e, ok := k.srv.TakeMood("old"); ok {
		t.Errorf("the oldest key survived the flood with mood %q", e)
	}
	k.srv.tables.setMood(grant{key: "last"}, "😢", now)
	if e, ok := k.srv.TakeMood("last"); !ok || e != "😢" {
		t.Errorf("the newest mood %q (%v), want 😢", e, ok)
	}
}
