package config

import (
	"fmt"
	"time"

	"github.com/purko-io/mcp-hub/internal/origins"
)

// Defaults and bounds of HTTPSettings.
const (
	DefaultMaxBodyBytes         = 4 << 20
	MaxMaxBodyBytes             = 1 << 30
	DefaultMaxSessions          = 10000
	DefaultMaxSessionsPerCaller = 1000
	DefaultAnonymousShare       = 25 // percent of MaxSessions
	DefaultSessionIdleTimeout   = 5 * time.Minute
	MinSessionIdleTimeout       = 10 * time.Second
	DefaultReadTimeout          = 30 * time.Second
	DefaultReadHeaderTimeout    = 10 * time.Second
)

// HTTPSettings bound what callers can make the hub's HTTP endpoint hold,
// so one caller (or a stray browser page) cannot exhaust its memory,
// sessions or connections. They are read at start-up. A zero or omitted
// value means the default.
type HTTPSettings struct {
	// MaxBodyBytes caps one request body; default 4 MiB, at most 1 GiB.
	MaxBodyBytes int64 `json:"maxBodyBytes"`
	// AllowedOrigins are browser Origins allowed in addition to the hub's
	// own, each exactly scheme://host[:port] (http or https, no path). "*"
	// is refused: any web page could then drive the hub with the
	// browser's network position.
	AllowedOrigins []string `json:"allowedOrigins"`
	// MaxSessions caps the MCP sessions held at once; default 10000.
	MaxSessions int `json:"maxSessions"`
	// MaxSessionsPerCaller caps one caller's sessions, so one caller cannot
	// take them all; default 1000, or MaxSessions when that is smaller.
	MaxSessionsPerCaller int `json:"maxSessionsPerCaller"`
	// AnonymousShare is the percent of MaxSessions anonymous callers may
	// hold together, 0-100; default 25, 0: none. Admins get 16 past MaxSessions.
	AnonymousShare *int `json:"anonymousShare"`
	// SessionIdleTimeout ends a session unused this long; default 5m, at
	// least 10s.
	SessionIdleTimeout Duration `json:"sessionIdleTimeout"`
	// ReadTimeout bounds reading a whole request, body included; default
	// 30s.
	ReadTimeout Duration `json:"readTimeout"`
	// ReadHeaderTimeout bounds reading a request's headers; default 10s.
	ReadHeaderTimeout Duration `json:"readHeaderTimeout"`
}

// AnonymousPercent is AnonymousShare, or its default when unset.
func (h HTTPSettings) AnonymousPercent() int {
	if h.AnonymousShare == nil {
		return DefaultAnonymousShare
	}
	return *h.AnonymousShare
}

func (h *HTTPSettings) applyDefaults() {
	setDefault(&h.MaxBodyBytes, DefaultMaxBodyBytes)
	setDefault(&h.MaxSessions, DefaultMaxSessions)
	// A smaller total with the per-caller cap left out must not fail
	// validation over a value the operator never wrote.
	setDefault(&h.MaxSessionsPerCaller, min(DefaultMaxSessionsPerCaller, max(h.MaxSessions, 1)))
	setDefault(&h.AnonymousShare, new(int(DefaultAnonymousShare)))
	setDefault(&h.SessionIdleTimeout, Duration(DefaultSessionIdleTimeout))
	setDefault(&h.ReadTimeout, Duration(DefaultReadTimeout))
	setDefault(&h.ReadHeaderTimeout, Duration(DefaultReadHeaderTimeout))
}

func (h HTTPSettings) validate() error {
	if h.MaxBodyBytes <= 0 || h.MaxBodyBytes > MaxMaxBodyBytes {
		return fmt.Errorf("http.maxBodyBytes: %d is not within 1..%d (1 GiB)", h.MaxBodyBytes, MaxMaxBodyBytes)
	}
	if h.MaxSessions <= 0 {
		return fmt.Errorf("http.maxSessions: %d must be positive", h.MaxSessions)
	}
	if h.MaxSessionsPerCaller <= 0 {
		return fmt.Errorf("http.maxSessionsPerCaller: %d must be positive", h.MaxSessionsPerCaller)
	}
	if h.MaxSessionsPerCaller > h.MaxSessions {
		return fmt.Errorf("http.maxSessionsPerCaller: %d is more than http.maxSessions %d", h.MaxSessionsPerCaller, h.MaxSessions)
	}
	if s := *h.AnonymousShare; s < 0 || s > 100 {
		return fmt.Errorf("http.anonymousShare: %d is not a percent within 0..100", s)
	}
	if h.SessionIdleTimeout.D() < MinSessionIdleTimeout {
		return fmt.Errorf("http.sessionIdleTimeout: %s is shorter than %s", h.SessionIdleTimeout.D(), MinSessionIdleTimeout)
	}
	for i, o := range h.AllowedOrigins {
		if err := origins.Check(o); err != nil {
			return fmt.Errorf("http.allowedOrigins[%d]: %w", i, err)
		}
	}
	return nil
}
