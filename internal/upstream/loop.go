package upstream

import (
	"errors"

	"github.com/purko-io/mcp-hub/internal/netpolicy"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
)

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
