//go:build libs && extra

package main

import (
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"go.yaml.in/yaml/v3"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", registered at start as in the bridge
)

// The OpenAI-compatible client is made at start, as the bridge makes its
// own; nothing is sent.
var (
	_ = openai.NewClient(option.WithBaseURL("http://127.0.0.1:1/v1"), option.WithAPIKey("unused"))
	_ = yaml.Unmarshal
)
