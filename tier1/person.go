package tier1

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/httpapi"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/pyjson"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/bridge/text"
	"github.com/zeroclaw-bridge/zeroclaw-bridge/tier1/memstore"
)

// remember_person's results, bridge.py's exactly: Tier1Slim's model
// phrases its spoken confirmation from them.
const (
	NoPerson       = "(no person specified)"
	EmptyFact      = "(empty fact)"
	RememberFailed = "(remember failed)"
	HeldForReview  = "(saved — a grown-up will check that)"
)

// personOutcome is what became of a declared fact.
type personOutcome struct {
	valid   bool  // a person and a fact were given
	stored  bool  // accepted by the memory writer
	review  bool  // held for a grown-up (person_pending:<id>)
	refused error // why the writer did not take it (queue full, stopping, journal); nil when it did
}

// storePerson is the one gate and store behind the remember_person tool
// and route: the kid-safety gate picks readable or held memory, then the
// fact goes through the journal and the writer like /remember's.
func (h *Handler) storePerson(name, fact, session string, hasSession bool) personOutcome {
	id := memstore.NormalizePersonID(name)
	if id == "" || text.Strip(fact) == "" {
		return personOutcome{}
	}
	out := personOutcome{valid: true, review: h.needsReview(id)}
	err := h.cfg.Memory.EnqueuePerson(memstore.PersonWrite{PersonID: id, Fact: fact, Pending: out.review,
		SessionID: session, HasSession: hasSession})
	switch {
	case errors.Is(err, memstore.ErrInvalidPersonFact):
		h.log.Warn("person memory store failed", "person", text.Truncate(id, text.Cut{Max: memstore.MaxPersonIDLen}), "error", err)
	case err != nil:
		h.refused("core", err)
		out.refused = err
	default:
		out.stored = true
		msg := "person memory stored"
		if out.review {
			msg = "person memory queued"
		}
		// Never the fact: it may be about a child.
		h.log.Info(msg, "person", id, "review", out.review)
	}
	return out
}

// needsReview asks the household whether a fact about id waits for a
// grown-up. It fails closed: no household, or one that panics, holds the
// fact.
func (h *Handler) needsReview(id string) (review bool) {
	if h.cfg.People == nil {
		return true
	}
	defer func() {
		if r := recover(); r != nil {
			h.log.Error("household gate failed; holding the fact for review", "panic", r)
			review = true
		}
	}()
	return h.cfg.People.NeedsReview(id)
}

// rememberPersonTool is the remember_person escalation: args name (or
// person_id) and fact.
func (h *Handler) rememberPersonTool(args map[string]json.RawMessage, session string) (string, error) {
	name, err := pyStrArg(args, "name", "person_id")
	if err != nil {
		return "", err
	}
	if name = text.Strip(name); name == "" {
		return NoPerson, nil
	}
	fact, err := pyStrArg(args, "fact")
	if err != nil {
		return "", err
	}
	return h.RememberPerson(name, fact, session), nil
}

// RememberPerson is remember_person for arguments already read: the fact
// passes the kid-safety gate (held for review unless the household knows
// name for an adult) and the answer says which. An empty session is
// stored NULL.
func (h *Handler) RememberPerson(name, fact, session string) string {
	if name = text.Strip(name); name == "" {
		return NoPerson
	}
	if text.Strip(fact) == "" {
		return EmptyFact
	}
	out := h.storePerson(name, fact, session, session != "")
	switch {
	case !out.stored:
		return RememberFailed
	case out.review:
		return HeldForReview
	}
	return "(remembered about " + name + ")"
}

// pyStrArg reads the first of names holding a truthy value, as bridge.py's
// `args.get(a) or args.get(b) or ""` did: absent, null, false, 0, "", []
// and {} fall through to the next name; a truthy value that is not a
// string fails the tool.
func pyStrArg(args map[string]json.RawMessage, names ...string) (string, error) {
	for _, name := range names {
		raw, ok := args[name]
		if !ok || pyjson.Falsy(raw) {
			continue
		}
		s, ok := httpapi.StringValue(raw)
		if !ok {
			return "", errBadArg
		}
		return s, nil
	}
	return "", nil
}

// personReply is the body of POST /api/voice/remember_person.
type personReply struct {
	OK            bool   `json:"ok"`
	PendingReview bool   `json:"pending_review"`
	Error         string `json:"error,omitempty"`
}

// rememberPersonRoute is POST /api/voice/remember_person: {"person_id",
// "fact", "session_id"}. Unlike /remember it answers what happened, so
// the voice layer can say "I'll remember that" or "I'll check with a
// grown-up first"; a write the writer cannot take is a 503 like
// /remember's.
func (h *Handler) rememberPersonRoute(c echo.Context) error {
	var personID, fact string
	session, hasSession, err := bindVoice(c, func(b *httpapi.Binder) { personID, fact = b.String("person_id"), b.String("fact") })
	if err != nil {
		return err
	}
	out := h.storePerson(personID, fact, session, hasSession)
	switch {
	case !out.valid:
		return httpapi.WriteJSON(c, http.StatusOK, personReply{Error: "empty"})
	case out.refused != nil:
		return notAccepted(out.refused)
	}
	return httpapi.WriteJSON(c, http.StatusOK, personReply{OK: out.stored, PendingReview: out.review})
}
