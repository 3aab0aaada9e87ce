package registrations

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// ConfigMapName and ConfigMapKey are Purko's "connect by URL" list, read
// by Purko's registry and by the hub's Kubernetes source
// (kubernetes.configMapName may rename the ConfigMap).
const (
	ConfigMapName = "mcp-servers"
	ConfigMapKey  = "servers"
)

// mcpServerGVR is Purko's MCPServer (the same as the kube source's).
var mcpServerGVR = schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "mcpservers"}

// Kube writes registrations where Purko's dashboard does: URL entries into
// the mcp-servers ConfigMap of one namespace (upserted by name, the other
// entries kept as they are, JSON or YAML as it was written, under optimistic
// concurrency), image entries as MCPServer resources. The hub's informers
// then bring them into the catalog like any other change.
type Kube struct {
	dyn       dynamic.Interface
	namespace string
	cmName    string
	// secretNames, when set, are the only Secrets the hub reads
	// (kubernetes.secretNames, --secret-names).
	secretNames []string
}

// NewKube returns the writer for namespace; configMap is the name of the
// list's ConfigMap (empty: mcp-servers); secretNames, when set, are the
// only Secrets a secretRef may name (the hub reads no others).
func NewKube(dyn dynamic.Interface, namespace, configMap string, secretNames []string) *Kube {
	if configMap == "" {
		configMap = ConfigMapName
	}
	return &Kube{dyn: dyn, namespace: namespace, cmName: configMap, secretNames: secretNames}
}

// checkSecretRef refuses a secretRef that does not name a Secret of the
// namespace written to that carries config.UpstreamCredentialLabel (and,
// with secretNames, is one of them): the Kubernetes source would not read
// it either, and saying so now writes nothing. The Secret is asked for by
// name and label, so the API server never returns one that is not set
// aside, and a missing Secret and an unlabelled one read the same: an
// admin learns nothing about Secrets it may not use.
func (k *Kube) checkSecretRef(ctx context.Context, ref string) error {
	if errs := validation.IsDNS1123Subdomain(ref); len(errs) > 0 {
		return refuse("%q is not a Secret name: %s", ref, strings.Join(errs, "; "))
	}
	where := k.namespace + "/" + ref
	if len(k.secretNames) > 0 && !slices.Contains(k.secretNames, ref) {
		return refuse("Secret %s is not in kubernetes.secretNames (--secret-names, the chart's rbac.secretNames), the only Secrets the hub reads", where)
	}
	list, err := kubeclient.Secrets.In(k.dyn, k.namespace).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", ref).String(),
		LabelSelector: config.UpstreamCredentialLabel + "=true",
	})
	if err != nil && !apierrors.IsForbidden(err) {
		return fmt.Errorf("secretRef: look up Secret %s: %w", where, err)
	}
	if err == nil && slices.ContainsFunc(list, func(s kubeclient.Secret) bool {
		return s.Name == ref && s.Labels[config.UpstreamCredentialLabel] == "true"
	}) {
		return nil
	}
	return refuse("no Secret %s carries the label %s: \"true\" that sets a Secret aside for upstreams", where, config.UpstreamCredentialLabel)
}

// Where implements Writer.
func (k *Kube) Where() string {
	return fmt.Sprintf("ConfigMap %s/%s and MCPServers of namespace %s", k.namespace, k.cmName, k.namespace)
}

// Upsert implements Writer.
func (k *Kube) Upsert(ctx context.Context, e Entry) error {
	if e.SecretRef != "" {
		if err := k.checkSecretRef(ctx, e.SecretRef); err != nil {
			return err
		}
	}
	if e.IsImage() {
		if inList, err := k.inList(ctx, e.Name); err != nil || inList {
			if err == nil {
				err = fmt.Errorf("%w: %s is a url entry of ConfigMap %s/%s; delete it first to deploy an image", ErrOtherKind, e.Name, k.namespace, k.cmName)
			}
			return err
		}
		return k.upsertMCPServer(ctx, e)
	}
	if isCR, err := k.isMCPServer(ctx, e.Name); err != nil || isCR {
		if err == nil {
			err = fmt.Errorf("%w: %s is an MCPServer of namespace %s; delete it first to connect a url", ErrOtherKind, e.Name, k.namespace)
		}
		return err
	}
	entry := map[string]any{"name": e.Name, "url": e.URL, "auth": e.Auth, "icon": e.Icon, "category": e.Category}
	if e.SecretRef != "" {
		entry["secretRef"] = e.SecretRef
	}
	return k.editList(ctx, true, func(list []any) ([]any, bool) {
		if i := indexByName(list, e.Name); i >= 0 {
			list[i] = entry
			return list, true
		}
		return append(list, entry), true
	})
}

// Delete implements Writer: the MCPServer of that name, else the
// ConfigMap's entry.
func (k *Kube) Delete(ctx context.Context, name string) error {
	err := k.dyn.Resource(mcpServerGVR).Namespace(k.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	switch {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("delete MCPServer %s/%s: %w", k.namespace, name, err)
	}
	removed := false
	err = k.editList(ctx, false, func(list []any) ([]any, bool) {
		i := indexByName(list, name)
		if i < 0 {
			return list, false
		}
		removed = true
		return slices.Delete(list, i, i+1), true
	})
	if err != nil {
		return err
	}
	if !removed {
		return ErrNotFound
	}
	return nil
}

// Owns implements Writer: the MCPServers and the list's ConfigMap of the
// namespace written to.
func (k *Kube) Owns(_ string, o *config.Origin) bool {
	return o != nil && o.Namespace == k.namespace && (o.Kind == "MCPServer" || (o.Kind == "ConfigMap" && o.Name == k.cmName))
}

// Has reports whether a registration of that name exists (an MCPServer or
// an entry of the ConfigMap).
func (k *Kube) Has(ctx context.Context, name string) (bool, error) {
	if isCR, err := k.isMCPServer(ctx, name); err != nil || isCR {
		return isCR, err
	}
	return k.inList(ctx, name)
}

func (k *Kube) isMCPServer(ctx context.Context, name string) (bool, error) {
	_, err := k.dyn.Resource(mcpServerGVR).Namespace(k.namespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case !apierrors.IsNotFound(err):
		return false, fmt.Errorf("get MCPServer %s/%s: %w", k.namespace, name, err)
	}
	return false, nil
}

// inList reports whether the ConfigMap's list has an entry of that name.
func (k *Kube) inList(ctx context.Context, name string) (bool, error) {
	cm, err := kubeclient.ConfigMaps.In(k.dyn, k.namespace).Get(ctx, k.cmName)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("get ConfigMap %s/%s: %w", k.namespace, k.cmName, err)
	}
	list, _, err := decodeList(cm.Data[ConfigMapKey])
	if err != nil {
		return false, err
	}
	return indexByName(list, name) >= 0, nil
}

// editList applies edit to the ConfigMap's list and writes it back with
// the resourceVersion it was read at, reading again on a conflict. create
// says whether a missing ConfigMap is created (an upsert) or the edit is a
// no-op (a delete).
func (k *Kube) editList(ctx context.Context, create bool, edit func([]any) ([]any, bool)) error {
	cms := kubeclient.ConfigMaps.In(k.dyn, k.namespace)
	where := k.namespace + "/" + k.cmName
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, k.cmName)
		missing := apierrors.IsNotFound(err)
		switch {
		case missing && !create:
			return nil
		case missing:
			cm = &kubeclient.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: k.cmName, Namespace: k.namespace}}
		case err != nil:
			return fmt.Errorf("get ConfigMap %s: %w", where, err)
		}
		list, isYAML, err := decodeList(cm.Data[ConfigMapKey])
		if err != nil {
			return fmt.Errorf("ConfigMap %s: %w", where, err)
		}
		list, changed := edit(list)
		if !changed {
			return nil
		}
		raw, err := encodeList(list, isYAML)
		if err != nil {
			return fmt.Errorf("ConfigMap %s: %w", where, err)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[ConfigMapKey] = raw
		if missing {
			_, err = cms.Create(ctx, cm)
			if apierrors.IsAlreadyExists(err) {
				// Someone created it meanwhile: read it and try again.
				return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, k.cmName, err)
			}
		} else {
			_, err = cms.Update(ctx, cm)
		}
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("write ConfigMap %s: %w", where, err)
		}
		return err
	})
}

// decodeList reads the servers key, JSON or YAML, and says which it was.
func decodeList(raw string) (list []any, isYAML bool, err error) {
	t := strings.TrimSpace(raw)
	if t == "" {
		return nil, false, nil
	}
	if err := yaml.Unmarshal([]byte(t), &list); err != nil {
		return nil, false, fmt.Errorf("key %s: not a JSON or YAML list: %w", ConfigMapKey, err)
	}
	return list, !strings.HasPrefix(t, "["), nil
}

func encodeList(list []any, isYAML bool) (string, error) {
	if list == nil {
		list = []any{}
	}
	if isYAML {
		b, err := yaml.Marshal(list)
		return string(b), err
	}
	b, err := json.MarshalIndent(list, "", "  ")
	return string(b), err
}

func indexByName(list []any, name string) int {
	return slices.IndexFunc(list, func(x any) bool {
		m, ok := x.(map[string]any)
		return ok && m["name"] == name
	})
}

// upsertMCPServer creates the MCPServer or replaces its spec.
func (k *Kube) upsertMCPServer(ctx context.Context, e Entry) error {
	spec := map[string]any{"image": e.Image}
	if e.Port != 0 {
		spec["port"] = int64(e.Port)
	}
	for key, v := range map[string]string{"auth": e.Auth, "secretRef": e.SecretRef, "category": e.Category, "icon": e.Icon} {
		if v != "" {
			spec[key] = v
		}
	}
	if e.HostNetwork {
		spec["hostNetwork"] = true
	}
	if len(e.Args) > 0 {
		args := make([]any, len(e.Args))
		for i, a := range e.Args {
			args[i] = a
		}
		spec["args"] = args
	}
	res := k.dyn.Resource(mcpServerGVR).Namespace(k.namespace)
	where := k.namespace + "/" + e.Name
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := res.Get(ctx, e.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "purko.io/v1alpha1", "kind": "MCPServer",
				"metadata": map[string]any{"name": e.Name, "namespace": k.namespace},
				"spec":     spec,
			}}
			_, err = res.Create(ctx, obj, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				return apierrors.NewConflict(mcpServerGVR.GroupResource(), e.Name, err)
			}
			if err != nil {
				return fmt.Errorf("create MCPServer %s: %w", where, err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("get MCPServer %s: %w", where, err)
		}
		cur.Object["spec"] = spec
		_, err = res.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("update MCPServer %s: %w", where, err)
		}
		return err
	})
}
