package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// FieldManager is the server-side-apply field manager of Apply.
const FieldManager = "kubetest"

// DefaultTimeout bounds the waits of the t-helpers (WaitForCRD, Eventually
// callers that pass 0, ApplyYAML retries).
const DefaultTimeout = 30 * time.Second

// ApplyYAML applies every object of a multi-document YAML (or JSON) with
// server-side apply and returns them as the server stored them. src is the
// document itself ([]byte) or the path of a file (string). Namespaced objects
// without a namespace go to "default". Kinds unknown to discovery (a CRD
// applied just before) and freshly established CRDs are retried for up to
// DefaultTimeout. It fails t on error.
func ApplyYAML(t testing.TB, cfg *rest.Config, src any) []*unstructured.Unstructured {
	t.Helper()
	var data []byte
	switch s := src.(type) {
	case []byte:
		data = s
	case string:
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatalf("kubetest: ApplyYAML: %v", err)
		}
		data = b
	default:
		t.Fatalf("kubetest: ApplyYAML: src must be []byte (YAML) or string (file path), not %T", src)
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	objs, err := Apply(ctx, cfg, data, "default")
	if err != nil {
		t.Fatalf("kubetest: ApplyYAML: %v", err)
	}
	return objs
}

// DecodeYAML splits a multi-document YAML (or JSON) stream into objects,
// dropping empty documents and flattening kind: List.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for i := 0; ; i++ {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.IsList() {
			err := u.EachListItem(func(o runtimeObject) error {
				objs = append(objs, o.(*unstructured.Unstructured))
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("document %d: %w", i, err)
			}
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("document %d: missing apiVersion or kind", i)
		}
		objs = append(objs, u)
	}
}

// Apply is ApplyYAML without testing.TB; ctx bounds the retries.
func Apply(ctx context.Context, cfg *rest.Config, data []byte, defaultNamespace string) ([]*unstructured.Unstructured, error) {
	objs, err := DecodeYAML(data)
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		var applied *unstructured.Unstructured
		err := Retry(ctx, 0, func() error {
			var err error
			applied, err = applyOne(ctx, dyn, mapper, obj, defaultNamespace)
			if meta.IsNoMatchError(err) {
				mapper.Reset()
			}
			if err != nil && !retriable(err) {
				return Permanent(err)
			}
			return err
		})
		if err != nil {
			return out, fmt.Errorf("apply %s %s: %w", obj.GetKind(), objName(obj), err)
		}
		out = append(out, applied)
	}
	return out, nil
}

func applyOne(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, obj *unstructured.Unstructured, defaultNamespace string) (*unstructured.Unstructured, error) {
	gvk := obj.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns := obj.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		ri = dyn.Resource(m.Resource).Namespace(ns)
	}
	force := true
	return ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
}

// retriable: the kind is not (yet) known, or a new CRD is not served yet.
func retriable(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err)
}

func objName(o *unstructured.Unstructured) string {
	if o.GetNamespace() != "" {
		return o.GetNamespace() + "/" + o.GetName()
	}
	return o.GetName()
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// WaitForCRD waits until the CustomResourceDefinition name (<plural>.<group>)
// is Established and its served versions answer a List, which avoids most of the
// "creating a CR right after the CRD fails for 1-3 s" window. Creating the first
// custom resources through Eventually is still wise. It fails t on timeout.
func WaitForCRD(t testing.TB, cfg *rest.Config, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), DefaultTimeout)
	defer cancel()
	if err := WaitCRD(ctx, cfg, name); err != nil {
		t.Fatalf("kubetest: WaitForCRD %s: %v", name, err)
	}
}

// WaitForCRD is WaitForCRD with the cluster's admin config.
func (c *Cluster) WaitForCRD(t testing.TB, name string) {
	t.Helper()
	WaitForCRD(t, c.AdminConfig(), name)
}

// WaitCRD is WaitForCRD without testing.TB.
func WaitCRD(ctx context.Context, cfg *rest.Config, name string) error {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return Retry(ctx, 0, func() error {
		crd, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			cm, _ := c.(map[string]any)
			if cm["type"] == "Established" && cm["status"] == "True" {
				established = true
			}
		}
		if !established {
			return fmt.Errorf("not Established yet (conditions: %v)", conds)
		}
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			vm, _ := v.(map[string]any)
			if served, _ := vm["served"].(bool); !served {
				continue
			}
			vname, _ := vm["name"].(string)
			gvr := schema.GroupVersionResource{Group: group, Version: vname, Resource: plural}
			var ri dynamic.ResourceInterface = dyn.Resource(gvr)
			if scope == "Namespaced" {
				ri = dyn.Resource(gvr).Namespace("default")
			}
			if _, err := ri.List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return fmt.Errorf("%s not served yet: %w", gvr, err)
			}
		}
		return nil
	})
}
