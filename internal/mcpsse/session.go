package mcpsse

import (
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// session is the mcp-go view of one stream: what mcp-go records of its
// client (initialized, log level, client info, protocol version) and the
// channel its notifications reach the stream by. It takes no server
// requests (sampling, roots, elicitation): legacy SSE clients are not
// offered them, as with mcp-go's SSEServer.
type session struct {
	id            string
	notifications chan mcp.JSONRPCNotification

	initialized     atomic.Bool
	logLevel        atomic.Pointer[mcp.LoggingLevel]
	clientInfo      atomic.Pointer[mcp.Implementation]
	clientCaps      atomic.Pointer[mcp.ClientCapabilities]
	protocolVersion atomic.Pointer[string]
}

var (
	_ server.ClientSession              = (*session)(nil)
	_ server.SessionWithLogging         = (*session)(nil)
	_ server.SessionWithClientInfo      = (*session)(nil)
	_ server.SessionWithProtocolVersion = (*session)(nil)
)

func newSession(id string) *session {
	return &session{id: id, notifications: make(chan mcp.JSONRPCNotification, sessionNotificationBuffer)}
}

// SessionID implements server.ClientSession.
func (s *session) SessionID() string { return s.id }

// NotificationChannel implements server.ClientSession: the stream writes
// what arrives here.
func (s *session) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notifications }

// Initialize implements server.ClientSession; mcp-go calls it on
// initialize.
func (s *session) Initialize() { s.initialized.Store(true) }

// Initialized implements server.ClientSession; mcp-go broadcasts only to
// initialized sessions.
func (s *session) Initialized() bool { return s.initialized.Load() }

// SetLogLevel implements server.SessionWithLogging (logging/setLevel).
func (s *session) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(&level) }

// GetLogLevel implements server.SessionWithLogging: errors only until the
// client sets a level, as on mcp-go's SSEServer.
func (s *session) GetLogLevel() mcp.LoggingLevel { return load(&s.logLevel, mcp.LoggingLevelError) }

// GetClientInfo implements server.SessionWithClientInfo.
func (s *session) GetClientInfo() mcp.Implementation {
	return load(&s.clientInfo, mcp.Implementation{})
}

// SetClientInfo implements server.SessionWithClientInfo.
func (s *session) SetClientInfo(info mcp.Implementation) { s.clientInfo.Store(&info) }

// GetClientCapabilities implements server.SessionWithClientInfo.
func (s *session) GetClientCapabilities() mcp.ClientCapabilities {
	return load(&s.clientCaps, mcp.ClientCapabilities{})
}

// SetClientCapabilities implements server.SessionWithClientInfo.
func (s *session) SetClientCapabilities(caps mcp.ClientCapabilities) { s.clientCaps.Store(&caps) }

// ProtocolVersion implements server.SessionWithProtocolVersion: the
// version initialize negotiated, "" before.
func (s *session) ProtocolVersion() string { return load(&s.protocolVersion, "") }

// SetProtocolVersion records the version initialize negotiated; mcp-go
// finds it through an interface of its own.
func (s *session) SetProtocolVersion(version string) { s.protocolVersion.Store(&version) }

// load is what p points to, or def while it points nowhere.
func load[T any](p *atomic.Pointer[T], def T) T {
	if v := p.Load(); v != nil {
		return *v
	}
	return def
}
