// Package listbound bounds what the hub lists of an upstream. An upstream
// decides how many pages its lists have and how large they are; left to
// mcp-go's ListTools, which follows nextCursor for as long as the server
// hands one out, an upstream answering pages of 1,000 tools forever took
// the hub from 164 MB to 1.55 GB in 20 s, and a single page of 50,000
// tools to 1.15 GB with a 20 MB pins file. So the hub pages through every
// list itself (Collect) and counts, per server and per listing (a
// connect, or a refresh after list_changed):
//   - pages of each list (upstream.maxListPages),
//   - tools (upstream.maxTools),
//   - bytes of all lists together: tools, resources, resource templates
//     and prompts (upstream.maxListBytes): the bytes of each page's answer
//     over streamable HTTP, else of the JSON encoding of the page.
//
// Over a bound the listing fails with an *Error that names the bound and
// its setting; the upstream's client puts the server in error and
// publishes nothing, not the part it listed before the bound and not an
// older list (a server that can say anything on a refresh could otherwise
// keep a list the operator cannot see it would offer now).
//
// A page answered over HTTP is counted while it is read, its bytes against
// what is left of the byte bound and its tools against what is left of
// the tools, and cut at a bound before mcp-go decodes it (package
// httpbound): decoding costs some 30 times the page. Over stdio and the
// legacy SSE stream, whose readers take a message whole, a page is
// decoded, then counted.
package listbound

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// pageEnvelope is room above the byte bound left for what a page's answer
// carries besides the page (the JSON-RPC envelope, SSE framing,
// whitespace): the answer is cut only past it, the page is counted exactly.
const pageEnvelope = 64 << 10

// Error is a listing of an upstream that went over one of the bounds of
// what the hub keeps of a server; its text is the server's status.
type Error struct {
	Server string
	// Method is the list that went over: tools/list, resources/list,
	// resources/templates/list or prompts/list.
	Method string
	// Over says which bound in words ("more than 2000 tools"); Setting is
	// the config field that sets it.
	Over, Setting string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s of %s: %s (%s)", e.Method, e.Server, e.Over, e.Setting)
}

// Bounds are the bounds of one server's lists: pages of each list, tools,
// and bytes of all lists together. A bound of 0 is the configuration's
// default (config.DefaultMaxListPages, DefaultMaxTools,
// DefaultMaxListBytes).
type Bounds struct {
	Pages, Tools int
	Bytes        int64
}

// withDefaults are b, the configuration's defaults where b sets none.
func (b Bounds) withDefaults() Bounds {
	if b.Pages <= 0 {
		b.Pages = config.DefaultMaxListPages
	}
	if b.Tools <= 0 {
		b.Tools = config.DefaultMaxTools
	}
	if b.Bytes <= 0 {
		b.Bytes = config.DefaultMaxListBytes
	}
	return b
}

// Listing counts what one listing of a server has taken of its bounds.
type Listing struct {
	server string
	bounds Bounds
	bytes  int64
	// answered: every page comes as the answer to a POST (streamable
	// HTTP), whose bytes are counted as they are read.
	answered bool
}

// New starts a listing of server within b. answered says every page comes
// as the answer to a POST (streamable HTTP), whose bytes httpbound counts
// as they are read; other pages count as their JSON encoding (Page.Size).
func New(server string, b Bounds, answered bool) *Listing {
	return &Listing{server: server, bounds: b.withDefaults(), answered: answered}
}

func (l *Listing) over(method, what, setting string) *Error {
	return &Error{Server: l.server, Method: method, Over: what, Setting: setting}
}

func (l *Listing) overBytes(method string) *Error {
	return l.over(method, "its lists take more than "+streambound.Size(l.bounds.Bytes), "upstream.maxListBytes")
}

// Page is one page of a list: its items, the cursor of the next one ("" at
// the end), and its size in bytes where it did not come as the answer to
// a POST.
type Page[T any] struct {
	Items []T
	Next  mcp.Cursor
	Size  func() int64
}

// Collect reads every page of method through fetch, within l's bounds: its
// pages, the bytes of all lists of the listing and, of tools/list, the
// tools.
func Collect[T any](ctx context.Context, l *Listing, method string,
	fetch func(context.Context, mcp.Cursor) (Page[T], error)) ([]T, error) {
	var all []T
	seen := map[mcp.Cursor]bool{}
	var cursor mcp.Cursor
	maxItems, tooMany := 0, (*Error)(nil)
	if method == string(mcp.MethodToolsList) {
		maxItems = l.bounds.Tools
		tooMany = l.over(method, fmt.Sprintf("more than %d tools", maxItems), "upstream.maxTools")
	}
	for n := 1; ; n++ {
		pb := &httpbound.Page{Bytes: l.bounds.Bytes - l.bytes + pageEnvelope, Items: -1, TooLarge: l.overBytes(method)}
		if maxItems > 0 {
			pb.Items, pb.TooMany = maxItems-len(all), tooMany // 0 after a page of exactly maxItems
		}
		p, err := fetch(httpbound.WithPage(ctx, pb), cursor)
		if over := pb.Cut(); over != nil {
			return nil, over // whatever the transport made of the cut
		}
		if err != nil {
			return nil, err
		}
		size := pb.Read() // the answer's bytes
		if !l.answered {
			size = p.Size()
		}
		if l.bytes += size; l.bytes > l.bounds.Bytes {
			return nil, l.overBytes(method)
		}
		if all = append(all, p.Items...); maxItems > 0 && len(all) > maxItems {
			return nil, tooMany
		}
		if p.Next == "" {
			return all, nil
		}
		if n == l.bounds.Pages {
			return nil, l.over(method, fmt.Sprintf("more than %d pages", l.bounds.Pages), "upstream.maxListPages")
		}
		if seen[p.Next] {
			return nil, fmt.Errorf("%s of %s: %w", method, l.server, client.ErrRepeatedListCursor)
		}
		seen[p.Next] = true
		cursor = p.Next
	}
}

// ByPage makes the fetch of Collect from one of mcp-go's ...ByPage
// methods (list) and what of its result is the page (items); a page that
// was not an answer to a POST is as large as its result's encoding.
func ByPage[R, T any](list func(context.Context, mcp.PaginatedRequest) (*R, error),
	items func(*R) ([]T, mcp.Cursor)) func(context.Context, mcp.Cursor) (Page[T], error) {
	return func(ctx context.Context, cursor mcp.Cursor) (Page[T], error) {
		var req mcp.PaginatedRequest
		req.Params.Cursor = cursor
		res, err := list(ctx, req)
		if err != nil {
			return Page[T]{}, err
		}
		its, next := items(res)
		return Page[T]{its, next, func() int64 { return encodedSize(res) }}, nil
	}
}

// encodedSize is the length of v's JSON encoding, without keeping it.
func encodedSize(v any) int64 {
	var n byteCounter
	if err := json.NewEncoder(&n).Encode(v); err != nil {
		return 0 // mcp-go decoded it, so it encodes; counted as nothing if not
	}
	return int64(n) - 1 // Encode's newline
}

type byteCounter int64

func (n *byteCounter) Write(p []byte) (int, error) {
	*n += byteCounter(len(p))
	return len(p), nil
}
