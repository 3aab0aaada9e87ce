package idp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// Upstream is an MCP server (mcp-go, Streamable HTTP) on 127.0.0.1 that
// accepts only JWT access tokens of one token service for one audience, as
// an upstream behind a token-exchanging hub would.
type Upstream struct {
	// URL is its endpoint: http://127.0.0.1:PORT/mcp.
	URL string

	issuer   string
	audience string
	keys     jwk.Set

	mu   sync.Mutex
	seen []Seen
}

// Seen is one request the upstream got, valid or not.
type Seen struct {
	// HTTPMethod is the request's method (POST, GET, DELETE).
	HTTPMethod string
	// Method is the JSON-RPC method of a POST holding one request or
	// notification ("initialize", "tools/call"), "" otherwise.
	Method string
	// Status is the HTTP status of the answer: 401 for a refused token.
	Status int
	// Token is the raw bearer token, "" when there was none. It is here
	// for the tests' assertions (that the caller's own token never came);
	// never log it.
	Token string
	// Subject (sub), Actor (act.sub) and Audience (aud) are the token's
	// claims: verified when Status is not 401, as the token claims them
	// otherwise (empty when it is not a JWT).
	Subject, Actor string
	Audience       []string
}

// identityKey is the request context key of a verified token's identity,
// which the tools read.
type identityKey struct{}

type identity struct{ subject, actor string }

// StartUpstream serves the upstream until t's cleanup. It accepts a
// request whose bearer token is signed by a key of issuer's JWKS, has
// issuer's iss, has not expired and has audience in its aud; anything else
// is 401 with a WWW-Authenticate challenge. The JWKS is read now, once, as
// a resource server caches it: the upstream keeps accepting tokens while
// the token service is down. Its tools: whoami (read-only) answers
// "subject=<sub> actor=<act.sub>" of the call's token, echo its text.
func StartUpstream(t testing.TB, issuer TokenIssuer, audience string) *Upstream {
	t.Helper()
	u := &Upstream{issuer: issuer.Issuer(), audience: audience}
	var err error
	if u.keys, err = fetchKeys(issuer.JWKSURL()); err != nil {
		t.Fatalf("idp upstream: %v", err)
	}

	s := server.NewMCPServer("idp-upstream", "1")
	s.AddTool(mcp.NewTool("whoami",
		mcp.WithDescription("Who the call's access token says the caller is, and who exchanged it."),
		mcp.WithReadOnlyHintAnnotation(true)),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id, _ := ctx.Value(identityKey{}).(identity)
			return mcp.NewToolResultText(fmt.Sprintf("subject=%s actor=%s", id.subject, id.actor)), nil
		})
	s.AddTool(mcp.NewTool("echo",
		mcp.WithDescription("Answers its text."),
		mcp.WithString("text", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			text, err := req.RequireString("text")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			return mcp.NewToolResultText(text), nil
		})
	mcpHandler := server.NewStreamableHTTPServer(s,
		// The identity the middleware verified, for the tools.
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if id, ok := r.Context().Value(identityKey{}).(identity); ok {
				return context.WithValue(ctx, identityKey{}, id)
			}
			return ctx
		}))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("idp upstream: listen: %v", err)
	}
	u.URL = "http://" + ln.Addr().String() + "/mcp"
	hs := &http.Server{Handler: u.authenticate(mcpHandler)}
	done := make(chan struct{})
	go func() { // owned by the test: ends when the cleanup closes the server
		defer close(done)
		_ = hs.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = hs.Close() // also ends open SSE streams, which Shutdown would wait for
		<-done
	})
	return u
}

// TokenIssuer is the token service whose tokens an Upstream takes: this
// package's Server, or another (Ory Hydra, hubtest/hydra).
type TokenIssuer interface {
	Issuer() string
	JWKSURL() string
}

// fetchKeys reads the token service's JWKS.
func fetchKeys(jwksURL string) (jwk.Set, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, jwksURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch the JWKS: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetch the JWKS: %s: %v", resp.Status, err)
	}
	set, err := jwk.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("parse the JWKS: %w", err)
	}
	return set, nil
}

// Seen returns every request so far, in the order they were answered.
func (u *Upstream) Seen() []Seen {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]Seen, len(u.seen))
	for i, s := range u.seen {
		s.Audience = slices.Clone(s.Audience)
		out[i] = s
	}
	return out
}

func (u *Upstream) record(s Seen) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.seen = append(u.seen, s)
}

// authenticate is the resource server in front of next: it records every
// request and passes on those with a valid token, with its identity in
// the context.
func (u *Upstream) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen := Seen{HTTPMethod: r.Method}
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, "read the request: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
			}
			if json.Unmarshal(body, &msg) == nil {
				seen.Method = msg.Method
			}
		}
		token, hasBearer := bearer(r.Header.Get("Authorization"))
		seen.Token = token
		tok, err := u.verify(token)
		if err != nil || !hasBearer {
			// What the refused token claims, for the assertions.
			if unverified, perr := jwt.ParseInsecure([]byte(token)); perr == nil {
				seen.Subject, seen.Actor, seen.Audience = claims(unverified)
			}
			seen.Status = http.StatusUnauthorized
			u.record(seen)
			challenge := `Bearer realm="idp-upstream"`
			if hasBearer {
				// RFC 6750 section 3.1; jwx's reasons name claims, not token contents.
				challenge += fmt.Sprintf(`, error="invalid_token", error_description=%q`, strings.ReplaceAll(err.Error(), `"`, "'"))
			}
			w.Header().Set("WWW-Authenticate", challenge)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		seen.Subject, seen.Actor, seen.Audience = claims(tok)
		ctx := context.WithValue(r.Context(), identityKey{}, identity{subject: seen.Subject, actor: seen.Actor})
		sw := &statusWriter{ResponseWriter: w, record: func(status int) {
			seen.Status = status
			u.record(seen)
		}}
		next.ServeHTTP(sw, r.WithContext(ctx))
		sw.ensureRecorded()
	})
}

// verify checks token as a resource server does: signature by a key of
// the JWKS (by kid), iss, exp (required) and aud.
func (u *Upstream) verify(token string) (jwt.Token, error) {
	if token == "" {
		return nil, fmt.Errorf("no bearer token")
	}
	return jwt.Parse([]byte(token),
		jwt.WithKeySet(u.keys),
		jwt.WithValidate(true),
		jwt.WithIssuer(u.issuer),
		jwt.WithRequiredClaim("exp"),
		jwt.WithAudience(u.audience),
	)
}

// bearer takes the token out of an Authorization header; the scheme is
// case-insensitive (RFC 9110 section 11.1).
func bearer(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(token) == "" {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// claims reads sub, act.sub and aud of tok.
func claims(tok jwt.Token) (subject, actor string, audience []string) {
	subject, _ = tok.Subject()
	audience, _ = tok.Audience()
	var act map[string]any
	if tok.Get("act", &act) == nil {
		actor, _ = act["sub"].(string)
	}
	return subject, actor, audience
}

// statusWriter reports the status of an answer once, when it is known:
// at the first WriteHeader, Write or Flush, or when the handler returns
// without any (200). A streamed answer is recorded as it starts.
type statusWriter struct {
	http.ResponseWriter
	record   func(status int)
	recorded bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.recorded && status >= 200 {
		w.recorded = true
		w.record(status)
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.ensureRecorded()
	return w.ResponseWriter.Write(b)
}

// Flush is http.Flusher's: mcp-go streams SSE answers.
func (w *statusWriter) Flush() {
	w.ensureRecorded()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the real writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *statusWriter) ensureRecorded() {
	if !w.recorded {
		w.recorded = true
		w.record(http.StatusOK)
	}
}
