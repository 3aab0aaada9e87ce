package config

import (
	"fmt"
	"math"
)

// LimitSettings bound how often and how many calls at once each caller and
// each upstream server may make (when set), so one greedy caller cannot
// starve the others, and the calls in flight of all callers. A call over a
// bound is refused at once with a retry-after, never queued.
type LimitSettings struct {
	// MaxInFlight bounds the calls in flight on one replica, all callers'
	// together, so that callers each under its own limits cannot exhaust it
	// (anonymous ones hold http.anonymousShare of it); default 512, never off.
	MaxInFlight *int `json:"maxInFlight,omitempty"`
	// PerCaller applies to every caller (a token, a ServiceAccount, each
	// anonymous network: a /24, a /64) that has no limits of its own
	// (auth.tokens[].limits).
	PerCaller Limits `json:"perCaller"`
	// PerUpstream applies to every server that has no limits of its own
	// (servers[].limits, or the MCPServer's annotations).
	PerUpstream Limits `json:"perUpstream"`
}

// Limits are one caller's or one server's bounds; zero or absent: none.
type Limits struct {
	// Rate is the sustained calls per second (a token bucket).
	Rate float64 `json:"rate,omitempty"`
	// Burst is how many calls may come back to back after a quiet spell;
	// with a rate and no burst it is ceil(rate).
	Burst int `json:"burst,omitempty"`
	// MaxInFlight bounds the calls running at once.
	MaxInFlight int `json:"maxInFlight,omitempty"`
}

// DefaultMaxInFlight is limits.maxInFlight when omitted: far more calls than
// a fleet of busy agents runs at once, far fewer than would exhaust a replica.
const DefaultMaxInFlight = 512

// Zero reports whether l bounds nothing.
func (l Limits) Zero() bool { return l.Rate == 0 && l.MaxInFlight == 0 }

// maxRate keeps a rate in the range a token bucket computes with exactly.
const maxRate = 1e6

// Normalize checks l and fills Burst when a rate is set without one. The
// error starts with the field name, so the caller can say where l is.
func (l *Limits) Normalize() error {
	switch {
	case math.IsNaN(l.Rate) || l.Rate < 0 || l.Rate > maxRate:
		return fmt.Errorf("rate: %v is not within 0..%g calls per second", l.Rate, float64(maxRate))
	case l.Burst < 0:
		return fmt.Errorf("burst: %d must not be negative", l.Burst)
	case l.MaxInFlight < 0:
		return fmt.Errorf("maxInFlight: %d must not be negative", l.MaxInFlight)
	case l.Burst > 0 && l.Rate == 0:
		return fmt.Errorf("burst: %d is set without a rate; set rate too, or drop burst", l.Burst)
	}
	if l.Rate > 0 && l.Burst < 1 {
		l.Burst = int(math.Ceil(l.Rate))
	}
	return nil
}

func (s *LimitSettings) normalize() error {
	if n := *s.MaxInFlight; n <= 0 {
		return fmt.Errorf("limits.maxInFlight: %d must be positive (omit it for the default, %d)", n, DefaultMaxInFlight)
	}
	if err := s.PerCaller.Normalize(); err != nil {
		return fmt.Errorf("limits.perCaller.%w", err)
	}
	if err := s.PerUpstream.Normalize(); err != nil {
		return fmt.Errorf("limits.perUpstream.%w", err)
	}
	if c, u := s.PerCaller.MaxInFlight, s.PerUpstream.MaxInFlight; c > 0 && u > 0 && c >= u {
		return fmt.Errorf("limits.perCaller.maxInFlight: %d is not below limits.perUpstream.maxInFlight %d, so one caller could take every slot of an upstream", c, u)
	}
	return nil
}
