// Package identity is the words for who calls through the hub, as the
// layers that decide on a call and the upstream clients that carry it both
// need them: the caller's own token (Subject), where it came from (Kind),
// and who an upstream saw (Seen), each carried in a call's context.
//
// It is a leaf (the standard library only) so that the callers, the
// pipeline and the catalog can name a caller's identity without importing
// an upstream package, and the token exchange, which trades the token,
// imports it rather than defining it.
package identity

import (
	"context"
	"encoding/json"
	"time"
)

// Kind says where a caller's token came from, which decides whether a
// server's exchange takes it and the token type it is sent with.
type Kind uint8

// The kinds of subject tokens.
const (
	// None: the caller has no token an authorization server could take
	// (a hub token, anonymous, stdio).
	None Kind = iota
	// OAuth: an access token of a trusted issuer, checked by the hub.
	OAuth
	// ServiceAccount: a projected ServiceAccount token, reviewed by the
	// cluster.
	ServiceAccount
)

// Subject is a caller's own token, as the hub received and checked it: what
// a server with token exchange trades for a token of its own. It is carried
// with the caller through one request and never printed: String, GoString
// and JSON show nothing of it.
type Subject struct {
	token  string
	kind   Kind
	issuer string    // OAuth: the issuer that signed it
	expiry time.Time // zero: read from the token when it is exchanged
	pod    string    // ServiceAccount: the UID of the pod it is bound to
}

// OAuthSubject is an OAuth caller's access token, issued by issuer, valid
// until expiry.
func OAuthSubject(token, issuer string, expiry time.Time) Subject {
	return Subject{token: token, kind: OAuth, issuer: issuer, expiry: expiry}
}

// ServiceAccountSubject is the projected ServiceAccount token a pod called
// with. Its expiry is read from its exp claim when it is exchanged.
func ServiceAccountSubject(token string) Subject {
	return Subject{token: token, kind: ServiceAccount}
}

// BoundToPod is the ServiceAccount subject s of the pod with UID uid, as
// the cluster's TokenReview named it for a projected token: the pod is
// what the caller cannot choose (each Purko workflow step is its own Job
// pod), so what is counted per caller's run is counted per pod. Other
// kinds are returned as they are: only a ServiceAccount token is bound to
// a pod.
func (s Subject) BoundToPod(uid string) Subject {
	if s.kind == ServiceAccount {
		s.pod = uid
	}
	return s
}

// Pod is the UID of the pod a ServiceAccount token is bound to; "" for
// other kinds, and for a ServiceAccount token bound to no pod (a legacy
// Secret-based token, a TokenRequest without a pod), which then has
// nothing narrower than the ServiceAccount to be counted by. A pod UID
// is no secret: it may be logged.
func (s Subject) Pod() string { return s.pod }

// Kind says where the token came from; None for the zero Subject.
func (s Subject) Kind() Kind { return s.kind }

// Issuer is the OAuth issuer of the token, "" for other kinds.
func (s Subject) Issuer() string { return s.issuer }

// Expiry is when the hub found the token to end as it checked it; zero
// when it did not say (a ServiceAccount token), and the token's own exp
// claim is to be read.
func (s Subject) Expiry() time.Time { return s.expiry }

// RevealToken is the token itself. It exists for the token exchange alone,
// which must send it to the authorization server and key its cache by it;
// the long name makes any other use stand out in review, since a token
// that leaves through a log line or an error is the caller's identity
// handed to whoever reads it.
func (s Subject) RevealToken() string { return s.token }

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
func (s Subject) GoString() string { return "identity.Subject{" + s.String() + "}" }

// MarshalJSON never shows the token.
func (s Subject) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

type subjectKey struct{}

// WithSubject carries the caller's token to the upstream client that may
// exchange it for this call; a Subject of kind None is not carried.
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
// of the token an exchange minted, for the audit line and the span. The
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

type userKey struct{}

// WithUser carries who calls (the caller's key: a hub token's name, an
// OAuth caller's issuer and subject, an anonymous caller's address) to an
// upstream reached as each caller's own account there (user OAuth),
// whose grants are kept by it.
func WithUser(ctx context.Context, user string) context.Context {
	return context.WithValue(ctx, userKey{}, user)
}

// UserFrom is the caller WithUser carried, "" when none.
func UserFrom(ctx context.Context) string {
	u, _ := ctx.Value(userKey{}).(string)
	return u
}
