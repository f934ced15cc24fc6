package voice

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/acp"
)

// speakerCall is what the voice routes asked the speaker.
type speakerCall struct{ Text, Channel, Device, Room string }

// fakeSpeaker answers every request with one block and person and records
// the requests.
type fakeSpeaker struct {
	block, person string

	mu    sync.Mutex
	calls []speakerCall
}

func (f *fakeSpeaker) SpeakerBlock(text, channel, deviceID, room string) (string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, speakerCall{text, channel, deviceID, room})
	return f.block, f.person
}

func (f *fakeSpeaker) seen() []speakerCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]speakerCall(nil), f.calls...)
}

// panickySpeaker is a Speaker with a bug.
type panickySpeaker struct{}

func (panickySpeaker) SpeakerBlock(string, string, string, string) (string, string) {
	panic("speaker bug")
}

// fakeMemory answers block for every person, after release closes when
// release is set (ignoring ctx, like a driver stuck on a lock), or panics.
type fakeMemory struct {
	block   string
	release chan struct{}
	panics  bool

	mu     sync.Mutex
	people []string
}

func (f *fakeMemory) PersonBlock(ctx context.Context, person string) string {
	f.mu.Lock()
	f.people = append(f.people, person)
	f.mu.Unlock()
	if f.panics {
		panic("brain.db on fire")
	}
	if f.release != nil {
		<-f.release
	}
	return f.block
}

func (f *fakeMemory) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.people...)
}

const (
	samSpeaker = "[Speaking with] Sam — 7yo; curious  (signals: vlm_match, conf=0.60)\n"
	samMemory  = "[Person memory]\n- loves comets\n- has a dog called Biscuit\n"
)

// The speaker line and the person's memory come right after the prefix,
// before the room view, on both routes and through Reply; the speaker is
// asked once per request with the request's text, channel, device and
// room-view match.
func TestSpeakerAndPersonMemoryInPrompt(t *testing.T) {
	content := "[Context] You are Dotty.\n\n[User] what is a comet?"
	meta := map[string]any{"device_id": "dotty-1", "room_description": "a child with curly hair", "room_match_person_id": "sam"}
	wantHTTP := "[channel=dotty voice-TTS]\n" + samSpeaker + samMemory + "[Room view] a child with curly hair\n" +
		"[Current perception] You see sam in front of you.\n" +
		"[Context: Sunday 17 May 2026, 21:37 AEST | Brisbane: Sunny +24°C]\n" + content + Suffix(0, false)
	wantReply := "[channel=dotty voice-TTS]\n" + samSpeaker + samMemory +
		"[Current perception] You see sam in front of you.\n" +
		"[Context: Sunday 17 May 2026, 21:37 AEST | Brisbane: Sunny +24°C]\n" + content + Suffix(0, false)
	tests := []struct {
		name string
		run  func(t *testing.T, env *voiceEnv)
		call speakerCall
		want string
	}{
		{"stream", func(t *testing.T, env *voiceEnv) {
			env.stream(t, map[string]any{"content": content, "channel": "dotty", "session_id": "s", "metadata": meta})
		}, speakerCall{content, "dotty", "dotty-1", "sam"}, wantHTTP},
		{"buffered", func(t *testing.T, env *voiceEnv) {
			env.message(t, map[string]any{"content": content, "channel": "dotty", "session_id": "s", "metadata": meta})
		}, speakerCall{content, "dotty", "dotty-1", "sam"}, wantHTTP},
		{"reply", func(t *testing.T, env *voiceEnv) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := env.voice.Reply(ctx, ReplyRequest{Endpoint: "sidecar", Key: "k", SessionID: "s",
				Channel: "stackchan", Content: content, DeviceID: "dotty-1"}); err != nil {
				t.Fatal(err)
			}
		}, speakerCall{content, "stackchan", "dotty-1", ""}, wantReply},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sp := &fakeSpeaker{block: samSpeaker, person: "sam"}
			mem := &fakeMemory{block: samMemory}
			env := newVoiceEnv(t, nil, Config{
				Speaker: sp, PersonMemory: mem,
				Perception: linesStub{"dotty-1": {"You see sam in front of you."}},
				Context:    partsStub{"Brisbane: Sunny +24°C"},
			}, acp.PoolConfig{})
			tc.run(t, env)
			p := env.agent.Prompts()
			if len(p) != 1 {
				t.Fatalf("%d prompts", len(p))
			}
			if p[0].Text != tc.want {
				t.Errorf("prompt:\n got %q\nwant %q", p[0].Text, tc.want)
			}
			if d := cmp.Diff(sp.seen(), []speakerCall{tc.call}); d != "" {
				t.Errorf("speaker calls (-got +want):\n%s", d)
			}
			if d := cmp.Diff(mem.asked(), []string{"sam"}); d != "" {
				t.Errorf("memory reads (-got +want):\n%s", d)
			}
		})
	}
}

// A retry on a new agent session reuses the speaker and memory read for
// the request: one resolution per request, the lines in every attempt.
func TestSpeakerOncePerRequest(t *testing.T) {
	sp := &fakeSpeaker{block: samSpeaker, person: "sam"}
	mem := &fakeMemory{block: samMemory}
	env := newVoiceEnv(t, nil, Config{Speaker: sp, PersonMemory: mem}, acp.PoolConfig{})
	env.stream(t, map[string]any{"content": "hi", "channel": "dotty", "session_id": "l"})
	env.agent.Forget(env.agent.Prompts()[0].SessionID)
	env.stream(t, map[string]any{"content": "again", "channel": "dotty", "session_id": "l"})
	p := env.agent.Prompts()
	if len(p) != 2 || len(sp.seen()) != 2 || len(mem.asked()) != 2 {
		t.Fatalf("%d prompts, %d resolutions, %d memory reads; want 2 each", len(p), len(sp.seen()), len(mem.asked()))
	}
	want := "[channel=dotty voice-TTS]\n" + samSpeaker + samMemory + "[Context: Sunday 17 May 2026, 21:37 AEST]\nagain" + Suffix(0, false)
	if p[1].Text != want {
		t.Errorf("retried prompt:\n got %q\nwant %q", p[1].Text, want)
	}
}

// What leaves a block out: another channel, nobody resolved, no memory
// kept, no PersonMemory, a memory that panics, a metadata value that is
// not a string. Without a speaker line the prompt is the one a bridge
// without a speaker sends.
func TestSpeakerBlocksAbsent(t *testing.T) {
	base := "[channel=dotty voice-TTS]\n[Context: Sunday 17 May 2026, 21:37 AEST]\nhi" + Suffix(0, false)
	tests := []struct {
		name     string
		speaker  *fakeSpeaker
		memory   *fakeMemory
		req      map[string]any
		want     string
		resolves int
		reads    int
		panics   bool // the speaker panics
	}{
		{name: "nil interfaces", req: map[string]any{"content": "hi", "channel": "dotty"}, want: base},
		{name: "other channel", speaker: &fakeSpeaker{block: samSpeaker, person: "sam"}, memory: &fakeMemory{block: samMemory},
			req: map[string]any{"content": "hi", "channel": "discord"}, want: "hi"},
		{name: "no channel", speaker: &fakeSpeaker{block: samSpeaker, person: "sam"}, memory: &fakeMemory{block: samMemory},
			req: map[string]any{"content": "hi"}, want: "hi"},
		{name: "nobody resolved", speaker: &fakeSpeaker{}, memory: &fakeMemory{block: samMemory},
			req: map[string]any{"content": "hi", "channel": "dotty"}, want: base, resolves: 1},
		{name: "no memory kept", speaker: &fakeSpeaker{block: samSpeaker, person: "sam"}, memory: &fakeMemory{},
			req:      map[string]any{"content": "hi", "channel": "dotty"},
			want:     "[channel=dotty voice-TTS]\n" + samSpeaker + "[Context: Sunday 17 May 2026, 21:37 AEST]\nhi" + Suffix(0, false),
			resolves: 1, reads: 1},
		{name: "no PersonMemory", speaker: &fakeSpeaker{block: samSpeaker, person: "sam"},
			req:      map[string]any{"content": "hi", "channel": "dotty"},
			want:     "[channel=dotty voice-TTS]\n" + samSpeaker + "[Context: Sunday 17 May 2026, 21:37 AEST]\nhi" + Suffix(0, false),
			resolves: 1},
		{name: "memory panics", speaker: &fakeSpeaker{block: samSpeaker, person: "sam"}, memory: &fakeMemory{panics: true},
			req:      map[string]any{"content": "hi", "channel": "dotty"},
			want:     "[channel=dotty voice-TTS]\n" + samSpeaker + "[Context: Sunday 17 May 2026, 21:37 AEST]\nhi" + Suffix(0, false),
			resolves: 1, reads: 1},
		{name: "memory without its last newline", speaker: &fakeSpeaker{block: samSpeaker, person: "sam"},
			memory: &fakeMemory{block: "[Person memory]\n- loves comets"},
			req:    map[string]any{"content": "hi", "channel": "dotty"},
			want: "[channel=dotty voice-TTS]\n" + samSpeaker + "[Person memory]\n- loves comets\n" +
				"[Context: Sunday 17 May 2026, 21:37 AEST]\nhi" + Suffix(0, false),
			resolves: 1, reads: 1},
		{name: "speaker panics", memory: &fakeMemory{block: samMemory}, panics: true,
			req: map[string]any{"content": "hi", "channel": "dotty"}, want: base},
		{name: "room match not a string", speaker: &fakeSpeaker{},
			req:  map[string]any{"content": "hi", "channel": "dotty", "metadata": map[string]any{"room_match_person_id": 7}},
			want: base, resolves: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.speaker != nil {
				cfg.Speaker = tc.speaker
			}
			if tc.panics {
				cfg.Speaker = panickySpeaker{}
			}
			if tc.memory != nil {
				cfg.PersonMemory = tc.memory
			}
			env := newVoiceEnv(t, nil, cfg, acp.PoolConfig{})
			_, speech, _, _ := env.stream(t, tc.req)
			if len(speech) == 0 {
				t.Fatal("no reply")
			}
			if p := env.agent.Prompts(); len(p) != 1 || p[0].Text != tc.want {
				t.Fatalf("prompts %q, want %q", p, tc.want)
			}
			if tc.speaker != nil {
				calls := tc.speaker.seen()
				if len(calls) != tc.resolves {
					t.Errorf("%d resolutions, want %d", len(calls), tc.resolves)
				}
				for _, c := range calls {
					if c.Room != "" {
						t.Errorf("room match %q reached the speaker", c.Room)
					}
				}
			}
			if tc.memory != nil && len(tc.memory.asked()) != tc.reads {
				t.Errorf("%d memory reads, want %d", len(tc.memory.asked()), tc.reads)
			}
		})
	}
}

// A memory store that does not answer (and ignores its ctx) holds a turn
// up for the cap and no longer; the turn goes on with the speaker line
// alone, and the late answer is dropped.
func TestPersonMemoryCap(t *testing.T) {
	const wait = 200 * time.Millisecond
	mem := &fakeMemory{block: samMemory, release: make(chan struct{})}
	t.Cleanup(func() { close(mem.release) })
	env := newVoiceEnv(t, nil, Config{Speaker: &fakeSpeaker{block: samSpeaker, person: "sam"},
		PersonMemory: mem, PersonMemoryWait: wait}, acp.PoolConfig{})
	for _, route := range []string{"stream", "message"} {
		start := time.Now()
		req := map[string]any{"content": "hi", "channel": "dotty", "session_id": route}
		if route == "stream" {
			env.stream(t, req)
		} else {
			env.message(t, req)
		}
		// The store is stuck until the test ends, so the turn's answer
		// shows the cap ended the wait, which a timer cannot end early.
		took := time.Since(start)
		if took < wait {
			t.Errorf("%s: the turn took %v with a stuck memory store, less than the %v cap", route, took, wait)
		}
		t.Logf("%s: the turn took %v with a stuck memory store (cap %v)", route, took.Round(time.Millisecond), wait)
	}
	want := "[channel=dotty voice-TTS]\n" + samSpeaker + "[Context: Sunday 17 May 2026, 21:37 AEST]\nhi" + Suffix(0, false)
	for _, p := range env.agent.Prompts() {
		if p.Text != want {
			t.Errorf("prompt %q, want %q", p.Text, want)
		}
	}
	if strings.Count(strings.Join(mem.asked(), ","), "sam") != 2 {
		t.Errorf("memory reads %q", mem.asked())
	}
}
