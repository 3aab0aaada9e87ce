package pinning

import (
	"context"
	"fmt"
	"sync"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// Reasons of the Events a changed tool definition gets.
const (
	ReasonQuarantined = "ToolQuarantined"       // enforce: hidden and refused
	ReasonChanged     = "ToolDefinitionChanged" // warn: still listed and run
)

// maxEventMessage keeps an Event's message within what the API accepts.
const maxEventMessage = 1024

// Object names a Kubernetes object an Event is about: the MCPServer a
// server came from.
type Object struct {
	Group, Version, Resource, Kind string
	Namespace, Name                string
}

// Events tells `kubectl describe` readers of a changed tool definition:
// an Event on the server's MCPServer, or, for a server from elsewhere, on
// the pins ConfigMap. Reports are queued and sent by one goroutine (the
// object's uid is read first, so describe finds the Event), so a report
// never blocks the catalog.
type Events struct {
	dyn    dynamic.Interface
	store  *ConfigMapStore
	log    zerolog.Logger
	writer *kubeclient.EventWriter
	queue  chan report
	cancel context.CancelFunc
	done   sync.WaitGroup
}

type report struct {
	obj      *Object
	change   Change
	enforced bool
}

// NewEvents starts the Event sender; Stop ends it.
func NewEvents(dyn dynamic.Interface, store *ConfigMapStore, log zerolog.Logger) *Events {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Events{dyn: dyn, store: store, log: log.With().Str("component", "pins").Logger(),
		writer: kubeclient.NewEventWriter(dyn, "mcp-hub"), queue: make(chan report, 256), cancel: cancel}
	e.done.Add(1)
	go func() {
		defer e.done.Done()
		e.run(ctx)
	}()
	return e
}

// Stop ends the sender; reports not sent yet are dropped.
func (e *Events) Stop() {
	e.cancel()
	e.done.Wait()
}

// Report queues the Event of a changed definition; obj is the MCPServer
// of the server, or nil. A full queue drops the report (the audit line and
// the metric still tell).
func (e *Events) Report(obj *Object, c Change, enforced bool) {
	select {
	case e.queue <- report{obj: obj, change: c, enforced: enforced}:
	default:
		e.log.Warn().Str("server", c.Server).Str("tool", c.Tool).Msg("Event queue full; Event of a changed tool dropped")
	}
}

func (e *Events) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-e.queue:
			ref := e.reference(ctx, r.obj)
			reason, what := ReasonQuarantined, "quarantined: not listed, calls refused until approved"
			if !r.enforced {
				reason, what = ReasonChanged, "reported (mode warn: still listed and callable)"
			}
			msg := fmt.Sprintf("%s %s; pinned %.12s, now %.12s: %s",
				r.change.Describe(), what, r.change.PinnedSHA256, r.change.CurrentSHA256, r.change.Diff)
			if r.change.PinnedSHA256 == "" { // held by the hub's screening, not a change
				msg = fmt.Sprintf("%s %s; definition %.12s: %s", r.change.Describe(), what, r.change.CurrentSHA256, r.change.Diff)
			}
			if len(msg) > maxEventMessage {
				msg = msg[:maxEventMessage-3] + "..."
			}
			if err := e.writer.Write(ctx, ref, kubeclient.EventTypeWarning, reason, msg); err != nil && ctx.Err() == nil {
				e.log.Warn().Err(err).Str("server", r.change.Server).Str("tool", r.change.Tool).Msg("cannot write the Event of a changed tool")
			}
		}
	}
}

// reference is the object the Event is on, with its uid when it can be
// read.
func (e *Events) reference(ctx context.Context, obj *Object) kubeclient.ObjectReference {
	if obj != nil && e.dyn != nil {
		gvr := schema.GroupVersionResource{Group: obj.Group, Version: obj.Version, Resource: obj.Resource}
		ref := kubeclient.ObjectReference{APIVersion: gvr.GroupVersion().String(), Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name}
		if u, err := e.dyn.Resource(gvr).Namespace(obj.Namespace).Get(ctx, obj.Name, metav1.GetOptions{}); err == nil {
			ref.UID = u.GetUID()
		}
		return ref
	}
	return kubeclient.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: e.store.Namespace(), Name: ConfigMapName,
		UID: types.UID(e.store.UID())}
}
