package toolscreen

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkScreenReal screens the real tool definitions once per op: what a
// hub with those servers pays at a rebuild whose lists all changed.
func BenchmarkScreenReal(b *testing.B) {
	var tools []mcp.Tool
	for _, s := range realServers(b) {
		tools = append(tools, s.Tools...)
	}
	sc := New()
	sc.Screen(tools[0])
	b.ResetTimer()
	for range b.N {
		for _, t := range tools {
			sc.Screen(t)
		}
	}
}

// BenchmarkCompile is the cost of a Screener's first screening.
func BenchmarkCompile(b *testing.B) {
	for range b.N {
		compilePatterns()
	}
}
