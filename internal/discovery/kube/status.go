package kube

import (
	"context"
	"fmt"
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

// statusWriter writes MCPServer status from the latest reports, while this
// replica leads (or always, without an election). Reports only replace a
// pending set; the writer's own goroutine does the network work, so the
// registry never waits on the API server.
type statusWriter struct {
	dyn      dynamic.Interface
	log      zerolog.Logger
	election *Election // nil: this replica always writes

	mu      sync.Mutex
	pending []Status
	term    context.Context // while leading: ends when the lease is lost; nil otherwise
	fresh   bool            // a term began: what earlier terms wrote is forgotten
	wake    chan struct{}
	written map[config.Origin]written // what the API server has, as last written this term
}

// statusRetry is how long a failed status write waits for another try.
const statusRetry = 2 * time.Second

// FieldManager is the hub's field manager on MCPServer status: its apply
// owns toolCount, lastDiscovery and the HubConnected condition, nothing
// else.
const FieldManager = "mcp-hub"

// written is the status last written to one object; a re-created object of
// the same name (another UID) is written afresh.
type written struct {
	uid    types.UID
	status Status
	// since is the HubConnected condition's lastTransitionTime as written.
	since string
}

func newStatusWriter(dyn dynamic.Interface, election *Election, log zerolog.Logger) *statusWriter {
	return &statusWriter{dyn: dyn, log: log, election: election, wake: make(chan struct{}, 1), written: map[config.Origin]written{}}
}

func (w *statusWriter) report(reports []Status) {
	w.mu.Lock()
	w.pending = reports
	w.mu.Unlock()
	w.poke()
}

func (w *statusWriter) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// lead starts a term that lasts as long as term: every object is written
// again, so a new leader corrects what a previous one left stale.
func (w *statusWriter) lead(term context.Context) {
	w.mu.Lock()
	w.term, w.fresh = term, true
	w.mu.Unlock()
	w.poke()
}

// follow ends the term (its context has ended too, which stops a write in
// flight) and reports whether there was one.
func (w *statusWriter) follow() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.term != nil
	w.term = nil
	return was
}

// run writes until ctx ends, standing for the lease first when replicas
// elect a writer. all gives the cached MCPServers.
func (w *statusWriter) run(ctx context.Context, all []listers) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if w.election != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.elect(ctx, *w.election)
		}()
	} else {
		w.lead(ctx)
	}
	w.runTerms(ctx, all)
}

// runTerms writes the reports while a term lasts, until ctx ends.
func (w *statusWriter) runTerms(ctx context.Context, all []listers) {
	// Events on an MCPServer tell `kubectl describe` readers when the hub
	// loses or regains it; a repeat raises the count of the Event before.
	events := kubeclient.NewEventWriter(w.dyn, FieldManager)
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
		reports, term, fresh := w.pending, w.term, w.fresh
		w.fresh = false
		w.mu.Unlock()
		if term == nil || term.Err() != nil {
			continue // not leading: the leader writes
		}
		if fresh {
			clear(w.written)
		}
		if w.writeAll(term, all, reports, events) {
			retry = time.After(statusRetry)
		}
	}
}

// writeAll writes the reports that differ from what this term wrote, with
// their Events, and reports whether one failed and waits for a retry.
func (w *statusWriter) writeAll(term context.Context, all []listers, reports []Status, events *kubeclient.EventWriter) (failed bool) {
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
		known = known && prev.uid == obj.GetUID()
		if known && prev.status == st {
			continue
		}
		// What the object shows (another leader's writing, at the start
		// of a term) counts as written before, for Events and for the
		// condition's lastTransitionTime.
		before, since, shown := prev.status, prev.since, known
		if !known {
			before, since, shown = shownStatus(obj)
		}
		if before.Connected != st.Connected || !shown {
			since = ""
		}
		since, err := w.apply(term, obj, st, since)
		if err != nil {
			if term.Err() != nil {
				return false // the term ended: the next leader writes
			}
			w.log.Warn().Err(err).Str("mcpserver", st.Origin.Namespace+"/"+st.Origin.Name).Msg("cannot write status; retrying")
			failed = true
			continue
		}
		w.log.Info().Str("mcpserver", st.Origin.Namespace+"/"+st.Origin.Name).Bool("connected", st.Connected).
			Str("reason", st.Reason).Int("tools", st.ToolCount).Msg("wrote MCPServer status")
		w.written[st.Origin] = written{uid: obj.GetUID(), status: st, since: since}
		ref := kubeclient.ObjectReference{APIVersion: MCPServerGVR.GroupVersion().String(), Kind: kindMCPServer,
			Namespace: obj.GetNamespace(), Name: obj.GetName(), UID: obj.GetUID()}
		switch {
		case st.Reason == ReasonUnavailable && (before.Reason != ReasonUnavailable || before.Message != st.Message):
			err = events.Write(term, ref, kubeclient.EventTypeWarning, "ConnectFailed", truncate(st.Message, 1024))
		case st.Connected && shown && !before.Connected:
			err = events.Write(term, ref, kubeclient.EventTypeNormal, "Connected", st.Message)
		}
		if err != nil && term.Err() == nil {
			w.log.Warn().Err(err).Str("mcpserver", st.Origin.Namespace+"/"+st.Origin.Name).Msg("cannot write Event")
		}
	}
	for o := range w.written {
		if !current[o] {
			delete(w.written, o)
		}
	}
	return failed
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

// shownStatus reads the hub's condition as the cached object shows it:
// what it says of the connection (for Events), its lastTransitionTime,
// and whether there was one.
func shownStatus(obj *unstructured.Unstructured) (st Status, since string, ok bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, isMap := c.(map[string]any)
		if !isMap || m["type"] != ConditionType {
			continue
		}
		st.Connected = m["status"] == string(metav1.ConditionTrue)
		st.Reason, _ = m["reason"].(string)
		st.Message, _ = m["message"].(string)
		since, _ = m["lastTransitionTime"].(string)
		return st, since, true
	}
	return Status{}, "", false
}

// apply writes only the hub's fields with server-side apply: toolCount,
// lastDiscovery and its own condition. The conditions list is a map keyed
// by type, so other managers' conditions (an operator's Ready) are theirs
// and stay as they are; Force takes the hub's fields back from whoever
// wrote them last (an older hub's merge patch). since is the condition's
// lastTransitionTime when its status did not change ("" for now); the one
// written is returned.
func (w *statusWriter) apply(ctx context.Context, obj *unstructured.Unstructured, st Status, since string) (string, error) {
	status := metav1.ConditionFalse
	if st.Connected {
		status = metav1.ConditionTrue
	}
	if since == "" {
		since = metav1.Now().UTC().Format(time.RFC3339)
	}
	cond := map[string]any{
		"type": ConditionType, "status": string(status), "reason": st.Reason, "message": truncate(st.Message, 1024),
		"lastTransitionTime": since, "observedGeneration": obj.GetGeneration(),
	}
	body := map[string]any{"toolCount": int64(st.ToolCount), "conditions": []any{cond}}
	switch last, _, _ := unstructured.NestedString(obj.Object, "status", "lastDiscovery"); {
	case !st.ListedAt.IsZero():
		body["lastDiscovery"] = st.ListedAt.UTC().Format(time.RFC3339)
	case last != "":
		// Not listed by this process (yet): the last listing any hub
		// made stays, rather than being dropped with the field.
		body["lastDiscovery"] = last
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": MCPServerGVR.GroupVersion().String(), "kind": kindMCPServer,
		"metadata": map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()},
		"status":   body,
	}}
	_, err := w.dyn.Resource(MCPServerGVR).Namespace(obj.GetNamespace()).
		ApplyStatus(ctx, obj.GetName(), u, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return "", fmt.Errorf("apply status of MCPServer %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return since, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
