package pinning

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rs/zerolog"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/purko-io/mcp-hub/internal/kubeclient"
)

// ConfigMapName is the ConfigMap, in the hub's namespace, that holds the
// pins of every replica.
const ConfigMapName = "mcp-hub-pins"

// configMapKey is the data key of the pins (the same JSON as the file).
const configMapKey = "pins.json"

// claimsKey is the data key of the name claims (the same JSON as the names
// file). They share the pins ConfigMap so that the chart's RBAC, narrowed
// to that one ConfigMap by name, covers them; a hub that predates them
// leaves the key alone (it writes only its own key).
const claimsKey = "names.json"

// ConfigMapStore keeps pins, and the name claims (ClaimStore), in the
// ConfigMap mcp-hub-pins, so that every replica compares against the same
// pins and publishes the same names. Reads come from an informer
// watching that one ConfigMap (other replicas' pins and approvals arrive
// as events); writes read the live object and update it on its
// resourceVersion, retried on conflict, so concurrent replicas never lose
// each other's pins and the first writer of a key wins.
type ConfigMapStore struct {
	dyn       dynamic.Interface
	namespace string
	log       zerolog.Logger
	informer  cache.SharedIndexInformer
	cancel    context.CancelFunc
	stopped   func() // waits for the informer to stop
	changed   chan struct{}
	// claimsChanged is Changed for the claims.
	claimsChanged chan struct{}

	heldClaims
	held             // under held.mu also:
	rv        uint64 // resourceVersion the pins were read from
	uid       string
	pinsRaw   string // the data last read of each key, to tell what changed
	claimsRaw string
}

// OpenConfigMap starts watching the pins ConfigMap in namespace; the
// ConfigMap is created on the first write. WaitSynced waits for its first
// copy; Close stops the watch.
func OpenConfigMap(dyn dynamic.Interface, namespace string, log zerolog.Logger) (*ConfigMapStore, error) {
	if namespace == "" {
		return nil, errors.New("pins ConfigMap: no namespace")
	}
	s := &ConfigMapStore{dyn: dyn, namespace: namespace, log: log.With().Str("component", "pins").Logger(),
		changed: make(chan struct{}, 1), claimsChanged: make(chan struct{}, 1),
		held: held{pins: map[Key]Pin{}}, heldClaims: heldClaims{claims: map[string]Claim{}}}
	inf, err := kubeclient.ConfigMaps.Informer(dyn, namespace, func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + ConfigMapName })
	if err != nil {
		return nil, fmt.Errorf("watch pins ConfigMap: %w", err)
	}
	s.informer = inf
	if _, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { s.observe(obj, true) },
		UpdateFunc: func(_, obj any) { s.observe(obj, true) },
		DeleteFunc: func(any) {
			s.log.Warn().Str("configmap", namespace+"/"+ConfigMapName).Msg("pins ConfigMap deleted; the pins held are written back with the next change")
		},
	}); err != nil {
		return nil, fmt.Errorf("watch pins ConfigMap: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.stopped = kubeclient.Start(ctx, s.informer)
	return s, nil
}

// WaitSynced waits until the first copy of the ConfigMap (or its absence)
// is known, or ctx ends.
func (s *ConfigMapStore) WaitSynced(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return fmt.Errorf("read ConfigMap %s/%s (needs get, list, watch): %w", s.namespace, ConfigMapName, ctx.Err())
	}
	return nil
}

// Close stops the watch and waits for it.
func (s *ConfigMapStore) Close() {
	s.cancel()
	s.stopped()
}

// Namespace is where the ConfigMap lives.
func (s *ConfigMapStore) Namespace() string { return s.namespace }

// UID is the ConfigMap's uid ("" before it exists), for Events on it.
func (s *ConfigMapStore) UID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uid
}

// observe takes a copy of the ConfigMap: from the watch (notify: another
// writer may have changed it) or from this store's own write. An older
// copy than the one held is ignored; a key that cannot be read is logged
// and the values read of it before are kept: forgetting pins is what an
// attacker would want, and forgetting claims renames tools under callers.
func (s *ConfigMapStore) observe(obj any, notify bool) {
	cm, ok := obj.(*kubeclient.ConfigMap)
	if !ok {
		return
	}
	rv, _ := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	pins, perr := decodeConfigMap(cm)
	if perr != nil {
		s.log.Error().Err(perr).Msg("pins ConfigMap unreadable; keeping the pins read before")
	}
	claims, cerr := decodeClaimsConfigMap(cm)
	if cerr != nil {
		s.log.Error().Err(cerr).Msg("name claims in the pins ConfigMap unreadable; keeping the claims read before")
	}
	s.mu.Lock()
	if rv != 0 && rv <= s.rv {
		s.mu.Unlock()
		return
	}
	s.rv, s.uid = rv, string(cm.UID)
	pinsNew := perr == nil && cm.Data[configMapKey] != s.pinsRaw
	if perr == nil {
		s.pins, s.pinsRaw = pins, cm.Data[configMapKey]
	}
	claimsNew := cerr == nil && cm.Data[claimsKey] != s.claimsRaw
	if cerr == nil {
		s.cmu.Lock()
		s.claims, s.claimsRaw = claims, cm.Data[claimsKey]
		s.cmu.Unlock()
	}
	s.mu.Unlock()
	if !notify {
		return
	}
	for _, c := range []struct {
		changed bool
		ch      chan struct{}
	}{{pinsNew, s.changed}, {claimsNew, s.claimsChanged}} {
		if !c.changed {
			continue
		}
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}
}

func decodeClaimsConfigMap(cm *kubeclient.ConfigMap) (map[string]Claim, error) {
	data, ok := cm.Data[claimsKey]
	if !ok {
		return map[string]Claim{}, nil
	}
	claims, err := decodeClaims([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s is corrupt (fix or delete the key; deleting lets published names change): %w",
			cm.Namespace, cm.Name, claimsKey, err)
	}
	return claims, nil
}

func decodeConfigMap(cm *kubeclient.ConfigMap) (map[Key]Pin, error) {
	data, ok := cm.Data[configMapKey]
	if !ok {
		return map[Key]Pin{}, nil
	}
	pins, err := decodePins([]byte(data))
	if err != nil {
		return nil, fmt.Errorf("ConfigMap %s/%s key %s is corrupt (fix or delete it; deleting forgets every pin): %w",
			cm.Namespace, cm.Name, configMapKey, err)
	}
	return pins, nil
}

// Changed implements Store.
func (s *ConfigMapStore) Changed() <-chan struct{} { return s.changed }

// PinFirst implements Store.
func (s *ConfigMapStore) PinFirst(ctx context.Context, candidates []Pin) ([]Pin, error) {
	var out []Pin
	err := s.modifyPins(ctx, func(pins map[Key]Pin) bool {
		var added []Key
		out, added = pinFirst(pins, candidates)
		return len(added) > 0
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Replace implements Store.
func (s *ConfigMapStore) Replace(ctx context.Context, pins ...Pin) error {
	return s.modifyPins(ctx, func(m map[Key]Pin) bool {
		for _, p := range pins {
			m[p.Key] = p
		}
		return true
	})
}

// Upgrade implements Store.
func (s *ConfigMapStore) Upgrade(ctx context.Context, pins ...Pin) error {
	return s.modifyPins(ctx, func(m map[Key]Pin) bool { return upgrade(m, pins) })
}

// Forget implements Store.
func (s *ConfigMapStore) Forget(ctx context.Context, servers ...string) error {
	return s.modifyPins(ctx, func(pins map[Key]Pin) bool { return forget(pins, servers) })
}

// ClaimFirst implements ClaimStore.
func (s *ConfigMapStore) ClaimFirst(ctx context.Context, candidates []Claim) ([]Claim, error) {
	var out []Claim
	err := s.modifyClaims(ctx, func(claims map[string]Claim) bool {
		added := claimFirst(claims, candidates)
		out = sortedClaims(claims)
		return added
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Release implements ClaimStore.
func (s *ConfigMapStore) Release(ctx context.Context, servers ...string) error {
	return s.modifyClaims(ctx, func(claims map[string]Claim) bool { return release(claims, servers) })
}

// ClaimsChanged implements ClaimStore.
func (s *ConfigMapStore) ClaimsChanged() <-chan struct{} { return s.claimsChanged }

// modifyPins applies change to the live pins (see modify).
func (s *ConfigMapStore) modifyPins(ctx context.Context, change func(map[Key]Pin) bool) error {
	err := s.modify(ctx, func(cm *kubeclient.ConfigMap) (bool, error) {
		pins, err := decodeConfigMap(cm)
		if err != nil {
			return false, err // never overwrite pins that cannot be read
		}
		if !change(pins) {
			return false, nil
		}
		data, err := encodePins(pins)
		if err != nil {
			return false, fmt.Errorf("encode pins: %w", err)
		}
		cm.Data[configMapKey] = string(data)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("write pins to ConfigMap %s/%s: %w", s.namespace, ConfigMapName, err)
	}
	return nil
}

// modifyClaims applies change to the live claims (see modify).
func (s *ConfigMapStore) modifyClaims(ctx context.Context, change func(map[string]Claim) bool) error {
	err := s.modify(ctx, func(cm *kubeclient.ConfigMap) (bool, error) {
		claims, err := decodeClaimsConfigMap(cm)
		if err != nil {
			return false, err // never overwrite claims that cannot be read
		}
		if !change(claims) {
			return false, nil
		}
		data, err := encodeClaims(claims)
		if err != nil {
			return false, fmt.Errorf("encode name claims: %w", err)
		}
		cm.Data[claimsKey] = string(data)
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("write name claims to ConfigMap %s/%s: %w", s.namespace, ConfigMapName, err)
	}
	return nil
}

// modify applies change to the live ConfigMap's data (never nil) and
// writes it back on the resourceVersion it read; a conflict (another
// replica wrote meanwhile) reads and applies again. change reports whether
// it changed anything.
func (s *ConfigMapStore) modify(ctx context.Context, change func(*kubeclient.ConfigMap) (bool, error)) error {
	cms := kubeclient.ConfigMaps.In(s.dyn, s.namespace)
	return retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cm, err := cms.Get(ctx, ConfigMapName)
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = &kubeclient.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: s.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "mcp-hub"}}}
		case err != nil:
			return err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		changed, err := change(cm)
		if err != nil {
			return err
		}
		if !changed {
			s.observe(cm, false)
			return nil
		}
		var written *kubeclient.ConfigMap
		if create {
			written, err = cms.Create(ctx, cm)
		} else {
			written, err = cms.Update(ctx, cm)
		}
		if err != nil {
			return err
		}
		s.observe(written, false)
		return nil
	})
}
