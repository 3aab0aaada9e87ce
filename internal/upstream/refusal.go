package upstream

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// mcp-go answers an upstream's 401 with "authorization required" and drops
// the response, so an operator never learns what the server said ("token
// expired", "wrong audience", "missing scope"). refusalTransport keeps the
// status and the start of the body of every 401 and 403 answer, redacted,
// without changing what mcp-go reads, and a failed connect names them.

// refusalExcerpt is how much of a refusal's body is kept: enough for an
// error code and a reason, short enough for a status line.
const refusalExcerpt = 300

// refusals holds the last refusal the upstream answered.
type refusals struct {
	mu   sync.Mutex
	last string // "401 Unauthorized: {...}", "" for none
}

func (r *refusals) note(s string) {
	r.mu.Lock()
	r.last = s
	r.mu.Unlock()
}

// take returns the last refusal and forgets it.
func (r *refusals) take() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.last
	r.last = ""
	return s
}

// withRefusals returns a copy of hc whose 401 and 403 answers c remembers.
func withRefusals(hc *http.Client, c *Client) *http.Client {
	cp := *hc
	next := cp.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	cp.Transport = refusalTransport{next: next, c: c}
	return &cp
}

type refusalTransport struct {
	next http.RoundTripper
	c    *Client
}

func (t refusalTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden) {
		return resp, err
	}
	head, _ := io.ReadAll(io.LimitReader(resp.Body, refusalExcerpt))
	// The body reads as it came: the bytes taken, then the rest.
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), resp.Body), resp.Body}
	text := strings.Join(strings.Fields(strings.ToValidUTF8(string(head), "\uFFFD")), " ")
	if len(head) == refusalExcerpt {
		text += " …"
	}
	msg := resp.Status
	if text != "" {
		msg += ": " + t.c.redactText(text)
	}
	t.c.refused.note(msg)
	return resp, nil
}

// refusedError is a failed connect of an upstream that refused the hub's
// credentials: the status and body excerpt replace mcp-go's words for it.
type refusedError struct {
	what, refusal string
	err           error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s: the upstream refused the hub's request: %s", e.what, e.refusal)
}

func (e *refusedError) Unwrap() error { return e.err }

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
