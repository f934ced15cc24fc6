package report

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Plot geometry, in SVG user units.
const (
	svgW, svgH   = 640, 360
	plotL, plotR = 64, 624 // left and right edges of both panels
	panelH       = 120
	heapTop      = 48  // top of the heap panel
	goroTop      = 200 // top of the goroutine panel
	axisY        = 340 // baseline of the day labels
)

// panel is one stacked chart: a series, its colour and its y scale.
type panel struct {
	label  string
	colour string
	top    float64
	values []float64
}

// SVG draws the samples as a small self-contained SVG: heap in use (MiB)
// on top and goroutines below, on a shared time axis with a line at each
// local midnight and the dates between them. The output depends only on
// the samples and the title.
func SVG(s []Sample, title string) []byte {
	s = slices.Clone(s)
	slices.SortStableFunc(s, func(a, b Sample) int { return a.At.Compare(b.At) })

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		svgW, svgH, svgW, svgH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgW, svgH)
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="14" font-weight="bold">%s</text>`+"\n", plotL, html.EscapeString(title))

	panels := []panel{
		{label: "heap in use (MiB)", colour: "#1f77b4", top: heapTop,
			values: pick(s, func(x Sample) float64 { return float64(x.HeapBytes) / (1 << 20) })},
		{label: "goroutines", colour: "#d62728", top: goroTop,
			values: pick(s, func(x Sample) float64 { return float64(x.Goroutines) })},
	}
	// Legend, on the title's baseline at the right.
	lx := plotR - 250
	for _, p := range panels {
		fmt.Fprintf(&b, `<line x1="%d" y1="14" x2="%d" y2="14" stroke="%s" stroke-width="2"/>`+"\n", lx, lx+16, p.colour)
		fmt.Fprintf(&b, `<text x="%d" y="18">%s</text>`+"\n", lx+20, p.label)
		lx += 130
	}
	if len(s) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d">no samples</text>`+"\n", plotL, heapTop+panelH/2)
		b.WriteString("</svg>\n")
		return []byte(b.String())
	}

	t0, t1 := s[0].At, s[len(s)-1].At
	span := t1.Sub(t0).Seconds()
	if span <= 0 {
		span = 1
	}
	x := func(t time.Time) float64 { return plotL + t.Sub(t0).Seconds()/span*(plotR-plotL) }

	// Day lines at each local midnight after t0, and each day's date centred
	// in its stretch of the axis when there is room for it.
	edges := []time.Time{t0}
	for m := nextMidnight(t0); !m.After(t1); m = nextMidnight(m) {
		edges = append(edges, m)
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#ccc"/>`+"\n",
			num(x(m)), heapTop, num(x(m)), goroTop+panelH)
	}
	edges = append(edges, t1)
	for i := 0; i+1 < len(edges); i++ {
		a, z := x(edges[i]), x(edges[i+1])
		if z-a < 36 {
			continue
		}
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`+"\n",
			num((a+z)/2), axisY, edges[i].Format("Jan 2"))
	}

	for _, p := range panels {
		top := p.top
		bottom := top + panelH
		ymax := niceCeil(slices.Max(p.values))
		y := func(v float64) float64 { return bottom - v/ymax*panelH }
		fmt.Fprintf(&b, `<rect x="%d" y="%s" width="%d" height="%d" fill="none" stroke="#888"/>`+"\n",
			plotL, num(top), plotR-plotL, panelH)
		for _, v := range []float64{0, ymax / 2, ymax} {
			fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n",
				plotL-6, num(y(v)+4), strconv.FormatFloat(v, 'f', -1, 64))
		}
		fmt.Fprintf(&b, `<text x="%d" y="%s" fill="%s">%s</text>`+"\n", plotL+6, num(top+14), p.colour, p.label)
		pts := make([]string, len(s))
		for i, v := range p.values {
			pts[i] = num(x(s[i].At)) + "," + num(y(v))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n",
			p.colour, strings.Join(pts, " "))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// nextMidnight is the local midnight after t, in t's location (DST-safe).
func nextMidnight(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, t.Location())
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0), so
// the axis labels are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// num formats a coordinate with one decimal.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
