package robottools

import (
	"container/list"
	"crypto/rand"
	"encoding/base64"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// grant is what a token lets its holder do: act for one pool key (and,
// once bound, one agent session), at a bounded rate.
type grant struct {
	token   string
	key     string
	session string
	limiter *rate.Limiter
	// standing: minted by MintStanding, never evicted, acting on the
	// robot set last of any key.
	standing bool
}

// tables holds the tokens, oldest minted first, and each key's robot and
// mood, least recently set robot first (a key with a mood and no robot
// yet goes first). Both are bounded; eviction follows the order of
// minting (tokens) or setting robots (devices), which no lookup or mood
// changes.
type tables struct {
	maxTokens, maxKeys int
	limit              rate.Limit
	burst              int

	mu      sync.Mutex
	tokens  map[string]*list.Element // of *grant
	minted  *list.List
	kept    *list.List               // standing grants, one per key
	devices map[string]*list.Element // of *device
	set     *list.List
}

// device is a key's robot ("" until its first turn names one) and the
// mood set_mood recorded for its next reply ("" for none), with when.
type device struct {
	key, id string
	mood    string
	moodAt  time.Time
}

func newTables(cfg Config) *tables {
	return &tables{maxTokens: cfg.MaxTokens, maxKeys: cfg.MaxKeys,
		limit: rate.Limit(float64(cfg.CallsPerMinute) / 60), burst: cfg.Burst,
		tokens: map[string]*list.Element{}, minted: list.New(), kept: list.New(), devices: map[string]*list.Element{}, set: list.New()}
}

// Mint returns a new token for an agent session being opened for pool
// key key. At MaxTokens the oldest token is revoked.
func (s *Server) Mint(key string) string {
	token := newToken()
	t := s.tables
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.minted.Len() >= t.maxTokens {
		oldest := t.minted.Remove(t.minted.Front()).(*grant)
		delete(t.tokens, oldest.token)
		s.log.Debug("token table full; revoked the oldest token", "key", oldest.key)
	}
	g := &grant{token: token, key: key, limiter: rate.NewLimiter(t.limit, t.burst)}
	t.tokens[token] = t.minted.PushBack(g)
	return token
}

// MintStanding returns a standing token for pool key key (ZeroClaw's,
// which reads no per-session servers): the token table's bound never
// evicts it, and it acts on the robot of the most recent turn of any
// conversation (the last SetDevice of any key). A key has one standing
// token: minting another revokes the previous. Revoke it at stop.
func (s *Server) MintStanding(key string) string {
	token := newToken()
	t := s.tables
	t.mu.Lock()
	defer t.mu.Unlock()
	for e := t.kept.Front(); e != nil; e = e.Next() {
		if g := e.Value.(*grant); g.key == key {
			t.kept.Remove(e)
			delete(t.tokens, g.token)
			break
		}
	}
	g := &grant{token: token, key: key, limiter: rate.NewLimiter(t.limit, t.burst), standing: true}
	t.tokens[token] = t.kept.PushBack(g)
	return token
}

// newToken returns 32 random bytes, base64url.
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Bind records the agent session a token was minted for, once the agent
// has named it. An unknown token is ignored.
func (s *Server) Bind(token, agentSessionID string) {
	t := s.tables
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.tokens[token]; ok {
		e.Value.(*grant).session = agentSessionID
	}
}

// Revoke ends a token: its next request is refused with 401.
func (s *Server) Revoke(token string) { s.tables.drop(func(g *grant) bool { return g.token == token }) }

// RevokeKey ends every token Mint gave pool key key; a standing token
// ends by Revoke only.
func (s *Server) RevokeKey(key string) {
	s.tables.drop(func(g *grant) bool { return g.key == key && !g.standing })
}

// drop removes the grants that match, standing ones included.
func (t *tables) drop(match func(*grant) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range []*list.List{t.minted, t.kept} {
		for e := l.Front(); e != nil; {
			next := e.Next()
			if g := e.Value.(*grant); match(g) {
				l.Remove(e)
				delete(t.tokens, g.token)
			}
			e = next
		}
	}
}

// SetDevice records the robot of key's latest turn: the one its tools act
// on. At MaxKeys the key set longest ago is forgotten.
func (s *Server) SetDevice(key, deviceID string) {
	t := s.tables
	t.mu.Lock()
	defer t.mu.Unlock()
	e, known := t.devices[key]
	if !known {
		for t.set.Len() >= t.maxKeys {
			delete(t.devices, t.set.Remove(t.set.Front()).(*device).key)
		}
		e = t.set.PushBack(&device{key: key})
		t.devices[key] = e
	}
	e.Value.(*device).id = deviceID
	t.set.MoveToBack(e)
}

// setMood records mood, an allowed emoji, at the time at for g's key (a
// standing grant's: the key set last); false when a standing grant has no
// key yet. A key not in the table is added as the first to forget, so a
// mood never moves a key or saves it from eviction.
func (t *tables) setMood(g grant, mood string, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, known := t.devices[g.key]
	switch {
	case g.standing:
		e, known = t.set.Back(), t.set.Len() > 0
		if !known {
			return false
		}
	case !known:
		for t.set.Len() >= t.maxKeys {
			delete(t.devices, t.set.Remove(t.set.Front()).(*device).key)
		}
		e = t.set.PushFront(&device{key: g.key})
		t.devices[g.key] = e
	}
	d := e.Value.(*device)
	d.mood, d.moodAt = mood, at
	return true
}

// TakeMood returns the emoji of the mood set_mood recorded for pool key
// key and clears it, when it was recorded within MoodTTL; false
// otherwise.
func (s *Server) TakeMood(key string) (emoji string, ok bool) {
	t := s.tables
	t.mu.Lock()
	defer t.mu.Unlock()
	e, known := t.devices[key]
	if !known {
		return "", false
	}
	d := e.Value.(*device)
	mood, at := d.mood, d.moodAt
	d.mood = ""
	if mood == "" || s.clock.Since(at) > s.cfg.MoodTTL {
		return "", false
	}
	return mood, true
}

// lookup returns a copy of token's grant and the device of its key ("" if
// none is known); a standing grant's device is the one set last.
func (t *tables) lookup(token string) (g grant, deviceID string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.tokens[token]
	if !ok {
		return grant{}, "", false
	}
	g = *e.Value.(*grant)
	d, ok := t.devices[g.key]
	if g.standing {
		d, ok = t.set.Back(), t.set.Len() > 0
	}
	if ok {
		deviceID = d.Value.(*device).id
	}
	return g, deviceID, true
}

// Sizes reports how many tokens and keys the server holds, for a
// program watching its tables stay bounded.
func (s *Server) Sizes() (tokens, keys int) {
	s.tables.mu.Lock()
	defer s.tables.mu.Unlock()
	return len(s.tables.tokens), len(s.tables.devices)
}
