package config

import "github.com/purko-io/mcp-hub/internal/toolspec"

// A server's tool curation (servers[].tools) is toolspec's, which the
// catalog and the Kubernetes source read too; config names it as its own.
type (
	ToolCuration    = toolspec.ToolCuration
	ToolOverride    = toolspec.ToolOverride
	ToolAnnotations = toolspec.ToolAnnotations
)

// MaxToolNameLen is the longest published tool name (toolspec's).
const MaxToolNameLen = toolspec.MaxToolNameLen

// ToolNameByte says whether c may be in a published tool name.
func ToolNameByte(c byte) bool { return toolspec.ToolNameByte(c) }
