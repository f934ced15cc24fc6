package acptest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// zcStore is the zeroclaw-v1 mode's session store, as ZeroClaw ≥ 0.8.0
// keeps one (zeroclaw-infra's AcpSessionStore, <data_dir>/sessions/
// acp-sessions.db): a session is written when session/new creates it, its
// turn's messages once the turn has ended well (a cancelled or failed turn
// leaves nothing), before the turn's result is sent; session/close and
// session/stop forget the live session but keep its row, so session/load
// and session/resume reopen it on a later process. Here the rows are a
// JSON file, <dir>/sessions/acp-sessions.json, rewritten whole (through a
// rename) at every change, or nothing but memory when dir is "".
type zcStore struct {
	path string // "" keeps the store in memory only

	mu   sync.Mutex
	rows map[string][]zcMessage
}

// zcMessage is one stored message: ZeroClaw's ConversationMessage reduced
// to what its replay sends (history_notifications_for_message).
type zcMessage struct {
	// Role is "user", "assistant", "tool_call" (an assistant's call of
	// Tool, id ToolCallID, Text its arguments) or "tool_result" (Text the
	// output).
	Role       string `json:"role"`
	Text       string `json:"text"`
	Tool       string `json:"tool,omitempty"`
	ToolCallID string `json:"toolCallId,omitempty"`
}

// openStore opens the store under dir ("" for one in memory), as ZeroClaw
// does at the start of `zeroclaw acp`.
func openStore(dir string) (*zcStore, error) {
	s := &zcStore{rows: map[string][]zcMessage{}}
	if dir == "" {
		return s, nil
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	s.path = filepath.Join(sessions, "acp-sessions.json")
	b, err := os.ReadFile(s.path)
	switch {
	case os.IsNotExist(err):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("session store: %w", err)
	}
	if err := json.Unmarshal(b, &s.rows); err != nil {
		return nil, fmt.Errorf("session store %s: %w", s.path, err)
	}
	return s, nil
}

// create records a new session with no messages.
func (s *zcStore) create(sid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[sid] = []zcMessage{}
	return s.saveLocked()
}

// appendTurn adds a turn's messages to sid's history.
func (s *zcStore) appendTurn(sid string, msgs ...zcMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows[sid] = append(s.rows[sid], msgs...)
	return s.saveLocked()
}

// history returns sid's messages; ok is false when the store has no such
// session.
func (s *zcStore) history(sid string) (msgs []zcMessage, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs, ok = s.rows[sid]
	return append([]zcMessage(nil), msgs...), ok
}

// saveLocked rewrites the file through a rename, so a process killed while
// writing leaves the previous version whole.
func (s *zcStore) saveLocked() error {
	if s.path == "" {
		return nil
	}
	b, err := json.Marshal(s.rows)
	if err != nil {
		return err
	}
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, s.path)
}

// userTurns counts the user messages of msgs: the session's earlier turns.
func userTurns(msgs []zcMessage) (n int, last string) {
	for _, m := range msgs {
		if m.Role == "user" {
			n++
			last = m.Text
		}
	}
	return n, last
}

// Recall is zeroclaw-v1's reply to a prompt containing "recall" on a
// session whose stored history holds n earlier turns, the last of which
// was the user's text last: what shows that a session reopened after a
// restart kept its conversation.
func Recall(n int, last string) string {
	if n == 0 {
		return "😊 recall: no earlier turns"
	}
	return fmt.Sprintf("😊 recall: %d earlier turns; last: %s", n, strings.TrimSpace(last))
}
