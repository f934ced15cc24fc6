package bridgeapp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp/acptest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi/xiaozhitest"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// sessionCreated is the pool's DEBUG line for a new agent session.
var sessionCreated = regexp.MustCompile(`agent session created: key=(\S+) session=(\S+)`)

// TestGreeterCannotBeDriven runs the binary with the ZeroClaw stand-in
// (this test binary), two session slots (ZEROCLAW_MAX_SESSIONS=2) and no
// cooldown between greetings, while a conversation goes on, pausing
// between its turns: 50 face_recognized a second with invented names over
// four robots, then 70 names (two household members among them) cycling
// over the same robots. The agent is asked for no stranger, and for each
// member at most GREETER_PER_DAY_MAX times; the strangers together get the
// fixed greeting at most as often; the greetings use one agent session
// (key "greeter"), and the conversation keeps its session on every turn
// (one session created for its key, none closed to make room, and the
// agent recalls all its earlier turns). A member the flood never named is
// then greeted by the agent.
func TestGreeterCannotBeDriven(t *testing.T) {
	bin, _, env := acptest.Command("zeroclaw-v1")
	xz := xiaozhitest.New(t)
	p := startBridge(t, append(append(xiaozhiEnv(xz), "ZEROCLAW_BIN="+bin, "ZEROCLAW_MAX_SESSIONS=2", "GREETER_COOLDOWN_HOURS=0"), env...)...)
	roster := "people:\n  alex:\n    display_name: Alex\n  hudson:\n    display_name: Hudson\n  nana:\n    display_name: Nana\n"
	if err := os.WriteFile(filepath.Join(p.stateDir, "household.yaml"), []byte(roster), 0o600); err != nil {
		t.Fatal(err)
	}
	p.health("the agent ready", func(h map[string]any) bool { return agentOf(h)["state"] == "ready" })

	// The flood, on its own goroutine at 50 events a second (a ticker
	// paces it; its rate is printed, not asserted).
	type sent struct {
		events, refused int
		took            time.Duration
	}
	flood := make(chan sent, 1)
	go func() {
		var s sent
		post := func(device, identity string) {
			body := fmt.Sprintf(`{"device_id":%q,"name":"face_recognized","data":{"identity":%q}}`, device, identity)
			resp, err := httpClient.Post("http://"+p.addr+"/api/perception/event", "application/json", strings.NewReader(body))
			s.events++
			if err != nil {
				s.refused++
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNoContent {
				s.refused++
			}
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for i := range 200 { // invented names, each once
			<-tick.C
			post("dotty-"+strconv.Itoa(i%4), "visitor-"+strconv.Itoa(i))
		}
		for cycle := range 3 { // 70 names cycling over the four robots
			for i := range 70 {
				<-tick.C
				who := "guest-" + strconv.Itoa(i)
				switch i {
				case 0:
					who = "alex"
				case 35:
					who = "Hudson"
				}
				post("dotty-"+strconv.Itoa((cycle+i)%4), who)
			}
		}
		s.took = time.Since(start)
		flood <- s
	}()

	// The conversation: seven turns, a pause between them, the last
	// asking the agent what the session holds.
	for i := range 6 {
		if r := realTurn(t, p, "kitchen", "turn "+strconv.Itoa(i)); !strings.Contains(r, "turn "+strconv.Itoa(i)) {
			t.Fatalf("turn %d answered %q", i, r)
		}
		time.Sleep(700 * time.Millisecond)
	}
	if r := realTurn(t, p, "kitchen", "recall"); !strings.Contains(r, "recall: 6 earlier turns") {
		t.Errorf("the conversation's last turn answered %q, want its 6 earlier turns recalled", r)
	}
	var s sent
	select {
	case s = <-flood:
	case <-time.After(60 * time.Second):
		t.Fatal("the flood did not finish within 60 s")
	}
	t.Logf("%d face_recognized events in %s (%.1f/s), %d refused", s.events, s.took.Round(time.Millisecond),
		float64(s.events)/s.took.Seconds(), s.refused)
	if s.refused != 0 {
		t.Errorf("%d of %d events refused", s.refused, s.events)
	}

	// A member the flood never named: the agent greets her, in the
	// greeter's session. Her sighting is sent again only if it found all
	// four greeting slots taken by greetings the flood left in flight.
	nana := func() {
		if code, out := p.post("/api/perception/event", `{"device_id":"dotty-hall","name":"face_recognized","data":{"identity":"nana"}}`); code != http.StatusNoContent {
			t.Fatalf("event: %d %s", code, out)
		}
	}
	nana()
	sightings := 1
	said := func() (greetings []string) {
		for _, c := range xz.CallsTo("/xiaozhi/admin/say") {
			if text, _ := c.Body["text"].(string); !strings.HasPrefix(text, "Oh, it's ") { // the named acknowledger's
				greetings = append(greetings, text)
			}
		}
		return greetings
	}
	byAgent := func(name string) (n int) {
		for _, text := range said() {
			if strings.Contains(text, name+" just walked into the room") {
				n++
			}
		}
		return n
	}
	testkit.WaitFor(t, 30*time.Second, "Nana's greeting by the agent", func() bool {
		if strings.Count(p.log(), "too many greetings in flight; this one is dropped: device=dotty-hall identity=nana") == sightings {
			nana()
			sightings++
		}
		return byAgent("Nana") == 1
	})

	// The greeter counts each greeting as it decides it, event after event
	// in order: once Nana's is said, the file holds every decision of the
	// flood. Each is one greeting, said (and logged) once done.
	b, err := os.ReadFile(filepath.Join(p.stateDir, "greeter_state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var days map[string]map[string]struct{ Count int }
	if err := json.Unmarshal(b, &days); err != nil || len(days) != 1 {
		t.Fatalf("greeter state %s: %v", b, err)
	}
	counts, granted := map[string]int{}, 0
	for _, people := range days {
		for id, slot := range people {
			counts[id] = slot.Count
			granted += slot.Count
		}
	}
	var over []string
	for id, n := range counts {
		if (id != "alex" && id != "hudson" && id != "nana" && id != "unknown") || n > 3 {
			over = append(over, fmt.Sprintf("%s %d", id, n))
		}
	}
	if len(over) > 0 {
		t.Errorf("greeter state counts %d entries beyond members and unknown at most 3 each (%v); the file: %.300s", len(over), over, b)
	}
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("the %d greetings decided said", granted), func() bool { return len(said()) == granted })
	plain := 0
	for _, text := range said() {
		switch {
		case text == "Hello! I don't think we've met.":
			plain++
		case strings.Contains(text, "visitor-") || strings.Contains(text, "guest-"):
			t.Errorf("a stranger's name reached a greeting: %q", text)
		}
	}
	alex, hudson := byAgent("Alex"), byAgent("Hudson")
	t.Logf("agent greetings: Alex %d, Hudson %d, Nana 1, strangers 0; fixed greetings to strangers %d; counts %v", alex, hudson, plain, counts)
	if alex != counts["alex"] || hudson != counts["hudson"] || plain != counts["unknown"] || alex+hudson+1+plain != granted {
		t.Errorf("greetings said: Alex %d, Hudson %d by the agent, %d fixed, of %d; want the counts %v (every member's by the agent)",
			alex, hudson, plain, granted, counts)
	}

	// The conversation log holds one record per greeting.
	testkit.WaitFor(t, 10*time.Second, "one greeter record per greeting", func() bool {
		records := 0
		matches, _ := filepath.Glob(filepath.Join(p.stateDir, "logs", "convo-*.ndjson"))
		for _, m := range matches {
			b, _ := os.ReadFile(m)
			records += strings.Count(string(b), `"channel":"greeter"`)
		}
		return records == granted
	})

	// Sessions: one for the conversation, kept; the greetings on one key.
	log := p.log()
	created := map[string][]string{}
	for _, m := range sessionCreated.FindAllStringSubmatch(log, -1) {
		created[m[1]] = append(created[m[1]], m[2])
	}
	if len(created["kitchen"]) != 1 {
		t.Errorf("sessions created for the conversation: %v, want one", created["kitchen"])
	}
	for key := range created {
		if key != "kitchen" && key != "greeter" {
			t.Errorf("a session created for key %q", key)
		}
	}
	if strings.Contains(log, "closing least recently used agent session") {
		t.Error("a session was closed to make room")
	}
	if n := len(created["greeter"]); n < 1 {
		t.Errorf("%d greeter sessions created, want the greeter's one", n)
	}
}
