package social

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/admin/xiaozhi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/convolog"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/prompttext"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/emoji"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/perception"
)

// UnknownGreeting is said to a face nobody recognised and, unless
// greet-anyone is on, to a face recognised as someone not on the
// household roster: a fixed greeting, no agent turn.
const UnknownGreeting = "Hello! I don't think we've met."

// Unknown is the identity of a face nobody recognised, and the one count
// every face not on the roster shares (unless greet-anyone is on).
const Unknown = "unknown"

// SessionKey is the agent session key of every greeting: one session for
// the greeter, whichever robot or person, never a conversation's.
const SessionKey = "greeter"

// MaxIdentity is the most of a face's identity, in characters, the
// greeter keeps (its count, its log records, the journal card).
const MaxIdentity = 64

// maxErrorText bounds the error a greeting's log record keeps.
const maxErrorText = 200

// greeter holds the proactive greeter's counts and its greetings in
// flight.
type greeter struct {
	state *greetState

	noRoster atomic.Bool // the empty roster has been noted in the log

	mu       sync.Mutex
	inFlight map[string]bool // devices with a greeting in flight
}

func newGreeter(s *Service) *greeter {
	g := &greeter{inFlight: map[string]bool{}}
	others := 0 // without greet-anyone, every face not on the roster is counted as "unknown"
	if s.set.GreetAnyone {
		others = s.set.MaxGreetIdentities
	}
	g.state = newGreetState(s.set.GreeterStatePath, others, s.greetLog, s.cfg.Health)
	if s.set.GreeterEnabled {
		g.state.load(s.today(), func(identity string) (string, bool) {
			return s.countedAs(identity)
		})
	}
	return g
}

// reserve takes the device's greeting slot and one of maxGreetings.
func (g *greeter) reserve(device string) (ok, busyDevice bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight[device] {
		return false, true
	}
	if len(g.inFlight) >= maxGreetings {
		return false, false
	}
	g.inFlight[device] = true
	return true, false
}

func (g *greeter) release(device string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.inFlight, device)
}

// onFace greets a recognised household member with a greeting the agent
// writes, a face not on the roster (any face with greet-anyone on) with
// the fixed UnknownGreeting, and a face nobody recognised with it too when
// allowed, each within its daily cap and cooldown.
func (s *Service) onFace(ctx context.Context, ev perception.Event) {
	if perception.NoDevice(ev) {
		return
	}
	var identity string
	switch ev.Name {
	case "face_recognized":
		raw, _ := ev.Data.Text("identity")
		identity = text.Strip(raw)
	case "face_detected":
		if !s.set.GreetOnFaceSeen {
			return
		}
	default:
		return
	}
	if identity == "" {
		identity = Unknown
	}
	log := s.greetLog
	if identity == Unknown && !s.set.GreetUnknown {
		log.Debug("unknown face not greeted (GREETER_GREET_UNKNOWN is off)", "device", ev.DeviceID)
		return
	}
	key, member := s.countedAs(identity)
	byAgent := member || (key != Unknown && s.set.GreetAnyone)
	if identity != Unknown && key == Unknown && !s.greeter.noRoster.Load() && len(s.household().People()) == 0 && !s.greeter.noRoster.Swap(true) {
		log.Info("no household members on the roster: every recognised face gets the fixed greeting; " +
			"add them to HOUSEHOLD_YAML_PATH, or set GREETER_GREET_ANYONE=1 for bridge.py's agent greeting of any name")
	}
	device := ev.DeviceID
	ok, busy := s.greeter.reserve(device)
	if !ok {
		if busy {
			log.Debug("a greeting is already in flight for the device", "device", device, "identity", identity)
		} else {
			log.Warn("too many greetings in flight; this one is dropped", "device", device, "identity", identity)
		}
		return
	}
	started := s.clock.Now()
	at := ev.TS
	if at == 0 {
		at = epochSeconds(started)
	}
	allowed, why := s.greeter.state.take(key, member, at, s.today(), s.set.GreetPerDayMax, s.set.GreetCooldown)
	if !allowed {
		s.greeter.release(device)
		log.Debug("greeting skipped", "identity", identity, "counted_as", key, "reason", why)
		return
	}
	window := timeOfDay(started.In(s.loc))
	if !s.spawn(ctx, log, ProactiveGreeter, func(ctx context.Context) {
		defer s.greeter.release(device)
		s.greet(ctx, device, identity, byAgent, window, started)
	}) {
		s.greeter.release(device)
	}
}

// countedAs is the count a face's identity is kept under: a household
// member's roster id; with greet-anyone on, any other identity itself;
// otherwise "unknown", which every face not on the roster shares, so no
// number of invented names can greet more often than one unknown face.
func (s *Service) countedAs(identity string) (key string, member bool) {
	if p, ok := s.lookup(identity); ok {
		return p.ID, true
	}
	if s.set.GreetAnyone {
		return text.Truncate(identity, text.Cut{Max: MaxIdentity}), false
	}
	return Unknown, false
}

// greet writes, speaks and logs one greeting: byAgent asks the agent for
// it, otherwise it is UnknownGreeting.
func (s *Service) greet(ctx context.Context, device, identity string, byAgent bool, window string, started time.Time) {
	greeting := UnknownGreeting
	if byAgent {
		greeting = s.greeting(ctx, device, identity, window)
	}
	if ctx.Err() != nil {
		return // shutting down: nothing said, nothing logged
	}
	if s.kidMode() {
		greeting = stripLeadingEmoji(greeting)
	}
	if greeting == "" {
		s.greetLog.Debug("greeting empty after the kid-mode scrub; nothing said", "device", device, "identity", identity)
		return
	}
	var err error
	if r := s.cfg.Robot; r == nil || !r.Enabled() {
		err = xiaozhi.ErrDisabled
	} else {
		err = r.Say(ctx, device, greeting)
	}
	if ctx.Err() != nil && err != nil {
		return
	}
	if err != nil {
		s.greetLog.Warn("greeting not spoken", "device", device, "identity", identity, "error", err)
	} else {
		s.greetLog.Info("greeting spoken", "device", device, "identity", identity)
		s.greetLog.Debug("greeting text", "device", device, "text", greeting)
	}
	s.recordGreeting(device, identity, greeting, err, started)
}

// recordGreeting writes the greeting's conversation-log record and keeps
// it for the journal card.
func (s *Service) recordGreeting(device, identity, greeting string, err error, started time.Time) {
	now := s.clock.Now()
	errText := ""
	if err != nil {
		errText = text.Truncate(err.Error(), text.Cut{Max: maxErrorText})
	}
	identity = text.Truncate(identity, text.Cut{Max: MaxIdentity})
	rec := GreetingRecord{TS: convolog.Timestamp(now.In(s.loc)), Device: device, Identity: identity, Text: greeting}
	if errText != "" {
		rec.Error = &errText
	}
	s.journal.addGreeting(now, rec) // the card first, as for dances
	lead, _ := emoji.Leading(greeting)
	if l := s.cfg.ConvoLog; l != nil {
		l.Write(convolog.Record{TS: now, Channel: "greeter", SessionID: "", RequestText: "face:" + identity,
			ResponseText: greeting, EmojiUsed: lead, Latency: now.Sub(started), Error: errText})
	}
}

// greeting asks the agent for a greeting, falling back to the template
// when it has none (no agent, a failure, an empty answer or the time
// limit).
func (s *Service) greeting(ctx context.Context, device, identity, window string) string {
	person, known := s.lookup(identity)
	addressee := identity
	if known {
		addressee = person.DisplayName
	}
	fallback := "Good " + window + ", " + addressee + "!"
	if s.cfg.Agent == nil {
		return fallback
	}
	var pp *perception.Person
	if known {
		pp = &person
	}
	prompt := GreetingPrompt(PromptInput{Addressee: addressee, Window: window, Person: pp,
		Today: s.clock.Now().In(s.loc), Events: s.calendar(identity), MaxWords: s.set.GreetMaxWords})
	actx, cancel := perception.ClockTimeout(ctx, s.clock, s.set.GreetAgentTimeout)
	defer cancel()
	reply, err := s.cfg.Agent.Prompt(actx, SessionKey, prompt)
	if err == nil && actx.Err() != nil {
		err = actx.Err()
	}
	if err != nil {
		if ctx.Err() == nil {
			s.greetLog.Warn("agent greeting failed; using the template", "device", device, "identity", identity, "error", err)
		}
		return fallback
	}
	if cleaned := cleanGreeting(reply); cleaned != "" {
		return cleaned
	}
	s.greetLog.Info("agent greeting empty; using the template", "device", device, "identity", identity)
	return fallback
}

// lookup finds identity in the roster ("unknown" is nobody).
func (s *Service) lookup(identity string) (perception.Person, bool) {
	h := s.household()
	if identity == "" || identity == Unknown || h == nil {
		return perception.Person{}, false
	}
	return h.Lookup(identity)
}

// household is the roster; nil without perception.
func (s *Service) household() *perception.Household {
	if s.cfg.Perception == nil {
		return nil
	}
	return s.cfg.Perception.Household()
}

// calendar returns identity's calendar lines with the household's; a
// failing calendar gives none.
func (s *Service) calendar(identity string) (events []string) {
	if s.cfg.Calendar == nil {
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			s.greetLog.Warn("calendar lookup failed; greeting without it", "identity", identity, "panic", fmt.Sprint(r))
			events = nil
		}
	}()
	return s.cfg.Calendar.Today(identity, true)
}

// kidMode reads the kid-mode switch; no switch, or one that fails, counts
// as on (the safer side).
func (s *Service) kidMode() (on bool) {
	if s.cfg.KidMode == nil {
		return true
	}
	defer func() {
		if recover() != nil {
			on = true
		}
	}()
	return s.cfg.KidMode()
}

// PromptInput is what the greeting prompt is made of.
type PromptInput struct {
	Addressee string             // the display name, or the identity for someone not on the roster
	Window    string             // morning, afternoon, evening or night
	Person    *perception.Person // the roster entry; nil for none
	Today     time.Time          // the local date, for the birthday line
	Events    []string           // the person's calendar lines for today
	MaxWords  int
}

// GreetingPrompt is the agent's request for a greeting, bridge.py's
// proactive greeter's text byte for byte. The addressee (a LAN client's
// identity when the roster lacks it) and the roster description stand in
// it only as prompttext.Line makes them; the calendar lines come made safe
// by the calendar (bridge/periphery).
func GreetingPrompt(in PromptInput) string {
	a := prompttext.Line(in.Addressee, prompttext.Name)
	var b strings.Builder
	b.WriteString("You are Dotty, a friendly home robot. " + a + " just walked into the room. The time of day is " + in.Window + ".\n")
	if p := in.Person; p != nil {
		if descr := p.CompactDescription(prompttext.Description.Runes); descr != "" {
			b.WriteString("About " + a + ": " + descr + "\n")
		}
		if days, ok := p.DaysUntilBirthday(in.Today); ok {
			switch {
			case days == 0:
				b.WriteString("It is " + a + "'s birthday today — a warm acknowledgement is welcome.\n")
			case days >= 1 && days <= 7:
				plural := "s"
				if days == 1 {
					plural = ""
				}
				b.WriteString(a + "'s birthday is in " + strconv.Itoa(days) + " day" + plural + " — you may mention it lightly if it fits.\n")
			}
		}
	}
	b.WriteString("Today's calendar items relevant to " + a + ":\n")
	if len(in.Events) == 0 {
		b.WriteString("(none)")
	} else {
		for i, e := range in.Events {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString("- " + e)
		}
	}
	b.WriteString("\n\nWrite a single short, warm spoken greeting addressed to " + a +
		". If a calendar item is highly relevant to the current time-of-day window, you may mention it naturally — otherwise just greet them. " +
		"Hard rules: ENGLISH ONLY. " + strconv.Itoa(in.MaxWords) + " words or fewer. One sentence. No emoji, no Markdown, no lists.")
	return b.String()
}

// timeOfDay names the part of the day of a local time: morning 5–12,
// afternoon 12–17, evening 17–21, night otherwise.
func timeOfDay(t time.Time) string {
	switch h := t.Hour(); {
	case h >= 5 && h < 12:
		return "morning"
	case h >= 12 && h < 17:
		return "afternoon"
	case h >= 17 && h < 21:
		return "evening"
	}
	return "night"
}

// cleanGreeting collapses whitespace and removes one pair of wrapping
// quotes (the model likes to quote what it would say).
func cleanGreeting(raw string) string {
	cleaned := strings.Join(strings.FieldsFunc(raw, text.IsSpace), " ")
	if len(cleaned) >= 2 && isQuote(cleaned[0]) && isQuote(cleaned[len(cleaned)-1]) {
		cleaned = text.Strip(cleaned[1 : len(cleaned)-1])
	}
	return cleaned
}

func isQuote(c byte) bool { return c == '"' || c == '\'' }

// stripLeadingEmoji removes one allowed emoji starting text, and the
// whitespace after it: spoken greetings must not read an emoji out.
func stripLeadingEmoji(greeting string) string {
	for _, e := range emoji.Allowed {
		if rest, ok := strings.CutPrefix(greeting, e); ok {
			return text.StripLeft(rest)
		}
	}
	return greeting
}

// today is the local date now.
func (s *Service) today() string { return s.clock.Now().In(s.loc).Format(time.DateOnly) }

// epochSeconds converts t to float seconds.
func epochSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
