//go:build libs && extra

package main

import (
	"database/sql"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"go.yaml.in/yaml/v3"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// The clients are made as the bridge makes them at start; none is used.
var (
	_        = openai.NewClient(option.WithBaseURL("http://127.0.0.1:1/v1"), option.WithAPIKey("unused"))
	_        = yaml.Unmarshal
	_ func() = func() { _, _ = sql.Open("sqlite", "file::memory:") }
)
