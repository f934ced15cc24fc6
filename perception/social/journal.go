package social

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"
	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
)

// JournalKeep is how many of each kind the journal card shows: the
// newest of the day.
const JournalKeep = 20

// Bounds on what is read back at start: the tail of each file (the newest
// records are the ones shown) and one line.
const (
	maxJournalScan = 4 << 20
	maxJournalLine = 256 << 10
)

// GreetingRecord is one greeting on the journal card. Device is "" for a
// greeting read back from the conversation log, which does not keep it.
type GreetingRecord struct {
	TS       string  `json:"ts"`
	Device   string  `json:"device"`
	Identity string  `json:"identity"`
	Text     string  `json:"text"`
	Error    *string `json:"error"`
}

// Today is GET /api/journal/today: the local day's newest dreams, dance
// reflections and greetings, newest first.
type Today struct {
	Date      string           `json:"date"`
	Dreams    []DreamRecord    `json:"dreams"`
	Dances    []DanceRecord    `json:"dances"`
	Greetings []GreetingRecord `json:"greetings"`
}

// ring keeps the newest JournalKeep items, oldest first.
type ring[T any] struct{ items []T }

func (r *ring[T]) add(v T) {
	if len(r.items) == JournalKeep {
		copy(r.items, r.items[1:])
		r.items = r.items[:JournalKeep-1]
	}
	r.items = append(r.items, v)
}

func (r *ring[T]) newestFirst() []T {
	out := make([]T, len(r.items))
	for i, v := range r.items {
		out[len(out)-1-i] = v
	}
	return out
}

// journal is the day's card in memory: records are added as they are
// written, and a new local day starts it empty.
type journal struct {
	clock clockwork.Clock
	loc   *time.Location

	mu        sync.Mutex
	day       string
	dreams    ring[DreamRecord]
	dances    ring[DanceRecord]
	greetings ring[GreetingRecord]
}

func newJournal(clock clockwork.Clock, loc *time.Location) *journal {
	return &journal{clock: clock, loc: loc}
}

// dayLocked moves the card to day when it is a later day; it reports
// whether a record of day belongs on the card.
func (j *journal) dayLocked(day string) bool {
	if day > j.day {
		j.day = day
		j.dreams, j.dances, j.greetings = ring[DreamRecord]{}, ring[DanceRecord]{}, ring[GreetingRecord]{}
	}
	return day == j.day
}

func (j *journal) date(t time.Time) string { return t.In(j.loc).Format(time.DateOnly) }

func (j *journal) addDream(t time.Time, r DreamRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dayLocked(j.date(t)) {
		j.dreams.add(r)
	}
}

func (j *journal) addDance(t time.Time, r DanceRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dayLocked(j.date(t)) {
		j.dances.add(r)
	}
}

func (j *journal) addGreeting(t time.Time, r GreetingRecord) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.dayLocked(j.date(t)) {
		j.greetings.add(r)
	}
}

// today returns the card of the current local day.
func (j *journal) today() Today {
	day := j.date(j.clock.Now())
	j.mu.Lock()
	defer j.mu.Unlock()
	out := Today{Date: day, Dreams: []DreamRecord{}, Dances: []DanceRecord{}, Greetings: []GreetingRecord{}}
	if !j.dayLocked(day) {
		return out // the clock went back past the card's day
	}
	out.Dreams, out.Dances, out.Greetings = j.dreams.newestFirst(), j.dances.newestFirst(), j.greetings.newestFirst()
	return out
}

// Today returns the journal card of the current local day.
func (s *Service) Today() Today { return s.journal.today() }

// getToday is GET /api/journal/today.
func (s *Service) getToday(c echo.Context) error {
	return httpapi.WriteJSON(c, http.StatusOK, s.journal.today())
}

// loadJournal fills the card with today's records from the files, so a
// restart keeps it: the dreams and dances files, and the greeter's lines
// of the conversation log.
func (s *Service) loadJournal() {
	dir := s.cfg.JournalDir
	if dir == "" {
		return
	}
	now := s.clock.Now()
	day := s.journal.date(now)
	file := func(prefix string) string { return filepath.Join(dir, prefix+"-"+day+".ndjson") }
	s.scanJournal(file(dreamsPrefix), func(line []byte) {
		var r DreamRecord
		if json.Unmarshal(line, &r) == nil && r.Type == "dream" {
			s.journal.addDream(now, r)
		}
	})
	s.scanJournal(file(dancesPrefix), func(line []byte) {
		var r DanceRecord
		if json.Unmarshal(line, &r) == nil && r.Type == "dance" {
			s.journal.addDance(now, r)
		}
	})
	s.scanJournal(file("convo"), func(line []byte) {
		if !bytes.Contains(line, []byte(`"greeter"`)) { // most lines are voice turns: skip them undecoded
			return
		}
		var r struct {
			TS           string  `json:"ts"`
			Channel      string  `json:"channel"`
			RequestText  string  `json:"request_text"`
			ResponseText string  `json:"response_text"`
			Error        *string `json:"error"`
		}
		if json.Unmarshal(line, &r) != nil || r.Channel != "greeter" {
			return
		}
		s.journal.addGreeting(now, GreetingRecord{TS: r.TS, Identity: strings.TrimPrefix(r.RequestText, "face:"),
			Text: r.ResponseText, Error: r.Error})
	})
}

// scanJournal calls fn for each line of the last maxJournalScan bytes of
// path; longer lines are skipped. A missing file is no records; other
// failures are logged, the first of a start at Warn (the files share a
// directory, and its trouble is one cause), the others at Debug.
func (s *Service) scanJournal(path string, fn func(line []byte)) {
	err := convolog.ScanTail(path, maxJournalScan, maxJournalLine, fn)
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return
	}
	level := hclog.Warn
	if s.journalReadWarned {
		level = hclog.Debug
	}
	s.journalReadWarned = true
	s.journalLog.Log(level, "cannot read back today's journal; the card starts without it", "error", err)
}
