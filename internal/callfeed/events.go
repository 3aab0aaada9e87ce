package callfeed

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/purko-io/mcp-hub/internal/callers"
	"github.com/purko-io/mcp-hub/internal/httpjson"
)

// GET /api/events: server-sent events for the web console. "catalog" says
// the catalog changed (a server connected, died or changed, tools came or
// went): read /api/mcp/tools again. "approvals" says a call started or
// stopped waiting for a person's approval: read /api/mcp/approvals again.
// "call" carries one recorded call, as
// /api/mcp/calls lists it (an admin's stream every call, another caller's
// only its own). A comment line every heartbeat keeps proxies
// from closing a quiet stream. The stream ends when the client goes or the
// hub shuts down: its request context is the one Serve cancels when it
// closes the streams.

const (
	// maxEventStreams caps the open event streams: each is a goroutine and
	// a connection, and a console needs one.
	maxEventStreams = 64
	// maxSharedEventStreams is what callers that are not admins hold
	// together, so that the rest (16) stays for the operators' consoles
	// however many streams the others open.
	maxSharedEventStreams = 48
	// maxEventStreamsPerCaller is what one caller that is not an admin
	// holds (by budget key: an anonymous caller per network, a /24 or a
	// /64, callers.Caller.BudgetKey), so that one caller leaves the others
	// room: a console tab or two, with room for reloads. Admins are bound
	// by the total only.
	maxEventStreamsPerCaller = 4
	// eventHeartbeat is the interval of the keep-alive comment.
	eventHeartbeat = 15 * time.Second
	// eventWriteTimeout bounds one write: a client that stops reading
	// loses its stream instead of holding it.
	eventWriteTimeout = 10 * time.Second
)

// streamRefusal is an event stream refused: its status and why.
type streamRefusal struct {
	status int
	msg    string
}

// openStream takes an event stream slot for caller and returns its
// release, or the refusal: 429 for a caller at its own bound, 503 when
// the streams of anonymous callers, of non-admins, or all streams, are at
// theirs.
func (f *Feed) openStream(caller callers.Caller) (func(), *streamRefusal) {
	key := ""
	if !caller.Admin {
		key = caller.BudgetKey()
	}
	anonymous := caller.Class() == callers.ClassAnonymous
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.streams >= maxEventStreams:
		return nil, &streamRefusal{http.StatusServiceUnavailable, fmt.Sprintf(
			"too many event streams open (the hub's limit is %d)", maxEventStreams)}
	case caller.Admin:
	case f.perCaller[key] >= maxEventStreamsPerCaller:
		return nil, &streamRefusal{http.StatusTooManyRequests, fmt.Sprintf(
			"caller %q has %d event streams open, its limit: close one (a console needs one)", key, f.perCaller[key])}
	case f.shared >= maxSharedEventStreams:
		return nil, &streamRefusal{http.StatusServiceUnavailable, fmt.Sprintf(
			"too many event streams open by callers that are not admins (their limit is %d of the hub's %d)", maxSharedEventStreams, maxEventStreams)}
	case anonymous && f.anonymous >= f.maxAnonymous:
		return nil, &streamRefusal{http.StatusServiceUnavailable, fmt.Sprintf(
			"anonymous callers hold %d of their %d event streams (http.anonymousShare of the %d open to callers that are not admins): authenticate, or try again later",
			f.anonymous, f.maxAnonymous, maxSharedEventStreams)}
	default:
		f.shared++
		f.perCaller[key]++
		if anonymous {
			f.anonymous++
		}
	}
	f.streams++
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.streams--
		if !caller.Admin {
			f.shared--
			if anonymous {
				f.anonymous--
			}
			if f.perCaller[key]--; f.perCaller[key] <= 0 {
				delete(f.perCaller, key)
			}
		}
	}, nil
}

// HandleEvents serves one event stream to the request's caller
// (callers.From). It ends when the client goes or the request's context
// ends: the server cancels it when it closes its streams at shutdown.
func (f *Feed) HandleEvents(w http.ResponseWriter, r *http.Request) {
	caller := callers.From(r.Context())
	closeStream, refused := f.openStream(caller)
	if refused != nil {
		w.Header().Set("Retry-After", "5")
		httpjson.Write(w, refused.status, map[string]string{"error": refused.msg})
		return
	}
	defer closeStream()
	wake, release := f.subscribe()
	defer release()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)

	// The stream starts with the state now: the catalog generation, and
	// calls only from here on (the page reads /api/mcp/calls for the past).
	_, seq, gen := f.since(^uint64(0))
	approvals := f.approvalsGen()
	send := func(write func() error) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(eventWriteTimeout))
		return write() == nil && rc.Flush() == nil
	}
	if !send(func() error { return writeEvent(w, "catalog", map[string]uint64{"gen": gen}) }) {
		return
	}
	heartbeat := time.NewTicker(f.heartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-heartbeat.C:
			if !send(func() error { _, err := fmt.Fprint(w, ": ping\n\n"); return err }) {
				return
			}
		case <-wake:
			calls, newSeq, newGen := f.since(seq)
			calls = visibleCalls(caller, calls)
			newApprovals := f.approvalsGen()
			ok := send(func() error {
				if newApprovals != approvals {
					if err := writeEvent(w, "approvals", map[string]uint64{"gen": newApprovals}); err != nil {
						return err
					}
				}
				if newGen != gen {
					if err := writeEvent(w, "catalog", map[string]uint64{"gen": newGen}); err != nil {
						return err
					}
				}
				for _, c := range calls {
					if err := writeEvent(w, "call", c); err != nil {
						return err
					}
				}
				return nil
			})
			if !ok {
				return
			}
			seq, gen, approvals = newSeq, newGen, newApprovals
		}
	}
}

// writeEvent writes one server-sent event whose data is v as JSON (one
// line: JSON escapes newlines inside strings).
func writeEvent(w http.ResponseWriter, name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
	return err
}
