package perception

import "slices"

// Present returns who is in deviceID's robot's room now, as the voice
// prompt knows them: the face recognised in front of the robot within the
// perception line's time (30 s), then whoever said who they are to it, on
// any channel, within the speaker's sticky time (SPEAKER_STICKY_SEC), each
// once. A roster member is their household Person; a recognised name not
// on the roster is a Person with only ID set.
func (s *Service) Present(deviceID string) []Person {
	st, _ := s.states.Get(deviceID)
	now := s.clock.Now()
	var ids []string
	if id, fresh := st.FreshIdentity(now, identityLineTTL); fresh {
		ids = append(ids, id)
	}
	ids = append(ids, s.speaker.latches.forDevice(deviceID, now)...)
	house := s.Household()
	var out []Person
	for _, id := range ids {
		p, ok := house.Lookup(id)
		if !ok {
			p = Person{ID: id}
		}
		if !slices.ContainsFunc(out, func(q Person) bool { return q.ID == p.ID }) {
			out = append(out, p)
		}
	}
	return out
}
