package tokenexchange

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"time"

	"github.com/purko-io/mcp-hub/internal/identity"
)

// The token types of RFC 8693 section 3 the hub sends and asks for.
const (
	TypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"
	TypeJWT         = "urn:ietf:params:oauth:token-type:jwt"
)

// tokenType is the subject_token_type subj is sent with: a ServiceAccount
// token as a JWT.
func tokenType(subj identity.Subject) string {
	if subj.Kind() == identity.ServiceAccount {
		return TypeJWT
	}
	return TypeAccessToken
}

// expires is when subj stops being valid: the expiry the hub checked,
// else its exp claim; zero when neither is known.
func expires(subj identity.Subject) time.Time {
	if e := subj.Expiry(); !e.IsZero() {
		return e
	}
	return claimsOf(subj.RevealToken()).expiry()
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
