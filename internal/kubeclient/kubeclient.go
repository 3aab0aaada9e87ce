// Package kubeclient is the hub's one way to the Kubernetes API: the
// dynamic client only. The built-in kinds the hub uses (ConfigMaps,
// Secrets, Pods, Events, TokenReviews, Leases) are read and written as structs of
// their own (types.go), converted from and to unstructured objects, and
// watched by informers over the same client. client-go's typed Clientset
// would do the same, but it registers every API group of Kubernetes (some
// 250 packages, a third of the binary) for the six kinds the hub uses.
package kubeclient

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// Resource is a kind read and written as its typed struct T.
type Resource[T any] struct {
	GVR  schema.GroupVersionResource
	Kind string
}

// The built-in kinds the hub reads and writes.
var (
	ConfigMaps = Resource[ConfigMap]{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap"}
	Secrets    = Resource[Secret]{GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, Kind: "Secret"}
	Pods       = Resource[Pod]{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Kind: "Pod"}
	Events     = Resource[Event]{GVR: schema.GroupVersionResource{Version: "v1", Resource: "events"}, Kind: "Event"}
	Leases     = Resource[Lease]{
		GVR:  schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
		Kind: "Lease",
	}
	TokenReviews = Resource[TokenReview]{
		GVR:  schema.GroupVersionResource{Group: "authentication.k8s.io", Version: "v1", Resource: "tokenreviews"},
		Kind: "TokenReview",
	}
)

// Client reads and writes the objects of one Resource in one namespace
// (or cluster-wide).
type Client[T any] struct {
	res dynamic.ResourceInterface
	gvk schema.GroupVersionKind
}

// In returns the client of r's objects in namespace; "" is for
// cluster-scoped kinds and lists across namespaces.
func (r Resource[T]) In(dyn dynamic.Interface, namespace string) Client[T] {
	return Client[T]{res: dyn.Resource(r.GVR).Namespace(namespace), gvk: r.GVR.GroupVersion().WithKind(r.Kind)}
}

// Get reads the object name. A missing one is the API server's NotFound
// error, as from the typed client.
func (c Client[T]) Get(ctx context.Context, name string) (*T, error) {
	u, err := c.res.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return typed[T](u)
}

// List reads the objects that opts selects.
func (c Client[T]) List(ctx context.Context, opts metav1.ListOptions) ([]T, error) {
	l, err := c.res.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(l.Items))
	for i := range l.Items {
		o, err := typed[T](&l.Items[i])
		if err != nil {
			return nil, err
		}
		out = append(out, *o)
	}
	return out, nil
}

// Create writes a new object and returns it as the API server stored it.
func (c Client[T]) Create(ctx context.Context, obj *T) (*T, error) {
	return c.write(obj, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return c.res.Create(ctx, u, metav1.CreateOptions{})
	})
}

// Update replaces an object on its resourceVersion (a Conflict error when
// another writer came first) and returns it as stored.
func (c Client[T]) Update(ctx context.Context, obj *T) (*T, error) {
	return c.write(obj, func(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		return c.res.Update(ctx, u, metav1.UpdateOptions{})
	})
}

// write sends obj by send and reads back what the API server stored.
func (c Client[T]) write(obj *T, send func(*unstructured.Unstructured) (*unstructured.Unstructured, error)) (*T, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %s: %w", c.gvk.Kind, err)
	}
	// With its apiVersion and kind: the structs usually leave them empty.
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(c.gvk)
	if u, err = send(u); err != nil {
		return nil, err
	}
	return typed[T](u)
}

// Patch applies a patch of type pt to the object name and returns it as
// stored.
func (c Client[T]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte) (*T, error) {
	u, err := c.res.Patch(ctx, name, pt, data, metav1.PatchOptions{})
	if err != nil {
		return nil, err
	}
	return typed[T](u)
}

// typed converts an object the API server sent into its struct.
func typed[T any](u *unstructured.Unstructured) (*T, error) {
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, fmt.Errorf("read %s %s/%s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	return out, nil
}
