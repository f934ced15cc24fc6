package perception

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/testkit"
)

// TestDefaultConfig: bridge.py's device and feed-client bounds and
// speaker resolver settings (moved from cmd's defaults test, which now
// takes them from here), valid as they are; each range error is a
// fieldcheck.Error naming its field; New fills those bounds field by
// field.
func TestDefaultConfig(t *testing.T) {
	testkit.CheckDefaults(t, "DefaultConfig", DefaultConfig(), Config{Consumers: DefaultConsumers(), Keepalive: 15 * time.Second,
		MaxDevices: 256, MaxFeedClients: 64, Speaker: SpeakerConfig{Sticky: 600 * time.Second, CalendarWindow: 30 * time.Minute,
			PerceptionWindow: 30 * time.Second, AskThreshold: 0.5, MaxLatches: 256}})
	bad := DefaultConfig()
	bad.MaxDevices, bad.MaxFeedClients, bad.Keepalive = 0, -1, -time.Second
	testkit.CheckFieldErrors(t, "Config", bad.Validate(), "MaxDevices 0: want at least 1", "MaxFeedClients -1: want at least 1",
		"Keepalive -1s: want 0 or more")
	s := New(Config{MaxFeedClients: 3})
	if s.cfg.MaxFeedClients != 3 || s.cfg.MaxDevices != DefaultMaxDevices || s.cfg.Keepalive != 15*time.Second {
		t.Errorf("New defaulted %d feed clients, %d devices, keepalive %s", s.cfg.MaxFeedClients, s.cfg.MaxDevices, s.cfg.Keepalive)
	}
}

// TestConsumersValidate: DefaultConsumers is valid, and each range error
// is a fieldcheck.Error naming the field, under "Consumers." when Config
// reports it.
func TestConsumersValidate(t *testing.T) {
	if err := DefaultConsumers().Validate(); err != nil {
		t.Fatalf("DefaultConsumers().Validate() = %v", err)
	}
	bad := DefaultConfig()
	c := &bad.Consumers
	c.GreetHourEnd, c.PurrCooldown, c.RefreshInterval, c.IdleSleepMin, c.IdleSleepMax = 25, -time.Second, 0, 300*time.Second, 200*time.Second
	c.IdleJaccard, c.SecurityRingSize, c.SecurityAudioDuration = 1.5, 0, 0
	testkit.CheckFieldErrors(t, "Config", bad.Validate(),
		"Consumers.GreetHourEnd 25: want an hour from 0 to 24",
		"Consumers.RefreshInterval 0s: want more than 0",
		"Consumers.SecurityAudioDuration 0s: want more than 0",
		"Consumers.PurrCooldown -1s: want 0 or more",
		"Consumers.IdleSleepMax 3m20s: want at least Consumers.IdleSleepMin",
		"Consumers.IdleJaccard 1.5: want a number from 0 to 1",
		"Consumers.SecurityRingSize 0: want at least 1",
	)
	edge := DefaultConsumers()
	edge.GreetHourStart, edge.GreetHourEnd, edge.PurrCooldown, edge.IdleSleepMin, edge.IdleSleepMax, edge.IdleJaccard = 0, 24, 0, time.Second, time.Second, 1
	if err := edge.Validate(); err != nil {
		t.Errorf("boundaries refused: %v", err)
	}
}

// TestConsumersDefaultsPerField: New defaults each field on its own. A
// Consumers that changes one field of DefaultConsumers keeps every other
// default, and a zero field is used as zero except where zero means
// nothing (the loops' periods and waits, the ring, the queue, the prompt).
func TestConsumersDefaultsPerField(t *testing.T) {
	one := DefaultConsumers()
	one.GreetText = "Hello"
	want := one
	want.QueueSize = ConsumerQueue
	if d := cmp.Diff(one.withDefaults(), want); d != "" {
		t.Errorf("one field changed (-got +want):\n%s", d)
	}
	def := DefaultConsumers()
	got := Consumers{GreetHourStart: 7}.withDefaults()
	want = Consumers{GreetHourStart: 7, QueueSize: ConsumerQueue, RefreshInterval: def.RefreshInterval,
		SecurityInterval: def.SecurityInterval, SecurityPhotoWait: def.SecurityPhotoWait, SecuritySoundWait: def.SecuritySoundWait,
		IdleResultWait: def.IdleResultWait, SceneInterval: def.SceneInterval, IdleSleepMin: def.IdleSleepMin, IdleSleepMax: def.IdleSleepMax,
		SecurityRingSize: def.SecurityRingSize, SecurityPrompt: SecurityPrompt}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("zero fields (-got +want):\n%s", d)
	}
}
