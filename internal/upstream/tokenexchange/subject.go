package tokenexchange

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"
)

// The token types of RFC 8693 section 3 the hub sends and asks for.
const (
	TypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// Kind says where a caller's token came from, which decides whether a
// server's exchange takes it (config.TokenExchange.SubjectToken) and the
// subject_token_type it is sent with.
type Kind uint8

// The kinds of subject tokens.
const (
	// None: the caller has no token an authorization server could take
	// (a hub token, anonymous, stdio).
	None Kind = iota
	// OAuth: an access token of a trusted issuer, checked by the hub.
	OAuth
	// ServiceAccount: a projected ServiceAccount token, reviewed by the
	// cluster; sent as a JWT.
	ServiceAccount
)

// Subject is a caller's own token, as the hub received and checked it: what
// a server with token exchange trades for a token of its own. It is carried
// with the caller through one request and never printed: String and JSON
// show nothing of it.
type Subject struct {
	token  string
	kind   Kind
	issuer string    // OAuth: the issuer that signed it
	expiry time.Time // zero: read from the token when it is exchanged
}

// OAuthSubject is an OAuth caller's access token, issued by issuer, valid
// until expiry.
func OAuthSubject(token, issuer string, expiry time.Time) Subject {
	return Subject{token: token, kind: OAuth, issuer: issuer, expiry: expiry}
}

// ServiceAccountSubject is the projected ServiceAccount token a pod called
// with. Its expiry is read from its exp claim on a cache miss only.
func ServiceAccountSubject(token string) Subject {
	return Subject{token: token, kind: ServiceAccount}
}

// Kind says where the token came from; None for the zero Subject.
func (s Subject) Kind() Kind { return s.kind }

// Issuer is the OAuth issuer of the token, "" for other kinds.
func (s Subject) Issuer() string { return s.issuer }

// String never shows the token.
func (s Subject) String() string {
	switch s.kind {
	case OAuth:
		return "oauth access token of " + s.issuer
	case ServiceAccount:
		return "service account token"
	}
	return "none"
}

// GoString never shows the token (%#v).
func (s Subject) GoString() string { return "tokenexchange.Subject{" + s.String() + "}" }

// MarshalJSON never shows the token.
func (s Subject) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// tokenType is the subject_token_type the token is sent with.
func (s Subject) tokenType() string {
	if s.kind == ServiceAccount {
		return TypeJWT
	}
	return TypeAccessToken
}

// expires is when the token stops being valid: the expiry the hub checked,
// else its exp claim; zero when neither is known.
func (s Subject) expires() time.Time {
	if !s.expiry.IsZero() {
		return s.expiry
	}
	return claimsOf(s.token).expiry()
}

// claims are the few claims of a JWT the hub reads without checking the
// signature: of a token the hub has already checked (the caller's), or
// of one the authorization server has just handed it over TLS, to say who
// the server will see. Never to decide anything.
type claims struct {
	Sub string  `json:"sub"`
	Exp float64 `json:"exp"`
	Act *struct {
		Sub string `json:"sub"`
	} `json:"act"`
}

func (c claims) expiry() time.Time {
	if c.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(c.Exp), 0)
}

func (c claims) actor() string {
	if c.Act == nil {
		return ""
	}
	return c.Act.Sub
}

// claimsOf reads the payload of a compact JWS; zero claims for anything
// else (an opaque token).
func claimsOf(token string) claims {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > 64<<10 {
		return claims{}
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return claims{}
	}
	var c claims
	if json.Unmarshal(raw, &c) != nil {
		return claims{}
	}
	return c
}

type subjectKey struct{}

// WithSubject carries the caller's token to the upstream client that may
// exchange it for this call.
func WithSubject(ctx context.Context, s Subject) context.Context {
	if s.kind == None {
		return ctx
	}
	return context.WithValue(ctx, subjectKey{}, s)
}

// SubjectFrom is the caller's token WithSubject carried; the zero Subject
// when none.
func SubjectFrom(ctx context.Context) Subject {
	s, _ := ctx.Value(subjectKey{}).(Subject)
	return s
}

// Seen is who a server saw call: the subject (and actor, for delegation)
// of the token the exchange minted, for the audit line and the span. The
// pipeline asks for it with WithSeen; the exchange fills it in.
type Seen struct {
	Subject string
	Actor   string
}

type seenKey struct{}

// WithSeen returns a context in which an exchange for the call records who
// the server saw in the returned Seen.
func WithSeen(ctx context.Context) (context.Context, *Seen) {
	s := new(Seen)
	return context.WithValue(ctx, seenKey{}, s), s
}

// SeenIn is the Seen WithSeen put in ctx, nil when none.
func SeenIn(ctx context.Context) *Seen {
	s, _ := ctx.Value(seenKey{}).(*Seen)
	return s
}
