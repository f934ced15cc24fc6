package perception

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const fullRoster = `default_person: brett
people:
  Brett:
    display_name: Brett
    relation: dad
    personality: dry humour
    interests: [cycling, coffee, jazz, chess]
    self_id_phrases: ["it's brett", "brett here"]
    usual_times: {weekdays: [evening], weekends: any}
    calendar_prefix: "[Brett]"
  hudson:
    display_name: Hudson
    age: 7
    birthdate: 2019-03-02
    appearance: curly red hair
    personality: curious
    interests: dinosaurs, lego
    self_id_phrases: [it's hudson, "it's hud"]
    calendar_prefix: "[Hud]"
  nana:
    relation: grandmother
    birthdate: "1952-02-29"
  alex:
    age: "17"
  _household:
    display_name: everyone
  broken: 5
`

func TestHouseholdFullSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "household.yaml")
	writeFile(t, path, fullRoster)
	h := NewHousehold(path, nil)
	var ids []string
	for _, p := range h.People() {
		ids = append(ids, p.ID)
	}
	if d := cmp.Diff(ids, []string{"alex", "brett", "hudson", "nana"}); d != "" {
		t.Errorf("ids (-got +want):\n%s", d)
	}
	if h.DefaultPersonID() != "brett" {
		t.Errorf("default %q", h.DefaultPersonID())
	}
	b, _ := h.Lookup("BRETT")
	if b.DisplayName != "Brett" || b.Relation != "dad" || len(b.Interests) != 4 || b.UsualTimes["weekends"][0] != "any" || b.UsualTimes["weekdays"][0] != "evening" {
		t.Errorf("brett %+v", b)
	}
	hud, _ := h.Lookup("hudson")
	if hud.Age == nil || *hud.Age != 7 || hud.Birthdate == nil || hud.Birthdate.Format(time.DateOnly) != "2019-03-02" || cmp.Diff(hud.Interests, []string{"dinosaurs", "lego"}) != "" {
		t.Errorf("hudson %+v", hud)
	}
	for _, tt := range []struct {
		id, want string
		max      int
	}{
		{"brett", "Brett — dad; dry humour; loves cycling, coffee, jazz", 180},
		{"hudson", "Hudson — 7yo; curious; loves dinosaurs, lego", 180},
		{"nana", "nana — grandmother", 180},
		{"hudson", "Hudson — 7yo; cu…", 17},
		{"hudson", "Hudson —…", 9}, // the cut is right-trimmed before the ellipsis
	} {
		p, _ := h.Lookup(tt.id)
		if got := p.CompactDescription(tt.max); got != tt.want {
			t.Errorf("CompactDescription(%s, %d) = %q, want %q", tt.id, tt.max, got, tt.want)
		}
	}
	// Self-ID: at the start, after punctuation, in any case, at a word
	// boundary; the longest phrase first.
	for text, want := range map[string]string{
		"It's Brett, can you help?": "brett", "  ...it's hud!": "hudson", "it's hudson here": "hudson",
		"it's hudsonville": "", "hello, it's brett": "", "Brett here": "brett", "": "",
	} {
		p, ok := h.MatchSelfID(text)
		if (ok && p.ID != want) || (!ok && want != "") {
			t.Errorf("MatchSelfID(%q) = %q %v, want %q", text, p.ID, ok, want)
		}
	}
	for prefix, want := range map[string]string{"Brett": "brett", "[hud]": "hudson", "HUD": "hudson", "nana": "", "": ""} {
		p, ok := h.ByCalendarPrefix(prefix)
		if (ok && p.ID != want) || (!ok && want != "") {
			t.Errorf("ByCalendarPrefix(%q) = %q %v, want %q", prefix, p.ID, ok, want)
		}
	}
	// The kid-safety gate: only a known adult skips review.
	for id, want := range map[string]bool{"brett": false, "nana": false, "hudson": true, "alex": true, "stranger": true} {
		if got := h.NeedsReview(id); got != want {
			t.Errorf("NeedsReview(%s) = %v, want %v", id, got, want)
		}
	}
	if NewHousehold("", nil).NeedsReview("brett") != true {
		t.Error("no roster must mean review")
	}
	// Birthdays: today, in a week, a 29 February birthday in a common year.
	day := func(s string) time.Time { d, _ := time.Parse(time.DateOnly, s); return d }
	nana, _ := h.Lookup("nana")
	for _, tt := range []struct {
		p     Person
		today string
		want  int
	}{{hud, "2026-03-02", 0}, {hud, "2026-02-23", 7}, {hud, "2026-03-03", 364}, {nana, "2026-02-27", 1}, {nana, "2028-02-28", 1}} {
		if got, ok := tt.p.DaysUntilBirthday(day(tt.today)); !ok || got != tt.want {
			t.Errorf("%s's birthday from %s: %d, want %d", tt.p.ID, tt.today, got, tt.want)
		}
	}
	if _, ok := b.DaysUntilBirthday(day("2026-01-01")); ok {
		t.Error("a birthday without a birthdate")
	}
}
