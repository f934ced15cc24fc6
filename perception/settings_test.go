package perception

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/fieldcheck"
)

// TestConsumersValidate: DefaultConsumers is valid, and each range error
// is a fieldcheck.Error naming the field, under "Consumers." when Config
// reports it.
func TestConsumersValidate(t *testing.T) {
	if err := DefaultConsumers().Validate(); err != nil {
		t.Fatalf("DefaultConsumers().Validate() = %v", err)
	}
	bad := DefaultConsumers()
	bad.GreetHourEnd, bad.PurrCooldown, bad.RefreshInterval, bad.IdleSleepMin, bad.IdleSleepMax = 25, -time.Second, 0, 300*time.Second, 200*time.Second
	bad.IdleJaccard, bad.SecurityRingSize, bad.SecurityAudioDuration = 1.5, 0, 0
	want := []string{
		"Consumers.GreetHourEnd 25: want an hour from 0 to 24",
		"Consumers.RefreshInterval 0s: want more than 0",
		"Consumers.SecurityAudioDuration 0s: want more than 0",
		"Consumers.PurrCooldown -1s: want 0 or more",
		"Consumers.IdleSleepMax 3m20s: want at least Consumers.IdleSleepMin",
		"Consumers.IdleJaccard 1.5: want a number from 0 to 1",
		"Consumers.SecurityRingSize 0: want at least 1",
	}
	var got []string
	for _, err := range fieldcheck.Split((Config{Consumers: bad}).Validate()) {
		var fe *fieldcheck.Error
		if !errors.As(err, &fe) {
			t.Errorf("%v is not a fieldcheck.Error", err)
		}
		got = append(got, err.Error())
	}
	if d := cmp.Diff(got, want); d != "" {
		t.Errorf("Config.Validate (-got +want):\n%s", d)
	}
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
