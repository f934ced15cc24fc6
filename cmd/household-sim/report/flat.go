package report

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Sample is one look at the bridge: its goroutines, open file descriptors,
// heap in use after a GC, and the sizes of its named tables.
type Sample struct {
	At         time.Time
	Goroutines int
	FDs        int
	HeapBytes  uint64
	Tables     map[string]int
}

// Limits is how much each series may grow from the first day to the last.
// TableSlack applies to every table.
type Limits struct {
	Goroutines int
	FDs        int
	HeapBytes  uint64
	TableSlack int
}

// Flat reports every series that grows beyond its limit between the first
// and the last local day at or after from (the day is At's date in At's own
// location). Goroutines, fds and heap compare the two days' medians, so a
// single busy hour is not a leak; tables compare the two days' maxima. Each
// problem names the series, both days and both numbers. With fewer than two
// days of samples after from there is nothing to compare and Flat returns nil.
func Flat(s []Sample, from time.Time, l Limits) []string {
	days := map[string][]Sample{}
	for _, x := range s {
		if x.At.Before(from) {
			continue
		}
		d := x.At.Format(time.DateOnly)
		days[d] = append(days[d], x)
	}
	if len(days) < 2 {
		return nil
	}
	keys := slices.Sorted(maps.Keys(days))
	d1, d2 := keys[0], keys[len(keys)-1]
	first, last := days[d1], days[d2]

	var problems []string
	grew := func(series, what, a, b string, limit string) {
		problems = append(problems, fmt.Sprintf("%s grew from %s (%s of %s) to %s (%s of %s), more than the %s allowed",
			series, a, what, d1, b, what, d2, limit))
	}
	g1 := median(pick(first, func(x Sample) int { return x.Goroutines }))
	g2 := median(pick(last, func(x Sample) int { return x.Goroutines }))
	if g2-g1 > l.Goroutines {
		grew("goroutines", "median", fmt.Sprint(g1), fmt.Sprint(g2), fmt.Sprint(l.Goroutines))
	}
	f1 := median(pick(first, func(x Sample) int { return x.FDs }))
	f2 := median(pick(last, func(x Sample) int { return x.FDs }))
	if f2-f1 > l.FDs {
		grew("open fds", "median", fmt.Sprint(f1), fmt.Sprint(f2), fmt.Sprint(l.FDs))
	}
	h1 := median(pick(first, func(x Sample) uint64 { return x.HeapBytes }))
	h2 := median(pick(last, func(x Sample) uint64 { return x.HeapBytes }))
	if h2 > h1 && h2-h1 > l.HeapBytes {
		grew("heap", "median", mib(h1), mib(h2), mib(l.HeapBytes))
	}
	names := map[string]bool{}
	for _, x := range append(slices.Clone(first), last...) {
		for n := range x.Tables {
			names[n] = true
		}
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		t1 := slices.Max(pick(first, func(x Sample) int { return x.Tables[n] }))
		t2 := slices.Max(pick(last, func(x Sample) int { return x.Tables[n] }))
		if t2-t1 > l.TableSlack {
			grew("table "+n, "max", fmt.Sprint(t1), fmt.Sprint(t2), fmt.Sprint(l.TableSlack))
		}
	}
	return problems
}

// pick maps the samples to one series.
func pick[T any](s []Sample, f func(Sample) T) []T {
	out := make([]T, len(s))
	for i, x := range s {
		out[i] = f(x)
	}
	return out
}

// median is the middle value of v (the mean of the two middle values when
// len(v) is even). v must not be empty; it is not modified.
func median[T int | uint64](v []T) T {
	v = slices.Clone(v)
	slices.Sort(v)
	lo, hi := v[(len(v)-1)/2], v[len(v)/2]
	return lo + (hi-lo)/2
}

// mib formats a byte count in MiB with one decimal.
func mib(b uint64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
