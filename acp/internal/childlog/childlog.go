// Package childlog turns what an agent child writes outside its protocol
// (stderr, stray stdout) into log lines: cleaned of control characters,
// secrets redacted, rate-capped. The supervisor uses it for stderr and for
// the stray stdout lines a protocol hands it (agentconn.Child.Noise),
// acpclient for its stdout guard and the agent text it logs.
package childlog

import (
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/jonboulle/clockwork"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
)

// Limiter logs at most perSecond lines per one-second window and
// summarises the excess in one "dropped N lines" line (bridge.py's cap).
type Limiter struct {
	logger    hclog.Logger
	perSecond int
	clock     clockwork.Clock

	mu      sync.Mutex
	window  time.Time
	count   int
	dropped int
	timer   *time.Timer
}

func NewLimiter(log hclog.Logger, perSecond int, c clockwork.Clock) *Limiter {
	return &Limiter{logger: log, perSecond: perSecond, clock: c}
}

// Emit logs line unless the window's cap is spent; it reports whether the
// line reached the log.
func (l *Limiter) Emit(level hclog.Level, line string) bool {
	l.mu.Lock()
	now := l.clock.Now()
	if now.Sub(l.window) >= time.Second {
		l.flushLocked()
		l.window, l.count = now, 0
	}
	if l.count >= l.perSecond && level < hclog.Error {
		if l.dropped == 0 && l.timer == nil {
			// Report the drops when the window ends, even if the source goes quiet.
			l.timer = time.AfterFunc(time.Second, l.timerFlush)
		}
		l.dropped++
		l.mu.Unlock()
		return false
	}
	l.count++
	l.mu.Unlock()
	l.logger.Log(level, line)
	return true
}

// Flush reports lines dropped in the current window and stops the timer.
func (l *Limiter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.flushLocked()
}

func (l *Limiter) timerFlush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.timer = nil
	l.flushLocked()
}

func (l *Limiter) flushLocked() {
	if l.dropped > 0 {
		l.logger.Warn("rate limit: dropped lines", "dropped", l.dropped)
		l.dropped = 0
	}
}

// Logger is the logger lines are written to.
func (l *Limiter) Logger() hclog.Logger { return l.logger }

// CleanLine drops terminal escape sequences (CSI such as colours, and OSC
// such as window titles) and every other control character from a child's
// line, so the log stays plain text that grep reads; a tab becomes a space.
// Invalid UTF-8 becomes U+FFFD.
func CleanLine(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		// 0xc2 0x80–0x9f is a C1 control (U+0080–U+009F) in UTF-8.
		if b := s[i]; b < 0x20 || b == 0x7f || (b == 0xc2 && i+1 < len(s) && s[i+1] < 0xa0) {
			clean = false
			break
		}
	}
	if clean && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == 0x1b && i+1 < len(s) && s[i+1] == '[':
			// CSI: parameter and intermediate bytes (0x20–0x3f), then one
			// final byte (0x40–0x7e). Anything else ends a malformed one
			// without swallowing the text after it.
			i = skipEscape(s, i+2, 0x3f, 0x40)
			continue
		case r == 0x1b && i+1 < len(s) && s[i+1] == ']':
			// OSC: up to BEL or ESC \.
			j := i + 2
			for j < len(s) && s[j] != 0x07 && !(s[j] == 0x1b && j+1 < len(s) && s[j+1] == '\\') {
				j++
			}
			switch {
			case j < len(s) && s[j] == 0x07:
				i = j + 1
			default:
				i = min(j+2, len(s))
			}
			continue
		case r == 0x1b:
			// Other escapes: intermediates (0x20–0x2f) and one final byte
			// (0x30–0x7e), as in ESC ( B; a lone ESC goes alone.
			i = skipEscape(s, i+1, 0x2f, 0x30)
			continue
		case r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// other C0 and C1 controls: dropped
		default:
			b.WriteRune(r) // utf8.RuneError for invalid bytes
		}
		i += size
	}
	return b.String()
}

// skipEscape returns the index just past an escape sequence whose body
// starts at j: the bytes from 0x20 to midHi, then one final byte from
// finalLo to 0x7e when one follows.
func skipEscape(s string, j int, midHi, finalLo byte) int {
	for j < len(s) && s[j] >= 0x20 && s[j] <= midHi {
		j++
	}
	if j < len(s) && s[j] >= finalLo && s[j] <= 0x7e {
		j++
	}
	return j
}

// Redacted replaces a secret in a child's logged output.
const Redacted = "[redacted]"

// secretKeys are the names (a regular expression) of settings, fields and
// headers whose value is a secret.
const secretKeys = `api[_-]?key|(?:secret|client|signing|master|private|access|encryption)[_-]?key|[a-z0-9_-]*_token|token|[a-z0-9_-]*secret|password|passwd|authorization` // #nosec G101 -- names of secrets to redact, not a secret

// secretPatterns find secrets in a line of a child's output; each match
// is replaced by its template (${1} keeps what introduces the secret).
// They are compiled on first use, not at start: an idle bridge whose agent
// prints nothing never needs them.
var secretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		// ZeroClaw prints its OTP enrollment URI on first setup, "Enrollment
		// URI: otpauth://totp/ZeroClaw:zeroclaw?secret=…&issuer=ZeroClaw&period=30"
		// (the label localised).
		{regexp.MustCompile(`(?i)(otpauth://)\S+`), "${1}" + Redacted},
		// Credentials in a URL: scheme://user:password@host.
		{regexp.MustCompile(`(?i)([a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+@`), "${1}" + Redacted + "@"},
		// Authorization header values.
		{regexp.MustCompile(`(?i)(\b(?:bearer|basic)\s+)[A-Za-z0-9._~+/=-]{8,}`), "${1}" + Redacted},
		// "key": "value with spaces" and 'key': '…' for keys naming a secret:
		// the whole quoted value.
		{regexp.MustCompile(`(?i)((?:` + secretKeys + `)["']?\s*[:=]\s*")[^"]*"`), "${1}" + Redacted + `"`},
		{regexp.MustCompile(`(?i)((?:` + secretKeys + `)["']?\s*[:=]\s*')[^']*'`), "${1}" + Redacted + `'`},
		// key=value, key: value for keys naming a secret (after an
		// Authorization scheme word, the credential after it).
		{regexp.MustCompile(`(?i)((?:` + secretKeys + `)["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|token|bot|digest|apikey)\s+)?[^\s"',;&]+`), "${1}" + Redacted},
		// Well-known key shapes: OpenAI, Anthropic and OpenRouter (sk-…),
		// GitHub, Slack, AWS, Google, JSON Web Tokens, Telegram bots.
		{regexp.MustCompile(`\b(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}|[0-9]{8,10}:[A-Za-z0-9_-]{35})`), Redacted},
	}
})

// secretPattern is a secret's shape and its replacement template.
type secretPattern struct {
	re   *regexp.Regexp
	repl string
}

// RedactSecrets replaces what looks like a secret in a line of a child's
// output (stderr, stdout noise) with [redacted], before the line is
// logged: ZeroClaw prints its OTP enrollment URI, and agents echo tokens,
// API keys and Authorization headers in their errors.
func RedactSecrets(s string) string {
	for _, p := range secretPatterns() {
		if p.re.MatchString(s) {
			s = p.re.ReplaceAllString(s, p.repl)
		}
	}
	return s
}

// NoiseLine is a stray line of a child's stdout as it is logged: cleaned
// and redacted on its first 4 KiB (so a secret is found before the line is
// cut), then cut to 512 bytes.
func NoiseLine(line string) string { return "agent stdout: " + RedactedSnippet(line) }

// RedactedSnippet is text from an agent as a log line may carry it:
// cleaned and redacted on its first 4 KiB (so a secret is found before
// the text is cut), then cut to 512 bytes.
func RedactedSnippet(line string) string {
	// CleanLine's output is valid UTF-8, so the cut drops no more than a
	// split code point.
	return text.Truncate(RedactSecrets(CleanLine(line[:min(len(line), 4096)])), text.Cut{Max: 512, Bytes: true})
}
