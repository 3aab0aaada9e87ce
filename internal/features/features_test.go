package features

import (
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
)

// TestAdmits: a session gets the log messages at or above the level it
// set, every message when it set none, and the most verbose level any
// session asked for is the one forwarded upstream.
func TestAdmits(t *testing.T) {
	f := New(nil, zerolog.Nop(), nil)
	f.sessions.Add("warn", &sessionState{level: mcp.LoggingLevelWarning})
	for _, tc := range []struct {
		session string
		msg     mcp.LoggingLevel
		want    bool
	}{
		{"warn", mcp.LoggingLevelError, true},
		{"warn", mcp.LoggingLevelWarning, true},
		{"warn", mcp.LoggingLevelInfo, false},
		{"never set", mcp.LoggingLevelDebug, true},
		{"", mcp.LoggingLevelDebug, true},
	} {
		if got := f.Admits(tc.session, tc.msg); got != tc.want {
			t.Errorf("Admits(%q, %s) = %v, want %v", tc.session, tc.msg, got, tc.want)
		}
	}
	if !moreVerbose(mcp.LoggingLevelDebug, mcp.LoggingLevelInfo) || moreVerbose(mcp.LoggingLevelError, mcp.LoggingLevelInfo) {
		t.Error("moreVerbose orders levels the wrong way")
	}
}

func TestTakesServerRequests(t *testing.T) {
	for _, tc := range []struct {
		caps mcp.ClientCapabilities
		want bool
	}{
		{mcp.ClientCapabilities{}, false},
		{mcp.ClientCapabilities{Sampling: &mcp.SamplingCapability{}}, true},
	} {
		if got := TakesServerRequests(tc.caps); got != tc.want {
			t.Errorf("TakesServerRequests(%+v) = %v, want %v", tc.caps, got, tc.want)
		}
	}
}
