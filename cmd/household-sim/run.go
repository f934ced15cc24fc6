package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/report"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/cmd/household-sim/simclock"
)

// The bridge's defaults the checks hold it to (docs/configuration.md).
const (
	greeterPerDay   = 3
	greeterCooldown = 4 * time.Hour
	faceGreetFrom   = 6
	faceGreetTo     = 21
	// stateGrace is how long after a robot left a state a record of work
	// begun in it may still be written: one security cycle (photo, audio
	// and their waits) or one dream's narrative call.
	stateGrace = time.Minute
	// convoDayLimit bounds a day's conversation log.
	convoDayLimit = 1 << 20
	faceGreetText = "Hi!"
)

// limits is how much the bridge may grow from day 2 to the last day.
var limits = report.Limits{Goroutines: 20, FDs: 8, HeapBytes: 8 << 20, TableSlack: 4}

// columns are the report's per-day counts.
var columns = []string{"greetings", "name acks", "face his", "room views", "idle photos", "kid photos", "security", "dreams", "dances",
	"stories", "turns", "failed turns", "memory writes", "agent restarts", "convo KiB",
	"goroutines", "fds", "heap KiB"}

// sim is one run of the script against the world.
type sim struct {
	w          *world
	steps      []Step
	next       int
	start, end time.Time
	nextSample time.Time
	tl         map[string][]Span
	samples    []report.Sample
	problems   []string
	promptFrom int // the next agent prompt log byte to read
	linesFrom  int // the next fake model prompt line to read
	verbose    bool

	created    uint64    // goroutines created, at the last look
	quietSince time.Time // real time the goroutine count last changed
	busySince  time.Time // real time something was last in flight

	rows       []report.Row     // the days checked so far
	greetings  []Event          // every greeting so far
	dreams     int              // dreams recorded so far
	convoBytes map[string]int64 // the conversation log's size per day
}

// The world is settled when nothing is in flight (the counts of
// world.settled), no goroutine of the process is runnable and only the
// driver runs, and no goroutine was created since the last look: work
// the bridge set off on a goroutine of its own (a dream spawned by its
// timer, an idle photo's loop woken) is still on its way to anything the
// counts see. After any request or fake's work, and before a jump longer
// than bigJump, the counts must also have stayed quiet for quietFor of
// real time.
const (
	bigJump  = 10 * time.Second
	quietFor = 2 * time.Millisecond
)

// settled is Drive's settle test.
func (s *sim) settled() bool {
	if !s.w.settled() {
		s.busySince = time.Now()
		return false
	}
	runnable, running, created := sched()
	if runnable > 0 || running > 1 {
		return false // a goroutine on its way: look again
	}
	if created != s.created || s.quietSince.IsZero() {
		s.created, s.quietSince = created, time.Now()
		return false
	}
	if time.Since(s.busySince) < quietFor {
		return false
	}
	now := s.w.clock.Now()
	next, ok := s.nextAt()
	if d, has := s.w.clock.NextDeadline(); has && (!ok || d.Before(next)) {
		next, ok = d, true
	}
	if !ok || next.Sub(now) > bigJump {
		return time.Since(s.quietSince) >= quietFor
	}
	return true
}

// schedSamples are the scheduler's counts settled reads.
var schedSamples = []metrics.Sample{
	{Name: "/sched/goroutines/runnable:goroutines"},
	{Name: "/sched/goroutines/running:goroutines"},
	{Name: "/sched/goroutines-created:goroutines"},
}

// sched reads the goroutines ready to run, running (the caller among
// them) and created since the process started. The sim's driver is the
// only reader.
func sched() (runnable, running, created uint64) {
	metrics.Read(schedSamples)
	v := func(i int) uint64 {
		if schedSamples[i].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return schedSamples[i].Value.Uint64()
	}
	return v(0), v(1), v(2)
}

// nextAt is the time of the sim's next event: a step or a sample.
func (s *sim) nextAt() (time.Time, bool) {
	t := s.nextSample
	if s.next < len(s.steps) && s.steps[s.next].At.Before(t) {
		t = s.steps[s.next].At
	}
	return t, t.Before(s.end) || (s.next < len(s.steps))
}

// startDue starts the steps due at now and samples on the hour.
func (s *sim) startDue(now time.Time) {
	for s.next < len(s.steps) && !s.steps[s.next].At.After(now) {
		if s.verbose {
			fmt.Fprintln(os.Stderr, "step", s.steps[s.next])
		}
		s.w.run(s.steps[s.next])
		s.next++
	}
	if !s.nextSample.After(now) {
		s.sample(now)
		s.nextSample = now.Truncate(time.Hour).Add(time.Hour)
	}
}

// sample looks at the process and checks what may be checked every hour.
func (s *sim) sample(now time.Time) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, _ := os.ReadDir("/proc/self/fd")
	s.samples = append(s.samples, report.Sample{At: now.In(s.w.loc), Goroutines: runtime.NumGoroutine(), FDs: len(fds),
		HeapBytes: ms.HeapAlloc, Tables: s.w.app.Load().Tables()})
	s.checkPrompts()
	s.checkDays(now)
	s.checkJournal(now)
	local := now.In(s.w.loc)
	if local.Hour() == 10 {
		// After the morning's greetings: the state file is of today.
		day, counts, err := greeterState(filepath.Join(s.w.dir, "greeter_state.json"))
		if err != nil {
			s.problems = append(s.problems, fmt.Sprintf("greeter state at %s: %v", stamp(local), err))
		} else {
			s.problems = append(s.problems, checkGreeterState(day, counts, local.Format(time.DateOnly), greeterPerDay)...)
		}
	}
}

// checkJournal reads the journal card and checks it is of now's day.
func (s *sim) checkJournal(now time.Time) {
	code, b, err := s.w.call(http.MethodGet, "/api/journal/today", nil)
	var card struct {
		Date   string `json:"date"`
		Dreams []struct {
			TS string `json:"ts"`
		} `json:"dreams"`
		Dances []struct {
			TS string `json:"ts"`
		} `json:"dances"`
		Greetings []struct {
			TS string `json:"ts"`
		} `json:"greetings"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal(b, &card) != nil {
		s.problems = append(s.problems, fmt.Sprintf("the journal card at %s: %d %s (%v)", stamp(now.In(s.w.loc)), code, b, err))
		return
	}
	j := Journal{Date: card.Date}
	var stamps []string
	for _, d := range card.Dreams {
		stamps = append(stamps, d.TS)
	}
	for _, d := range card.Dances {
		stamps = append(stamps, d.TS)
	}
	for _, g := range card.Greetings {
		stamps = append(stamps, g.TS)
	}
	for _, ts := range stamps {
		t, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil {
			s.problems = append(s.problems, fmt.Sprintf("the journal card: ts %q: %v", ts, err))
			continue
		}
		j.Stamps = append(j.Stamps, t)
	}
	s.problems = append(s.problems, checkJournal(j, now.In(s.w.loc).Format(time.DateOnly), s.w.loc)...)
}

// checkPrompts reads the prompts the agent and the fake model got since
// the last look and checks that none carries outside text as a line.
func (s *sim) checkPrompts() {
	lines, next := s.w.vlm.Lines(s.linesFrom)
	if missed := next - len(lines) - s.linesFrom; missed > 0 {
		s.problems = append(s.problems, fmt.Sprintf("%d model prompt lines were dropped before they were checked", missed))
	}
	s.linesFrom = next
	s.problems = append(s.problems, checkPromptLines("model", lines)...)
	f, err := os.Open(s.w.promptLog)
	if err != nil {
		return // no prompt yet
	}
	defer f.Close()
	if _, err := f.Seek(int64(s.promptFrom), 0); err != nil {
		s.problems = append(s.problems, fmt.Sprintf("agent prompt log: %v", err))
		return
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return // a partial line is read next time
		}
		s.promptFrom += len(line)
		var prompt string
		if err := json.Unmarshal(line, &prompt); err != nil {
			s.problems = append(s.problems, fmt.Sprintf("agent prompt log: %v", err))
			continue
		}
		s.problems = append(s.problems, checkPromptLines("agent", strings.Split(prompt, "\n"))...)
	}
}

// drive runs the script to the end on the world's clock.
func (s *sim) drive(ctx context.Context) (simclock.Stats, error) {
	return s.w.clock.Drive(ctx, s.end, simclock.Options{
		Next:    s.nextAt,
		Start:   s.startDue,
		Settled: s.settled,
	})
}

// days are the local dates of the run.
func (s *sim) days() []string {
	var out []string
	for d := s.start; d.Before(s.end); d = time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, s.w.loc) {
		out = append(out, d.Format(time.DateOnly))
	}
	return out
}

// checkDay reads what the bridge wrote on date, checks the day's
// invariants and returns its row of the report. It runs an hour after the
// next local midnight (work begun before midnight has landed by then) and
// at the end for the last day.
func (s *sim) checkDay(date string) report.Row {
	w := s.w
	logs := filepath.Join(w.dir, "logs")
	w.mu.Lock()
	nameAcks, acks, views, kidPhotos := w.nameAcks[date], w.ackDays[date], w.roomViews[date], w.kidPhotos[date]
	caused := append([]Span(nil), w.caused...)
	w.mu.Unlock()
	read := func(kind string) []record {
		recs, size, err := daily(logs, kind, date)
		if err != nil {
			s.problems = append(s.problems, err.Error())
		}
		stamps := make([]time.Time, len(recs))
		for i, r := range recs {
			stamps[i] = r.TS
		}
		s.problems = append(s.problems, checkDated(kind, date, stamps, w.loc)...)
		if kind == "convo" {
			s.problems = append(s.problems, checkDayBytes("the conversation log", map[string]int64{date: size}, convoDayLimit)...)
			s.convoBytes[date] = size
		}
		return recs
	}
	var turns, stories, greets int64
	var his, failed, security, dreams []Event
	got := fired{greeted: map[string]bool{}, security: map[string][]time.Time{}}
	for _, r := range read("convo") {
		if r.Channel == "greeter" {
			greets++
			who := strings.TrimPrefix(r.RequestText, "face:")
			s.greetings = append(s.greetings, Event{At: r.TS, Person: who})
			got.greeted[who] = true
			continue
		}
		turns++
		if strings.HasPrefix(r.RequestText, "Tell a new story about: ") {
			stories++
		}
		if r.RequestText == faceGreetText {
			his = append(his, Event{At: r.TS})
		}
		if r.Error != nil {
			failed = append(failed, Event{At: r.TS})
		}
	}
	idle := read("perception")
	var photos []Event
	for _, r := range idle {
		photos = append(photos, Event{At: r.TS, Device: r.Device})
	}
	s.problems = append(s.problems, checkInState("idle photo", photos, s.tl, StateIdle, stateGrace)...)
	sec := read("security")
	for _, r := range sec {
		security = append(security, Event{At: r.TS, Device: r.Device})
		got.security[r.Device] = append(got.security[r.Device], r.TS)
	}
	dr := read("dreams")
	for _, r := range dr {
		dreams = append(dreams, Event{At: r.TS})
	}
	s.dreams += len(dr)
	dances := read("dances")
	got.his, got.stories, got.dances, got.kidPhotos = len(his), int(stories), len(dances), kidPhotos
	got.idlePhotos = map[string]int{}
	for _, r := range idle {
		got.idlePhotos[r.Device]++
	}
	s.problems = append(s.problems, checkFired(date, s.steps, s.tl, got, w.loc)...)
	s.problems = append(s.problems, checkHours("face greeting", his, faceGreetFrom, faceGreetTo, w.loc)...)
	s.problems = append(s.problems, checkInState("dream", dreams, s.tl, StateSleep, stateGrace)...)
	s.problems = append(s.problems, checkInState("security capture", security, s.tl, StateSecurity, stateGrace)...)
	s.problems = append(s.problems, checkTurnFailures(failed, caused)...)
	var restarts int64
	for _, c := range caused {
		if c.From.In(w.loc).Format(time.DateOnly) == date {
			restarts++
		}
	}
	row := report.Row{Date: date, Values: []int64{greets, int64(nameAcks), int64(len(his)), int64(views), int64(len(idle)), int64(kidPhotos), int64(len(sec)),
		int64(len(dr)), int64(len(dances)), stories, turns, int64(len(failed)), int64(acks), restarts, (s.convoBytes[date] + 1023) / 1024}}
	g, f, h := s.dayMaxima(date)
	row.Values = append(row.Values, g, f, h/1024)
	if h := dayHours(date, w.loc); h != 24 {
		row.Note = fmt.Sprintf("%d-hour day (DST)", h)
	}
	return row
}

// dayMaxima are the largest goroutine count, fd count and heap of date's
// hourly samples.
func (s *sim) dayMaxima(date string) (goroutines, fds, heap int64) {
	for _, x := range s.samples {
		if x.At.In(s.w.loc).Format(time.DateOnly) == date {
			goroutines, fds, heap = max(goroutines, int64(x.Goroutines)), max(fds, int64(x.FDs)), max(heap, int64(x.HeapBytes)) // #nosec G115 -- a heap's size fits
		}
	}
	return goroutines, fds, heap
}

// checkDays checks each day whose next local midnight is an hour past.
func (s *sim) checkDays(now time.Time) {
	days := s.days()
	for len(s.rows) < len(days) {
		d, _ := time.ParseInLocation(time.DateOnly, days[len(s.rows)], s.w.loc)
		if now.Before(time.Date(d.Year(), d.Month(), d.Day()+1, 1, 0, 0, 0, s.w.loc)) {
			return
		}
		s.rows = append(s.rows, s.checkDay(days[len(s.rows)]))
	}
}

// finish checks the days not checked yet and what only the end can
// show, and returns the report's table.
func (s *sim) finish() report.Table {
	w := s.w
	s.checkPrompts()
	for _, d := range s.days()[len(s.rows):] {
		s.rows = append(s.rows, s.checkDay(d))
	}
	w.mu.Lock()
	s.problems = append(s.problems, w.problems...)
	s.problems = append(s.problems, checkTurnFailures(w.failed, w.caused)...)
	acked := append([]Write(nil), w.acked...)
	w.mu.Unlock()
	if n := w.xz.RobotFailures(); n > 0 {
		s.problems = append(s.problems, fmt.Sprintf("%d of the robots' posts to the bridge failed", n))
	}
	s.problems = append(s.problems, checkGreetings(s.greetings, greeterPerDay, greeterCooldown, w.loc)...)
	stored, err := memories(filepath.Join(w.dir, "memory", "brain.db"))
	if err != nil {
		s.problems = append(s.problems, err.Error())
	} else {
		s.problems = append(s.problems, checkMemories(acked, stored)...)
	}
	least, most := expectedDreams(s.tl, s.end)
	s.problems = append(s.problems, checkDreams(s.dreams, least, most)...)
	if len(s.days()) >= 3 {
		s.problems = append(s.problems, report.Flat(s.samples, s.start.AddDate(0, 0, 1), limits)...)
	}
	return report.Table{Columns: columns, Rows: s.rows}
}

// dayHours is how many hours the local date lasts.
func dayHours(date string, loc *time.Location) int {
	d, _ := time.ParseInLocation(time.DateOnly, date, loc)
	return int(time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc).Sub(d) / time.Hour)
}
