package main

import (
	"io"
	"strings"
	"testing"
	"time"
)

// TestFlags: the defaults are the week from Thursday 26 March 2026 in
// London; a bad value is an error naming its flag.
func TestFlags(t *testing.T) {
	o, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if o.days != 7 || o.seed != 1 || o.loc.String() != zone || !o.start.Equal(time.Date(2026, 3, 26, 0, 0, 0, 0, o.loc)) || o.start.Weekday() != time.Thursday {
		t.Errorf("defaults %+v", o)
	}
	for args, want := range map[string]string{
		"-days 0":           "-days 0",
		"-start 26/03/2026": `-start "26/03/2026"`,
		"-days 1 extra":     "unexpected arguments",
	} {
		if _, err := parseFlags(strings.Fields(args), io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", args, err, want)
		}
	}
	if code := run([]string{"-days", "-1"}, io.Discard, io.Discard); code != 2 {
		t.Errorf("a bad flag exits %d, want 2", code)
	}
}
