package kubeclient

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// eventTTL is how long the API server keeps an Event (its --event-ttl
// default): a repeat after that finds the Event gone.
const eventTTL = time.Hour

// eventsRemembered bounds the Events a writer can fold repeats into, as
// client-go's recorder does.
const eventsRemembered = 4096

// EventWriter writes Events, as component, for `kubectl describe` readers.
// A repeat of an Event (same object, type, reason and message) raises the
// count and last timestamp of the one written before, as client-go's
// recorder does, so a flapping object keeps one Event per message. The
// recorder's package (tools/record) is not used: it drags in the OpenAPI
// machinery of strategic merge patches (40 packages, 3 MB) for features
// the hub's few Events do not need (folding similar messages, a rate
// limit per object). It is safe for concurrent use.
type EventWriter struct {
	dyn       dynamic.Interface
	component string
	now       func() time.Time

	mu      sync.Mutex // one Write at a time, so a repeat is counted once
	written *expirable.LRU[string, writtenEvent]
}

// writtenEvent is an Event written before: its name and count.
type writtenEvent struct {
	name  string
	count int32
}

// NewEventWriter returns the writer of component's Events.
func NewEventWriter(dyn dynamic.Interface, component string) *EventWriter {
	return &EventWriter{dyn: dyn, component: component, now: time.Now,
		written: expirable.NewLRU[string, writtenEvent](eventsRemembered, nil, eventTTL)}
}

// Write records an Event of eventType (EventTypeNormal or
// EventTypeWarning) on the object ref, in the object's namespace ("default"
// for a cluster-scoped one). It needs create and patch on events.
func (w *EventWriter) Write(ctx context.Context, ref ObjectReference, eventType, reason, message string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ns := cmp.Or(ref.Namespace, metav1.NamespaceDefault)
	events := Events.In(w.dyn, ns)
	key := strings.Join([]string{ref.APIVersion, ref.Kind, ref.Namespace, ref.Name, string(ref.UID), eventType, reason, message}, "\x00")
	now := metav1.NewTime(w.now())
	if prev, ok := w.written.Get(key); ok {
		patch, err := json.Marshal(map[string]any{"count": prev.count + 1, "lastTimestamp": now})
		if err != nil {
			return fmt.Errorf("repeat Event %s/%s: %w", ns, prev.name, err)
		}
		_, err = events.Patch(ctx, prev.name, types.MergePatchType, patch)
		switch {
		case err == nil:
			w.written.Add(key, writtenEvent{name: prev.name, count: prev.count + 1})
			return nil
		case !apierrors.IsNotFound(err):
			return fmt.Errorf("repeat Event %s/%s: %w", ns, prev.name, err)
		}
		// Expired or deleted: written anew below.
	}
	ev := &Event{
		// Named as the recorder names them: the object's name and the time.
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", ref.Name, now.UnixNano()), Namespace: ns},
		InvolvedObject: ref, Reason: reason, Message: message, Type: eventType, Count: 1,
		FirstTimestamp: now, LastTimestamp: now,
		Source: EventSource{Component: w.component}, ReportingController: w.component,
	}
	if _, err := events.Create(ctx, ev); err != nil {
		return fmt.Errorf("write Event %s on %s %s/%s: %w", reason, ref.Kind, ns, ref.Name, err)
	}
	w.written.Add(key, writtenEvent{name: ev.Name, count: 1})
	return nil
}
