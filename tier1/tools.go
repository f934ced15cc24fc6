package tier1

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// PhotoFreshness is the oldest camera description take_photo returns.
const PhotoFreshness = 30 * time.Second

// Tool result strings, bridge.py's exactly: Tier1Slim's model reads them.
const (
	EmptyQuery       = "(empty query)"
	NoMemories       = "(no memories found)"
	EmptyQuestion    = "(empty question)"
	ThinkerSlow      = "(I'm slow today, try again in a moment)"
	ThinkingFailed   = "(thinking failed)"
	NothingFresh     = "(I can't see anything fresh right now)"
	NoSongName       = "(no song name given)"
	NoXiaozhi        = "(can't reach xiaozhi-server)"
	EmptyCatalogue   = "(song catalogue is empty)"
	songCacheTTL     = 60 * time.Second
	memoryFetched    = 5
	memoryUsed       = 3
	snippetCap       = 200
	photoCap         = 300
	playErrBodyCap   = 120
	songsShownOnMiss = 5
)

// memoryLookup is the FTS5 phrase search of brain.db: the first three of
// the five best rows, each cut at 200 characters, joined with " | ".
func (h *Handler) memoryLookup(ctx context.Context, args map[string]json.RawMessage) (string, error) {
	q, err := strArg(args, "query")
	if err != nil {
		return "", err
	}
	return h.MemoryLookup(ctx, q), nil
}

// MemoryLookup is memory_lookup for a query already read: the first
// three of the five best rows of brain.db, each cut at 200 characters,
// joined with " | " (held-for-review facts are never among them).
func (h *Handler) MemoryLookup(ctx context.Context, q string) string {
	if q = text.Strip(q); q == "" {
		return EmptyQuery
	}
	rows, err := h.cfg.Memory.Search(ctx, q, memoryFetched)
	if err != nil {
		h.log.Debug("memory lookup found nothing", "error", err)
		return NoMemories
	}
	var snippets []string
	for _, r := range rows {
		if len(snippets) == memoryUsed {
			break
		}
		snippets = append(snippets, text.Truncate(text.Strip(r.Content), text.Cut{Max: snippetCap, Mark: "...", MarkInside: true}))
	}
	if len(snippets) == 0 {
		return NoMemories
	}
	return strings.Join(snippets, " | ")
}

// takePhoto returns the freshest camera description; it never captures.
func (h *Handler) takePhoto() string {
	if desc, ok := FreshPhoto(h.cfg.Vision); ok {
		return desc
	}
	return NothingFresh
}

// FreshPhoto is take_photo's freshness rule: v's freshest description if
// it is no older than PhotoFreshness, cut at 300 code points; false when
// there is none (a nil v has none).
func FreshPhoto(v Vision) (string, bool) {
	if v == nil {
		return "", false
	}
	desc, age, ok := v.Freshest()
	if !ok || desc == "" || age > PhotoFreshness {
		return "", false
	}
	return text.Truncate(desc, text.Cut{Max: photoCap}), true
}

// songCache keeps the last non-empty song catalogue for a minute.
type songCache struct {
	clock clockwork.Clock

	mu    sync.Mutex
	files []string
	at    time.Time
}

func (c *songCache) get(ctx context.Context, x Xiaozhi) []string {
	c.mu.Lock()
	if c.files != nil && c.clock.Since(c.at) < songCacheTTL {
		files := c.files
		c.mu.Unlock()
		return files
	}
	c.mu.Unlock()
	files, err := x.Songs(ctx)
	if err != nil || len(files) == 0 {
		return nil // failures and empty catalogues are not cached
	}
	c.mu.Lock()
	c.files, c.at = files, c.clock.Now()
	c.mu.Unlock()
	return files
}

// playSong plays the catalogue song best matching args.name.
func (h *Handler) playSong(ctx context.Context, args map[string]json.RawMessage) (string, error) {
	name, err := strArg(args, "name")
	if err != nil {
		return "", err
	}
	return h.PlaySong(ctx, "", name), nil
}

// PlaySong plays the catalogue song best matching name on deviceID ("":
// xiaozhi picks the first robot, as the escalation does) and says what
// happened in play_song's words.
func (h *Handler) PlaySong(ctx context.Context, deviceID, name string) string {
	if name = text.Strip(name); name == "" {
		return NoSongName
	}
	if h.cfg.Xiaozhi == nil || !h.cfg.Xiaozhi.Enabled() {
		return NoXiaozhi
	}
	files := h.songs.get(ctx, h.cfg.Xiaozhi)
	if len(files) == 0 {
		return EmptyCatalogue
	}
	file, ok := MatchSong(name, files)
	if !ok {
		stems := make([]string, 0, songsShownOnMiss)
		for _, f := range files[:min(len(files), songsShownOnMiss)] {
			stems = append(stems, stem(f))
		}
		return fmt.Sprintf("(no match for '%s'; have: %s)", name, strings.Join(stems, ", "))
	}
	asset := strings.TrimRight(h.cfg.SongAssetBase, "/") + "/" + file
	resp, err := h.cfg.Xiaozhi.PlayAsset(ctx, deviceID, asset)
	switch {
	case resp.Status != 0 && resp.Status != http.StatusOK: // success is exactly 200
		return fmt.Sprintf("(couldn't play %s: HTTP %d: %s)", file, resp.Status, text.Truncate(string(resp.Body), text.Cut{Max: playErrBodyCap}))
	case err != nil:
		return fmt.Sprintf("(couldn't play %s: %v)", file, err)
	}
	h.log.Info("playing song", "file", file)
	return "playing " + stem(file)
}

// stem is a file name without its directory and extension (Python's
// os.path.splitext on the final component: leading dots are not an extension).
func stem(file string) string {
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	lead := len(file) - len(strings.TrimLeft(file, "."))
	if i := strings.LastIndexByte(file[lead:], '.'); i >= 0 {
		return file[:lead+i]
	}
	return file
}

// MatchSong picks the file for a requested name: an exact stem match
// (case-insensitive, extensions ignored), else the first file whose stem
// contains the name or is contained in it with the smallest length
// difference.
func MatchSong(name string, files []string) (string, bool) {
	q := strings.ToLower(name)
	qStem := text.Strip(stem(q))
	best, bestScore := "", -1
	for _, f := range files {
		s := strings.ToLower(stem(f))
		if s == qStem {
			return f, true
		}
		if qStem != "" && (strings.Contains(s, qStem) || strings.Contains(qStem, s)) {
			score := abs(len([]rune(s)) - len([]rune(qStem)))
			if bestScore < 0 || score < bestScore {
				best, bestScore = f, score
			}
		}
	}
	return best, bestScore >= 0
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
