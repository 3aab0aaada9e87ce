package httpbound

import (
	"context"
	"mime"
	"net/http"

	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// Streams returns a copy of hc that reads the streams of one connection
// through b, message by message: the body of every answer to a GET as an
// event stream named get (a transport's GET opens its stream, and
// mcp-go's legacy SSE client reads it whatever its media type says), and
// an event stream that answers a POST made WithStream. Other answers to
// POSTs are hc's to bound (Limit). The copy is made per connection, since
// b ends that connection.
func Streams(hc *http.Client, b *streambound.Bound, get string) *http.Client {
	return wrap(hc, func(next http.RoundTripper) http.RoundTripper {
		return streamTransport{next: next, bound: b, get: get}
	})
}

type streamTransport struct {
	next  http.RoundTripper
	bound *streambound.Bound
	get   string
}

func (t streamTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch {
	case req.Method == http.MethodGet:
		resp.Body = t.bound.Events(resp.Body, t.get)
	case opensStream(req, resp):
		resp.Body = t.bound.Events(resp.Body, streamName(req.Context()))
	}
	return resp, nil
}

type streamKey struct{}

// WithStream returns ctx for a POST whose answer, when it is an event
// stream, is a stream of messages without end, named name in errors (a
// 2026-07-28 subscriptions/listen): bounded per message by the
// connection's Streams instead of in total, which would end a long-lived
// stream once its messages together reach the limit of one answer.
func WithStream(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, streamKey{}, name)
}

func streamName(ctx context.Context) string {
	name, _ := ctx.Value(streamKey{}).(string)
	return name
}

// opensStream reports whether resp is the event stream that answers a POST
// made WithStream.
func opensStream(req *http.Request, resp *http.Response) bool {
	if req.Method != http.MethodPost || streamName(req.Context()) == "" {
		return false
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}
