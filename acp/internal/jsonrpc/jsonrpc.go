// Package jsonrpc is the repository's one line-delimited JSON-RPC 2.0
// connection: the message envelope, framing with a line bound, request
// ids, the table of calls awaiting their answers, notifications and
// cancellation by context. It serves both sides: the steerable client
// calls through it, and the demo agent's steerable side and the fake
// agents answer through it. ACP traffic itself runs on the ACP SDK's own
// connection; the stdout guard in front of it frames and answers with
// this package's types.
//
// Its shape follows golang.org/x/tools' jsonrpc2_v2: one wire message
// type for requests, notifications and answers; a Conn whose reader
// goroutine matches answers to pending calls and hands everything else,
// in wire order, to a handler that must not block (jsonrpc2_v2's
// preempter); a call given up by its context is forgotten, or, when it
// asks to, remembered (bounded) so its late answer still reaches it.
package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version is the "jsonrpc" member of every message.
const Version = "2.0"

// The error codes JSON-RPC 2.0 defines.
const (
	CodeParse          = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternal       = -32603
)

// Error is a JSON-RPC error object. Kind is the steerable sidecar's
// addition (its class of failure: "invalid_params", "internal" …), left
// out when empty, as is Data.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Kind    string          `json:"kind,omitempty"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Code, e.Kind, e.Message) }

// Message is one frame, in either direction: a request (ID and Method), a
// notification (Method only) or an answer (ID, and Result or Error).
// Members that are empty are left out, and "jsonrpc" comes first on the
// wire. Read, an "id":null member is kept as the literal null: a frame
// with one is a request to a server, though never the answer to a call.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// HasID reports whether m carries an id other than null.
func (m *Message) HasID() bool {
	return len(m.ID) > 0 && string(m.ID) != "null"
}

// IsRequest reports whether m, read by a server, is a request: it has an
// id member, even a null one. Frames without one are notifications.
func (m *Message) IsRequest() bool { return len(m.ID) > 0 }

// IntID is an integer id as it goes on the wire.
func IntID(n int64) json.RawMessage { return strconv.AppendInt(nil, n, 10) }

// ParseID reads an integer id; a peer may echo one back as a string.
func ParseID(raw json.RawMessage) (int64, bool) {
	var n int64
	if json.Unmarshal(raw, &n) == nil {
		return n, true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// raw encodes v; nil stays absent.
func raw(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	if r, ok := v.(json.RawMessage); ok {
		return r, nil
	}
	return json.Marshal(v)
}

// NewRequest builds a request; nil params are left out.
func NewRequest(id json.RawMessage, method string, params any) (Message, error) {
	p, err := raw(params)
	if err != nil {
		return Message{}, fmt.Errorf("encoding %s params: %w", method, err)
	}
	return Message{JSONRPC: Version, ID: id, Method: method, Params: p}, nil
}

// NewNotification builds a notification; nil params are left out.
func NewNotification(method string, params any) (Message, error) {
	return NewRequest(nil, method, params)
}

// NewResponse builds the answer to id: err when not nil, else result (a
// nil result is left out). An empty id is left out too.
func NewResponse(id json.RawMessage, result any, err *Error) (Message, error) {
	if err != nil {
		return Message{JSONRPC: Version, ID: id, Error: err}, nil
	}
	r, e := raw(result)
	if e != nil {
		return Message{}, fmt.Errorf("encoding a result: %w", e)
	}
	return Message{JSONRPC: Version, ID: id, Result: r}, nil
}

// Encode is m as one line, without its newline.
func Encode(m Message) ([]byte, error) { return json.Marshal(m) }

// EncodeNotification is a notification as one line, without its newline,
// for a writer that puts frames on the wire itself.
func EncodeNotification(method string, params any) ([]byte, error) {
	m, err := NewNotification(method, params)
	if err != nil {
		return nil, err
	}
	return Encode(m)
}

// ErrorFrame is the encoded answer to id refusing it with code and msg.
func ErrorFrame(id json.RawMessage, code int, msg string) []byte {
	b, _ := Encode(Message{JSONRPC: Version, ID: id, Error: &Error{Code: code, Message: msg}}) // cannot fail: no values of unknown type
	return b
}

// Decode reads one frame (whitespace trimmed). A line that is JSON but not
// an object decodes to an empty message with ok false: neither a request
// nor an answer.
func Decode(line []byte) (m Message, ok bool, err error) {
	line = bytes.TrimSpace(line)
	if err := json.Unmarshal(line, &m); err != nil {
		return Message{}, false, err
	}
	return m, len(line) > 0 && line[0] == '{', nil
}

// Head is the part of a frame a relay classifies it by, read without
// copying its params or result: ID is nil when the frame has no id, or a
// null one.
type Head struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
}

// ReadLine returns the next line of r without its terminator, holding at
// most limit bytes of it: a longer line is consumed and reported as tooLong
// with no content, so one huge line costs no memory.
func ReadLine(r *bufio.Reader, limit int) (line []byte, tooLong bool, err error) {
	for {
		frag, e := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(frag) > limit {
				tooLong, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if e == nil {
			break
		}
		if errors.Is(e, bufio.ErrBufferFull) {
			continue
		}
		err = e
		break
	}
	return bytes.TrimRight(line, "\r\n"), tooLong, err
}
