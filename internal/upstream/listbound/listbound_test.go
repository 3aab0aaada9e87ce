package listbound

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// pages is a fetch that answers n items a page, the page's size in bytes
// per item each, and a next cursor until last pages (0: forever);
// repeat makes every next cursor the same.
func pages(n, size, last int, repeat bool) func(context.Context, mcp.Cursor) (Page[int], error) {
	return func(_ context.Context, cursor mcp.Cursor) (Page[int], error) {
		i, _ := strconv.Atoi(string(cursor))
		next := mcp.Cursor(strconv.Itoa(i + 1))
		if repeat {
			next = "again"
		}
		if last > 0 && i+1 == last {
			next = ""
		}
		return Page[int]{Items: make([]int, n), Next: next, Size: func() int64 { return int64(n * size) }}, nil
	}
}

// Collect reads every page within the bounds, and over one fails with the
// *Error naming the bound and its setting; the bytes are those of every
// list of the listing together.
func TestCollectKeepsToTheBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bounds  Bounds
		method  string
		fetch   func(context.Context, mcp.Cursor) (Page[int], error)
		wantN   int
		wantErr string
	}{
		{"within", Bounds{Pages: 3, Tools: 30}, "tools/list", pages(10, 1, 3, false), 30, ""},
		{"pages", Bounds{Pages: 5}, "prompts/list", pages(1, 1, 0, false), 0, "prompts/list of s: more than 5 pages (upstream.maxListPages)"},
		{"tools", Bounds{Tools: 50}, "tools/list", pages(20, 1, 0, false), 0, "tools/list of s: more than 50 tools (upstream.maxTools)"},
		{"items of other lists are not tools", Bounds{Tools: 5}, "resources/list", pages(10, 1, 2, false), 20, ""},
		{"bytes", Bounds{Bytes: 64 << 10}, "resources/list", pages(10, 1000, 0, false), 0, "resources/list of s: its lists take more than 64 KiB (upstream.maxListBytes)"},
		{"a cursor that repeats", Bounds{}, "tools/list", pages(1, 1, 0, true), 0, "list cursor did not advance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Collect(context.Background(), New("s", tc.bounds, false), tc.method, tc.fetch)
			if tc.wantErr == "" {
				if err != nil || len(got) != tc.wantN {
					t.Fatalf("Collect = %d items, %v; want %d", len(got), err, tc.wantN)
				}
				return
			}
			var over *Error
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &over) == errors.Is(err, client.ErrRepeatedListCursor) {
				t.Fatalf("Collect = %d items, %v; want error %q", len(got), err, tc.wantErr)
			}
		})
	}
}
