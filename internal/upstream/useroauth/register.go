package useroauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"golang.org/x/oauth2"
)

// The client authentication methods the hub knows (RFC 7591 section 2).
const (
	authNone  = "none"
	authBasic = "client_secret_basic"
	authPost  = "client_secret_post"
)

// Client is the hub's client at one authorization server: what it
// registered as, or its Client ID Metadata Document's URL (no secret).
type Client struct {
	ID, Secret string
	// AuthStyle: "basic" (client_secret_basic, default when Secret set) or "post"
	// (client_secret_post); a client without a secret sends its client_id
	// only (token_endpoint_auth_method none), whatever AuthStyle says.
	AuthStyle string
}

// authStyle is how x/oauth2 authenticates c. Never AuthStyleAutoDetect:
// it sends a refused request again the other way, the secret twice.
func (c Client) authStyle() (oauth2.AuthStyle, error) {
	switch {
	case c.Secret == "", c.AuthStyle == "post":
		return oauth2.AuthStyleInParams, nil
	case c.AuthStyle == "", c.AuthStyle == "basic":
		return oauth2.AuthStyleInHeader, nil
	}
	return 0, fmt.Errorf("client auth style %q is neither basic nor post", c.AuthStyle)
}

// credentials are what a request of c carries that an answer must not
// carry back into an error: the secret, and the Basic header made of it
// (whose base64 holds it too).
func (c Client) credentials() []string {
	if c.Secret == "" {
		return nil
	}
	return []string{c.Secret, "Basic " + base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(c.ID)+":"+url.QueryEscape(c.Secret)))}
}

// ClientMetadata is what the hub says of itself when registering (RFC 7591) or in the
// Client ID Metadata Document it serves: the name the consent page shows
// the user, and where the authorization server may send the user back.
type ClientMetadata struct {
	ClientID     string // the document's own URL, for CIMD; empty for RFC 7591
	ClientName   string
	RedirectURIs []string
	ClientURI    string
}

// clientMetadata is the JSON of a client's metadata, as registered or
// served.
type clientMetadata struct {
	ClientID                string   `json:"client_id,omitempty"`
	ClientName              string   `json:"client_name,omitempty"`
	ClientURI               string   `json:"client_uri,omitempty"`
	RedirectURIs            []string `json:"redirect_uris"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
}

func (md ClientMetadata) wire(authMethod string) clientMetadata {
	redirects := md.RedirectURIs
	if redirects == nil {
		redirects = []string{}
	}
	return clientMetadata{
		ClientID:     md.ClientID,
		ClientName:   md.ClientName,
		ClientURI:    md.ClientURI,
		RedirectURIs: redirects,
		// refresh_token: without it an authorization server may issue no
		// refresh token (Hydra does not), and the user would be asked
		// again when the access token expires.
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: authMethod,
	}
}

// Document returns the JSON of a Client ID Metadata Document for md
// (draft-ietf-oauth-client-id-metadata-document), which the hub serves at
// md.ClientID and which an authorization server with
// client_id_metadata_document_supported fetches instead of a
// registration: grant_types authorization_code and refresh_token,
// response_types code, token_endpoint_auth_method none (the document is
// public, so the client cannot have a secret).
func (md ClientMetadata) Document() []byte {
	b, err := json.Marshal(md.wire(authNone))
	if err != nil {
		panic(err) // strings and lists of strings always marshal
	}
	return b
}

// Register performs RFC 7591 dynamic client registration at
// ep.Registration and returns the client the authorization server made,
// for a server that takes no Client ID Metadata Document. It asks for a
// public client (token_endpoint_auth_method none: PKCE protects the
// code), and when the server refuses that (invalid_client_metadata) for a
// confidential one (client_secret_basic). The answer decides: a server
// may give a secret, and another method, to a client that asked for none.
//
// The metadata asks for no scope: a server then registers its default
// scopes (Hydra's include offline_access and openid). The registration
// access token of RFC 7592 is not kept: the hub does not manage the
// registration after, it registers again.
//
// An error names the server and its answer (error and error_description),
// never a secret.
func Register(ctx context.Context, hc *http.Client, ep Endpoints, md ClientMetadata) (Client, error) {
	if ep.Registration == "" {
		return Client{}, fmt.Errorf("authorization server %s offers no dynamic client registration (registration_endpoint)", ep.Issuer)
	}
	c, err := register(ctx, hc, ep, md, authNone)
	var oe *Error
	if errors.As(err, &oe) && oe.Status == http.StatusBadRequest && oe.Code == "invalid_client_metadata" {
		c, err = register(ctx, hc, ep, md, authBasic)
	}
	return c, err
}

// register asks for one registration with the given authentication method.
func register(ctx context.Context, hc *http.Client, ep Endpoints, md ClientMetadata, authMethod string) (Client, error) {
	c := newCall("client registration", ep.Registration)
	body, err := json.Marshal(md.wire(authMethod))
	if err != nil {
		return Client{}, c.fail(0, "", "", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ep.Registration, bytes.NewReader(body))
	if err != nil {
		return Client{}, c.fail(0, "", "", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, raw, err := c.do(hc, req)
	if err != nil {
		return Client{}, err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return Client{}, c.refusal(resp, raw)
	}
	var got struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := decodeJSON(raw, &got); err != nil {
		// A 2xx body may hold a secret: it is not quoted.
		return Client{}, c.fail(resp.StatusCode, "", "the answer is not a JSON object", err)
	}
	if got.ClientID == "" {
		return Client{}, c.fail(resp.StatusCode, "", "the answer has no client_id", nil)
	}
	client := Client{ID: got.ClientID, Secret: got.ClientSecret}
	switch got.AuthMethod {
	case authPost:
		client.AuthStyle = "post"
	case authBasic, "":
		if client.Secret != "" {
			client.AuthStyle = "basic"
		}
	case authNone:
		client.Secret = ""
	default:
		return Client{}, c.fail(resp.StatusCode, "", fmt.Sprintf("the server registered token_endpoint_auth_method %q, which the hub does not speak", got.AuthMethod), nil)
	}
	if client.Secret == "" && got.AuthMethod != authNone && got.AuthMethod != "" {
		return Client{}, c.fail(resp.StatusCode, "", fmt.Sprintf("the server registered token_endpoint_auth_method %q without a client_secret", got.AuthMethod), nil)
	}
	return client, nil
}
