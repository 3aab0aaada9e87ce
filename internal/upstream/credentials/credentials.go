// Package credentials holds the hub's credentials for one upstream and
// keeps them in. An upstream may echo its request in an error body ("bad
// token Bearer …"), Go's HTTP errors quote the URL with its query, and a
// stdio child may print its environment. So every text that leaves an
// upstream's client for a caller, the status shown in /api/mcp/tools or
// a log line passes through its Set, which knows every credential the hub
// holds for this upstream: the static ones of its spec (Values) and, with
// OAuth, the access tokens as they are fetched (package oauthclient).
//
// A package of its own so that what may hold a secret is in one place:
// the headers that carry the credentials, and the redactor that removes
// them; the upstream's client only asks it.
package credentials

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/jsonrpc"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/upstream/liblog"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
	"github.com/purko-io/mcp-hub/internal/upstream/statustext"
)

// Values are spec's static credentials: the bearer token, the OAuth
// client secret, configured header values, a stdio child's environment
// values, and the URL's userinfo and query. An OAuth access token is not
// known until it is fetched; oauthclient.Source adds it.
func Values(spec config.ServerSpec) []string {
	vals := append([]string{spec.BearerToken.Reveal()}, secrets.OfEndpoint(spec.URL, spec.Headers)...)
	if o := spec.ClientCredentials(); o != nil {
		vals = append(vals, o.ClientSecretValue.Reveal())
	}
	for _, v := range spec.Env {
		vals = append(vals, v)
	}
	return vals
}

// Set is the hub's credentials for one upstream and the means of keeping
// them in: the headers that carry them on every request, and the redactor
// that removes them from every text that leaves the client.
type Set struct {
	spec   config.ServerSpec
	name   string            // the server's, for errors
	header map[string]string // configured headers (spec.Headers)
	bearer config.Secret     // spec.BearerToken
	// static redacts the credentials known from the spec.
	static *secrets.Redactor
	// oauth gets the hub's access token for an upstream behind an
	// authorization server (spec.OAuth); nil otherwise.
	oauth *oauthclient.Source
	// held redacts, besides static, the tokens the hub's own requests
	// carried lately without a credential of the hub's (a caller's grant,
	// servers with userOAuth): the current and the previous one (Hold).
	mu   sync.Mutex
	held *secrets.Redactor
	last [2]string
}

// New returns spec's credentials; oauth, the source of the hub's own
// access token for spec (made with Values(spec)), is nil without
// spec.OAuth.
func New(spec config.ServerSpec, oauth *oauthclient.Source) *Set {
	return &Set{spec: spec, name: spec.Name, header: spec.Headers, bearer: spec.BearerToken,
		static: secrets.NewRedactor(Values(spec)...), oauth: oauth}
}

// OAuth is the source of the hub's access token for the upstream; nil
// without spec.OAuth.
func (s *Set) OAuth() *oauthclient.Source { return s.oauth }

// Headers are the headers every HTTP request to the upstream carries: the
// configured ones and the bearer token. A fresh map each time: the
// transport owns it.
func (s *Set) Headers() map[string]string {
	h := make(map[string]string, len(s.header)+1)
	for k, v := range s.header {
		h[k] = v
	}
	if tok := s.bearer.Reveal(); tok != "" {
		h["Authorization"] = "Bearer " + tok
	}
	return h
}

// Redactor is the redactor of every credential of this upstream as of
// now: the static ones and, with OAuth, the current access tokens.
func (s *Set) Redactor() *secrets.Redactor {
	if s.oauth != nil {
		return s.oauth.Redactor()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held != nil {
		return s.held
	}
	return s.static
}

// Hold makes the redactor remove token too, and the one held before it:
// a caller's grant token the hub's own requests (lists) carry must not
// come back in what every caller reads, whatever the upstream echoes.
func (s *Set) Hold(token string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token != "" && token != s.last[0] {
		s.last = [2]string{token, s.last[0]}
		s.held = secrets.NewRedactor(append(s.last[:], Values(s.spec)...)...)
	}
	return token
}

// Redact returns err with every credential of this upstream removed from
// its text, and a wrapping repeated at once removed too (statustext.Tidy);
// errors.Is and errors.As still see the original chain.
func (s *Set) Redact(err error) error { return statustext.Tidy(s.Redactor().Error(err)) }

// Text removes every credential of this upstream from text.
func (s *Set) Text(text string) string { return s.Redactor().String(text) }

// ReadExcerpt reads at most n bytes of an upstream's answer for an error
// message: trimmed, and redacted even of a credential the cut at n splits.
func (s *Set) ReadExcerpt(r io.Reader, n int) string {
	b, _ := io.ReadAll(io.LimitReader(r, int64(n)))
	return s.Text(strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD")))
}

// JSON returns an upstream's JSON for a log line, redacted.
func (s *Set) JSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	if red := s.Redactor().JSON(b); red != nil {
		return red
	}
	b, _ = json.Marshal(s.Text(string(b))) // as a JSON string
	return b
}

// Results are redacted like errors: an upstream that writes its request
// into a tool result ("you sent Authorization: Bearer …") must not hand
// the hub's credential for it to the caller. A result passes here once,
// on its way out of the client, whichever face asked: a result without a
// credential in it is passed on as it is, neither copied nor decoded.

// Result returns a tool result's JSON with this upstream's credentials
// replaced by secrets.Marker.
func (s *Set) Result(raw json.RawMessage) (json.RawMessage, error) {
	red := s.Redactor().Result(raw)
	if red == nil {
		return nil, fmt.Errorf("redact the result of %s: it is not JSON", s.name)
	}
	return red, nil
}

// Parsed is Result for a result mcp-go has decoded (a resource read, a
// prompt, completions): res itself when it holds no credential, else the
// redacted JSON decoded again with parse.
func Parsed[T any](s *Set, res *T, parse func(*json.RawMessage) (*T, error)) (*T, error) {
	r := s.Redactor()
	if res == nil || r.Empty() {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("redact a result of %s: %w", s.name, err)
	}
	red := json.RawMessage(r.Result(raw))
	if len(red) == len(raw) && &red[0] == &raw[0] {
		return res, nil
	}
	out, err := parse(&red)
	if err != nil {
		return nil, fmt.Errorf("redact a result of %s: %w", s.name, err)
	}
	return out, nil
}

// DecodeAs is a parse function for Parsed of a plain struct.
func DecodeAs[T any](raw *json.RawMessage) (*T, error) {
	out := new(T)
	return out, json.Unmarshal(*raw, out)
}

// Fields returns the params of a notification the upstream sent during a
// caller's call (progress, log message), redacted.
func (s *Set) Fields(m map[string]any) map[string]any {
	out, err := Parsed(s, &m, DecodeAs[map[string]any])
	if err != nil {
		return map[string]any{"level": m["level"], "data": secrets.Marker}
	}
	return *out
}

// RPC returns the upstream's JSON-RPC error with its message and data
// redacted: it goes to the caller as it is.
func (s *Set) RPC(e *jsonrpc.Error) *jsonrpc.Error {
	out := *e
	out.Message = s.Text(e.Message)
	out.Data = s.Redactor().JSON(e.Data)
	return &out
}

// TransportLog is the logger mcp-go's transports get: the hub's log at
// debug level (log), redacted.
func (s *Set) TransportLog(log zerolog.Logger) *slog.Logger {
	return liblog.New(log, s.Redactor)
}
