package features

import (
	"context"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/rs/zerolog"
)

// fakeSession is a downstream session known by its id alone.
type fakeSession string

func (s fakeSession) SessionID() string                                   { return string(s) }
func (s fakeSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return nil }
func (s fakeSession) Initialize()                                         {}
func (s fakeSession) Initialized() bool                                   { return true }

// TestAdmits: a session gets the log messages at or above the level it
// set, every message when it set none; a 2026-07-28 request those at or
// above the level in its _meta, none when it names none; and the most
// verbose level any session asked for is the one forwarded upstream.
func TestAdmits(t *testing.T) {
	f := New(Options{Log: zerolog.Nop()})
	f.sessions.Add("warn", &sessionState{level: mcp.LoggingLevelWarning})
	srv := server.NewMCPServer("t", "1")
	inSession := func(id string) context.Context {
		if id == "" {
			return context.Background()
		}
		return srv.WithContext(context.Background(), fakeSession(id))
	}
	modern := func(level mcp.LoggingLevel) context.Context {
		return server.WithRequestProtocolInfo(context.Background(), &server.RequestProtocolInfo{
			Modern: true, ProtocolVersion: mcp.ProtocolVersion20260728, LogLevel: level,
		})
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		msg  mcp.LoggingLevel
		want bool
	}{
		{"warn session, error", inSession("warn"), mcp.LoggingLevelError, true},
		{"warn session, warning", inSession("warn"), mcp.LoggingLevelWarning, true},
		{"warn session, info", inSession("warn"), mcp.LoggingLevelInfo, false},
		{"session that set none", inSession("never set"), mcp.LoggingLevelDebug, true},
		{"no session", inSession(""), mcp.LoggingLevelDebug, true},
		{"2026-07-28 at info, info", modern(mcp.LoggingLevelInfo), mcp.LoggingLevelInfo, true},
		{"2026-07-28 at info, debug", modern(mcp.LoggingLevelInfo), mcp.LoggingLevelDebug, false},
		{"2026-07-28 naming no level", modern(""), mcp.LoggingLevelEmergency, false},
	} {
		if got := f.Admits(tc.ctx, tc.msg); got != tc.want {
			t.Errorf("%s: Admits(%s) = %v, want %v", tc.name, tc.msg, got, tc.want)
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
