package httpapi

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeObject: any body decodes to an object or to a 422 whose
// detail list encodes as JSON (the error writer's input), never a panic.
func FuzzDecodeObject(f *testing.F) {
	for _, seed := range []string{`{}`, `{"a":1}`, ``, `null`, `[1]`, `{"a":`, "{\"\xff\":1}", `"x"`, `{"a":1}{"b":2}`, "\ufeff{}"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, apiErr := DecodeObject(body)
		if apiErr == nil {
			if obj == nil {
				t.Fatalf("no object and no error for %q", body)
			}
			return
		}
		if apiErr.Status != 422 {
			t.Fatalf("status %d for %q", apiErr.Status, body)
		}
		if _, err := json.Marshal(map[string]any{"detail": apiErr.Detail}); err != nil {
			t.Fatalf("detail does not encode for %q: %v", body, err)
		}
	})
}
