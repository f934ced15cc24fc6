package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
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
var columns = []string{"greetings", "name acks", "face his", "idle photos", "security", "dreams", "dances",
	"stories", "turns", "failed turns", "memory writes", "agent restarts", "convo KiB"}

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
		Settled: s.w.settled,
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

// finish reads what the bridge wrote, checks every invariant and builds
// the per-day table.
func (s *sim) finish() report.Table {
	w := s.w
	logs := filepath.Join(w.dir, "logs")
	s.checkPrompts()
	w.mu.Lock()
	s.problems = append(s.problems, w.problems...)
	s.problems = append(s.problems, checkTurnFailures(w.failed, w.caused)...)
	caused := append([]Span(nil), w.caused...)
	acked := append([]Write(nil), w.acked...)
	nameAcks, ackDays := w.nameAcks, w.ackDays
	w.mu.Unlock()
	if n := w.xz.RobotFailures(); n > 0 {
		s.problems = append(s.problems, fmt.Sprintf("%d of the robots' posts to the bridge failed", n))
	}
	table := report.Table{Columns: columns}
	var greetings, faceHis, dreams, security, failed []Event
	convoBytes := map[string]int64{}
	for _, date := range s.days() {
		row := report.Row{Date: date, Values: make([]int64, len(columns))}
		count := func(kind string) []record {
			recs, size, err := daily(logs, kind, date)
			if err != nil {
				s.problems = append(s.problems, err.Error())
			}
			stamps := make([]time.Time, len(recs))
			for i, r := range recs {
				stamps[i] = r.at
			}
			s.problems = append(s.problems, checkDated(kind, date, stamps, w.loc)...)
			if kind == "convo" {
				convoBytes[date] = size
			}
			return recs
		}
		var turns, stories, fails, greets, his int64
		for _, r := range count("convo") {
			switch {
			case r.Channel == "greeter":
				greets++
				greetings = append(greetings, Event{At: r.at, Person: strings.TrimPrefix(r.RequestText, "face:")})
			default:
				turns++
				if strings.HasPrefix(r.RequestText, "Tell a new story about: ") {
					stories++
				}
				if r.RequestText == faceGreetText {
					his++
					faceHis = append(faceHis, Event{At: r.at, Device: r.Device})
				}
				if r.Error != nil {
					fails++
					failed = append(failed, Event{At: r.at, Device: r.Device})
				}
			}
		}
		idle := count("perception")
		sec := count("security")
		for _, r := range sec {
			security = append(security, Event{At: r.at, Device: r.Device})
		}
		dr := count("dreams")
		for _, r := range dr {
			dreams = append(dreams, Event{At: r.at})
		}
		dances := count("dances")
		var writes, restarts int64
		for _, c := range caused {
			if c.From.In(w.loc).Format(time.DateOnly) == date {
				restarts++
			}
		}
		writes = int64(ackDays[date])
		row.Values = []int64{greets, int64(nameAcks[date]), his, int64(len(idle)), int64(len(sec)), int64(len(dr)), int64(len(dances)),
			stories, turns, fails, writes, restarts, (convoBytes[date] + 1023) / 1024}
		if h := dayHours(date, w.loc); h != 24 {
			row.Note = fmt.Sprintf("%d-hour day (DST)", h)
		}
		table.Rows = append(table.Rows, row)
	}
	s.problems = append(s.problems, checkGreetings(greetings, greeterPerDay, greeterCooldown, w.loc)...)
	s.problems = append(s.problems, checkHours("face greeting", faceHis, faceGreetFrom, faceGreetTo, w.loc)...)
	s.problems = append(s.problems, checkInState("dream", dreams, s.tl, StateSleep, stateGrace)...)
	s.problems = append(s.problems, checkInState("security capture", security, s.tl, StateSecurity, stateGrace)...)
	s.problems = append(s.problems, checkTurnFailures(failed, caused)...)
	s.problems = append(s.problems, checkDayBytes("the conversation log", convoBytes, convoDayLimit)...)
	stored, err := memories(filepath.Join(w.dir, "memory", "brain.db"))
	if err != nil {
		s.problems = append(s.problems, err.Error())
	} else {
		s.problems = append(s.problems, checkMemories(acked, stored)...)
	}
	if len(s.days()) >= 3 {
		second := s.start.AddDate(0, 0, 1)
		s.problems = append(s.problems, report.Flat(s.samples, second, limits)...)
	}
	return table
}

// dayHours is how many hours the local date lasts.
func dayHours(date string, loc *time.Location) int {
	d, _ := time.ParseInLocation(time.DateOnly, date, loc)
	return int(time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc).Sub(d) / time.Hour)
}
