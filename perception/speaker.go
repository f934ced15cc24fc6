package perception

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception/internal/lru"
)

// Signal names, as the speaker block lists them.
const (
	SignalSelfID     = "self_id"
	SignalSticky     = "sticky"
	SignalCalendar   = "calendar"
	SignalTimeOfDay  = "time_of_day"
	SignalPerception = "perception"
	SignalRoomMatch  = "vlm_match"
)

// Signal weights (bridge.py's). A self-ID outweighs any other single
// signal; the latch, what the user said about themselves earlier, beats a
// room-view guess, which beats a recognised face; the calendar and
// time-of-day priors stay below the ask threshold even together, so a
// guess from routine alone is marked as one.
const (
	weightSelfID     = 0.95
	weightSticky     = 0.70
	weightRoomMatch  = 0.60
	weightPerception = 0.40
	weightCalendar   = 0.25
	weightTimeOfDay  = 0.15
)

// Calendar weights relative to weightCalendar: an event at this very
// minute counts fully, one at the window's edge half, and an event with no
// time of day (all day) a little, since it says the person is around today
// but not now.
const (
	calendarEdgeShare   = 0.5
	calendarUntimedPart = 0.4
)

// Speaker defaults, bridge.py's.
const (
	DefaultSpeakerSticky           = 600 * time.Second
	DefaultSpeakerCalendarWindow   = 30 * time.Minute
	DefaultSpeakerPerceptionWindow = 30 * time.Second
	DefaultSpeakerAskThreshold     = 0.5
	// DefaultSpeakerMaxLatches bounds the self-ID latches: one per
	// channel and device that named itself in the last Sticky, and both
	// come from unauthenticated callers.
	DefaultSpeakerMaxLatches = 256
)

// SpeakerConfig tunes the speaker resolver. Zero values take the defaults;
// a negative duration or threshold turns its part off.
type SpeakerConfig struct {
	// Sticky is SPEAKER_STICKY_SEC: how long a self-ID keeps naming the
	// speaker on the same channel and device (600 s). Negative: no latch.
	Sticky time.Duration
	// CalendarWindow is SPEAKER_CALENDAR_WINDOW_MIN: how far from now a
	// person's timed event still votes for them (30 min). Negative: no
	// calendar signal.
	CalendarWindow time.Duration
	// PerceptionWindow is SPEAKER_PERCEPTION_WINDOW_SEC: how recent a
	// face_recognized on the caller's device must be to vote (30 s).
	// Negative: no perception signal.
	PerceptionWindow time.Duration
	// AskThreshold is SPEAKER_ASK_THRESHOLD: below this confidence, and
	// with nobody having named themselves, the resolution is marked a
	// guess to confirm (0.5). Negative: never.
	AskThreshold float64
	// MaxLatches bounds the latch table (DefaultSpeakerMaxLatches); past
	// it the oldest latch is forgotten.
	MaxLatches int
}

// DefaultSpeakerConfig is the resolver's settings as bridge.py had them,
// with the latch bound.
func DefaultSpeakerConfig() SpeakerConfig {
	return SpeakerConfig{Sticky: DefaultSpeakerSticky, CalendarWindow: DefaultSpeakerCalendarWindow,
		PerceptionWindow: DefaultSpeakerPerceptionWindow, AskThreshold: DefaultSpeakerAskThreshold, MaxLatches: DefaultSpeakerMaxLatches}
}

// withDefaults fills each field left zero from DefaultSpeakerConfig; a
// negative one stays, its part off.
func (c SpeakerConfig) withDefaults() SpeakerConfig {
	def := DefaultSpeakerConfig()
	for _, d := range []struct{ v, def *time.Duration }{
		{&c.Sticky, &def.Sticky}, {&c.CalendarWindow, &def.CalendarWindow}, {&c.PerceptionWindow, &def.PerceptionWindow},
	} {
		if *d.v == 0 {
			*d.v = *d.def
		}
	}
	if c.AskThreshold == 0 {
		c.AskThreshold = def.AskThreshold
	}
	if c.MaxLatches == 0 {
		c.MaxLatches = def.MaxLatches
	}
	return c
}

// validate reports a latch bound below zero and a threshold that is not a
// number, each as a *fieldcheck.Error naming the field.
func (c SpeakerConfig) validate() error {
	var errs fieldcheck.Errors
	errs.Check("MaxLatches", c.MaxLatches >= 0, c.MaxLatches, "0 or more")
	errs.Check("AskThreshold", !math.IsNaN(c.AskThreshold) && !math.IsInf(c.AskThreshold, 0), c.AskThreshold, "a finite number")
	return errs.Err()
}

// CalendarPeople gives today's calendar events tagged with a person
// (bridge/periphery's Periphery): fn gets each one's person as tagged
// ("Alex"), its start, and whether it lasts all day. It must not block.
type CalendarPeople interface {
	PersonEventsToday(fn func(person string, start time.Time, allDay bool))
}

// SpeakerRequest is what a voice turn tells the resolver.
type SpeakerRequest struct {
	// Text is the request's content; a self-ID phrase is looked for after
	// its last "[User]" marker (xiaozhi puts its context first), or at its
	// start when there is none.
	Text string
	// Channel and DeviceID key the self-ID latch.
	Channel  string
	DeviceID string
	// RoomMatchPersonID is metadata.room_match_person_id: whom the room
	// view's picture matched in the roster.
	RoomMatchPersonID string
}

// SpeakerVote is one piece of evidence for one person.
type SpeakerVote struct {
	Signal   string
	PersonID string
	Weight   float64
}

// SpeakerResolution is the resolver's answer for one turn.
type SpeakerResolution struct {
	// PersonID is the best guess; "" when no signal named anyone.
	PersonID string
	// Addressee is the person's display name (their id when the roster no
	// longer has them), or the roster's default person when PersonID is "".
	Addressee string
	// Confidence is the winner's summed weight, at most 1, to 3 places.
	Confidence float64
	// Votes are the winner's votes, in the order the signals ran.
	Votes []SpeakerVote
	// Ask marks a guess worth confirming: confidence below the threshold
	// and nobody named themselves (no self-ID or latch vote at all).
	Ask bool
	// RunnerUpID and RunnerUpScore are the second best, if any.
	RunnerUpID    string
	RunnerUpScore float64
}

// Signals lists the winner's signal names in vote order.
func (r SpeakerResolution) Signals() []string {
	out := make([]string, len(r.Votes))
	for i, v := range r.Votes {
		out[i] = v.Signal
	}
	return out
}

// speaker resolves who is talking for each voice turn and keeps the
// self-ID latches.
type speaker struct {
	cfg      SpeakerConfig
	calendar CalendarPeople
	loc      *time.Location
	latches  *latches
}

func newSpeaker(cfg SpeakerConfig, calendar CalendarPeople, loc *time.Location) *speaker {
	cfg = cfg.withDefaults()
	return &speaker{cfg: cfg, calendar: calendar, loc: loc, latches: newLatches(cfg.Sticky, cfg.MaxLatches)}
}

// SpeakerBlock resolves who is talking for a voice turn and renders the
// prompt's speaker line: "[Speaking with] <who>  (signals: …, conf=0.00)\n".
// personID is the resolved person; both are "" when nobody was resolved,
// or when resolving failed (a panic is logged and the turn goes on
// without the line). A resolution with a person is logged at Info, one
// without at Debug.
func (s *Service) SpeakerBlock(text, channel, deviceID, roomMatchPersonID string) (block, personID string) {
	req := SpeakerRequest{Text: text, Channel: channel, DeviceID: deviceID, RoomMatchPersonID: roomMatchPersonID}
	res, err := s.ResolveSpeaker(req)
	if err != nil {
		s.log.Error("resolving the speaker failed; the turn goes on without the speaker line",
			"device", deviceID, "error", err)
		return "", ""
	}
	signals := strings.Join(res.Signals(), ",")
	if res.PersonID == "" {
		s.log.Debug("speaker unresolved", "channel", channel, "device", deviceID, "addressee", res.Addressee)
		return "", ""
	}
	s.log.Info("speaker resolved", "channel", channel, "device", deviceID, "person", res.PersonID,
		"confidence", res.Confidence, "signals", signals, "ask", res.Ask, "runner_up", res.RunnerUpID)
	return renderSpeakerBlock(res, s.Household()), res.PersonID
}

// ResolveSpeaker runs every signal for one voice turn and combines their
// votes. A self-ID phrase also latches the request's channel and device
// onto that person. A panic while resolving is returned as an error.
func (s *Service) ResolveSpeaker(r SpeakerRequest) (res SpeakerResolution, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = SpeakerResolution{}, fmt.Errorf("resolve speaker: panic: %v", p)
		}
	}()
	return s.speaker.resolve(s, r), nil
}

// resolve collects the votes in a fixed order (the order the block lists
// them and ties are broken in) and combines them.
func (sp *speaker) resolve(s *Service, r SpeakerRequest) SpeakerResolution {
	now := s.clock.Now()
	house := s.Household()
	key := latchKey{channel: r.Channel, device: r.DeviceID}
	// Oversized keys are never latched, so the bounded table also stays
	// small in bytes.
	latchable := len(r.DeviceID) <= MaxDeviceID && len(r.Channel) <= maxLatchChannel
	var votes []SpeakerVote
	if p, ok := house.MatchSelfID(selfIDText(r.Text)); ok {
		votes = append(votes, SpeakerVote{SignalSelfID, p.ID, weightSelfID})
		if latchable {
			sp.latches.set(key, p.ID, now)
		}
	} else if id, ok := sp.latches.get(key, now); ok && latchable {
		votes = append(votes, SpeakerVote{SignalSticky, id, weightSticky})
	}
	votes = sp.calendarVotes(votes, house, now)
	votes = sp.timeOfDayVotes(votes, house, now)
	votes = sp.perceptionVotes(votes, s, house, r.DeviceID, now)
	if id := strings.TrimSpace(r.RoomMatchPersonID); id != "" {
		if p, ok := house.Lookup(id); ok {
			votes = append(votes, SpeakerVote{SignalRoomMatch, p.ID, weightRoomMatch})
		}
	}
	return sp.combine(votes, house)
}

// selfIDText is the part of a request a self-ID phrase may lead: what
// follows the last "[User]" marker, or the whole text without one.
func selfIDText(text string) string {
	if i := strings.LastIndex(text, "[User]"); i >= 0 {
		return text[i+len("[User]"):]
	}
	return text
}

// calendarVotes adds one vote per person with an event today near now:
// the nearer the start, the heavier (bridge.py's scale); an all-day event
// counts a little whatever the hour. A person's best event decides.
func (sp *speaker) calendarVotes(votes []SpeakerVote, house *Household, now time.Time) []SpeakerVote {
	window := sp.cfg.CalendarWindow
	if sp.calendar == nil || window < 0 {
		return votes
	}
	at := map[string]int{} // person id → index of their vote
	sp.calendar.PersonEventsToday(func(name string, start time.Time, allDay bool) {
		name = strings.TrimSpace(name)
		if name == "" || strings.HasPrefix(name, "_") {
			return
		}
		p, ok := house.ByCalendarPrefix(name)
		if !ok {
			return
		}
		var w float64
		if allDay || start.IsZero() {
			w = weightCalendar * calendarUntimedPart
		} else {
			d := start.Sub(now).Abs()
			if d > window {
				return
			}
			w = weightCalendar * (calendarEdgeShare + (1-calendarEdgeShare)*(1-float64(d)/float64(window)))
		}
		if i, ok := at[p.ID]; ok {
			votes[i].Weight = max(votes[i].Weight, w)
			return
		}
		at[p.ID] = len(votes)
		votes = append(votes, SpeakerVote{SignalCalendar, p.ID, w})
	})
	return votes
}

// timeOfDayVotes adds a vote for each person whose usual times for today
// (weekdays or weekends) include now's bucket, or "any".
func (sp *speaker) timeOfDayVotes(votes []SpeakerVote, house *Household, now time.Time) []SpeakerVote {
	local := now.In(sp.loc)
	bucket := timeBucket(local)
	kind := "weekdays"
	if wd := local.Weekday(); wd == time.Saturday || wd == time.Sunday {
		kind = "weekends"
	}
	for _, p := range house.People() {
		for _, b := range p.UsualTimes[kind] {
			if strings.EqualFold(b, "any") || strings.EqualFold(b, bucket) {
				votes = append(votes, SpeakerVote{SignalTimeOfDay, p.ID, weightTimeOfDay})
				break
			}
		}
	}
	return votes
}

// timeBucket names the part of the day of a local time, bridge.py's
// buckets: morning 06–11, afternoon 11–15, after-school 15–18,
// early-evening 18–20, evening 20–22, night 22–06.
func timeBucket(local time.Time) string {
	switch h := local.Hour(); {
	case h >= 22 || h < 6:
		return "night"
	case h < 11:
		return "morning"
	case h < 15:
		return "afternoon"
	case h < 18:
		return "after-school"
	case h < 20:
		return "early-evening"
	default:
		return "evening"
	}
}

// perceptionVotes adds a vote for each roster member recognised on the
// caller's device within the window: from its recent events, and from the
// device state too, since a burst of other events can push a recognition
// out of the 20-event ring while it is still fresh. A room view's match
// (source room_view) is a photo's hint, not a recognised face: it does
// not vote here.
func (sp *speaker) perceptionVotes(votes []SpeakerVote, s *Service, house *Household, device string, now time.Time) []SpeakerVote {
	window := sp.cfg.PerceptionWindow
	if device == "" || window < 0 {
		return votes
	}
	cutoff := epochSeconds(now) - window.Seconds()
	seen := map[string]bool{}
	vote := func(identity string) {
		identity = strings.ToLower(strings.TrimSpace(identity))
		if identity == "" || identity == "unknown" {
			return
		}
		p, ok := house.Lookup(identity)
		if !ok || seen[p.ID] {
			return
		}
		seen[p.ID] = true
		votes = append(votes, SpeakerVote{SignalPerception, p.ID, weightPerception})
	}
	for _, ev := range s.bus.Recent(device, 0) { // newest first
		if ev.Name != "face_recognized" || ev.TS < cutoff {
			continue
		}
		if src, _ := ev.Data.Text("source"); src == "room_view" {
			continue // a photo's match: it votes as metadata.room_match_person_id (vlm_match), once
		}
		if id, ok := ev.Data.Text("identity"); ok {
			vote(id)
		}
	}
	if st, ok := s.states.Get(device); ok && st.LastFaceID != nil && st.LastFaceRecognizedT != nil &&
		*st.LastFaceRecognizedT >= cutoff {
		vote(*st.LastFaceID)
	}
	return votes
}

// combine sums the votes per person; the highest sum wins, a tie going to
// the person voted for first. Confidence is not normalised across
// candidates: one clear vote against nobody else is still only as sure as
// its weight.
func (sp *speaker) combine(votes []SpeakerVote, house *Household) SpeakerResolution {
	type tally struct {
		id    string
		score float64
		votes []SpeakerVote
	}
	var order []*tally
	byID := map[string]*tally{}
	named := false
	for _, v := range votes {
		if v.Signal == SignalSelfID || v.Signal == SignalSticky {
			named = true
		}
		if v.Weight <= 0 {
			continue
		}
		t := byID[v.PersonID]
		if t == nil {
			t = &tally{id: v.PersonID}
			byID[v.PersonID] = t
			order = append(order, t)
		}
		t.score += v.Weight
		t.votes = append(t.votes, v)
	}
	if len(order) == 0 {
		return SpeakerResolution{Addressee: house.DefaultPersonID()}
	}
	slices.SortStableFunc(order, func(a, b *tally) int { return cmp.Compare(b.score, a.score) })
	top := order[0]
	conf := min(1, top.score)
	res := SpeakerResolution{PersonID: top.id, Addressee: top.id, Confidence: round3(conf), Votes: top.votes,
		Ask: conf < sp.cfg.AskThreshold && !named}
	if p, ok := house.Lookup(top.id); ok && p.DisplayName != "" {
		res.Addressee = p.DisplayName
	}
	if len(order) > 1 {
		res.RunnerUpID, res.RunnerUpScore = order[1].id, round3(order[1].score)
	}
	return res
}

// round3 rounds to 3 decimal places the way Python's round does: to the
// nearest decimal of the exact binary value.
func round3(x float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'f', 3, 64), 64)
	if err != nil {
		return x
	}
	return r
}

// renderSpeakerBlock is the prompt's speaker line for a resolution with a
// person: their compact description (the addressee when the roster no
// longer has them), made one safe line of at most 180 code points (the
// line is meant to cost the model a few dozen tokens), then two spaces and the winning signals with the
// confidence to two places.
func renderSpeakerBlock(res SpeakerResolution, house *Household) string {
	if res.PersonID == "" || res.Addressee == "" {
		return ""
	}
	who := prompttext.Line(res.Addressee, prompttext.Description)
	if p, ok := house.Lookup(res.PersonID); ok {
		who = p.CompactDescription(prompttext.Description.Runes)
	}
	if who == "" {
		return ""
	}
	var b strings.Builder
	b.WriteString("[Speaking with] ")
	b.WriteString(who)
	if len(res.Votes) > 0 {
		b.WriteString("  (signals: ")
		b.WriteString(strings.Join(res.Signals(), ","))
		b.WriteString(", conf=")
		b.WriteString(strconv.FormatFloat(res.Confidence, 'f', 2, 64))
		b.WriteByte(')')
	}
	b.WriteByte('\n')
	return b.String()
}

// maxLatchChannel bounds a latched channel name in bytes (the voice
// routes allow 256 code points).
const maxLatchChannel = 1024

// latchKey is a caller: the request's channel and device.
type latchKey struct{ channel, device string }

// latch is a self-ID: who, and when they said it.
type latch struct {
	person string
	at     time.Time
}

// latches are the self-ID latches by caller, bounded: the table keeps at
// most max entries, drops expired ones whenever it grows, and forgets the
// oldest latch to make room. A latch is never renewed by being read, so
// the table's recency order is the order the latches were set in.
type latches struct {
	ttl time.Duration // negative: never latch

	mu    sync.Mutex
	cache *lru.Cache[latchKey, latch]
}

func newLatches(ttl time.Duration, max int) *latches {
	return &latches{ttl: ttl, cache: lru.New[latchKey, latch](max)}
}

// set latches k onto person from now on.
func (l *latches) set(k latchKey, person string, now time.Time) {
	if l.ttl < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		old, v, ok := l.cache.Oldest()
		if !ok || l.live(v, now) {
			break
		}
		l.cache.Remove(old)
	}
	l.cache.Put(k, latch{person: person, at: now})
}

// live reports whether v is at most ttl old at now.
func (l *latches) live(v latch, now time.Time) bool { return now.Sub(v.at) <= l.ttl }

// get returns k's person while the latch is live (at most ttl old); an
// expired latch is dropped.
func (l *latches) get(k latchKey, now time.Time) (string, bool) {
	if l.ttl < 0 {
		return "", false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.cache.Get(k)
	if !ok {
		return "", false
	}
	if !l.live(v, now) {
		l.cache.Remove(k)
		return "", false
	}
	return v.person, true
}

// forDevice returns the people latched on device, on any channel, while
// their latch is live, the most recently set first (the table's order).
func (l *latches) forDevice(device string, now time.Time) []string {
	if l.ttl < 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, v := range l.cache.All() {
		if k.device == device && l.live(v, now) {
			out = append(out, v.person)
		}
	}
	return out
}

// len reports how many latches are kept, live or not yet dropped.
func (l *latches) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cache.Len()
}
