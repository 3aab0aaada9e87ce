package kubeclient

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// Discovery asks the API server which resources it serves: the one
// question the hub has of client-go's discovery client, whose package
// registers every API group.
type Discovery struct {
	rc rest.Interface
}

// NewDiscovery returns the Discovery of the cluster behind cfg.
func NewDiscovery(cfg *rest.Config) (*Discovery, error) {
	cfg = rest.CopyConfig(cfg)
	// Discovery documents are read as JSON here; the client only needs a
	// serializer to exist.
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(runtime.NewScheme()).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes discovery client: %w", err)
	}
	return &Discovery{rc: rc}, nil
}

// Serves reports whether the API server's discovery document of gvr's
// group version lists gvr's resource; a group version it does not know
// (a CRD not installed) is false with no error.
func (d *Discovery) Serves(ctx context.Context, gvr schema.GroupVersionResource) (bool, error) {
	path := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		path = "/api/" + gvr.Version
	}
	raw, err := d.rc.Get().AbsPath(path).SetHeader("Accept", "application/json").Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(raw, &list); err != nil {
		return false, fmt.Errorf("discover %s: %w", gvr.GroupVersion(), err)
	}
	return slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource }), nil
}
