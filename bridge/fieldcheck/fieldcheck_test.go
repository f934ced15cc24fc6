package fieldcheck

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestErrorsUnderAndSplit(t *testing.T) {
	var errs Errors
	errs.Check("Hour", false, 25, "an hour from 0 to 24")
	errs.Check("Fine", true, 1, "at least 1")
	errs.CheckRef("Max", false, 2, "at least", "Min")
	err := Under("Outer", errors.Join(Under("Inner", errs.Err()), io.EOF))
	var got []string
	var fields []string
	for _, e := range Split(err) {
		got = append(got, e.Error())
		var fe *Error
		if errors.As(e, &fe) {
			fields = append(fields, fe.Field+"|"+fe.Ref)
		}
	}
	if d := cmp.Diff(got, []string{"Outer.Inner.Hour 25: want an hour from 0 to 24", "Outer.Inner.Max 2: want at least Outer.Inner.Min", "EOF"}); d != "" {
		t.Errorf("errors (-got +want):\n%s", d)
	}
	if d := cmp.Diff(fields, []string{"Outer.Inner.Hour|", "Outer.Inner.Max|Outer.Inner.Min"}); d != "" {
		t.Errorf("fields (-got +want):\n%s", d)
	}
	if (Errors{}).Err() != nil || Split(nil) != nil || Under("X", nil) != nil {
		t.Error("no errors should be nil")
	}
}

func TestFill(t *testing.T) {
	type conf struct {
		Wait  time.Duration
		Count int
		Name  string
		Kept  int
	}
	def := conf{Wait: time.Second, Count: 3, Name: "x", Kept: 9}
	got := conf{Wait: -time.Second, Count: 5}
	Fill(&got, def, "Wait", "Count", "Name")
	if want := (conf{Wait: time.Second, Count: 5, Name: "x"}); got != want {
		t.Errorf("Fill = %+v, want %+v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Error("Fill of a field that does not exist did not panic")
		}
	}()
	Fill(&got, def, "Missing")
}

func TestHTTPURL(t *testing.T) {
	for v, want := range map[string]bool{"https://wttr.in": true, "http://127.0.0.1:9/x": true,
		"": false, "wttr.in": false, "ftp://wttr.in": false, "http://": false, " https://wttr.in": false} {
		if got := HTTPURL(v); got != want {
			t.Errorf("HTTPURL(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestErrorWhy(t *testing.T) {
	e := &Error{Field: "Deadline", Value: 15, Want: "at most 14", Why: "the firmware gives up at 15"}
	if got, want := e.Error(), "Deadline 15: want at most 14 (the firmware gives up at 15)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
