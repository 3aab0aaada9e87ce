package upstream

import (
	"context"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/oauthclient"
)

// A streamable HTTP server is reached over a 2025-11-25 session (see
// preferHandshake), which is what a plain call costs least over. A call
// whose caller takes what the upstream sends during it (a relayed call)
// may need 2026-07-28: a 2026-07-28 caller takes the upstream's input
// requests only as 2026-07-28 results (input_required), never as server
// requests on a stream. So relayed calls go over a second, stateless
// 2026-07-28 client beside the session, made on the first relayed call
// when the server speaks 2026-07-28, and closed with the session. A server
// that does not keeps its relayed calls on the session, as a 2025-11-25
// server always has.

// sideClient is a connection's stateless 2026-07-28 client.
type sideClient struct {
	mu     sync.Mutex
	tried  bool // made, or found the server without 2026-07-28
	closed bool
	mc     *client.Client // nil: none
}

// out is how a relayed call, or one whose caller TakesInput, leaves: over the side client when there is
// one (made now if need be), else o.
func (s *sideClient) out(ctx context.Context, cn *conn, o *out) *out {
	c := cn.c
	if o.modern || c.spec.Transport != config.TransportStreamableHTTP || c.spec.ProtocolVersion != "" || c.noModern.Load() {
		return o
	}
	mc := s.get(ctx, cn)
	if mc == nil {
		return o
	}
	side := *o
	side.modern, side.protocol = true, mc.ProtocolVersion()
	side.meta = modernMeta(c.opts.ClientInfo, side.protocol, c.opts.Carried)
	side.session = sessionWire{tr: mc.GetTransport(), ids: &cn.nextID, http: true}
	side.post = nil
	return &side
}

// get returns the side client, making it on first use.
func (s *sideClient) get(ctx context.Context, cn *conn) *client.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.tried {
		return s.mc
	}
	s.tried = true
	c := cn.c
	mc, err := s.dial(ctx, cn)
	if err != nil {
		c.log.Debug().Err(c.cred.Redact(err)).Msg("no 2026-07-28 client for relayed calls; they use the session")
		return nil
	}
	s.mc = mc
	return mc
}

// dial makes a stateless 2026-07-28 client of cn's server, which ends
// with the session (cn.ctx). A server that answers with an older revision
// is remembered: reconnects do not ask again.
func (s *sideClient) dial(ctx context.Context, cn *conn) (*client.Client, error) {
	c := cn.c
	tr, err := c.transports.New(false, cn.cancel)
	if err != nil {
		return nil, err
	}
	mc := c.newMCPClient(tr, false)
	if err := mc.Start(cn.ctx); err != nil {
		return nil, err
	}
	mc.OnNotification(c.notification)
	// The client is kept for every caller's relayed calls: it is set up
	// as the hub, not as the caller whose call asked for it.
	hctx, cancel := context.WithTimeout(oauthclient.WithoutCallToken(ctx), c.opts.ConnectTimeout)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ClientInfo = c.opts.ClientInfo
	res, err := mc.Initialize(hctx, init)
	if err == nil && !mcp.IsModernProtocol(res.ProtocolVersion) {
		c.noModern.Store(true)
		err = errors.New("the server answered with " + res.ProtocolVersion)
	}
	if err != nil {
		_ = mc.Close()
		return nil, err
	}
	return mc, nil
}

// refusedRevision reports whether err is a server's refusal of the
// request's 2026-07-28 revision, which it did not run.
func refusedRevision(err error) bool {
	var rpcErr *RPCError
	var unsupported mcp.UnsupportedProtocolVersionError
	return errors.As(err, &unsupported) || (errors.As(err, &rpcErr) && rpcErr.Code == mcp.UNSUPPORTED_PROTOCOL_VERSION)
}

// refused closes the side client of a server that refused 2026-07-28 on
// a request (err), and remembers it: reconnects do not make one again.
func (s *sideClient) refused(cn *conn, err error) {
	c := cn.c
	c.noModern.Store(true)
	c.log.Debug().Err(c.cred.Redact(err)).Msg("server refused 2026-07-28 on a call; relayed calls use the session")
	s.close()
}

// close closes the side client, if any; none is made after.
func (s *sideClient) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.mc != nil {
		_ = s.mc.Close()
		s.mc = nil
	}
}
