package hub

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeauth"
	"github.com/purko-io/mcp-hub/internal/oauth"
	"github.com/purko-io/mcp-hub/internal/pipeline"
	"github.com/purko-io/mcp-hub/internal/secrets"
)

// buildAuth turns the auth settings into the hub's authenticator. With no
// auth configured the hub admits anonymous callers with full autonomy only
// when it listens on a loopback address (a laptop); anywhere else it refuses
// to start rather than serve every tool to whoever connects.
func buildAuth(ctx context.Context, cfg *config.Config, o Options, log zerolog.Logger) (*callers.Auth, error) {
	a := cfg.Auth
	var tokens []callers.TokenCaller
	for _, t := range a.Tokens {
		lvl, err := autonomy.ParseLevel(t.MaxLevel)
		if err != nil {
			return nil, fmt.Errorf("auth.tokens (%s).maxLevel: %w", t.Name, err)
		}
		tc := callers.TokenCaller{Name: t.Name, Token: t.Value.Reveal(), Ceiling: lvl, Tools: t.Tools, Admin: t.Admin, Guardrails: t.Guardrails}
		if t.Limits != nil {
			l := pipeline.LimitsOf(*t.Limits, "auth.tokens["+t.Name+"].limits")
			tc.Limits = &l
		}
		tokens = append(tokens, tc)
	}
	var anonymous *autonomy.Level
	localUser := false // the anonymous caller is the user who started the hub
	switch {
	case a.Anonymous != nil && a.Anonymous.Enabled:
		lvl, err := autonomy.ParseLevel(a.Anonymous.MaxLevel)
		if err != nil {
			return nil, fmt.Errorf("auth.anonymous.maxLevel: %w", err)
		}
		anonymous = &lvl
	case !a.Configured() && !o.AuthServiceAccounts:
		if o.Listen != "" && !isLoopbackAddr(o.Listen) {
			return nil, fmt.Errorf("listening on %s, which is not a loopback address, with no credentials configured: "+
				"set auth.tokens, auth.serviceAccounts or auth.anonymous in the config file", o.Listen)
		}
		full := autonomy.Full
		anonymous, localUser = &full, true
		log.Warn().Msg("no auth configured: anonymous callers get full autonomy and may approve tool definitions (loopback only)")
	}
	var reviewer callers.TokenReviewer
	if a.ServiceAccounts.Enabled || o.AuthServiceAccounts {
		rc, _, err := clusterConfig(o)
		if err != nil {
			return nil, err
		}
		if rc == nil {
			return nil, fmt.Errorf("auth.serviceAccounts needs a cluster: run in one, or pass --kubeconfig")
		}
		r, err := kubeauth.New(rc, kubeauth.Options{Audiences: a.ServiceAccounts.Audiences})
		if err != nil {
			return nil, fmt.Errorf("ServiceAccount auth: %w", err)
		}
		reviewer = clusterReviewer{r: r, admins: a.ServiceAccounts.Admins}
	}
	auth := callers.NewAuth(tokens, anonymous, reviewer)
	if localUser {
		auth.LocalUserIsAdmin()
	}
	if a.OAuth != nil {
		v, err := newVerifier(ctx, a.OAuth, log)
		if err != nil {
			return nil, err
		}
		auth.WithOAuth(v)
	}
	return auth, nil
}

// newVerifier builds the checker of OAuth access tokens (auth.oauth); it
// starts discovering the issuers, which a down issuer does not hold up.
func newVerifier(ctx context.Context, o *config.OAuthSettings, log zerolog.Logger) (*oauth.Verifier, error) {
	opts := oauth.Options{
		Resource:    o.Resource,
		ClockSkew:   o.Skew(),
		JWKSRefresh: o.JWKSRefresh.D(),
		// Metadata and keys stay at the issuer's origin.
		HTTPClient: &http.Client{Timeout: 10 * time.Second, CheckRedirect: secrets.RefuseCrossOrigin},
		OnError: func(issuer string, err error) {
			ev := log.Warn().Err(err)
			if issuer != "" {
				ev = ev.Str("issuer", issuer)
			}
			ev.Msg("OAuth issuer: cannot read its metadata or keys")
		},
	}
	for i, is := range o.Issuers {
		in := oauth.Issuer{Issuer: is.Issuer, Audiences: is.Audiences, JWKSURL: is.JWKSURL, NameClaim: is.NameClaim, Guardrails: is.Guardrails}
		for j, g := range is.Grants {
			lvl, err := autonomy.ParseLevel(g.MaxLevel)
			if err != nil {
				return nil, fmt.Errorf("auth.oauth.issuers[%d].grants[%d].maxLevel: %w", i, j, err)
			}
			in.Rules = append(in.Rules, oauth.Rule{Claim: g.Claim, Value: g.Value, MaxLevel: lvl, Tools: g.Tools, Admin: g.Admin, Approver: g.Approver, Guardrails: g.Guardrails})
		}
		opts.Issuers = append(opts.Issuers, in)
	}
	v, err := oauth.New(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("auth.oauth: %w", err)
	}
	return v, nil
}

// clusterReviewer adapts kubeauth to the server's interface; admins are
// the ServiceAccounts (namespace/name) whose pods are admin callers.
type clusterReviewer struct {
	r      *kubeauth.Reviewer
	admins []string
}

func (c clusterReviewer) Review(ctx context.Context, token string) (callers.ClusterIdentity, error) {
	id, err := c.r.Review(ctx, token)
	switch {
	case errors.Is(err, kubeauth.ErrUnauthenticated):
		return callers.ClusterIdentity{}, &callers.ReviewError{Status: http.StatusUnauthorized, Err: err}
	case errors.Is(err, kubeauth.ErrNotAgent):
		return callers.ClusterIdentity{}, &callers.ReviewError{Status: http.StatusForbidden, Err: err}
	case err != nil:
		return callers.ClusterIdentity{}, &callers.ReviewError{Status: http.StatusServiceUnavailable, Err: err}
	}
	return callers.ClusterIdentity{Caller: id.Caller, Agent: id.Namespace + "/" + id.Agent, Level: id.Level, Tools: id.Tools, Guardrails: id.Guardrails,
		Admin: slices.Contains(c.admins, id.Namespace+"/"+id.ServiceAccount), PodUID: id.PodUID}, nil
}

func isLoopbackAddr(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
