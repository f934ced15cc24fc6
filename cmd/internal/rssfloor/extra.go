//go:build libs && extra

package main

import (
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"go.yaml.in/yaml/v3"
	_ "modernc.org/sqlite" // database/sql driver "sqlite", registered at start as in the bridge
)

// The OpenAI-compatible client and the robot tools' MCP server are made at
// start, as the bridge makes its own; nothing is sent or served.
var (
	_ = openai.NewClient(option.WithBaseURL("http://127.0.0.1:1/v1"), option.WithAPIKey("unused"))
	_ = yaml.Unmarshal
	_ = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "rssfloor", Version: "1"}, nil)
	}, &mcp.StreamableHTTPOptions{Stateless: true})
)
