package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// eventPool is a set of pre-encoded POST bodies; event i of a run is
// bodies[i % len(bodies)].
type eventPool struct {
	bodies [][]byte
	names  []string // names[j] is the event name of bodies[j]
}

// newEventPool encodes size events over the given number of devices, in
// the firmware's mix: ~50% sound_event, 20% face_detected, 15% face_lost,
// 10% state_changed, 3% chat_status, 1% head_pet_started and 1%
// wake_word_detected. Every data object carries firmware_ts_ms as the
// relay's do. The seed makes the mix reproducible.
func newEventPool(devices, size int, seed uint64) *eventPool {
	devices = max(devices, 1)
	size = max(size, 1)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	ids := make([]string, devices)
	for d := range ids {
		ids[d] = fmt.Sprintf("dotty-aa:bb:cc:dd:%02x:%02x", d>>8&0xff, d&0xff)
	}
	dirs := []string{"left", "centre", "right", "center"}
	states := []string{"idle", "talk", "story_time", "idle", "sleep", "dance"}
	base := float64(time.Now().UnixMilli()) / 1e3
	p := &eventPool{bodies: make([][]byte, size), names: make([]string, size)}
	for j := range size {
		fw := 100000 + 10*j // firmware ms since boot
		var name string
		var data []byte
		data = append(data, '{')
		switch k := r.IntN(100); {
		case k < 50:
			name = "sound_event"
			data = fmt.Appendf(data, `"direction":%q,"energy":%.4f,"balance":%.4f,`,
				dirs[r.IntN(len(dirs))], 0.05+0.9*r.Float64(), 2*r.Float64()-1)
		case k < 70:
			name = "face_detected"
		case k < 85:
			name = "face_lost"
		case k < 95:
			name = "state_changed"
			data = fmt.Appendf(data, `"state":%q,`, states[r.IntN(len(states))])
		case k < 98:
			name = "chat_status"
			data = fmt.Appendf(data, `"listening":%t,`, r.IntN(2) == 0)
		case k < 99:
			name = "head_pet_started"
		default:
			name = "wake_word_detected"
			data = fmt.Appendf(data, `"direction":%q,"phrase":"hey dotty",`, dirs[r.IntN(3)])
		}
		data = append(data, `"firmware_ts_ms":`...)
		data = strconv.AppendInt(data, int64(fw), 10)
		data = append(data, '}')
		// The relay stamps its wall clock: events 10 ms apart.
		ts := base + float64(j)/100
		p.names[j] = name
		p.bodies[j] = fmt.Appendf(nil, `{"device_id":%q,"ts":%.3f,"name":%q,"data":%s}`,
			ids[r.IntN(devices)], ts, name, data)
	}
	return p
}

// count returns how many of events [0, n) carry each name.
func (p *eventPool) count(n int) map[string]int {
	out := map[string]int{}
	full, rest := n/len(p.bodies), n%len(p.bodies)
	for j, name := range p.names {
		c := full
		if j < rest {
			c++
		}
		if c > 0 {
			out[name] += c
		}
	}
	return out
}

// nameSet is the set of names in the pool.
func (p *eventPool) nameSet() map[string]bool {
	out := map[string]bool{}
	for _, n := range p.names {
		out[n] = true
	}
	return out
}
