package upstream

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/secrets"
	"github.com/purko-io/mcp-hub/internal/upstream/liblog"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
)

// An upstream may echo its request in an error body ("bad token Bearer
// …"), Go's HTTP errors quote the URL with its query, and a stdio child may
// print its environment. Every text that leaves a Client for a caller, the
// status shown in /api/mcp/tools or a log line passes through the client's
// redactor, which knows every credential the hub holds for this upstream.

// credentialValues are spec's static credentials: the bearer token, the
// OAuth client secret, configured header values, a stdio child's
// environment values, and the URL's userinfo and query. An OAuth access
// token is not known until it is fetched; oauthclient.Source adds it.
func credentialValues(spec config.ServerSpec) []string {
	vals := append([]string{spec.BearerToken.Reveal()}, secrets.OfEndpoint(spec.URL, spec.Headers)...)
	if o := spec.ClientCredentials(); o != nil {
		vals = append(vals, o.ClientSecretValue.Reveal())
	}
	for _, v := range spec.Env {
		vals = append(vals, v)
	}
	return vals
}

// credentials are the hub's credentials for one upstream and the means of
// keeping them in: the headers that carry them on every request, and the
// redactor that removes them from every text that leaves the client. They
// are a type of their own so that what may hold a secret is in one place
// and the Client only asks it.
type credentials struct {
	name   string            // the server's, for errors
	header map[string]string // configured headers (spec.Headers)
	bearer config.Secret     // spec.BearerToken
	// static redacts the credentials known from the spec.
	static *secrets.Redactor
	// oauth gets the hub's access token for an upstream behind an
	// authorization server (spec.OAuth); nil otherwise (package oauthclient).
	oauth *oauthclient.Source
}

// newCredentials returns spec's credentials; oauth is nil without spec.OAuth.
func newCredentials(spec config.ServerSpec, static []string, oauth *oauthclient.Source) credentials {
	return credentials{name: spec.Name, header: spec.Headers, bearer: spec.BearerToken,
		static: secrets.NewRedactor(static...), oauth: oauth}
}

// headers are the headers every HTTP request to the upstream carries: the
// configured ones and the bearer token. A fresh map each time: the
// transport owns it.
func (cr *credentials) headers() map[string]string {
	h := make(map[string]string, len(cr.header)+1)
	for k, v := range cr.header {
		h[k] = v
	}
	if tok := cr.bearer.Reveal(); tok != "" {
		h["Authorization"] = "Bearer " + tok
	}
	return h
}

// now is the redactor of every credential of this upstream as of now: the
// static ones and, with OAuth, the current access tokens.
func (cr *credentials) now() *secrets.Redactor {
	if cr.oauth != nil {
		return cr.oauth.Redactor()
	}
	return cr.static
}

// redact returns err with every credential of this upstream removed from
// its text; errors.Is and errors.As still see the original chain.
func (cr *credentials) redact(err error) error { return tidy(cr.now().Error(err)) }

// text removes every credential of this upstream from s.
func (cr *credentials) text(s string) string { return cr.now().String(s) }

// readExcerpt reads at most n bytes of an upstream's answer for an error
// message: trimmed, and redacted even of a credential the cut at n splits.
func (cr *credentials) readExcerpt(r io.Reader, n int) string {
	b, _ := io.ReadAll(io.LimitReader(r, int64(n)))
	return cr.text(strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD")))
}

// json returns an upstream's JSON for a log line, redacted.
func (cr *credentials) json(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	if red := cr.now().JSON(b); red != nil {
		return red
	}
	b, _ = json.Marshal(cr.text(string(b))) // as a JSON string
	return b
}

// Results are redacted like errors: an upstream that writes its request
// into a tool result ("you sent Authorization: Bearer …") must not hand
// the hub's credential for it to the caller. A result passes here once,
// on its way out of the client, whichever face asked: a result without a
// credential in it is passed on as it is, neither copied nor decoded.

// result returns a tool result's JSON with this upstream's
// credentials replaced by secrets.Marker.
func (cr *credentials) result(raw json.RawMessage) (json.RawMessage, error) {
	red := cr.now().Result(raw)
	if red == nil {
		return nil, fmt.Errorf("redact the result of %s: it is not JSON", cr.name)
	}
	return red, nil
}

// redactParsed is redactResult for a result mcp-go has decoded (a
// resource read, a prompt, completions): res itself when it holds no
// credential, else the redacted JSON decoded again with parse.
func redactParsed[T any](cr *credentials, res *T, parse func(*json.RawMessage) (*T, error)) (*T, error) {
	r := cr.now()
	if res == nil || r.Empty() {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("redact a result of %s: %w", cr.name, err)
	}
	red := json.RawMessage(r.Result(raw))
	if len(red) == len(raw) && &red[0] == &raw[0] {
		return res, nil
	}
	out, err := parse(&red)
	if err != nil {
		return nil, fmt.Errorf("redact a result of %s: %w", cr.name, err)
	}
	return out, nil
}

// decodeAs is a parse function for redactParsed of a plain struct.
func decodeAs[T any](raw *json.RawMessage) (*T, error) {
	out := new(T)
	return out, json.Unmarshal(*raw, out)
}

// fields returns the params of a notification the upstream sent
// during a caller's call (progress, log message), redacted.
func (cr *credentials) fields(m map[string]any) map[string]any {
	out, err := redactParsed(cr, &m, decodeAs[map[string]any])
	if err != nil {
		return map[string]any{"level": m["level"], "data": secrets.Marker}
	}
	return *out
}

// rpc returns the upstream's JSON-RPC error with its message and data
// redacted: it goes to the caller as it is.
func (cr *credentials) rpc(e *RPCError) *RPCError {
	out := *e
	out.Message = cr.text(e.Message)
	out.Data = cr.now().JSON(e.Data)
	return &out
}

// transportLog is the logger mcp-go's transports get: the hub's log at
// debug level (log), redacted.
func (cr *credentials) transportLog(log zerolog.Logger) *slog.Logger {
	return liblog.New(log, cr.now)
}
