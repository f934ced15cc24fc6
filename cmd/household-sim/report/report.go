// Package report renders what the household simulator saw: a table with one
// row per simulated local day, a flatness check over the bridge's resource
// samples, and a small SVG of the heap and goroutine curves.
package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Table is the per-day summary: one Row per local day, one value per column.
type Table struct {
	Columns []string
	Rows    []Row
}

// Row is one local day (Date is YYYY-MM-DD) with one value per Table column
// and an optional free-text note (a DST change, an injected crash).
type Row struct {
	Date   string
	Values []int64
	Note   string
}

// cells returns the header and body as strings, with missing values left
// blank, and whether any row carries a note.
func (t Table) cells() (header []string, body [][]string, notes bool) {
	for _, r := range t.Rows {
		if r.Note != "" {
			notes = true
		}
	}
	header = append([]string{"date"}, t.Columns...)
	if notes {
		header = append(header, "note")
	}
	for _, r := range t.Rows {
		line := make([]string, 0, len(header))
		line = append(line, r.Date)
		for i := range t.Columns {
			v := ""
			if i < len(r.Values) {
				v = strconv.FormatInt(r.Values[i], 10)
			}
			line = append(line, v)
		}
		if notes {
			line = append(line, r.Note)
		}
		body = append(body, line)
	}
	return header, body, notes
}

// Text writes the table as aligned plain text: numbers right-aligned, the
// date and note left-aligned, columns separated by two spaces.
func (t Table) Text(w io.Writer) error {
	header, body, notes := t.cells()
	width := make([]int, len(header))
	for _, line := range append([][]string{header}, body...) {
		for i, c := range line {
			width[i] = max(width[i], len(c))
		}
	}
	last := len(header) - 1
	var b strings.Builder
	for _, line := range append([][]string{header}, body...) {
		var l strings.Builder
		for i, c := range line {
			if i > 0 {
				l.WriteString("  ")
			}
			switch {
			case i == 0:
				fmt.Fprintf(&l, "%-*s", width[i], c)
			case notes && i == last:
				l.WriteString(c)
			default:
				fmt.Fprintf(&l, "%*s", width[i], c)
			}
		}
		b.WriteString(strings.TrimRight(l.String(), " ") + "\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write table: %w", err)
	}
	return nil
}

// Markdown writes the table as a GitHub-flavoured Markdown table with the
// number columns right-aligned. Pipes in notes are escaped.
func (t Table) Markdown(w io.Writer) error {
	header, body, notes := t.cells()
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for i := range header {
		if i == 0 || (notes && i == len(header)-1) {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, line := range body {
		for i := range line {
			line[i] = strings.ReplaceAll(line[i], "|", `\|`)
		}
		b.WriteString("| " + strings.Join(line, " | ") + " |\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: write markdown table: %w", err)
	}
	return nil
}
