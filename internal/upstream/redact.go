package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// An upstream may echo its request in an error body ("bad token Bearer
// …"), Go's HTTP errors quote the URL with its query, and a stdio child may
// print its environment. Every text that leaves a Client for a caller, the
// status shown in /api/mcp/tools or a log line passes through the client's
// redactor, which knows every credential the hub holds for this upstream.

// credentialValues are spec's static credentials: the bearer token, the
// OAuth client secret, configured header values, a stdio child's
// environment values, and the URL's userinfo and query. An OAuth access
// token is not known until it is fetched; oauthSource adds it.
func credentialValues(spec config.ServerSpec) []string {
	vals := append([]string{spec.BearerToken.Reveal()}, secrets.OfEndpoint(spec.URL, spec.Headers)...)
	if o := spec.OAuth; o != nil {
		vals = append(vals, o.ClientSecretValue.Reveal())
	}
	for _, v := range spec.Env {
		vals = append(vals, v)
	}
	return vals
}

// redactorNow is the redactor of every credential of this upstream as of
// now: the static ones and, with OAuth, the current access tokens.
func (c *Client) redactorNow() *secrets.Redactor {
	if c.oauth != nil {
		return c.oauth.redactorNow()
	}
	return c.redactor
}

// redact returns err with every credential of this upstream removed from
// its text; errors.Is and errors.As still see the original chain.
func (c *Client) redact(err error) error { return tidy(c.redactorNow().Error(err)) }

// redactText removes every credential of this upstream from s.
func (c *Client) redactText(s string) string { return c.redactorNow().String(s) }

// readExcerpt reads at most n bytes of an upstream's answer for an error
// message: trimmed, and redacted even of a credential the cut at n splits.
func (c *Client) readExcerpt(r io.Reader, n int) string {
	b, _ := io.ReadAll(io.LimitReader(r, int64(n)))
	return c.redactText(strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD")))
}

// redactJSON returns an upstream's JSON for a log line, redacted.
func (c *Client) redactJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	if red := c.redactorNow().JSON(b); red != nil {
		return red
	}
	b, _ = json.Marshal(c.redactText(string(b))) // as a JSON string
	return b
}

// Results are redacted like errors: an upstream that writes its request
// into a tool result ("you sent Authorization: Bearer …") must not hand
// the hub's credential for it to the caller. A result passes here once,
// on its way out of the client, whichever face asked: a result without a
// credential in it is passed on as it is, neither copied nor decoded.

// redactResult returns a tool result's JSON with this upstream's
// credentials replaced by secrets.Marker.
func (c *Client) redactResult(raw json.RawMessage) (json.RawMessage, error) {
	red := c.redactorNow().Result(raw)
	if red == nil {
		return nil, fmt.Errorf("redact the result of %s: it is not JSON", c.spec.Name)
	}
	return red, nil
}

// redactParsed is redactResult for a result mcp-go has decoded (a
// resource read, a prompt, completions): res itself when it holds no
// credential, else the redacted JSON decoded again with parse.
func redactParsed[T any](c *Client, res *T, parse func(*json.RawMessage) (*T, error)) (*T, error) {
	r := c.redactorNow()
	if res == nil || r.Empty() {
		return res, nil
	}
	raw, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("redact a result of %s: %w", c.spec.Name, err)
	}
	red := json.RawMessage(r.Result(raw))
	if len(red) == len(raw) && &red[0] == &raw[0] {
		return res, nil
	}
	out, err := parse(&red)
	if err != nil {
		return nil, fmt.Errorf("redact a result of %s: %w", c.spec.Name, err)
	}
	return out, nil
}

// decodeAs is a parse function for redactParsed of a plain struct.
func decodeAs[T any](raw *json.RawMessage) (*T, error) {
	out := new(T)
	return out, json.Unmarshal(*raw, out)
}

// redactFields returns the params of a notification the upstream sent
// during a caller's call (progress, log message), redacted.
func (c *Client) redactFields(m map[string]any) map[string]any {
	out, err := redactParsed(c, &m, decodeAs[map[string]any])
	if err != nil {
		return map[string]any{"level": m["level"], "data": secrets.Marker}
	}
	return *out
}

// redactRPC returns the upstream's JSON-RPC error with its message and data
// redacted: it goes to the caller as it is.
func (c *Client) redactRPC(e *RPCError) *RPCError {
	out := *e
	out.Message = c.redactText(e.Message)
	out.Data = c.redactorNow().JSON(e.Data)
	return &out
}

// redactingHandler redacts the message and attributes of the records
// mcp-go's transports log (they quote URLs and error bodies). r is asked
// per record: an OAuth access token changes while the handler lives.
type redactingHandler struct {
	slog.Handler
	r func() *secrets.Redactor
}

func (h redactingHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r().String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.Handler.Handle(ctx, out)
}

func (h redactingHandler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	r := h.r()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.String(v.String()))
	case slog.KindGroup:
		attrs := v.Group()
		red := make([]any, len(attrs))
		for i, ga := range attrs {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, r.String(err.Error()))
		}
		s := fmt.Sprint(v.Any())
		if red := r.String(s); red != s {
			return slog.String(a.Key, red)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}

func (h redactingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return redactingHandler{h.Handler.WithAttrs(red), h.r}
}

func (h redactingHandler) WithGroup(name string) slog.Handler {
	return redactingHandler{h.Handler.WithGroup(name), h.r}
}

// transportLog is the logger mcp-go's transports get: the hub's log at
// debug level, redacted.
func (c *Client) transportLog() *slog.Logger {
	return slog.New(redactingHandler{libLogger(c.log).Handler(), c.redactorNow})
}
