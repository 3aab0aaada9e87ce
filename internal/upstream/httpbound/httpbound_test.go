package httpbound

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestListAnswerIsCutWhileRead: under a Page, an answer to a POST is
// read up to its bytes or its items, fails with the bound's error and
// records the cut; bytes above the client's own limit do not raise it.
func TestListAnswerIsCutWhileRead(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` + strings.Repeat(`{"name":"x"},`, 1000) + `{"name":"y"}]}}`
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, body) }))
	t.Cleanup(ts.Close)
	tooLarge, tooMany := errors.New("bytes"), errors.New("items")
	var clientLimit *TooLargeError
	cases := []struct {
		name         string
		clientLimit  int64 // the client's Limit
		bytes        int64
		items        int
		wantErr      any // an error, or a pointer to an error type
		wantBytes    int // read before the error; -1: fewer than the body
		wantRecorded bool
	}{
		{"bytes below the answer limit", 5000, 1000, -1, tooLarge, 1000, true},
		{"bytes above the answer limit", 5000, 8000, -1, &clientLimit, 5000, false},
		{"more items than the bound", 1 << 20, 1 << 20, 100, tooMany, -1, true},
		{"no items left", 1 << 20, 1 << 20, 0, tooMany, -1, true},
		{"items within the bound", 1 << 20, 1 << 20, 1001, nil, len(body), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pb := &Page{Bytes: tc.bytes, Items: tc.items, TooLarge: tooLarge, TooMany: tooMany}
			req, _ := http.NewRequestWithContext(WithPage(context.Background(), pb), http.MethodPost, ts.URL, nil)
			resp, err := Limit(ts.Client(), "s", tc.clientLimit).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			switch want := tc.wantErr.(type) {
			case nil:
				if err != nil {
					t.Fatalf("read error %v", err)
				}
			case error:
				if !errors.Is(err, want) {
					t.Fatalf("read error %v; want %v", err, want)
				}
			default:
				if !errors.As(err, want) {
					t.Fatalf("read error %v; want a %T", err, want)
				}
			}
			if tc.wantBytes >= 0 && len(got) != tc.wantBytes || tc.wantBytes < 0 && len(got) >= len(body) {
				t.Fatalf("read %d of %d bytes; want %d", len(got), len(body), tc.wantBytes)
			}
			if (pb.Cut() != nil) != tc.wantRecorded {
				t.Fatalf("cut recorded: %v; want %v", pb.Cut(), tc.wantRecorded)
			}
		})
	}
}

// TestItemCounterReadsAsMcpGoDoes: the items of a page are counted in a
// JSON body and in an event stream, whatever the strings, nesting, and
// line endings, and however the answer is split into reads.
func TestItemCounterReadsAsMcpGoDoes(t *testing.T) {
	page := `{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a {[\" \\","inputSchema":{"type":"object","properties":{"x":{"enum":[{"a":1},{"b":2}]}}}},` +
		`{"name":"b}"},{"name":"c"}],"_meta":{"list":[{"not":"an item"}]}}}`
	cases := []struct {
		name   string
		events bool
		body   string
		want   int
	}{
		{"JSON body", false, page, 3},
		{"items that are not objects", false, `{"jsonrpc":"2.0","id":1,"result":{"tools":[ null ,null,1,"a,b",[{}],{},true ],"x":[]}}`, 7},
		{"an empty list", false, `{"jsonrpc":"2.0","id":1,"result":{"tools":[ ]}}`, 0},
		{"event stream", true, "event: message\ndata: " + page + "\n\n", 3},
		{"event stream, CRLF, a notification first", true,
			"event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"[{\"}}\r\n\r\ndata:" + page + "\r\n\r\n", 3},
		{"event stream, data over several lines", true, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\n" + `data: "result":{"tools":[{"name":"a"},` + "\ndata: {\"name\":\"b\"}]}}\n\n", 2},
		{"event stream, braces in other fields", true, "id: {{{[[[\n: {\"x\":[{\n" + "data: " + page + "\n\n", 3},
		{"an event after a blank line of carriage returns starts over", true, "data: {\"a\":{\"b\":[\n\r\r\n" + "data: " + page + "\n\n", 3},
	}
	for _, tc := range cases {
		if !tc.events {
			var v any
			if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
				t.Fatalf("%s: the page is not JSON: %v", tc.name, err)
			}
		}
		for _, chunk := range []int{1, 7, len(tc.body)} {
			t.Run(fmt.Sprintf("%s, reads of %d", tc.name, chunk), func(t *testing.T) {
				c := &itemCounter{max: 100, events: tc.events}
				for b := []byte(tc.body); len(b) > 0; b = b[min(chunk, len(b)):] {
					c.write(b[:min(chunk, len(b))])
				}
				if c.n != tc.want {
					t.Fatalf("counted %d items, want %d", c.n, tc.want)
				}
				if tc.want == 0 {
					return
				}
				over := &itemCounter{max: tc.want - 1, events: tc.events}
				if over.write([]byte(tc.body)) {
					t.Fatalf("%d items within a bound of %d", tc.want, tc.want-1)
				}
			})
		}
	}
}
