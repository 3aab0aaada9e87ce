package upstream

import (
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/upstream/listbound"
	"github.com/purko-io/mcp-hub/internal/upstream/loopcheck"
	"github.com/purko-io/mcp-hub/internal/upstream/statustext"
)

// What an upstream answers is the upstream's, not the hub's to publish: the
// status of a server, which anyone reads in /api/mcp/tools, says what
// failed in the hub's words only, and the start of what the upstream
// wrote, redacted, is the status's Detail, for admins and the log
// (package statustext). To say it, the client keeps what its upstream
// answered lately (package answerlog).

// setFailed records err, why the connection failed or was lost, as the
// status, and returns it. A refusal that must leave nothing of the server
// published, a listing over a bound or a loop back to the hub (whose chain
// is forgotten too), drops what the server listed, whether a connect or a
// health check or refresh of a live connection met it.
func (c *Client) setFailed(err error) Status {
	var over *listbound.Error
	var loop *loopcheck.LoopError
	if errors.As(err, &loop) {
		c.loops.Reset()
	}
	if loop != nil || errors.As(err, &over) {
		c.mu.Lock()
		c.tools, c.features = nil, Features{}
		c.mu.Unlock()
	}
	public, detail := statustext.Failures{Answers: &c.answers, Redactor: c.cred}.Describe(err)
	st := Status{State: StateError, Error: public, Detail: detail, Since: time.Now()}
	c.setStatus(st, nil, nil)
	return st
}

// logDetail adds the status's detail to a log line that has one.
func (s Status) logDetail(e *zerolog.Event) {
	if s.Detail != "" {
		e.Str("detail", s.Detail)
	}
}
