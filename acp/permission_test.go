package acp

import (
	"context"
	"testing"
)

func TestPolicyDecide(t *testing.T) {
	kid := false
	p := &Policy{Allow: []string{"shell"}, Deny: []string{"file_write"}, KidMode: func() bool { return kid }}
	tests := []struct {
		name string
		kid  bool
		req  PermissionRequest
		want Decision
	}{
		{"allowed tool", false, PermissionRequest{Tool: "shell"}, Allow},
		{"unknown tool allowed", false, PermissionRequest{Tool: "web_search"}, Allow},
		{"denied tool", false, PermissionRequest{Tool: "file_write"}, Deny},
		{"camera allowed without kid mode", false, PermissionRequest{Tool: "camera.take_photo"}, Allow},
		{"camera denied in kid mode", true, PermissionRequest{Tool: "camera.take_photo"}, Deny},
		{"self. prefix stripped", true, PermissionRequest{Tool: "self.camera.take_photo"}, Deny},
		{"question cancelled", false, PermissionRequest{Tool: "ask_user", ToolCallID: "ask-user-1"}, Cancel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kid = tt.kid
			if got := p.Decide(context.Background(), tt.req); got != tt.want {
				t.Errorf("Decide = %v, want %v", got, tt.want)
			}
		})
	}
}
