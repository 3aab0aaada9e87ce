package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/httpbound"
	"github.com/purko-io/mcp-hub/internal/upstream/streambound"
)

// What an upstream lists is bounded. An upstream decides how many pages
// its lists have and how large they are; left to mcp-go's ListTools, which
// follows nextCursor for as long as the server hands one out, an upstream
// answering pages of 1,000 tools forever took the hub from 164 MB to
// 1.55 GB in 20 s, and a single page of 50,000 tools to 1.15 GB with a
// 20 MB pins file. So the hub pages through every list itself and counts,
// per server and per listing (a connect, or a refresh after list_changed):
//   - pages of each list (upstream.maxListPages),
//   - tools (upstream.maxTools),
//   - bytes of all lists together: tools, resources, resource templates
//     and prompts (upstream.maxListBytes): the bytes of each page's answer
//     over streamable HTTP, else of the JSON encoding of the page.
// Over a bound the listing fails with a *listBoundError that names the
// bound and its setting; the server is in error and publishes nothing, not
// the part it listed before the bound and not an older list (a server that
// can say anything on a refresh could otherwise keep a list the operator
// cannot see it would offer now).
//
// A page answered over HTTP is counted while it is read, its bytes against
// what is left of the byte bound and its tools against what is left of
// the tools, and cut at a bound before mcp-go decodes it (package
// httpbound): decoding costs some 30 times the page. Over stdio and the
// legacy SSE stream, whose readers take a message whole, a page is
// decoded, then counted.

// pageEnvelope is room above the byte bound left for what a page's answer
// carries besides the page (the JSON-RPC envelope, SSE framing,
// whitespace): the answer is cut only past it, the page is counted exactly.
const pageEnvelope = 64 << 10

// listBoundError is a listing of an upstream that went over one of the
// bounds of what the hub keeps of a server; its text is the server's
// status.
type listBoundError struct {
	Server string
	// Method is the list that went over: tools/list, resources/list,
	// resources/templates/list or prompts/list.
	Method string
	// Over says which bound in words ("more than 2000 tools"); Setting is
	// the config field that sets it.
	Over, Setting string
}

func (e *listBoundError) Error() string {
	return fmt.Sprintf("%s of %s: %s (%s)", e.Method, e.Server, e.Over, e.Setting)
}

// listBounds are the bounds of one server's lists.
type listBounds struct {
	pages, tools int
	bytes        int64
}

// listBounds are o's bounds, the configuration's defaults where o sets none.
func (o Options) listBounds() listBounds {
	b := listBounds{pages: o.MaxListPages, tools: o.MaxTools, bytes: o.MaxListBytes}
	if b.pages <= 0 {
		b.pages = config.DefaultMaxListPages
	}
	if b.tools <= 0 {
		b.tools = config.DefaultMaxTools
	}
	if b.bytes <= 0 {
		b.bytes = config.DefaultMaxListBytes
	}
	return b
}

// listing counts what one listing of a server has taken of its bounds.
type listing struct {
	server string
	bounds listBounds
	bytes  int64
	// answered: every page comes as the answer to a POST (streamable
	// HTTP), whose bytes are counted as they are read.
	answered bool
}

func (cn *conn) newListing() *listing {
	c := cn.c
	return &listing{server: c.spec.Name, bounds: c.opts.listBounds(), answered: c.spec.Transport == config.TransportStreamableHTTP}
}

func (l *listing) over(method, what, setting string) *listBoundError {
	return &listBoundError{Server: l.server, Method: method, Over: what, Setting: setting}
}

func (l *listing) overBytes(method string) *listBoundError {
	return l.over(method, "its lists take more than "+streambound.Size(l.bounds.bytes), "upstream.maxListBytes")
}

// page is one page of a list: its items, the cursor of the next one ("" at
// the end), and its size in bytes where it did not come as the answer to
// a POST.
type page[T any] struct {
	items []T
	next  mcp.Cursor
	size  func() int64
}

// collect reads every page of method through fetch, within l's bounds;
// maxItems > 0 bounds the items (what names them, setting its field).
func collect[T any](ctx context.Context, l *listing, method string, maxItems int, what, setting string,
	fetch func(context.Context, mcp.Cursor) (page[T], error)) ([]T, error) {
	var all []T
	seen := map[mcp.Cursor]bool{}
	var cursor mcp.Cursor
	tooMany := l.over(method, fmt.Sprintf("more than %d %s", maxItems, what), setting)
	for n := 1; ; n++ {
		pb := &httpbound.Page{Bytes: l.bounds.bytes - l.bytes + pageEnvelope, Items: -1, TooLarge: l.overBytes(method)}
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
			size = p.size()
		}
		if l.bytes += size; l.bytes > l.bounds.bytes {
			return nil, l.overBytes(method)
		}
		if all = append(all, p.items...); maxItems > 0 && len(all) > maxItems {
			return nil, tooMany
		}
		if p.next == "" {
			return all, nil
		}
		if n == l.bounds.pages {
			return nil, l.over(method, fmt.Sprintf("more than %d pages", l.bounds.pages), "upstream.maxListPages")
		}
		if seen[p.next] {
			return nil, fmt.Errorf("%s of %s: %w", method, l.server, client.ErrRepeatedListCursor)
		}
		seen[p.next] = true
		cursor = p.next
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

// lists lists the server's tools, and its resources, resource templates
// and prompts as its capabilities announce them, within the bounds. Only a
// failed tools/list or a bound fails it: a server that fails another list
// keeps the rest.
func (cn *conn) lists(ctx context.Context) ([]mcp.Tool, Features, error) {
	l := cn.newListing()
	tools, err := cn.listTools(ctx, l)
	if err != nil {
		return nil, Features{}, err
	}
	f, err := cn.listFeatures(ctx, l)
	return tools, f, err
}

// listFeatures lists resources, templates and prompts as the server's
// capabilities announce them, on l's bounds.
func (cn *conn) listFeatures(ctx context.Context, l *listing) (Features, error) {
	f := Features{Capabilities: cn.mc.GetServerCapabilities()}
	if f.Capabilities.Resources != nil {
		res, err := collect(ctx, l, string(mcp.MethodResourcesList), 0, "", "", mcpPages(
			func(ctx context.Context, p mcp.PaginatedRequest) (*mcp.ListResourcesResult, error) {
				return cn.mc.ListResourcesByPage(ctx, mcp.ListResourcesRequest{PaginatedRequest: p})
			},
			func(r *mcp.ListResourcesResult) ([]mcp.Resource, mcp.Cursor) { return r.Resources, r.NextCursor }))
		if err != nil && !cn.goOn(err, "list resources", zerolog.WarnLevel) {
			return Features{}, err
		}
		tmpl, err := collect(ctx, l, string(mcp.MethodResourcesTemplatesList), 0, "", "", mcpPages(
			func(ctx context.Context, p mcp.PaginatedRequest) (*mcp.ListResourceTemplatesResult, error) {
				return cn.mc.ListResourceTemplatesByPage(ctx, mcp.ListResourceTemplatesRequest{PaginatedRequest: p})
			},
			func(r *mcp.ListResourceTemplatesResult) ([]mcp.ResourceTemplate, mcp.Cursor) {
				return r.ResourceTemplates, r.NextCursor
			}))
		if err != nil && !cn.goOn(err, "list resource templates", zerolog.DebugLevel) {
			return Features{}, err
		}
		f.Resources, f.Templates = res, tmpl
	}
	if f.Capabilities.Prompts != nil {
		prompts, err := collect(ctx, l, string(mcp.MethodPromptsList), 0, "", "", mcpPages(
			func(ctx context.Context, p mcp.PaginatedRequest) (*mcp.ListPromptsResult, error) {
				return cn.mc.ListPromptsByPage(ctx, mcp.ListPromptsRequest{PaginatedRequest: p})
			},
			func(r *mcp.ListPromptsResult) ([]mcp.Prompt, mcp.Cursor) { return r.Prompts, r.NextCursor }))
		if err != nil && !cn.goOn(err, "list prompts", zerolog.WarnLevel) {
			return Features{}, err
		}
		f.Prompts = prompts
	}
	return f, nil
}

// mcpPages makes the fetch of collect from one of mcp-go's ...ByPage
// methods (list) and what of its result is the page (items); a page that
// was not an answer to a POST is as large as its result's encoding.
func mcpPages[R, T any](list func(context.Context, mcp.PaginatedRequest) (*R, error),
	items func(*R) ([]T, mcp.Cursor)) func(context.Context, mcp.Cursor) (page[T], error) {
	return func(ctx context.Context, cursor mcp.Cursor) (page[T], error) {
		var req mcp.PaginatedRequest
		req.Params.Cursor = cursor
		res, err := list(ctx, req)
		if err != nil {
			return page[T]{}, err
		}
		its, next := items(res)
		return page[T]{its, next, func() int64 { return encodedSize(res) }}, nil
	}
}

// goOn logs a list that failed short of a bound at level and reports that
// the listing goes on without it; a bound ends the listing.
func (cn *conn) goOn(err error, what string, level zerolog.Level) bool {
	c := cn.c
	var over *listBoundError
	if errors.As(err, &over) {
		return false
	}
	c.log.WithLevel(level).Err(c.cred.redact(err)).Msg(what)
	return true
}
