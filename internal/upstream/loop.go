package upstream

import (
	"errors"
	"net"
	"net/http"

	"github.com/purko-io/mcp-hub/internal/mcpws"
	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
)

// wsOptions apply the dial policy and the loop check to a WebSocket
// upstream: its handshake is its one HTTP answer.
func wsOptions(o *Options, loops *loopcheck.Watch) []mcpws.ClientOption {
	var opts []mcpws.ClientOption
	if p := o.Dial; p != nil {
		opts = append(opts,
			mcpws.WithDialContext(p.Dialer(&net.Dialer{Timeout: o.ConnectTimeout}).DialContext),
			mcpws.WithProxy(p.Proxy(http.ProxyFromEnvironment)))
	}
	if loops != nil {
		opts = append(opts, mcpws.WithAnswerCheck(loops.Check))
	}
	return opts
}

// ownRefusal puts the hub's own reasons for a failed connect, a loop or
// the dial policy, in place of the transport's words around them (what a
// loop drops is setFailed's).
func ownRefusal(err error) error {
	var loop *loopcheck.LoopError
	var refused *netpolicy.RefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &loop):
		return loop
	case errors.As(err, &refused):
		return refused
	}
	return err
}
