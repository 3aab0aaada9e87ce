package streambound

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestMessagesAreBoundedWhileRead: a line, or an event, of exactly the
// limit passes; one byte more fails the read with *TooLargeError after
// the bytes within the bound, tells Over, and every later read fails the
// same; blank lines of carriage returns end events, as mcp-go reads them;
// however the stream is split into reads.
func TestMessagesAreBoundedWhileRead(t *testing.T) {
	cases := []struct {
		name   string
		events bool
		limit  int64
		stream string
		within int // bytes read before the error; -1: no error
	}{
		{"lines within", false, 5, "12345\n12345\n\n1", -1},
		{"a line over", false, 5, "12345\n123456\n", 11},
		{"carriage returns count in a line", false, 5, "1234\r\n", -1},
		{"carriage returns count in a line, over", false, 4, "1234\r\n", 4},
		{"a line without end", false, 5, strings.Repeat("x", 100), 5},
		{"events within", true, 9, "data: 12\n\ndata: 12\n\n", -1},
		{"an event over on its line end", true, 8, "data: 12\n\n", 8},
		{"an event of many lines", true, 16, "data: 1\ndata: 2\ndata: 3\n\n", 16},
		{"a blank line of carriage returns ends an event", true, 11, "data: 123\r\n\r\ndata: 123\r\n\r\r\n", -1},
		{"endless carriage returns", true, 10, strings.Repeat("\r", 100), 10},
		{"a line of other bytes does not", true, 10, "data: 123\n \ndata: 123\n\n", 10},
		{"comments count", true, 10, ": 123456789\n\n", 10},
		{"an event without end", true, 64, "data: " + strings.Repeat("x", 1000), 64},
		{"endless events of one line", true, 8, strings.Repeat("data: x\n", 100), 8},
	}
	for _, tc := range cases {
		for _, chunk := range []int{1, 3, 1 << 20} {
			t.Run(fmt.Sprintf("%s, reads of %d", tc.name, chunk), func(t *testing.T) {
				var told []*TooLargeError
				b := &Bound{Server: "s", Limit: tc.limit, Over: func(e *TooLargeError) { told = append(told, e) }}
				src := io.NopCloser(chunked(tc.stream, chunk))
				var r io.Reader
				if tc.events {
					r = b.Events(src, "event stream")
				} else {
					r = b.Lines(src, "stdout")
				}
				got, err := io.ReadAll(r)
				if tc.within < 0 {
					if err != nil || string(got) != tc.stream {
						t.Fatalf("read %q, %v; want the whole stream", got, err)
					}
					return
				}
				var over *TooLargeError
				if !errors.As(err, &over) || len(got) != tc.within || string(got) != tc.stream[:tc.within] {
					t.Fatalf("read %d bytes, %v; want %d and a *TooLargeError", len(got), err, tc.within)
				}
				if len(told) != 1 || told[0] != over {
					t.Fatalf("Over told %v; want the error once", told)
				}
				if n, again := r.Read(make([]byte, 10)); n != 0 || again != err {
					t.Fatalf("read after the error: %d, %v", n, again)
				}
			})
		}
	}
}

// chunked reads s in reads of at most n bytes.
func chunked(s string, n int) io.Reader {
	if n == 1 {
		return iotest.OneByteReader(strings.NewReader(s))
	}
	return &splitReader{s: s, n: n}
}

type splitReader struct {
	s string
	n int
}

func (r *splitReader) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.s)
	r.s = r.s[n:]
	return n, nil
}

// TestTooLargeErrorNamesTheBound: the error says which upstream, how
// large, which setting and which stream, as a status shows it.
func TestTooLargeErrorNamesTheBound(t *testing.T) {
	cases := []struct {
		limit int64
		want  string
	}{
		{32 << 20, "upstream up sent a message larger than 32 MiB (upstream.maxResponseBytes) on its stdout"},
		{96 << 10, "upstream up sent a message larger than 96 KiB (upstream.maxResponseBytes) on its stdout"},
	}
	for _, tc := range cases {
		if got := (&TooLargeError{Server: "up", Limit: tc.limit, Stream: "stdout"}).Error(); got != tc.want {
			t.Errorf("%d: %q, want %q", tc.limit, got, tc.want)
		}
	}
}
