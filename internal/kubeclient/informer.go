package kubeclient

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// NewInformer watches the objects of gvr in namespace ("" all) that the
// list options, as tweak sets them (tweak may be nil), select; its cache
// holds *unstructured.Unstructured, indexed by namespace. It is what
// client-go's dynamicinformer builds, without that package, which drags
// in the typed informers of every API group.
func NewInformer(dyn dynamic.Interface, gvr schema.GroupVersionResource, namespace string, tweak func(*metav1.ListOptions)) cache.SharedIndexInformer {
	res := dyn.Resource(gvr).Namespace(namespace)
	opts := func(o metav1.ListOptions) metav1.ListOptions {
		if tweak != nil {
			tweak(&o)
		}
		return o
	}
	return cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts(o))
		},
	}, &unstructured.Unstructured{}, cache.SharedIndexInformerOptions{
		Indexers:          cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
		ObjectDescription: gvr.String(),
	})
}

// Informer is NewInformer for r, whose cache holds *T: each object is
// converted once, as it arrives, so readers of the cache type-assert as
// they would with a typed informer.
func (r Resource[T]) Informer(dyn dynamic.Interface, namespace string, tweak func(*metav1.ListOptions)) (cache.SharedIndexInformer, error) {
	inf := NewInformer(dyn, r.GVR, namespace, tweak)
	// The transform may see an object it already converted (the cache's
	// own copies on a relist), so it leaves those as they are.
	err := inf.SetTransform(func(o any) (any, error) {
		if u, ok := o.(*unstructured.Unstructured); ok {
			return typed[T](u)
		}
		return o, nil
	})
	if err != nil {
		return nil, fmt.Errorf("informer of %s: %w", r.GVR.Resource, err)
	}
	return inf, nil
}

// Start runs the informers until ctx ends; the returned wait blocks until
// all of them have stopped.
func Start(ctx context.Context, informers ...cache.SharedIndexInformer) (wait func()) {
	var wg sync.WaitGroup
	for _, inf := range informers {
		wg.Go(func() { inf.RunWithContext(ctx) })
	}
	return wg.Wait
}
