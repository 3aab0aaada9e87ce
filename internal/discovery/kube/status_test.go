package kube

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// applied records the status applies and Events a writer sends.
type applied struct {
	mu      sync.Mutex
	applies []map[string]any // each apply's status
	events  []string         // reason of each Event created
}

func (a *applied) last() (n int, status map[string]any, events []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.applies) > 0 {
		status = a.applies[len(a.applies)-1]
	}
	return len(a.applies), status, append([]string(nil), a.events...)
}

// fakeStatusCluster is a fake API server that records what the writer
// sends (the fake tracker knows no server-side apply), with obj cached.
func fakeStatusCluster(t *testing.T, obj *unstructured.Unstructured) (*statusWriter, []listers, *applied) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		MCPServerGVR: "MCPServerList", kubeclient.Events.GVR: "EventList",
	})
	rec := &applied{}
	dyn.PrependReactor("patch", "mcpservers", func(action clienttesting.Action) (bool, runtime.Object, error) {
		p := action.(clienttesting.PatchAction)
		if p.GetPatchType() != types.ApplyPatchType || p.GetSubresource() != "status" {
			t.Errorf("patch %s of %s, want an apply of status", p.GetPatchType(), p.GetSubresource())
		}
		var body map[string]any
		if err := json.Unmarshal(p.GetPatch(), &body); err != nil {
			t.Error(err)
		}
		st, _ := body["status"].(map[string]any)
		rec.mu.Lock()
		rec.applies = append(rec.applies, st)
		rec.mu.Unlock()
		return true, obj.DeepCopy(), nil
	})
	dyn.PrependReactor("create", "events", func(action clienttesting.Action) (bool, runtime.Object, error) {
		u := action.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		reason, _, _ := unstructured.NestedString(u.Object, "reason")
		rec.mu.Lock()
		rec.events = append(rec.events, reason)
		rec.mu.Unlock()
		return true, u, nil
	})
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := idx.Add(obj); err != nil {
		t.Fatal(err)
	}
	all := []listers{{mcpServers: cache.NewGenericLister(idx, MCPServerGVR.GroupResource())}}
	return newStatusWriter(dyn, nil, zerolog.Nop()), all, rec
}

func ghServer(conditions ...any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "MCPServer",
		"metadata": map[string]any{"name": "gh", "namespace": "purko", "uid": "u1", "generation": int64(3)},
	}}
	if len(conditions) > 0 {
		u.Object["status"] = map[string]any{"conditions": conditions, "lastDiscovery": "2026-01-02T03:04:05Z"}
	}
	return u
}

var ghOrigin = config.Origin{Kind: kindMCPServer, Namespace: "purko", Name: "gh"}

// TestStatusWriter: what the writer applies and which Events it records,
// written by one writer through a sequence of reports, terms and objects.
func TestStatusWriter(t *testing.T) {
	listed := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	connected := Status{Origin: ghOrigin, Connected: true, Reason: "Connected", Message: "2 tools", ToolCount: 2, ListedAt: listed}
	more := connected
	more.ToolCount, more.Message = 3, "3 tools"
	down := Status{Origin: ghOrigin, Reason: ReasonUnavailable, Message: "refused"}
	stale := map[string]any{"type": ConditionType, "status": "False", "reason": ReasonUnavailable, "message": "refused",
		"lastTransitionTime": "2026-01-01T00:00:00Z"}

	t.Run("what changed, the transition time kept, one Warning", func(t *testing.T) {
		w, all, rec := fakeStatusCluster(t, ghServer())
		events := kubeclient.NewEventWriter(w.dyn, FieldManager)
		if failed := w.writeAll(context.Background(), all, []Status{connected}, events); failed {
			t.Fatal("write failed")
		}
		n, st, evs := rec.last()
		cond := st["conditions"].([]any)[0].(map[string]any)
		if n != 1 || st["toolCount"] != float64(2) || st["lastDiscovery"] != "2026-05-06T07:08:09Z" || cond["status"] != "True" ||
			cond["observedGeneration"] != float64(3) || len(st) != 3 || len(evs) != 0 {
			t.Fatalf("%d applies, last %v, events %v", n, st, evs)
		}
		since := cond["lastTransitionTime"]
		// The same report again: nothing to write.
		w.writeAll(context.Background(), all, []Status{connected}, events)
		if n, _, _ := rec.last(); n != 1 {
			t.Fatalf("%d applies of an unchanged status", n)
		}
		// Another tool count, still connected: the transition time stays.
		w.writeAll(context.Background(), all, []Status{more}, events)
		n, st, _ = rec.last()
		if cond := st["conditions"].([]any)[0].(map[string]any); n != 2 || cond["lastTransitionTime"] != since || st["toolCount"] != float64(3) {
			t.Fatalf("%d applies, last %v, want lastTransitionTime %v kept", n, st, since)
		}
		// Disconnected: a Warning, once.
		w.writeAll(context.Background(), all, []Status{down}, events)
		w.writeAll(context.Background(), all, []Status{down}, events)
		if n, _, evs := rec.last(); n != 3 || len(evs) != 1 || evs[0] != "ConnectFailed" {
			t.Fatalf("%d applies, events %v", n, evs)
		}
	})

	t.Run("a new leader neither repeats the Event nor moves the transition", func(t *testing.T) {
		w, all, rec := fakeStatusCluster(t, ghServer(stale))
		w.writeAll(context.Background(), all, []Status{down}, kubeclient.NewEventWriter(w.dyn, FieldManager))
		n, st, evs := rec.last()
		cond := st["conditions"].([]any)[0].(map[string]any)
		if n != 1 || len(evs) != 0 || cond["lastTransitionTime"] != "2026-01-01T00:00:00Z" || st["lastDiscovery"] != "2026-01-02T03:04:05Z" {
			t.Fatalf("%d applies, last %v, events %v", n, st, evs)
		}
		// It comes back: Connected, from what the object showed.
		w.writeAll(context.Background(), all, []Status{connected}, kubeclient.NewEventWriter(w.dyn, FieldManager))
		if _, _, evs := rec.last(); len(evs) != 1 || evs[0] != "Connected" {
			t.Fatalf("events %v, want Connected", evs)
		}
	})

	t.Run("run writes only in a term", func(t *testing.T) {
		w, all, rec := fakeStatusCluster(t, ghServer())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{})
		go func() { // owned by the test: ends with cancel
			defer close(done)
			w.runTerms(ctx, all)
		}()
		w.report([]Status{connected})
		time.Sleep(50 * time.Millisecond)
		if n, _, _ := rec.last(); n != 0 {
			t.Fatalf("%d applies without a term", n)
		}
		term, end := context.WithCancel(ctx)
		w.lead(term)
		waitApplies(t, rec, 1)
		end()
		w.follow()
		w.report([]Status{more})
		time.Sleep(50 * time.Millisecond)
		if n, _, _ := rec.last(); n != 1 {
			t.Fatalf("%d applies after the term ended", n)
		}
		// A new term writes the object again although unchanged since.
		w.report([]Status{connected})
		w.lead(ctx)
		waitApplies(t, rec, 2)
		cancel()
		<-done
	})
}

func waitApplies(t *testing.T, rec *applied, want int) {
	t.Helper()
	for t0 := time.Now(); time.Since(t0) < 5*time.Second; time.Sleep(5 * time.Millisecond) {
		if n, _, _ := rec.last(); n >= want {
			return
		}
	}
	n, _, _ := rec.last()
	t.Fatalf("%d applies, want %d", n, want)
}
