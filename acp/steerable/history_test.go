package steerable

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStoreMessages(t *testing.T) {
	u := func(s string) Message { return Message{RoleUser, s} }
	a := func(s string) Message { return Message{RoleAssistant, s} }
	tests := []struct {
		name  string
		limit int
		turns [][3]string // prompt, reply, "cut" when barged in
		next  string
		want  []Message
	}{
		{"empty", 100, nil, "hi", []Message{u("hi")}},
		{"all fit", 100, [][3]string{{"a", "A"}, {"b", "B"}}, "c", []Message{u("a"), a("A"), u("b"), a("B"), u("c")}},
		{"oldest after the first dropped", 16, [][3]string{{"11", "11"}, {"22", "22"}, {"33", "33"}, {"44", "44"}}, "55",
			[]Message{u("11"), a("11"), u("33"), a("33"), u("44"), a("44"), u("55")}},
		{"first dropped when it cannot fit", 12, [][3]string{{"1111111111", "1"}, {"22", "22"}}, "33",
			[]Message{u("22"), a("22"), u("33")}},
		{"prompt over the cap sent alone", 10, [][3]string{{"a", "A"}}, strings.Repeat("x", 11), []Message{u(strings.Repeat("x", 11))}},
		{"characters, not bytes", 6, [][3]string{{"éé", "éé"}}, "é", []Message{u("éé"), a("éé"), u("é")}},
		{"barged-in reply marked", 100, [][3]string{{"a", "half a rep", "cut"}}, "b", []Message{u("a"), a("half a rep…"), u("b")}},
		{"no reply, nothing kept", 100, [][3]string{{"a", "", "cut"}, {"b", "  "}}, "c", []Message{u("c")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(tt.limit)
			s.create("s1")
			for _, turn := range tt.turns {
				s.add("s1", turn[0], turn[1], turn[2] == "cut")
			}
			if d := cmp.Diff(s.messages("s1", tt.next), tt.want); d != "" {
				t.Errorf("messages (-got +want):\n%s", d)
			}
		})
	}
}

func TestStoreSessionsLifecycle(t *testing.T) {
	s := newStore(100)
	s.create("old")
	s.add("old", "q", "r", false)
	s.rename("old", "new")
	if got := s.messages("new", "x"); len(got) != 3 {
		t.Errorf("renamed history: %+v", got)
	}
	if got := s.messages("old", "x"); len(got) != 1 {
		t.Errorf("old id still has history: %+v", got)
	}
	s.forget("new")
	s.add("new", "q", "r", false) // closed meanwhile: ignored
	if s.len() != 0 {
		t.Errorf("%d histories after forget", s.len())
	}
	for i := range maxHistories + 10 {
		s.create(string(rune('a'+i%26)) + strings.Repeat("x", i))
	}
	if s.len() != maxHistories {
		t.Errorf("%d histories, want the bound %d", s.len(), maxHistories)
	}
}
