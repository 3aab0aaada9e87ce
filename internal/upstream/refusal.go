package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
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
// To say it, the client keeps what its upstream answered lately
// (answerTransport, under every HTTP request of the client): the status
// and media type of every answer that is not a usable MCP message, with
// the start of its body; and while there is no connection, the start of
// every answer. mcp-go answers a 401 with "authorization required" and
// drops the body; the status names the refusal, the detail what the
// server said ("token expired", "wrong audience").

// answerExcerpt is how much of an answer's body is kept: enough for an
// error code and a reason.
const answerExcerpt = 300

// keptAnswers is how many of the latest answers are kept.
const keptAnswers = 4

// answer is what the hub saw of one HTTP answer.
type answer struct {
	seq    uint64 // answers.seq when it came
	code   int
	ctype  string // Content-Type as sent
	head   []byte // the start of the body as read so far (guarded by answers.mu)
	teeing bool   // head fills as mcp-go reads the body
}

// mcpMedia reports whether an answer of type ctype can be an MCP message
// (JSON, an event stream, or nothing, as a 202 has). It costs no
// allocation: it runs for every answer.
func mcpMedia(ctype string) bool {
	ctype = strings.TrimSpace(ctype)
	hasPrefix := func(p string) bool { return len(ctype) >= len(p) && strings.EqualFold(ctype[:len(p)], p) }
	return ctype == "" || hasPrefix("application/json") || hasPrefix("text/event-stream")
}

// bad reports whether the answer cannot be an MCP message.
func (a *answer) bad() bool { return a.code/100 != 2 || !mcpMedia(a.ctype) }

// summary says what the answer was in the hub's words only: "HTTP 404
// Not Found (text/html)", "answer is not JSON: HTTP 200 OK (text/html)".
// The reason phrase is the standard one for the code, not the one the
// upstream sent: that is the upstream's text too.
func (a *answer) summary() string {
	s := "HTTP " + strconv.Itoa(a.code)
	if t := http.StatusText(a.code); t != "" {
		s += " " + t
	}
	if mt := mediaType(a.ctype); mt != "" {
		s += " (" + mt + ")"
	}
	if a.code/100 == 2 && !mcpMedia(a.ctype) {
		s = "answer is not JSON: " + s
	}
	return s
}

// mediaTypeRE is what a media type shown in a status may look like.
var mediaTypeRE = regexp.MustCompile(`^[a-z0-9][a-z0-9!#$&^_.+-]{0,40}/[a-z0-9][a-z0-9!#$&^_.+-]{0,60}$`)

// mediaType is the media type of ctype when it looks like one, else "".
func mediaType(ctype string) string {
	mt, _, err := mime.ParseMediaType(ctype)
	if err != nil || !mediaTypeRE.MatchString(mt) {
		return ""
	}
	return mt
}

// answers holds what the upstream answered lately.
type answers struct {
	seq atomic.Uint64 // counts every answer
	// connected is set while the client has a connection: the bodies of
	// its usable answers (tool results) are then left alone.
	connected atomic.Bool

	mu     sync.Mutex
	recent [keptAnswers]*answer // a ring, recent[n%keptAnswers] next
	n      int
}

// reset forgets every answer: what an earlier connect was answered does
// not explain this one's failure.
func (as *answers) reset() {
	as.mu.Lock()
	as.recent, as.n = [keptAnswers]*answer{}, 0
	as.mu.Unlock()
}

// setConnected says whether the client has a connection now; a new
// connection starts with no answers kept.
func (as *answers) setConnected(on bool) {
	if on {
		as.reset()
	}
	as.connected.Store(on)
}

func (as *answers) add(a *answer) {
	as.mu.Lock()
	as.recent[as.n%keptAnswers] = a
	as.n++
	as.mu.Unlock()
}

// snapshot returns copies of the kept answers, newest first.
func (as *answers) snapshot() []answer {
	as.mu.Lock()
	defer as.mu.Unlock()
	var out []answer
	for i := as.n - 1; i >= 0 && i >= as.n-keptAnswers; i-- {
		if a := as.recent[i%keptAnswers]; a != nil {
			cp := *a
			cp.head = bytes.Clone(a.head)
			out = append(out, cp)
		}
	}
	return out
}

// lastBad returns the newest answer when it is an unusable one, so that
// it is what the failure it caused is explained by; nil otherwise.
func (as *answers) lastBad() *answer {
	snap := as.snapshot()
	if len(snap) == 0 || !snap[0].bad() || snap[0].seq != as.seq.Load() {
		return nil
	}
	return &snap[0]
}

// refusal returns the newest 401 or 403 answer, nil for none.
func (as *answers) refusal() *answer {
	for _, a := range as.snapshot() {
		if a.code == http.StatusUnauthorized || a.code == http.StatusForbidden {
			return &a
		}
	}
	return nil
}

// withAnswers returns a copy of hc whose answers c keeps (see answers).
func withAnswers(hc *http.Client, c *Client) *http.Client {
	cp := *hc
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = answerTransport{next: next, as: &c.answers}
	return &cp
}

type answerTransport struct {
	next http.RoundTripper
	as   *answers
}

func (t answerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	seq := t.as.seq.Add(1)
	usable := resp.StatusCode/100 == 2 && mcpMedia(resp.Header.Get("Content-Type"))
	if usable && t.as.connected.Load() {
		return resp, nil // a result: the fast path costs nothing more
	}
	a := &answer{seq: seq, code: resp.StatusCode, ctype: resp.Header.Get("Content-Type")}
	if usable {
		// Read as mcp-go reads it: an event stream must not be waited for.
		a.teeing = true
		resp.Body = &teeBody{ReadCloser: resp.Body, as: t.as, a: a}
	} else {
		// An error page or a refusal is read at once (mcp-go reads all of
		// it, or none, as of a 401); the body reads as it came: the bytes
		// taken, then the rest.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, answerExcerpt))
		a.head = head
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	}
	t.as.add(a)
	return resp, nil
}

// teeBody keeps the start of a body as it is read.
type teeBody struct {
	io.ReadCloser
	as *answers
	a  *answer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.a.teeing {
		b.as.mu.Lock()
		if room := answerExcerpt - len(b.a.head); room > 0 {
			b.a.head = append(b.a.head, p[:min(n, room)]...)
		} else {
			b.a.teeing = false
		}
		b.as.mu.Unlock()
	}
	return n, err
}

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
	as *answers
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
		if r := f.as.refusal(); r != nil {
			return stage("the upstream refused the hub's request: " + r.summary()), f.excerpt(r.head)
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
	if a := f.as.lastBad(); a != nil {
		// The answer that made the request fail: an error page, HTML.
		return stage(prefix + a.summary()), f.excerpt(a.head)
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
	case f.echoes(full):
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
	if snap := f.as.snapshot(); len(snap) > 0 && len(snap[0].head) > 0 {
		return f.excerpt(snap[0].head)
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
		te       *oauthclient.TokenError
		over     *listBoundError
	)
	return errors.As(err, &ue) || errors.As(err, &oe) || errors.As(err, &tooLarge) || errors.As(err, &te) || errors.As(err, &over) || errors.Is(err, client.ErrRepeatedListCursor) ||
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
	if len(head) >= answerExcerpt {
		text += " …"
	}
	return text
}

// minEcho is the shortest text of an answer that counts when found in an
// error.
const minEcho = 5

// echoes reports whether text holds something a kept answer said: the
// start of its body, or a string of its JSON (a JSON-RPC error's message,
// as mcp-go quotes it).
func (f failures) echoes(text string) bool {
	for _, a := range f.as.snapshot() {
		head := bytes.TrimSpace(a.head)
		if len(head) >= minEcho && strings.Contains(text, string(head[:min(len(head), 16)])) {
			return true
		}
		for _, s := range jsonStrings(head) {
			if len(s) >= minEcho && strings.Contains(text, s) {
				return true
			}
		}
	}
	return false
}

// jsonStrings returns the string values of a JSON body, or of the data
// lines of an event stream, as far as they can be read (a body may be
// cut).
func jsonStrings(body []byte) []string {
	var docs [][]byte
	if bytes.HasPrefix(body, []byte("{")) || bytes.HasPrefix(body, []byte("[")) {
		docs = append(docs, body)
	} else {
		for _, line := range bytes.Split(body, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				docs = append(docs, d)
			}
		}
	}
	var out []string
	for _, d := range docs {
		dec := json.NewDecoder(bytes.NewReader(d))
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			if s, ok := tok.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
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
