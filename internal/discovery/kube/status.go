package kube

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/rs/zerolog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// ConditionType is the condition the hub owns on an MCPServer.
const ConditionType = "HubConnected"

// ReasonUnavailable is the condition reason of a server the hub cannot use;
// it also raises a Warning event.
const ReasonUnavailable = "Unavailable"

// Status is the hub's view of one upstream, as written to its MCPServer.
type Status struct {
	Origin    config.Origin
	Connected bool
	// Reason is a CamelCase word (Connected, Connecting, ConnectFailed).
	Reason    string
	Message   string
	ToolCount int
	// ListedAt is when the hub last listed the server's tools.
	ListedAt time.Time
}

// statusWriter patches MCPServer status from the latest reports. Reports
// only replace a pending set; the writer's own goroutine does the network
// work, so the registry never waits on the API server.
type statusWriter struct {
	dyn dynamic.Interface
	log zerolog.Logger

	mu      sync.Mutex
	pending []Status
	wake    chan struct{}
	written map[config.Origin]written // what the API server has, as last written
}

// statusRetry is how long a failed status write waits for another try.
const statusRetry = 2 * time.Second

// written is the status last written to one object; a re-created object of
// the same name (another UID) is written afresh.
type written struct {
	uid    types.UID
	status Status
}

func newStatusWriter(dyn dynamic.Interface, log zerolog.Logger) *statusWriter {
	return &statusWriter{dyn: dyn, log: log, wake: make(chan struct{}, 1), written: map[config.Origin]written{}}
}

func (w *statusWriter) report(reports []Status) {
	w.mu.Lock()
	w.pending = reports
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// run writes until ctx ends. all gives the cached MCPServers, whose current
// conditions the writer keeps.
func (w *statusWriter) run(ctx context.Context, all []listers) {
	// Events on an MCPServer tell `kubectl describe` readers when the hub
	// loses or regains it; a repeat raises the count of the Event before.
	events := kubeclient.NewEventWriter(w.dyn, "mcp-hub")
	var retry <-chan time.Time // set while a failed write waits for another try
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-retry:
		}
		retry = nil
		w.mu.Lock()
		reports := w.pending
		w.mu.Unlock()
		current := make(map[config.Origin]bool, len(reports))
		for _, st := range reports {
			current[st.Origin] = true
			if st.Origin.Kind != kindMCPServer {
				continue
			}
			obj := lookup(all, st.Origin)
			if obj == nil {
				continue // deleted meanwhile, or filtered out
			}
			prev, known := w.written[st.Origin]
			if known && prev.uid == obj.GetUID() && prev.status == st {
				continue
			}
			if err := w.patch(ctx, obj, st); err != nil {
				if ctx.Err() != nil {
					return
				}
				w.log.Warn().Err(err).Str("mcpserver", st.Origin.Namespace+"/"+st.Origin.Name).Msg("cannot write status; retrying")
				retry = time.After(statusRetry)
				continue
			}
			before := prev.status
			known = known && prev.uid == obj.GetUID()
			w.written[st.Origin] = written{uid: obj.GetUID(), status: st}
			ref := kubeclient.ObjectReference{APIVersion: MCPServerGVR.GroupVersion().String(), Kind: kindMCPServer,
				Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
			var err error
			switch {
			case st.Reason == ReasonUnavailable && (before.Reason != ReasonUnavailable || before.Message != st.Message):
				err = events.Write(ctx, ref, kubeclient.EventTypeWarning, "ConnectFailed", truncate(st.Message, 1024))
			case st.Connected && known && !before.Connected:
				err = events.Write(ctx, ref, kubeclient.EventTypeNormal, "Connected", st.Message)
			}
			if err != nil && ctx.Err() == nil {
				w.log.Warn().Err(err).Str("mcpserver", st.Origin.Namespace+"/"+st.Origin.Name).Msg("cannot write Event")
			}
		}
		for o := range w.written {
			if !current[o] {
				delete(w.written, o)
			}
		}
	}
}

func lookup(all []listers, o config.Origin) *unstructured.Unstructured {
	for _, l := range all {
		if l.mcpServers == nil {
			continue
		}
		obj, err := l.mcpServers.ByNamespace(o.Namespace).Get(o.Name)
		if err != nil {
			continue
		}
		if u, ok := obj.(*unstructured.Unstructured); ok {
			return u
		}
	}
	return nil
}

// patch writes only the hub's fields: toolCount, lastDiscovery and its own
// condition (other conditions are kept as they are).
func (w *statusWriter) patch(ctx context.Context, obj *unstructured.Unstructured, st Status) error {
	status := metav1.ConditionFalse
	if st.Connected {
		status = metav1.ConditionTrue
	}
	now := metav1.Now()
	cond := map[string]any{
		"type": ConditionType, "status": string(status), "reason": st.Reason, "message": truncate(st.Message, 1024),
		"lastTransitionTime": now.UTC().Format(time.RFC3339), "observedGeneration": obj.GetGeneration(),
	}
	existing, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	conditions := make([]any, 0, len(existing)+1)
	for _, c := range existing {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if m["type"] == ConditionType {
			if m["status"] == string(status) && m["lastTransitionTime"] != nil {
				cond["lastTransitionTime"] = m["lastTransitionTime"]
			}
			continue
		}
		conditions = append(conditions, c)
	}
	conditions = append(conditions, cond)
	body := map[string]any{"toolCount": st.ToolCount, "conditions": conditions}
	if !st.ListedAt.IsZero() {
		body["lastDiscovery"] = st.ListedAt.UTC().Format(time.RFC3339)
	}
	data, err := json.Marshal(map[string]any{"status": body})
	if err != nil {
		return err
	}
	_, err = w.dyn.Resource(MCPServerGVR).Namespace(obj.GetNamespace()).
		Patch(ctx, obj.GetName(), types.MergePatchType, data, metav1.PatchOptions{FieldManager: "mcp-hub"}, "status")
	return err
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
