package upstream

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/hubtest"
)

// endless answers every list of method with pages of n tools (distinct
// names) and a next cursor, forever; other lists are empty.
func endless(method string, n int) hubtest.ListFunc {
	return func(m, cursor string) ([]byte, string) {
		if m != method {
			return []byte("[]"), ""
		}
		i, _ := strconv.Atoi(cursor)
		return itemsJSON(m, fmt.Sprintf("p%d_", i), n), strconv.Itoa(i + 1)
	}
}

// pages answers tools/list with count pages of n tools, then ends.
func pages(count, n int) hubtest.ListFunc {
	return func(m, cursor string) ([]byte, string) {
		if m != "tools/list" {
			return []byte("[]"), ""
		}
		i, _ := strconv.Atoi(cursor)
		next := ""
		if i+1 < count {
			next = strconv.Itoa(i + 1)
		}
		return itemsJSON(m, fmt.Sprintf("p%d_", i), n), next
	}
}

// onePage answers method with one page of n items, other lists empty.
func onePage(method string, n int) hubtest.ListFunc {
	items := itemsJSON(method, "t", n)
	return func(m, _ string) ([]byte, string) {
		if m == "tools/list" && method != m {
			return itemsJSON(m, "t", 1), ""
		}
		if m != method {
			return []byte("[]"), ""
		}
		return items, ""
	}
}

// itemsJSON is n items of the list method, about 130 bytes each.
func itemsJSON(method, prefix string, n int) []byte {
	if method == "tools/list" {
		return hubtest.ToolsJSON(prefix, n, 1)
	}
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		switch method {
		case "resources/list":
			fmt.Fprintf(&b, `{"uri":"file:///%s%d","name":"%s%d","description":"A resource of a server that lists too much."}`, prefix, i, prefix, i)
		case "prompts/list":
			fmt.Fprintf(&b, `{"name":"%s%d","description":"A prompt of a server that lists too much, a long one."}`, prefix, i)
		default:
			fmt.Fprintf(&b, `{"uriTemplate":"file:///%s%d/{x}","name":"%s%d"}`, prefix, i, prefix, i)
		}
	}
	b.WriteByte(']')
	return b.Bytes()
}

// startListing starts a client of u with the bounds of opts and waits until
// it is connected or in error.
func startListing(t *testing.T, u *hubtest.PagingUpstream, opts Options) *Client {
	t.Helper()
	opts.ConnectTimeout, opts.Timeout = 10*time.Second, 10*time.Second
	opts.BackoffMin, opts.BackoffMax = time.Second, time.Second
	c := New(config.ServerSpec{Name: "s", URL: u.URL, Transport: config.TransportStreamableHTTP}, opts, zerolog.Nop(), func() {})
	c.Start(context.Background())
	t.Cleanup(c.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for st := c.Status(); st.State == StateConnecting; st = c.Status() {
		if time.Now().After(deadline) {
			t.Fatal("still connecting after 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return c
}

// TestListsAreBounded: an upstream whose lists go over a bound (pages,
// tools, bytes of all lists) is in error naming the bound and its setting,
// and has no tools, resources or prompts; within the bounds every page is
// listed.
func TestListsAreBounded(t *testing.T) {
	cases := []struct {
		name      string
		opts      Options
		list      hubtest.ListFunc
		events    bool   // answered as event streams
		wantErr   string // "": connected
		wantTools int
	}{
		{name: "pages within the bounds", opts: Options{MaxListPages: 3, MaxTools: 30},
			list: pages(3, 10), wantTools: 30},
		{name: "endless pages", opts: Options{MaxListPages: 5},
			list: endless("tools/list", 1), wantErr: "tools/list of s: more than 5 pages (upstream.maxListPages)"},
		{name: "a page of exactly the tools bound, then more", opts: Options{MaxTools: 50},
			list: pages(2, 50), wantErr: "tools/list of s: more than 50 tools (upstream.maxTools)"},
		{name: "endless pages of many tools", opts: Options{MaxTools: 50},
			list: endless("tools/list", 20), wantErr: "tools/list of s: more than 50 tools (upstream.maxTools)"},
		{name: "one page of too many tools, default bound", opts: Options{},
			list: onePage("tools/list", config.DefaultMaxTools+1), wantErr: "tools/list of s: more than 2000 tools (upstream.maxTools)"},
		{name: "one page of too many tools, in an event stream", opts: Options{}, events: true,
			list: onePage("tools/list", config.DefaultMaxTools+1), wantErr: "tools/list of s: more than 2000 tools (upstream.maxTools)"},
		{name: "one page over the bytes, in an event stream", opts: Options{MaxListBytes: 64 << 10}, events: true,
			list: onePage("tools/list", 3000), wantErr: "tools/list of s: its lists take more than 64 KiB (upstream.maxListBytes)"},
		{name: "pages within the bounds, in event streams", opts: Options{MaxListPages: 3, MaxTools: 30}, events: true,
			list: pages(3, 10), wantTools: 30},
		{name: "one page over the bytes, cut while read", opts: Options{MaxListBytes: 64 << 10},
			list: onePage("tools/list", 3000), wantErr: "tools/list of s: its lists take more than 64 KiB (upstream.maxListBytes)"},
		{name: "one page over the bytes, counted", opts: Options{MaxListBytes: 64 << 10},
			list: onePage("tools/list", 700), wantErr: "tools/list of s: its lists take more than 64 KiB (upstream.maxListBytes)"},
		{name: "resources over the bytes of all lists", opts: Options{MaxListBytes: 64 << 10},
			list: onePage("resources/list", 3000), wantErr: "resources/list of s: its lists take more than 64 KiB (upstream.maxListBytes)"},
		{name: "resource templates over the bytes of all lists", opts: Options{MaxListBytes: 64 << 10},
			list: onePage("resources/templates/list", 3000), wantErr: "resources/templates/list of s: its lists take more than 64 KiB (upstream.maxListBytes)"},
		{name: "endless pages of prompts", opts: Options{MaxListPages: 5},
			list: endless("prompts/list", 1), wantErr: "prompts/list of s: more than 5 pages (upstream.maxListPages)"},
		{name: "a page of nulls, each a tool when decoded", opts: Options{},
			list: func(m, _ string) ([]byte, string) {
				if m != "tools/list" {
					return []byte("[]"), ""
				}
				return []byte("[" + strings.Repeat("null,", 100000) + "null]"), ""
			}, wantErr: "tools/list of s: more than 2000 tools (upstream.maxTools)"},
		{name: "a cursor that repeats", opts: Options{},
			list: func(string, string) ([]byte, string) { return []byte("[]"), "again" }, wantErr: "list cursor did not advance"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			u := hubtest.StartPagingUpstream(t, "s", tc.list)
			u.Events.Store(tc.events)
			c := startListing(t, u, tc.opts)
			st, f := c.Status(), c.Features()
			if tc.wantErr == "" {
				if st.State != StateConnected || len(c.Tools()) != tc.wantTools {
					t.Fatalf("state %s (%q), %d tools; want connected with %d tools", st.State, st.Error, len(c.Tools()), tc.wantTools)
				}
				return
			}
			if st.State != StateError || !strings.Contains(st.Error, tc.wantErr) {
				t.Fatalf("state %s, error %q; want error with %q", st.State, st.Error, tc.wantErr)
			}
			if n := len(c.Tools()) + len(f.Resources) + len(f.Templates) + len(f.Prompts); n != 0 {
				t.Fatalf("a server over a bound publishes %d tools, resources and prompts; want none", n)
			}
		})
	}
}

// TestRefreshOverABoundDropsTheLists: a server that lists within the
// bounds and then, after list_changed, over one, is in error and publishes
// nothing: not its former list, not a prefix of the new one.
func TestRefreshOverABoundDropsTheLists(t *testing.T) {
	var hostile atomic.Bool
	fine, bad := pages(1, 10), endless("tools/list", 100)
	u := hubtest.StartPagingUpstream(t, "s", func(m, cursor string) ([]byte, string) {
		if hostile.Load() {
			return bad(m, cursor)
		}
		return fine(m, cursor)
	})
	c := startListing(t, u, Options{MaxTools: 500})
	if st := c.Status(); st.State != StateConnected || len(c.Tools()) != 10 {
		t.Fatalf("state %s (%q), %d tools; want connected with 10", st.State, st.Error, len(c.Tools()))
	}
	hostile.Store(true)
	c.refresh <- struct{}{} // as a notifications/tools/list_changed does
	st := waitState(t, c, StateError)
	if want := "tools/list of s: more than 500 tools (upstream.maxTools)"; !strings.Contains(st.Error, want) {
		t.Fatalf("error %q; want %q", st.Error, want)
	}
	if n := len(c.Tools()); n != 0 {
		t.Fatalf("%d tools kept after a refresh over a bound; want none", n)
	}
}
