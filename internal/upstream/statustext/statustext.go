// Package statustext tells why a request to an upstream failed, twice:
// in the hub's words, for the status everyone reads in /api/mcp/tools
// (the stage, the HTTP status, the media type, the kind of error), and in
// the upstream's words, redacted, for the status's detail that only
// admins and the log see. What an upstream answers is the upstream's, not
// the hub's to publish: a registered URL may reach an internal page whose
// body holds a password, and mcp-go quotes whole bodies in its errors
// ("request failed with status 404: <html>…").
//
// To tell it, Failures read the error, what the upstream answered lately
// (package answerlog) and the upstream's credentials, to redact both
// texts (package credentials); they keep nothing of their own.
package statustext

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"golang.org/x/oauth2"

	"github.com/purko-io/mcp-hub/internal/upstream/answerlog"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/listbound"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
	"github.com/purko-io/mcp-hub/internal/upstream/stdiochild"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// A Redactor removes an upstream's credentials from a text and from an
// error's text (credentials.Set).
type Redactor interface {
	Redact(err error) error
	Text(text string) string
}

// Failures tell why a request to one upstream failed, in the hub's words
// (for everyone) and in the upstream's, redacted (for admins and the
// log), from the error and the answers kept.
type Failures struct {
	Answers  *answerlog.Log // what the upstream answered lately
	Redactor Redactor       // the upstream's credentials
}

// connectError is a failed connect, in the words of Failed.
type connectError struct {
	public string // what failed, for everyone
	detail string // what the upstream said, for admins and the log
	err    error
}

func (e *connectError) Error() string { return e.public }
func (e *connectError) Unwrap() error { return e.err }

// Failed is the error of a connect that failed at stage what (initialize,
// list tools) with err, told while the answers that caused it are known:
// its text is the public status, Describe finds its detail again.
func (f Failures) Failed(what string, err error) error {
	public, detail := f.explain(what, err)
	return &connectError{public: public, detail: detail, err: err}
}

// Describe splits err, why the connection failed or was lost, into the
// status everyone reads and its detail.
func (f Failures) Describe(err error) (public, detail string) {
	var ce *connectError
	if errors.As(err, &ce) {
		return f.Redactor.Text(ce.public), f.Redactor.Text(ce.detail)
	}
	return f.explain("", err)
}

// explain returns what failed (at stage what; "" when err's text names
// its stage) in the hub's words, and what the upstream said, redacted.
func (f Failures) explain(what string, err error) (public, detail string) {
	full := f.Redactor.Redact(err).Error()
	stage := func(s string) string {
		if what == "" {
			return s
		}
		return what + ": " + s
	}
	// The hub's own words before mcp-go's ("health check: "), to keep.
	prefix := ""
	if i := strings.Index(full, "transport error: "); i >= 0 {
		prefix = full[:i]
	}
	var (
		te    *oauthclient.TokenError
		re    *oauth2.RetrieveError
		unsup mcp.UnsupportedProtocolVersionError
		exit  *stdiochild.ExitError
	)
	if errors.As(err, &exit) {
		// How a stdio child ended and the last of its stderr, redacted,
		// for everyone: the operator's own program saying why it stopped
		// ("FATAL: GITHUB_TOKEN is not set"), bounded by the child's
		// tail (stdiochild.TailLines); it names its stage.
		return full, ""
	}
	if what != "" {
		// mcp-go says only "authorization required" of a 401.
		if r := f.Answers.Refusal(); r != nil {
			return stage("the upstream refused the hub's request: " + r.Summary()), f.excerpt(r.Head)
		}
	}
	switch {
	case errors.As(err, &te) && errors.As(err, &re):
		// The authorization server's description and body are its text.
		got := ""
		if re.Response != nil {
			got = strconv.Itoa(re.Response.StatusCode)
		}
		if safeWord(re.ErrorCode) {
			got += " " + re.ErrorCode
		}
		return stage(fmt.Sprintf("get OAuth token for upstream %s from %s: %s", te.Server, te.TokenURL, strings.TrimSpace(got))), f.Redactor.Text(te.Reason)
	case hubSide(err):
		// Go's network errors and the hub's own: no upstream text, but
		// what Go quotes of a malformed answer.
		if shown := unquoteAnswers(full); shown != full {
			return stage(shown), clip(full)
		}
		return stage(clip(full)), ""
	}
	if a := f.Answers.LastBad(); a != nil {
		// The answer that made the request fail: an error page, HTML.
		return stage(prefix + a.Summary()), f.excerpt(a.Head)
	}
	switch {
	case errors.As(err, &unsup):
		msg := "unsupported protocol version"
		if safeWord(unsup.Version) {
			msg += " " + strconv.Quote(unsup.Version)
		}
		return stage(prefix + msg), f.said(full)
	case rpcSentinel(err) != nil:
		return stage(prefix + "the upstream answered with JSON-RPC error: " + rpcSentinel(err).Error()), f.said(full)
	case (what == "initialize" || what == "list tools") && errors.Unwrap(err) == nil:
		// mcp-go makes the message of a JSON-RPC error of its own code
		// the whole error: nothing else of a request ends so bare (a
		// transport's failures are wrapped). Over WebSocket or stdio no
		// answer is kept to look for it in.
		return stage("the upstream answered with a JSON-RPC error"), f.said(full)
	case f.Answers.Echoed(full):
		return stage(prefix + "the upstream's answer could not be used (its text is in the detail, for admins)"), f.said(full)
	case strings.Contains(full, noIDPrefix):
		// mcp-go prints the whole answer after it, as numbers.
		return stage(full[:strings.Index(full, noIDPrefix)+len(noIDPrefix)-2]), f.said(full)
	}
	return stage(clip(full)), ""
}

// rpcSentinels are the errors mcp-go's client makes of JSON-RPC error codes.
var rpcSentinels = []error{
	mcp.ErrParseError,
	mcp.ErrInvalidRequest,
	mcp.ErrMethodNotFound,
	mcp.ErrInvalidParams,
	mcp.ErrInternalError,
	mcp.ErrRequestInterrupted,
	mcp.ErrResourceNotFound,
}

// rpcSentinel is the mcp-go error of the JSON-RPC code err was answered
// with (invalid params, method not found…), nil for none.
func rpcSentinel(err error) error {
	for _, s := range rpcSentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}

// said is the detail of a failure whose text the status does not show:
// the start of the newest answer, or failing one (stdio, WebSocket) the
// text.
func (f Failures) said(text string) string {
	if a, _ := f.Answers.Last(); a != nil && len(a.Head) > 0 {
		return f.excerpt(a.Head)
	}
	return clip(text)
}

// excerpt is the start of a body for a status's detail: redacted first,
// so that the cut cannot leave a credential's first part, then on one
// line.
func (f Failures) excerpt(head []byte) string {
	text := f.Redactor.Text(strings.ToValidUTF8(string(head), "\uFFFD"))
	text = strings.Join(strings.Fields(text), " ")
	if len(head) >= answerlog.ExcerptLen {
		text += " …"
	}
	return text
}

// noIDPrefix starts mcp-go's error for a JSON answer that is no
// response, followed by the answer.
const noIDPrefix = "response should contain RPC id: "

// maxStatusText bounds a status's texts: a listing line, not a document.
const maxStatusText = 500

func clip(s string) string {
	if len(s) <= maxStatusText {
		return s
	}
	return strings.ToValidUTF8(s[:maxStatusText], "") + " …"
}

// hubSide reports whether err is a network failure, a timeout or one of
// the hub's own refusals: texts made by Go and the hub, not the upstream.
func hubSide(err error) bool {
	var (
		ue       *url.Error
		oe       *net.OpError
		tooLarge *httpbound.TooLargeError
		streamed *streambound.TooLargeError
		te       *oauthclient.TokenError
		over     *listbound.Error
	)
	return errors.As(err, &ue) || errors.As(err, &oe) || errors.As(err, &tooLarge) || errors.As(err, &streamed) || errors.As(err, &te) || errors.As(err, &over) || errors.Is(err, client.ErrRepeatedListCursor) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// safeWord reports whether an upstream's token of text (a protocol
// version, an OAuth error code) is harmless to show: short, and of the
// characters such tokens are made of.
func safeWord(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || strings.IndexByte("._-", c) >= 0) {
			return false
		}
	}
	return true
}

// quotedAnswerRE finds what Go's HTTP client quotes of an answer it could
// not read ("malformed HTTP response \"SSH-2.0-OpenSSH\"": a banner of
// whatever listens there), and the reason phrase a WebSocket handshake
// error repeats ("(HTTP 404 Whatever)").
var (
	quotedAnswerRE = regexp.MustCompile(`((?:malformed|unsupported|invalid|unexpected) [A-Za-z ]*?:? )"(?:[^"\\]|\\.)*"`)
	reasonRE       = regexp.MustCompile(`\(HTTP ([1-5][0-9][0-9])[^)]*\)`)
)

// unquoteAnswers removes what an upstream wrote from a network error.
func unquoteAnswers(s string) string {
	s = quotedAnswerRE.ReplaceAllString(s, "${1}(not shown)")
	return reasonRE.ReplaceAllStringFunc(s, func(m string) string {
		code, _ := strconv.Atoi(reasonRE.FindStringSubmatch(m)[1])
		return "(HTTP " + strconv.Itoa(code) + " " + http.StatusText(code) + ")"
	})
}

// Tidy removes a wrapping repeated at once in err's text ("failed to send
// request: failed to send request: x", as mcp-go writes it); errors.Is
// and errors.As still see the chain.
func Tidy(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	parts := strings.Split(msg, ": ")
	out := parts[:1]
	for _, p := range parts[1:] {
		if p != out[len(out)-1] {
			out = append(out, p)
		}
	}
	if len(out) == len(parts) {
		return err
	}
	return Reworded(strings.Join(out, ": "), err)
}

// Reworded is err told as msg: the hub's words for a failure that err,
// which errors.Is and errors.As still see, says in the transport's.
func Reworded(msg string, err error) error { return &rewordedError{msg: msg, err: err} }

type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }
