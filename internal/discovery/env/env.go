// Package env reads upstream servers from the MCP_SERVERS environment
// variable in the Purko executor's format, so the hub can stand in front of an
// existing executor configuration unchanged.
package env

import (
	"context"
	"encoding/json"
	"errors"
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
//
// An entry's token is sent as a bearer token with auth "bearer" and, as
// Purko's executor does, with no auth at all: `[{"name","url","token"}]`
// is the form Purko documents. A token that cannot be used (auth "none"
// beside it, a blank token, one no header can carry) is never dropped in
// silence: the entry is refused with an error naming it, and listed as a
// server in error (spec.Problem) so that listings say why too. No error
// holds the token.
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
		tokenErr, err := e.credential(&s)
		if err != nil {
			errs = append(errs, fmt.Errorf("MCP_SERVERS[%d] (%s).%w", i, e.Name, err))
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
		if tokenErr != nil {
			err := fmt.Errorf("MCP_SERVERS[%d] (%s).%w", i, e.Name, tokenErr)
			errs = append(errs, err)
			s.Problem = err.Error() + "; the server is not used without it"
		}
		specs = append(specs, s)
	}
	return specs, errs
}

// credential puts the entry's token on s as its bearer token. tokenErr
// says why a token that was given cannot be used (the entry is listed in
// error, without it); err, an auth the hub does not know (the entry is
// not listed).
func (e entry) credential(s *config.ServerSpec) (tokenErr, err error) {
	switch strings.ToLower(e.Auth) {
	case "":
		if e.Token == "" {
			return nil, nil
		}
	case "bearer":
		if e.Token == "" {
			return errors.New("token: auth is bearer but token is empty"), nil
		}
	case "none":
		if e.Token != "" {
			return errors.New(`token: auth is "none" but a token is given; drop auth to send the token as a bearer token, or drop the token`), nil
		}
		return nil, nil
	default:
		return nil, fmt.Errorf("auth: %q is not one of none, bearer", e.Auth)
	}
	if err := usableToken(e.Token); err != nil {
		return err, nil
	}
	s.BearerToken = config.Secret(e.Token)
	return nil, nil
}

// usableToken says why tok cannot be sent as "Authorization: Bearer
// tok", without quoting it.
func usableToken(tok string) error {
	if strings.TrimSpace(tok) == "" {
		return errors.New("token: is blank")
	}
	if strings.TrimSpace(tok) != tok {
		return errors.New("token: starts or ends with white space (a newline left by the tool that wrote it?)")
	}
	for i := 0; i < len(tok); i++ {
		if c := tok[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			return fmt.Errorf("token: holds a character an HTTP header cannot carry (at byte %d)", i)
		}
	}
	return nil
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
		s.log.Error().Err(err).Msg("MCP_SERVERS entry refused")
	}
	select {
	case out <- discovery.Snapshot{Source: SourceName, Servers: specs}:
	case <-ctx.Done():
	}
}
