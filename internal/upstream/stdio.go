package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/upstream/stdiochild"
)

// handshakeTimeout bounds the handshake and first listing of a server
// of transport tr, and setting names the setting the bound is: a stdio
// child gets StartTimeout when it is longer than ConnectTimeout, since
// `npx -y PKG` or `uvx PKG` may download for half a minute before the
// server reads its stdin, and a child stopped mid-download is no faster
// the next time. A child that exits is told at once (its stdout closes),
// whatever is left of the bound.
func (o *Options) handshakeTimeout(tr config.Transport) (bound time.Duration, setting string) {
	if tr == config.TransportStdio && o.StartTimeout > o.ConnectTimeout {
		return o.StartTimeout, "upstream.startTimeout"
	}
	return o.ConnectTimeout, "upstream.connectTimeout"
}

// childFailed closes the session of a stdio child whose connect failed at
// stage what with err and returns the failure told with how the child
// ended and its last lines of stderr (*stdiochild.ExitError): stopped
// after the handshake's bound (hctx, timeout) passed, or ended on its
// own. nil, the session left open, for a failure of another kind (the
// child answered with an error): its own words say more. Whatever else it
// returns, the session is closed.
func (cn *conn) childFailed(hctx context.Context, what string, timeout time.Duration, setting string, err error) error {
	var exit *stdiochild.ExitError
	switch {
	case errors.Is(hctx.Err(), context.DeadlineExceeded) && cn.ctx.Err() == nil:
		cn.c.closeConn(cn, err) // stops it: how it ended and its stderr are complete
		return cn.child.Stopped(what, timeout, setting, err)
	case errors.As(context.Cause(cn.ctx), &exit), isTransportFailure(err):
		cn.c.closeConn(cn, err)
		if exit := cn.child.Exit(what, err); exit != nil {
			return exit
		}
		return fmt.Errorf("%s: %w", what, err) // closed all the same
	}
	return nil
}

// childExit is err, why a connected session ended, told with how its
// stdio child ended and its last stderr when the child caused it (it
// exited, its stdout closed); err itself otherwise. The session is
// closed.
func (cn *conn) childExit(err error) error {
	if cn.child == nil {
		return err
	}
	var exit *stdiochild.ExitError
	if !errors.As(err, &exit) && !isTransportFailure(err) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err // a health check unanswered: the child was alive
	}
	if exit := cn.child.Exit("", err); exit != nil {
		return fmt.Errorf("connection lost: %w", exit)
	}
	return err
}
