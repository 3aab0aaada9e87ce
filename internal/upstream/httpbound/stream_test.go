package httpbound

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// TestStreamsAreBoundedPerMessage: a GET's answer and the event stream
// answering a POST made WithStream are bounded per event, whatever their
// total, and end the connection (Over) past it; other answers to POSTs,
// an event stream too, keep the limit of one answer in total.
func TestStreamsAreBoundedPerMessage(t *testing.T) {
	const limit = 1000
	event := "data: " + strings.Repeat("x", 593) + "\n\n" // 601 bytes
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("events"))
		body := strings.Repeat(event, n)
		if r.URL.Query().Has("big") {
			body = "data: " + strings.Repeat("x", 2*limit) + "\n\n"
		}
		w.Header().Set("Content-Type", r.URL.Query().Get("type"))
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	var answerLimit *TooLargeError
	var streamLimit *streambound.TooLargeError
	cases := []struct {
		name, method, query string
		stream              string // WithStream's name; "": none
		wantErr             any    // nil, or a pointer to an error type
		wantOver            string // the stream Over is told of; "": not told
	}{
		{"GET, events within", "GET", "events=3&type=text/event-stream", "", nil, ""},
		{"GET, an event over", "GET", "big&type=text/event-stream", "", &streamLimit, "GET stream"},
		{"GET, whatever its media type", "GET", "big&type=text/plain", "", &streamLimit, "GET stream"},
		{"POST, events over in total", "POST", "events=3&type=text/event-stream", "", &answerLimit, ""},
		{"POST WithStream, events within", "POST", "events=3&type=text/event-stream", "listen stream", nil, ""},
		{"POST WithStream, an event over", "POST", "big&type=text/event-stream", "listen stream", &streamLimit, "listen stream"},
		{"POST WithStream answered with JSON", "POST", "events=3&type=application/json", "listen stream", &answerLimit, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var told []string
			b := &streambound.Bound{Server: "s", Limit: limit, Over: func(e *streambound.TooLargeError) { told = append(told, e.Stream) }}
			hc := Streams(Limit(ts.Client(), "s", limit), b, "GET stream")
			ctx := context.Background()
			if tc.stream != "" {
				ctx = WithStream(ctx, tc.stream)
			}
			req, _ := http.NewRequestWithContext(ctx, tc.method, ts.URL+"?"+tc.query, nil)
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			_, err = io.ReadAll(resp.Body)
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("read error %v", err)
				}
			default:
				if !errors.As(err, want) {
					t.Fatalf("read error %v; want a %T", err, want)
				}
			}
			if tc.wantOver == "" && len(told) > 0 || tc.wantOver != "" && (len(told) != 1 || told[0] != tc.wantOver) {
				t.Fatalf("Over told of %q; want %q", told, tc.wantOver)
			}
		})
	}
}
