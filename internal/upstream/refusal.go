package upstream

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
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/purko-io/mcp-hub/internal/upstream/answerlog"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// What an upstream answers is the upstream's, not the hub's to publish. A
// registered URL may reach an internal page whose body holds a password,
// and mcp-go quotes whole bodies in its errors ("request failed with
// status 404: <html>…"). So the status of a server, which anyone reads in
// /api/mcp/tools, says what failed in the hub's words only: the stage,
// the HTTP status, the media type, the kind of error. The start of what
// the upstream wrote, redacted, is the status's Detail: for admins and
// the log.
//
// To say it, the client keeps what its upstream answered lately (package
// answerlog).

// connectError is a failed connect, in the words of failed.
type connectError struct {
	public string // what failed, for everyone
	detail string // what the upstream said, for admins and the log
	err    error
}

func (e *connectError) Error() string { return e.public }
func (e *connectError) Unwrap() error { return e.err }

// failures tell why a request to the upstream failed, in the hub's words
// (for everyone) and in the upstream's, redacted (for admins and the
// log), from the error and the answers kept. A type apart from Client: it
// reads only those two things.
type failures struct {
	as *answerlog.Log
	cr *credentials
}

// failed is the error of a connect that failed at stage what (initialize,
// list tools) with err, told while the answers that caused it are known.
func (f failures) failed(what string, err error) error {
	public, detail := f.explain(what, err)
	return &connectError{public: public, detail: detail, err: err}
}

// describe splits err, why the connection failed or was lost, into the
// status everyone reads and its detail.
func (f failures) describe(err error) (public, detail string) {
	var ce *connectError
	if errors.As(err, &ce) {
		return f.cr.text(ce.public), f.cr.text(ce.detail)
	}
	return f.explain("", err)
}

// setFailed records err, why the connection failed or was lost, as the
// status, and returns it. A refusal that must leave nothing of the server
// published, a listing over a bound or a loop back to the hub (whose chain
// is forgotten too), drops what the server listed, whether a connect or a
// health check or refresh of a live connection met it.
func (c *Client) setFailed(err error) Status {
	var over *listBoundError
	var loop *loopcheck.LoopError
	if errors.As(err, &loop) {
		c.loops.Reset()
	}
	if loop != nil || errors.As(err, &over) {
		c.mu.Lock()
		c.tools, c.features = nil, Features{}
		c.mu.Unlock()
	}
	public, detail := failures{&c.answers, &c.cred}.describe(err)
	st := Status{State: StateError, Error: public, Detail: detail, Since: time.Now()}
	c.setStatus(st, nil, nil)
	return st
}

// logDetail adds the status's detail to a log line that has one.
func (s Status) logDetail(e *zerolog.Event) {
	if s.Detail != "" {
		e.Str("detail", s.Detail)
	}
}

// explain returns what failed (at stage what; "" when err's text names
// its stage) in the hub's words, and what the upstream said, redacted.
func (f failures) explain(what string, err error) (public, detail string) {
	full := f.cr.redact(err).Error()
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
	)
	if what != "" {
		// mcp-go says only "authorization required" of a 401.
		if r := f.as.Refusal(); r != nil {
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
		return stage(fmt.Sprintf("get OAuth token for upstream %s from %s: %s", te.Server, te.TokenURL, strings.TrimSpace(got))), f.cr.text(te.Reason)
	case hubSide(err):
		// Go's network errors and the hub's own: no upstream text, but
		// what Go quotes of a malformed answer.
		if shown := unquoteAnswers(full); shown != full {
			return stage(shown), clip(full)
		}
		return stage(clip(full)), ""
	}
	if a := f.as.LastBad(); a != nil {
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
	case f.as.Echoed(full):
		return stage(prefix + "the upstream's answer could not be used (its text is in the detail, for admins)"), f.said(full)
	case strings.Contains(full, noIDPrefix):
		// mcp-go prints the whole answer after it, as numbers.
		return stage(full[:strings.Index(full, noIDPrefix)+len(noIDPrefix)-2]), f.said(full)
	}
	return stage(clip(full)), ""
}

// rpcSentinel is the mcp-go error of the JSON-RPC code err was answered
// with (invalid params, method not found…), nil for none.
func rpcSentinel(err error) error {
	for _, s := range rpcSentinels {
		if errors.Is(err, s.err) {
			return s.err
		}
	}
	return nil
}

// said is the detail of a failure whose text the status does not show:
// the start of the newest answer, or failing one (stdio, WebSocket) the
// text.
func (f failures) said(text string) string {
	if a, _ := f.as.Last(); a != nil && len(a.Head) > 0 {
		return f.excerpt(a.Head)
	}
	return clip(text)
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
		over     *listBoundError
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

// excerpt is the start of a body for a status's detail: redacted first,
// so that the cut cannot leave a credential's first part, then on one
// line.
func (f failures) excerpt(head []byte) string {
	text := f.cr.text(strings.ToValidUTF8(string(head), "\uFFFD"))
	text = strings.Join(strings.Fields(text), " ")
	if len(head) >= answerlog.ExcerptLen {
		text += " …"
	}
	return text
}

// tidy removes a wrapping repeated at once in err's text ("failed to send
// request: failed to send request: x", as mcp-go writes it); errors.Is
// and errors.As still see the chain.
func tidy(err error) error {
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
	return &tidiedError{msg: strings.Join(out, ": "), err: err}
}

type tidiedError struct {
	msg string
	err error
}

func (e *tidiedError) Error() string { return e.msg }
func (e *tidiedError) Unwrap() error { return e.err }
