package perception

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"go.yaml.in/yaml/v3"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Person is one household member from household.yaml. Free-text fields
// reach the model as prompttext.Line makes them; the structured ones (birthdate, self-ID
// phrases, usual times, calendar prefix) are read by code.
type Person struct {
	ID            string
	DisplayName   string
	Relation      string
	Pronouns      string
	Age           *int
	Birthdate     *time.Time // a date (midnight UTC); nil when absent or unparseable
	Appearance    string
	Voice         string
	Personality   string
	Interests     []string
	FamilyContext string
	Notes         string
	DoNot         []string
	SelfIDPhrases []string
	// UsualTimes maps "weekdays"/"weekends" to time-of-day buckets
	// ("morning", "after-school", …, or "any").
	UsualTimes     map[string][]string
	CalendarPrefix string
	VoicePrintID   string
}

// DefaultPerson is who nobody identified resolves to.
const DefaultPerson = "_household"

// CompactDescription is the person in one line for the speaker block:
// the display name, then " — " and "; "-joined age ("<n>yo", or the
// relation when the age is unknown), personality and up to three loves,
// made one safe prompt line (prompttext.Line); over max characters it is
// cut to max−1, right-trimmed, plus "…". The birthdate never appears.
func (p Person) CompactDescription(max int) string {
	var meta []string
	switch {
	case p.Age != nil:
		meta = append(meta, strconv.Itoa(*p.Age)+"yo")
	case p.Relation != "":
		meta = append(meta, p.Relation)
	}
	if p.Personality != "" {
		meta = append(meta, p.Personality)
	}
	if len(p.Interests) > 0 {
		meta = append(meta, "loves "+strings.Join(p.Interests[:min(3, len(p.Interests))], ", "))
	}
	out := p.DisplayName
	if len(meta) > 0 {
		out += " — " + strings.Join(meta, "; ")
	}
	return prompttext.Line(out, prompttext.Cap{Runes: max})
}

// DaysUntilBirthday counts days from today (a local date) to the next
// birthday, 0 on the day; a 29 February birthday falls on the 28th in
// other years. ok is false without a birthdate.
func (p Person) DaysUntilBirthday(today time.Time) (int, bool) {
	if p.Birthdate == nil {
		return 0, false
	}
	day := time.Date(today.Year(), today.Month(), today.Day(), 0, 0, 0, 0, time.UTC)
	next := birthdayIn(*p.Birthdate, day.Year())
	if next.Before(day) {
		next = birthdayIn(*p.Birthdate, day.Year()+1)
	}
	return int(next.Sub(day).Hours()/24 + 0.5), true
}

func birthdayIn(b time.Time, year int) time.Time {
	d := time.Date(year, b.Month(), b.Day(), 0, 0, 0, 0, time.UTC)
	if d.Month() != b.Month() { // 29 February in a common year
		d = time.Date(year, b.Month(), 28, 0, 0, 0, 0, time.UTC)
	}
	return d
}

// adultRelations mark a member as an adult when the roster gives no age.
var adultRelations = map[string]bool{
	"self": true, "owner": true, "parent": true, "mother": true, "father": true, "mum": true, "mom": true,
	"dad": true, "partner": true, "spouse": true, "husband": true, "wife": true, "grandparent": true,
	"grandmother": true, "grandfather": true, "aunt": true, "uncle": true, "sibling": true, "brother": true,
	"sister": true,
}

// NeedsReview is the kid-safety gate of per-person memory: a fact about
// id is written straight to readable memory only when the roster says
// the person is an adult (age 18 or more, or with no age an adult
// relation). A known minor, a member too sparsely described to tell, an
// unknown person or no roster at all means a parent reviews the fact
// first.
func (h *Household) NeedsReview(id string) bool {
	p, ok := h.Lookup(id)
	if !ok {
		return true
	}
	if p.Age != nil {
		return *p.Age < 18
	}
	return !adultRelations[strings.ToLower(strings.TrimSpace(p.Relation))]
}

// Household is the roster from HOUSEHOLD_YAML_PATH, re-read when the
// file's modification time or size changes (checked at most once a second).
// A missing or malformed file is an empty roster, not an error.
type Household struct {
	path    string
	log     hclog.Logger
	recheck time.Duration // least time between two stats of the file

	mu      sync.Mutex
	checked time.Time
	mtime   time.Time
	size    int64
	roster  roster
	exists  bool
	warned  bool
}

// roster is one parse of the file; it is replaced whole, never changed.
type roster struct {
	people        map[string]Person
	defaultPerson string
	byPrefix      map[string]string // "[name]" → id
	selfID        []selfIDPhrase    // longest first
}

type selfIDPhrase struct{ phrase, id string }

// NewHousehold returns the roster at path, used as given (the bridge's
// configuration has expanded any "~"); "" is no roster.
func NewHousehold(path string, log hclog.Logger) *Household {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	return &Household{path: path, log: log, recheck: time.Second}
}

// Lookup finds a person by id (lowercased).
func (h *Household) Lookup(id string) (Person, bool) {
	r, _ := h.load()
	p, ok := r.people[strings.ToLower(text.Strip(id))]
	return p, ok
}

// People returns the roster's members, sorted by id.
func (h *Household) People() []Person {
	r, _ := h.load()
	out := make([]Person, 0, len(r.people))
	for _, p := range r.people {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Person) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// DefaultPersonID is the roster's default_person ("_household" when unset).
func (h *Household) DefaultPersonID() string {
	r, _ := h.load()
	if r.defaultPerson == "" {
		return DefaultPerson
	}
	return r.defaultPerson
}

// ByCalendarPrefix finds the person whose calendar_prefix is name, with or
// without its brackets, in any case.
func (h *Household) ByCalendarPrefix(name string) (Person, bool) {
	r, _ := h.load()
	key := strings.ToLower(strings.TrimSpace(name))
	if key == "" {
		return Person{}, false
	}
	if !strings.HasPrefix(key, "[") {
		key = "[" + key + "]"
	}
	id, ok := r.byPrefix[key]
	if !ok {
		return Person{}, false
	}
	p, ok := r.people[id]
	return p, ok
}

// MatchSelfID finds who an utterance says is speaking: a member's
// self-ID phrase ("it's brett") at its very start, after leading
// punctuation and spaces, in any case, and ending at a word boundary. The
// longest phrase wins.
func (h *Household) MatchSelfID(utterance string) (Person, bool) {
	r, _ := h.load()
	if len(r.selfID) == 0 {
		return Person{}, false
	}
	norm := strings.ToLower(strings.TrimLeftFunc(utterance, func(c rune) bool { return !unicode.IsLetter(c) && !unicode.IsNumber(c) }))
	for _, s := range r.selfID {
		rest, ok := strings.CutPrefix(norm, s.phrase)
		if !ok {
			continue
		}
		if next, _ := utf8.DecodeRuneInString(rest); rest == "" || !isWordRune(next) {
			p, ok := r.people[s.id]
			return p, ok
		}
	}
	return Person{}, false
}

// isWordRune is Python's \w: a letter, a number or the underscore.
func isWordRune(c rune) bool { return c == '_' || unicode.IsLetter(c) || unicode.IsNumber(c) }

// Exists reports whether a roster file was read.
func (h *Household) Exists() bool {
	_, ok := h.load()
	return ok
}

// AnyAppearance reports whether any member has a non-empty appearance (the
// room-view roster path then owns greetings).
func (h *Household) AnyAppearance() bool {
	r, _ := h.load()
	for _, p := range r.people {
		if strings.TrimSpace(p.Appearance) != "" {
			return true
		}
	}
	return false
}

func (h *Household) load() (roster, bool) {
	if h == nil || h.path == "" {
		return roster{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now() // throttles a stat of a file: real time, like the file's mtime
	if !h.checked.IsZero() && now.Sub(h.checked) < h.recheck {
		return h.roster, h.exists
	}
	h.checked = now
	fi, err := os.Stat(h.path)
	if err != nil {
		h.roster, h.exists, h.mtime, h.size = roster{}, false, time.Time{}, 0
		return roster{}, false
	}
	if h.exists && fi.ModTime().Equal(h.mtime) && fi.Size() == h.size {
		return h.roster, true
	}
	h.mtime, h.size = fi.ModTime(), fi.Size()
	r, err := parseHousehold(h.path)
	if err != nil {
		if !h.warned {
			h.log.Warn("household file unreadable; using an empty roster", "path", h.path, "error", err)
			h.warned = true
		}
		h.roster, h.exists = roster{}, false
		return roster{}, false
	}
	h.warned = false
	h.roster, h.exists = r, true
	h.log.Info("household roster loaded", "path", h.path, "people", len(r.people), "default", r.defaultPerson)
	return r, true
}

func parseHousehold(path string) (roster, error) {
	b, err := os.ReadFile(path) // #nosec G304 -- HOUSEHOLD_YAML_PATH, the operator's file
	if err != nil {
		return roster{}, err
	}
	var doc struct {
		DefaultPerson any            `yaml:"default_person"`
		People        map[string]any `yaml:"people"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return roster{}, err
	}
	r := roster{people: make(map[string]Person, len(doc.People)), byPrefix: map[string]string{},
		defaultPerson: scalar(doc.DefaultPerson)}
	for raw, v := range doc.People {
		id := strings.ToLower(strings.TrimSpace(raw))
		e, ok := v.(map[string]any) // an entry that is not a mapping is skipped, not fatal
		if id == "" || id == DefaultPerson || !ok {
			continue
		}
		p := Person{ID: id, DisplayName: scalar(e["display_name"]), Relation: scalar(e["relation"]),
			Pronouns: scalar(e["pronouns"]), Appearance: scalar(e["appearance"]), Voice: scalar(e["voice"]),
			Personality: scalar(e["personality"]), FamilyContext: scalar(e["family_context"]), Notes: scalar(e["notes"]),
			Interests: list(e["interests"]), DoNot: list(e["do_not"]), SelfIDPhrases: list(e["self_id_phrases"]),
			CalendarPrefix: scalar(e["calendar_prefix"]), VoicePrintID: scalar(e["voice_print_id"]),
			Age: integer(e["age"]), Birthdate: date(e["birthdate"])}
		if p.DisplayName == "" {
			p.DisplayName = raw
		}
		if ut, ok := e["usual_times"].(map[string]any); ok {
			p.UsualTimes = map[string][]string{}
			for k, v := range ut {
				if l := list(v); len(l) > 0 {
					p.UsualTimes[k] = l
				}
			}
		}
		r.people[id] = p
		if p.CalendarPrefix != "" {
			r.byPrefix[strings.ToLower(p.CalendarPrefix)] = id
		}
		for _, ph := range p.SelfIDPhrases {
			if ph = strings.ToLower(strings.TrimSpace(ph)); ph != "" {
				r.selfID = append(r.selfID, selfIDPhrase{ph, id})
			}
		}
	}
	slices.SortStableFunc(r.selfID, func(a, b selfIDPhrase) int {
		if d := len(b.phrase) - len(a.phrase); d != 0 {
			return d
		}
		return strings.Compare(a.phrase, b.phrase)
	})
	return r, nil
}

// list reads a YAML list of scalars, or a comma-separated string, dropping
// blanks.
func list(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		for _, s := range strings.Split(x, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	case []any:
		for _, e := range x {
			if s := scalar(e); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// integer reads a whole number (or its text); nil otherwise.
func integer(v any) *int {
	switch x := v.(type) {
	case int:
		return &x
	case float64:
		n := int(x)
		return &n
	case string:
		if n, err := strconv.Atoi(strings.TrimSpace(x)); err == nil {
			return &n
		}
	}
	return nil
}

// date reads a YAML date (YAML decodes 2018-04-01 to a time) or its text.
func date(v any) *time.Time {
	switch x := v.(type) {
	case time.Time:
		d := time.Date(x.Year(), x.Month(), x.Day(), 0, 0, 0, 0, time.UTC)
		return &d
	case string:
		if t, err := time.Parse(time.DateOnly, strings.TrimSpace(x)); err == nil {
			return &t
		}
	}
	return nil
}

// scalar renders a YAML scalar as text ("" for null or a collection).
func scalar(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return strings.TrimSpace(x)
	case map[string]any, []any:
		return ""
	default:
		return strings.TrimSpace(strings.Trim(strings.TrimSpace(yamlString(x)), "\n"))
	}
}

func yamlString(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
