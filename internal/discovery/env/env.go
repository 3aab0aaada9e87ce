// Package env reads upstream servers from the MCP_SERVERS environment
// variable in the Purko executor's format, so the hub can stand in front of an
// existing executor configuration unchanged.
package env

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/discovery"
)

// SourceName is the name of this source in snapshots and listings.
const SourceName = "env"

// entry is one element of MCP_SERVERS as Purko's executor writes it.
type entry struct {
	Name  string `json:"name"`
	URL   string `json:"url"`
	Auth  string `json:"auth"`
	Token string `json:"token"`
	// Transport is a hub extension; Purko omits it.
	Transport config.Transport `json:"transport"`
}

// Parse turns the MCP_SERVERS value into specs. Entries that are wrong are
// returned as errors naming the entry; the good ones are still used.
func Parse(value string) ([]config.ServerSpec, []error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return nil, nil
	}
	var entries []entry
	if err := json.Unmarshal([]byte(value), &entries); err != nil {
		return nil, []error{fmt.Errorf("MCP_SERVERS: not a JSON list of {name,url,auth,token}: %w", err)}
	}
	var specs []config.ServerSpec
	var errs []error
	seen := map[string]bool{}
	for i, e := range entries {
		s := config.ServerSpec{Name: e.Name, URL: e.URL, Transport: e.Transport, Source: SourceName}
		switch strings.ToLower(e.Auth) {
		case "", "none":
		case "bearer":
			if e.Token == "" {
				errs = append(errs, fmt.Errorf("MCP_SERVERS[%d] (%s).token: auth is bearer but token is empty", i, e.Name))
				continue
			}
			s.BearerToken = config.Secret(e.Token)
		default:
			errs = append(errs, fmt.Errorf("MCP_SERVERS[%d] (%s).auth: %q is not one of none, bearer", i, e.Name, e.Auth))
			continue
		}
		if err := s.Normalize(); err != nil {
			errs = append(errs, fmt.Errorf("MCP_SERVERS[%d] (%s).%w", i, e.Name, err))
			continue
		}
		if seen[s.Name] {
			errs = append(errs, fmt.Errorf("MCP_SERVERS[%d].name: %q appears twice; the first is used", i, s.Name))
			continue
		}
		seen[s.Name] = true
		specs = append(specs, s)
	}
	return specs, errs
}

// Source emits the servers of MCP_SERVERS once; the value cannot change while
// the process runs.
type Source struct {
	value string
	log   zerolog.Logger
}

// New returns a source for the given MCP_SERVERS value.
func New(value string, log zerolog.Logger) *Source {
	return &Source{value: value, log: log}
}

// Name implements discovery.Source.
func (s *Source) Name() string { return SourceName }

// Run implements discovery.Source.
func (s *Source) Run(ctx context.Context, out chan<- discovery.Snapshot) {
	specs, errs := Parse(s.value)
	for _, err := range errs {
		s.log.Error().Err(err).Msg("ignoring bad MCP_SERVERS entry")
	}
	select {
	case out <- discovery.Snapshot{Source: SourceName, Servers: specs}:
	case <-ctx.Done():
	}
}
