package useroauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// Request is one authorization request in flight; its Verifier and State go into the sealed state
// the caller keeps (never in a URL in clear except State, which the caller makes opaque).
type Request struct {
	URL      string // where to send the browser
	Verifier string // PKCE code verifier
}

// Authorize builds the authorization request that sends the user's
// browser to the authorization server: response_type=code, client_id,
// redirect_uri, state, code_challenge with method S256 (always: MCP
// clients must use PKCE, and Discover has checked the server takes S256
// when it says), scope (space-joined, omitted when empty), resource (RFC
// 8707, so the token is issued for the MCP server alone; omitted when
// empty). The verifier is new for each request.
func Authorize(ep Endpoints, c Client, redirectURI, state string, scopes []string, resource string) Request {
	verifier := oauth2.GenerateVerifier()
	return Request{URL: AuthorizeWith(ep, c, redirectURI, state, verifier, scopes, resource), Verifier: verifier}
}

// AuthorizeWith is Authorize with a verifier of the caller's
// (oauth2.GenerateVerifier), for a caller that seals it into the state it
// sends: the callback, on any replica, reads it back from there.
func AuthorizeWith(ep Endpoints, c Client, redirectURI, state, verifier string, scopes []string, resource string) string {
	cfg := oauth2.Config{
		ClientID:    c.ID,
		Endpoint:    oauth2.Endpoint{AuthURL: ep.Authorization},
		RedirectURL: redirectURI,
		Scopes:      scopes,
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	return cfg.AuthCodeURL(state, opts...)
}

// CheckIssuer checks the iss parameter of an authorization response (RFC
// 9207), which tells the hub which server issued the code: when the hub
// talks to several authorization servers, one of them could otherwise
// have the hub redeem another's code at itself (a mix-up attack). When
// present, iss must equal ep.Issuer exactly; when absent, that is an
// error only if the server said it sends it (ep.IssParameter).
func CheckIssuer(ep Endpoints, iss string) error {
	switch {
	case iss == "" && ep.IssParameter:
		return fmt.Errorf("authorization response has no iss, though authorization server %s says it sends one (RFC 9207)", ep.Issuer)
	case iss != "" && iss != ep.Issuer:
		return fmt.Errorf("authorization response names issuer %q, not %s, the server the request went to (RFC 9207)", cut(clean(iss), maxQuote), ep.Issuer)
	}
	return nil
}

// Token is what a token endpoint granted.
type Token struct {
	AccessToken, RefreshToken, TokenType string
	Expiry                               time.Time // zero when the AS said nothing
	// Scopes are the granted scopes when the AS said (RFC 6749 5.1: when it
	// does not, they are the ones requested); nil otherwise.
	Scopes  []string
	IDToken string // raw, when the AS sent one (not verified here)
}

// Exchange redeems an authorization code at ep.Token, with the PKCE
// verifier of its request and, when not empty, the RFC 8707 resource the
// request named. redirectURI must be the request's.
func Exchange(ctx context.Context, hc *http.Client, ep Endpoints, c Client, redirectURI, code, verifier, resource string) (Token, error) {
	call := newCall("code exchange", ep.Token, append(c.credentials(), code, verifier)...)
	style, err := c.authStyle()
	if err != nil {
		return Token{}, call.fail(0, "", "", err)
	}
	cfg := oauth2.Config{
		ClientID:     c.ID,
		ClientSecret: c.Secret,
		Endpoint:     oauth2.Endpoint{TokenURL: ep.Token, AuthStyle: style},
		RedirectURL:  redirectURI,
	}
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(verifier)}
	if resource != "" {
		opts = append(opts, oauth2.SetAuthURLParam("resource", resource))
	}
	rec := newRecorder(hc)
	tok, err := cfg.Exchange(rec.context(ctx), code, opts...)
	if err != nil {
		return Token{}, rec.failure(call, err)
	}
	return tokenOf(tok), nil
}

// Refresh uses a refresh token at ep.Token (resource sent when not empty;
// scopes are not sent, so the grant's stay). When the AS does not return a
// new refresh token, Token.RefreshToken is the old one (RFC 6749 section
// 6: the client keeps it); when it does, the old one may be dead already
// (rotation): the caller must store the new one before anything else.
//
// x/oauth2's own refresh (Config.TokenSource) sends no parameter but the
// refresh token, so the request goes through its client credentials
// request instead, whose parameters the caller sets, grant_type
// included: the same form, client authentication and answer parsing.
func Refresh(ctx context.Context, hc *http.Client, ep Endpoints, c Client, refreshToken, resource string) (Token, error) {
	call := newCall("token refresh", ep.Token, append(c.credentials(), refreshToken)...)
	style, err := c.authStyle()
	if err != nil {
		return Token{}, call.fail(0, "", "", err)
	}
	if refreshToken == "" {
		return Token{}, call.fail(0, "", "no refresh token to use", nil)
	}
	params := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshToken}}
	if resource != "" {
		params.Set("resource", resource)
	}
	cfg := clientcredentials.Config{
		ClientID:       c.ID,
		ClientSecret:   c.Secret,
		TokenURL:       ep.Token,
		EndpointParams: params,
		AuthStyle:      style,
	}
	rec := newRecorder(hc)
	tok, err := cfg.Token(rec.context(ctx))
	if err != nil {
		return Token{}, rec.failure(call, err)
	}
	t := tokenOf(tok)
	if t.RefreshToken == "" {
		t.RefreshToken = refreshToken
	}
	return t, nil
}

// tokenOf is what the hub keeps of x/oauth2's token.
func tokenOf(tok *oauth2.Token) Token {
	t := Token{
		AccessToken:  tok.AccessToken,
		RefreshToken: tok.RefreshToken,
		TokenType:    tok.TokenType,
		Expiry:       tok.Expiry,
	}
	if s, ok := tok.Extra("scope").(string); ok {
		t.Scopes = strings.Fields(s)
	}
	if s, ok := tok.Extra("id_token").(string); ok {
		t.IDToken = s
	}
	return t
}

// Revoke revokes token at ep.Revocation (RFC 7009; token_type_hint when
// not empty: "refresh_token" or "access_token"), when a user disconnects
// the hub from a server: revoking the refresh token ends the grant at the
// server, not only in the hub's store. Without a revocation endpoint it
// returns ErrNoRevocation. A 200 is success (also for a token the server
// no longer knows: RFC 7009 2.2); a 503 and anything else are errors (an
// *Error whose Status says which; the caller may try a 503 again later).
func Revoke(ctx context.Context, hc *http.Client, ep Endpoints, c Client, token, hint string) error {
	if ep.Revocation == "" {
		return ErrNoRevocation
	}
	call := newCall("token revocation", ep.Revocation, append(c.credentials(), token)...)
	style, err := c.authStyle()
	if err != nil {
		return call.fail(0, "", "", err)
	}
	form := url.Values{"token": {token}}
	if hint != "" {
		form.Set("token_type_hint", hint)
	}
	if style == oauth2.AuthStyleInParams {
		form.Set("client_id", c.ID)
		if c.Secret != "" {
			form.Set("client_secret", c.Secret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.Revocation, strings.NewReader(form.Encode()))
	if err != nil {
		return call.fail(0, "", "", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if style == oauth2.AuthStyleInHeader {
		// RFC 6749 2.3.1: both are form-encoded before Basic encoding.
		req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	}
	resp, body, err := call.do(hc, req)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return call.refusal(resp, body)
	}
	return nil
}

// Subject returns the "sub" of an ID token or JWT access token WITHOUT
// verifying it, "" when it is not a JWT (an opaque token) or has none: for
// the audit line only, to say who the upstream will see the call as.
// Never to decide anything.
func Subject(token string) string {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || len(parts[1]) > maxAnswer {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return ""
	}
	var claims struct {
		Sub string `json:"sub"`
	}
	if decodeJSON(raw, &claims) != nil {
		return ""
	}
	return claims.Sub
}

// recorder is the HTTP client x/oauth2 sends one token request through:
// hc itself (its transport, redirect policy, timeout), with each answer's
// body bounded to maxAnswer and kept, so that a failure is told from the
// answer as this package tells all of them. x/oauth2 reads up to 1 MiB,
// and says nothing of a 200 it cannot parse.
type recorder struct {
	hc     http.Client
	next   http.RoundTripper
	status int
	header http.Header
	body   bytes.Buffer
	over   bool // the answer went past maxAnswer
	done   bool // the answer was read to its end
}

func newRecorder(hc *http.Client) *recorder {
	if hc == nil {
		hc = http.DefaultClient
	}
	r := &recorder{hc: *hc, next: hc.Transport}
	if r.next == nil {
		r.next = http.DefaultTransport
	}
	r.hc.Transport = r
	return r
}

// context is ctx with the recorder as x/oauth2's HTTP client.
func (r *recorder) context(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, &r.hc)
}

// RoundTrip sends req and records the answer as it is read. A redirect
// makes a second answer, which replaces the first.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	r.status, r.header, r.over, r.done = resp.StatusCode, resp.Header, false, false
	r.body.Reset()
	resp.Body = &recordedBody{ReadCloser: resp.Body, r: r}
	return resp, nil
}

// recordedBody is an answer's body, kept while read and failing past
// maxAnswer.
type recordedBody struct {
	io.ReadCloser
	r *recorder
}

func (b *recordedBody) Read(p []byte) (int, error) {
	room := maxAnswer + 1 - b.r.body.Len()
	if room <= 0 {
		b.r.over = true
		return 0, errTooLarge
	}
	if len(p) > room {
		p = p[:room]
	}
	n, err := b.ReadCloser.Read(p)
	b.r.body.Write(p[:n])
	if b.r.body.Len() > maxAnswer {
		b.r.over = true
		return n, errTooLarge
	}
	if err == io.EOF {
		b.r.done = true
	}
	return n, err
}

// failure tells why a token request failed: the OAuth error of the
// answer, or what was wrong with the answer, or the transport error.
func (r *recorder) failure(c call, err error) *Error {
	var re *oauth2.RetrieveError
	var ue *url.Error
	switch {
	case r.over:
		return c.fail(r.status, "", "", errTooLarge)
	case errors.As(err, &re) && re.Response != nil && re.ErrorCode != "":
		return c.fail(re.Response.StatusCode, re.ErrorCode, re.ErrorDescription, nil)
	case errors.As(err, &re) && re.Response != nil:
		return c.fail(re.Response.StatusCode, "", c.describeBody(re.Response.Header.Get("Content-Type"), r.body.Bytes()), nil)
	case errors.As(err, &ue), r.status == 0:
		return c.transport(err)
	case !r.done:
		// The answer broke off while x/oauth2 read it.
		return c.fail(r.status, "", "", err)
	}
	// A 2xx that x/oauth2 could not read as a token. A JSON or form
	// answer may hold a token even so: it is not quoted.
	ct, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	body := r.body.Bytes()
	if json.Valid(body) || ct == "application/x-www-form-urlencoded" || ct == "application/json" || ct == "text/plain" {
		return c.fail(r.status, "", "the answer holds no access_token", nil)
	}
	return c.fail(r.status, "", "not a token answer: "+c.describeBody(r.header.Get("Content-Type"), body), nil)
}
