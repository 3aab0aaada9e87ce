package oauth

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/purko-io/mcp-hub/internal/autonomy"
)

// grant reads what a verified token allows: the highest level of its
// scopes and of the issuer's rules that match it. Grants add up: a grant
// without a tool list reaches every tool, else the tools of all matching
// grants are allowed.
func (v *Verifier) grant(in *issuer, tok jwt.Token) (Grant, error) {
	g := Grant{Issuer: in.Issuer.Issuer, Guardrails: in.Guardrails}
	name := claimString(tok, in.NameClaim)
	if name == "" {
		return Grant{}, invalid("the token has no %s claim to name its holder", in.NameClaim)
	}
	g.Caller = in.label + "/" + name
	g.Expiry, _ = tok.Expiration()
	granted, all := false, false
	var tools []string
	add := func(l autonomy.Level, t []string) {
		if !granted || l > g.Ceiling {
			g.Ceiling = l
		}
		granted = true
		if len(t) == 0 {
			all = true
		}
		tools = append(tools, t...)
	}
	scopes := tokenScopes(tok)
	for _, s := range scopeLevels {
		if slices.Contains(scopes, s.scope) {
			add(s.level, nil)
		}
	}
	for _, r := range in.Rules {
		if slices.Contains(claimValues(tok, r.Claim), r.Value) {
			add(r.MaxLevel, r.Tools)
			g.Admin = g.Admin || r.Admin
			g.Approver = g.Approver || r.Approver
			g.Guardrails = g.Guardrails.Merge(r.Guardrails)
		}
	}
	if !granted {
		return Grant{}, &Error{Status: http.StatusForbidden, Code: "insufficient_scope",
			Reason: fmt.Sprintf("the token of %s grants no MCP access: ask for one of the scopes %s", g.Caller, strings.Join(Scopes(), ", "))}
	}
	if !all {
		slices.Sort(tools)
		g.Tools = slices.Compact(tools)
	}
	return g, nil
}

// tokenScopes reads the scope claim (RFC 9068: one space-separated string)
// or scp (a list, as several servers write it).
func tokenScopes(tok jwt.Token) []string {
	var out []string
	for _, c := range []string{"scope", "scp"} {
		for _, v := range claimValues(tok, c) {
			out = append(out, strings.Fields(v)...)
		}
	}
	return out
}

// claimValues returns the strings at a dotted claim path: a string claim
// as one value, a list claim's string items.
func claimValues(tok jwt.Token, path string) []string {
	first, rest, _ := strings.Cut(path, ".")
	var v any
	if err := tok.Get(first, &v); err != nil {
		return nil
	}
	for rest != "" {
		var key string
		key, rest, _ = strings.Cut(rest, ".")
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[key]
	}
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		var out []string
		for _, item := range v {
			if s, ok := item.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// claimString returns a claim that holds one string.
func claimString(tok jwt.Token, path string) string {
	if vs := claimValues(tok, path); len(vs) == 1 {
		return vs[0]
	}
	return ""
}
