package emoji

import (
	"strings"
	"testing"
)

var reply = "😊 A comet is a ball of ice and dust that travels around the Sun. When it gets close, the ice warms up and makes a glowing tail! Some comets come back every few years, and others take thousands."

func BenchmarkBuffered(b *testing.B) {
	p := Pipeline{MaxSentences: 6}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = p.Buffered(reply)
	}
}

func BenchmarkStreamPush(b *testing.B) {
	words := strings.SplitAfter(reply, " ")
	p := Pipeline{MaxSentences: 6}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := p.Stream()
		for _, w := range words {
			s.Push(w)
		}
	}
}

func BenchmarkFilter(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, _ = Filter(reply)
	}
}
