// Package answerlog keeps what an upstream answered lately, under every
// HTTP request of the upstream's client (Log.Wrap): the status and media
// type of every answer that is not a usable MCP message, with the start of
// its body; and while there is no connection, the start of every answer.
// mcp-go answers a 401 with "authorization required" and drops the body,
// and quotes whole bodies in other errors: with the log, the upstream
// client says what failed in the hub's words (Answer.Summary) and keeps
// what the upstream said (Answer.Head) for admins. It runs for every
// answer: a usable answer on a connection costs an atomic add and a media
// type check, no allocation.
package answerlog

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// ExcerptLen is how much of an answer's body is kept: enough for an
// error code and a reason.
const ExcerptLen = 300

// keptAnswers is how many of the latest answers are kept.
const keptAnswers = 4

// Answer is what the hub saw of one HTTP answer.
type Answer struct {
	Seq   uint64 // the Log's count of answers when it came
	Code  int
	CType string // Content-Type as sent
	// Head is the start of the body as read so far (up to ExcerptLen);
	// the upstream's text, for admins and the log only, redacted.
	Head   []byte
	teeing bool // Head fills as the client reads the body (guarded by Log.mu)
	// post is an answer to a POST: a request's, not a stream's (a
	// session's standalone GET stream may be answered beside it).
	post bool
}

// mcpMedia reports whether an answer of type ctype can be an MCP message
// (JSON, an event stream, or nothing, as a 202 has). It costs no
// allocation: it runs for every answer.
func mcpMedia(ctype string) bool {
	ctype = strings.TrimSpace(ctype)
	hasPrefix := func(p string) bool { return len(ctype) >= len(p) && strings.EqualFold(ctype[:len(p)], p) }
	return ctype == "" || hasPrefix("application/json") || hasPrefix("text/event-stream")
}

// Bad reports whether the answer cannot be an MCP message.
func (a *Answer) Bad() bool { return a.Code/100 != 2 || !mcpMedia(a.CType) }

// Summary says what the answer was in the hub's words only: "HTTP 404
// Not Found (text/html)", "answer is not JSON: HTTP 200 OK (text/html)".
// The reason phrase is the standard one for the code, not the one the
// upstream sent: that is the upstream's text too.
func (a *Answer) Summary() string {
	s := "HTTP " + strconv.Itoa(a.Code)
	if t := http.StatusText(a.Code); t != "" {
		s += " " + t
	}
	if mt := mediaType(a.CType); mt != "" {
		s += " (" + mt + ")"
	}
	if a.Code/100 == 2 && !mcpMedia(a.CType) {
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

// Log holds what one upstream answered lately. Its zero value is ready.
type Log struct {
	seq atomic.Uint64 // counts every answer
	// lastPost is the Seq of the newest answer to a POST, kept or not.
	lastPost atomic.Uint64
	// connected is set while the client has a connection: the bodies of
	// its usable answers (tool results) are then left alone.
	connected atomic.Bool

	mu     sync.Mutex
	recent [keptAnswers]*Answer // a ring, recent[n%keptAnswers] next
	n      int
	// post is the newest answer to a POST, kept apart from the ring: a
	// GET stream the server refuses is asked again and again, and its
	// answers would push the request's out.
	post *Answer
}

// Reset forgets every answer: what an earlier connect was answered does
// not explain this one's failure.
func (as *Log) Reset() {
	as.mu.Lock()
	as.recent, as.n, as.post = [keptAnswers]*Answer{}, 0, nil
	as.mu.Unlock()
}

// SetConnected says whether the client has a connection now; a new
// connection starts with no answers kept.
func (as *Log) SetConnected(on bool) {
	if on {
		as.Reset()
	}
	as.connected.Store(on)
}

func (as *Log) add(a *Answer) {
	as.mu.Lock()
	as.recent[as.n%keptAnswers] = a
	as.n++
	if a.post && (as.post == nil || a.Seq > as.post.Seq) {
		as.post = a
	}
	as.mu.Unlock()
}

// Snapshot returns copies of the kept answers, newest first.
func (as *Log) Snapshot() []Answer {
	as.mu.Lock()
	defer as.mu.Unlock()
	var out []Answer
	for i := as.n - 1; i >= 0 && i >= as.n-keptAnswers; i-- {
		if a := as.recent[i%keptAnswers]; a != nil {
			cp := *a
			cp.Head = bytes.Clone(a.Head)
			out = append(out, cp)
		}
	}
	return out
}

// Last returns a copy of the answer a failed request is explained by,
// nil for none, and whether no answer of its kind came after it (answers
// on the fast path are counted, not kept). Where a request was answered
// (a POST), it is the newest POST's answer: a session's GET stream, opened
// beside its initialize, is answered too, may be the newer, and a GET the
// server refuses is asked again and again; where none was (an SSE
// transport's GET is its connection), the newest answer.
func (as *Log) Last() (*Answer, bool) {
	as.mu.Lock()
	defer as.mu.Unlock()
	a, newest := as.post, as.lastPost.Load()
	if a == nil {
		newest = as.seq.Load()
		for _, r := range as.recent {
			if r != nil && (a == nil || r.Seq > a.Seq) {
				a = r
			}
		}
	}
	if a == nil {
		return nil, false
	}
	cp := *a
	cp.Head = bytes.Clone(a.Head)
	return &cp, cp.Seq == newest
}

// LastBad returns the Last answer when it is the newest and an unusable
// one, so that it is what the failure it caused is explained by; nil
// otherwise.
func (as *Log) LastBad() *Answer {
	if a, newest := as.Last(); a != nil && newest && a.Bad() {
		return a
	}
	return nil
}

// Refusal returns the newest 401 or 403 answer, nil for none.
func (as *Log) Refusal() *Answer {
	for _, a := range as.Snapshot() {
		if a.Code == http.StatusUnauthorized || a.Code == http.StatusForbidden {
			return &a
		}
	}
	return nil
}

// Wrap returns a copy of hc whose answers as keeps.
func (as *Log) Wrap(hc *http.Client) *http.Client {
	cp := *hc
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = answerTransport{next: next, as: as}
	return &cp
}

type answerTransport struct {
	next http.RoundTripper
	as   *Log
}

func (t answerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	seq := t.as.seq.Add(1)
	for req.Method == http.MethodPost { // the newest POST's number, whichever lands first
		last := t.as.lastPost.Load()
		if seq <= last || t.as.lastPost.CompareAndSwap(last, seq) {
			break
		}
	}
	usable := resp.StatusCode/100 == 2 && mcpMedia(resp.Header.Get("Content-Type"))
	if usable && t.as.connected.Load() {
		return resp, nil // a result: the fast path costs nothing more
	}
	a := &Answer{Seq: seq, Code: resp.StatusCode, CType: resp.Header.Get("Content-Type"), post: req.Method == http.MethodPost}
	if usable {
		// Read as mcp-go reads it: an event stream must not be waited for.
		a.teeing = true
		resp.Body = &teeBody{ReadCloser: resp.Body, as: t.as, a: a}
	} else {
		// An error page or a refusal is read at once (mcp-go reads all of
		// it, or none, as of a 401); the body reads as it came: the bytes
		// taken, then the rest.
		head, _ := io.ReadAll(io.LimitReader(resp.Body, ExcerptLen))
		a.Head = head
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
	as *Log
	a  *Answer
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && b.a.teeing {
		b.as.mu.Lock()
		if room := ExcerptLen - len(b.a.Head); room > 0 {
			b.a.Head = append(b.a.Head, p[:min(n, room)]...)
		} else {
			b.a.teeing = false
		}
		b.as.mu.Unlock()
	}
	return n, err
}

// minEcho is the shortest text of an answer that counts when found in an
// error.
const minEcho = 5

// Echoed reports whether text (an error mcp-go made) holds something a
// kept answer said: the start of its body, or a string of its JSON (a
// JSON-RPC error's message, as mcp-go quotes it). Such a text is the
// upstream's words, for admins only.
func (as *Log) Echoed(text string) bool {
	for _, a := range as.Snapshot() {
		head := bytes.TrimSpace(a.Head)
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
