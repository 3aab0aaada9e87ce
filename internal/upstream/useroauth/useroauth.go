// Package useroauth is the hub as an OAuth 2.1 client acting for one user at
// a third-party authorization server: the protocol an MCP client speaks to
// reach a hosted MCP server (GitHub's, Linear's...) as that user, per the
// MCP 2025-11-25 authorization specification. It finds the server's
// authorization server (RFC 9728, RFC 8414, OpenID Connect discovery),
// registers the hub there (RFC 7591) or describes it in a Client ID Metadata
// Document, builds the authorization request (PKCE S256, RFC 8707
// resource), checks the response's issuer (RFC 9207), redeems the code,
// refreshes and revokes tokens (RFC 7009).
//
// It keeps nothing: where grants are stored, which user is asking and what
// the consent pages say belong to its callers. Every function takes the
// HTTP client to use, so that the caller's dial and redirect policies
// (netpolicy, no credentials across origins) apply to every request.
//
// Whatever goes wrong, the error names the operation, the endpoint and the
// server's answer, never a token, a code, a verifier or a client secret:
// what each request carries is redacted from what the server wrote back,
// and an answer's body is quoted only in part (maxQuote).
package useroauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/purko-io/mcp-hub/internal/secrets"
)

// maxAnswer bounds what is read of any answer: metadata, registration and
// token answers are a few KiB, and a server that sends more is broken or
// hostile.
const maxAnswer = 64 << 10

// maxQuote bounds how much of an answer's body an error quotes.
const maxQuote = 200

// maxDescription bounds a server's error_description as an error quotes
// it: longer than a body's quote, as some servers (Hydra) put the useful
// part, the hint, after a paragraph of RFC 6749's generic words.
const maxDescription = 512

// maxCode bounds an OAuth error code as quoted (RFC 6749's are short ASCII
// words).
const maxCode = 64

// ErrNoRevocation is Revoke's answer when the authorization server has no
// revocation endpoint: the grant can only be forgotten, not revoked, and
// the caller says so to the user instead of failing.
var ErrNoRevocation = errors.New("the authorization server has no revocation endpoint")

// errTooLarge is an answer over maxAnswer.
var errTooLarge = fmt.Errorf("the answer is over %d KiB", maxAnswer>>10)

// Error is an authorization server's refusal or a failure to reach it (or
// to reach an MCP server's metadata). Code is the OAuth error code
// ("invalid_grant", "invalid_client", ...; "" for transport errors and
// answers that carry none), so that a caller can drop a grant on
// invalid_grant and keep it on a 503. No field holds a credential: the
// description and quoted bodies are redacted of what the request carried.
type Error struct {
	// Op is what was being done: "token refresh", "code exchange", ...
	Op string
	// Endpoint is the URL, as a message may show it (no user info, no query).
	Endpoint string
	// Code is the OAuth error code of the answer, "" when none.
	Code string
	// Description is the server's error_description (at most
	// maxDescription characters), or what was wrong with its answer (with
	// at most maxQuote characters of its body).
	Description string
	// Status is the HTTP status of the answer, 0 when none came.
	Status int
	// Err is the cause: a transport error, a decoding error; nil when the
	// server refused in plain OAuth terms.
	Err error
}

// Error reads "token refresh at http://as.example/token: 400 invalid_grant:
// refresh token expired".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Endpoint != "" {
		b.WriteString(" at " + e.Endpoint)
	}
	b.WriteString(":")
	if e.Status != 0 {
		b.WriteString(" " + strconv.Itoa(e.Status))
	}
	if e.Code != "" {
		b.WriteString(" " + e.Code)
	}
	sep := " "
	if e.Status != 0 || e.Code != "" {
		sep = ": "
	}
	switch {
	case e.Description != "" && e.Err != nil:
		b.WriteString(sep + e.Description + " (" + e.Err.Error() + ")")
	case e.Description != "":
		b.WriteString(sep + e.Description)
	case e.Err != nil:
		b.WriteString(sep + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause (a transport error, context.DeadlineExceeded,
// ...), for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Err }

// call is one request to a server, for its errors: what is being done,
// where, and the credentials it carries, which the server's answer must
// not carry back into an error.
type call struct {
	op       string
	endpoint string // for messages
	red      *secrets.Redactor
}

func newCall(op, endpoint string, sent ...string) call {
	return call{op: op, endpoint: secrets.URLForMessage(endpoint), red: secrets.NewRedactor(sent...)}
}

// transport is a request that got no answer. The url.Error around a
// transport error repeats the URL with its query, which the endpoint
// already shows without it.
func (c call) transport(err error) *Error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &Error{Op: c.op, Endpoint: c.endpoint, Err: c.red.Error(err)}
}

// fail is an answer that is not what was asked for, as the caller may
// read it. description is cut at maxDescription; a quote of a body in it
// is cut shorter by describeBody.
func (c call) fail(status int, code, description string, err error) *Error {
	if err != nil {
		err = c.red.Error(err)
	}
	return &Error{
		Op:          c.op,
		Endpoint:    c.endpoint,
		Status:      status,
		Code:        cut(clean(c.red.String(code)), maxCode),
		Description: cut(clean(c.red.String(description)), maxDescription),
		Err:         err,
	}
}

// do sends req through hc and reads at most maxAnswer bytes of the answer.
func (c call) do(hc *http.Client, req *http.Request) (*http.Response, []byte, error) {
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, c.transport(err)
	}
	defer resp.Body.Close()
	body, err := readBounded(resp.Body)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, nil, c.fail(resp.StatusCode, "", "", err)
		}
		return nil, nil, c.transport(err)
	}
	return resp, body, nil
}

// readBounded reads r to its end, failing with errTooLarge past maxAnswer.
func readBounded(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, maxAnswer+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxAnswer {
		return nil, errTooLarge
	}
	return body, nil
}

// refusal is an answer with a status other than the one expected: the
// OAuth error in it (RFC 6749 5.2, RFC 7591 3.2.2, RFC 7009 2.2.1) when it
// has one, else the start of its body.
func (c call) refusal(resp *http.Response, body []byte) *Error {
	var oe struct {
		Code        string `json:"error"`
		Description string `json:"error_description"`
	}
	if decodeJSON(body, &oe) == nil && oe.Code != "" {
		return c.fail(resp.StatusCode, oe.Code, oe.Description, nil)
	}
	return c.fail(resp.StatusCode, "", c.describeBody(resp.Header.Get("Content-Type"), body), nil)
}

// notJSON is a successful status whose body is not the JSON asked for:
// an HTML login page, a proxy's error page, plain text.
func (c call) notJSON(resp *http.Response, body []byte, err error) *Error {
	return c.fail(resp.StatusCode, "", "not a JSON document: "+c.describeBody(resp.Header.Get("Content-Type"), body), err)
}

// describeBody is the start of a body for an error: "HTML: " when it is
// HTML (the usual way a wrong URL answers) and at most maxQuote characters
// of it, redacted before it is cut (a cut could split a secret), or
// "empty body".
func (c call) describeBody(contentType string, body []byte) string {
	text := clean(c.red.String(string(body)))
	if text == "" {
		return "empty body"
	}
	text = cut(text, maxQuote)
	if strings.HasPrefix(strings.ToLower(strings.TrimSpace(contentType)), "text/html") || strings.HasPrefix(text, "<") {
		return "HTML: " + text
	}
	return text
}

// decodeJSON decodes a JSON object into out; anything else (an array, a
// string, null) is an error, so that a server's "null" is not read as an
// empty document.
func decodeJSON(body []byte, out any) error {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return errors.New("not a JSON object")
	}
	return json.Unmarshal(trimmed, out)
}

// clean makes server text safe for one line of a log: valid UTF-8, control
// and other invisible characters as spaces, runs of spaces as one.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || !unicode.IsPrint(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// cut keeps the first n characters of s, marking the cut.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
