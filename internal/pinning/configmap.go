package pinning

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rs/zerolog"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
)

// ConfigMapName is the ConfigMap, in the hub's namespace, that holds the
// pins of every replica.
const ConfigMapName = "mcp-hub-pins"

// configMapKey is the data key of the pins (the same JSON as the file).
const configMapKey = "pins.json"

// ConfigMapStore keeps pins in the ConfigMap mcp-hub-pins, so that every
// replica compares against the same pins. Reads come from an informer
// watching that one ConfigMap (other replicas' pins and approvals arrive
// as events); writes read the live object and update it on its
// resourceVersion, retried on conflict, so concurrent replicas never lose
// each other's pins and the first writer of a key wins.
type ConfigMapStore struct {
	client    kubernetes.Interface
	namespace string
	log       zerolog.Logger
	factory   informers.SharedInformerFactory
	informer  cache.SharedIndexInformer
	cancel    context.CancelFunc
	changed   chan struct{}

	held        // under held.mu also:
	rv   uint64 // resourceVersion the pins were read from
	uid  string
}

// OpenConfigMap starts watching the pins ConfigMap in namespace; the
// ConfigMap is created on the first write. WaitSynced waits for its first
// copy; Close stops the watch.
func OpenConfigMap(client kubernetes.Interface, namespace string, log zerolog.Logger) (*ConfigMapStore, error) {
	if namespace == "" {
		return nil, errors.New("pins ConfigMap: no namespace")
	}
	s := &ConfigMapStore{client: client, namespace: namespace, log: log.With().Str("component", "pins").Logger(),
		changed: make(chan struct{}, 1), held: held{pins: map[Key]Pin{}}}
	s.factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + ConfigMapName }))
	s.informer = s.factory.Core().V1().ConfigMaps().Informer()
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
	s.factory.Start(ctx.Done())
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
	s.factory.Shutdown()
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
// copy than the one held is ignored; a copy that cannot be read is logged
// and ignored: forgetting pins is what an attacker would want.
func (s *ConfigMapStore) observe(obj any, notify bool) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	rv, _ := strconv.ParseUint(cm.ResourceVersion, 10, 64)
	pins, err := decodeConfigMap(cm)
	if err != nil {
		s.log.Error().Err(err).Msg("pins ConfigMap unreadable; keeping the pins read before")
		return
	}
	s.mu.Lock()
	if rv != 0 && rv <= s.rv {
		s.mu.Unlock()
		return
	}
	s.pins, s.rv, s.uid = pins, rv, string(cm.UID)
	s.mu.Unlock()
	if !notify {
		return
	}
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func decodeConfigMap(cm *corev1.ConfigMap) (map[Key]Pin, error) {
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
	err := s.modify(ctx, func(pins map[Key]Pin) bool {
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
	return s.modify(ctx, func(m map[Key]Pin) bool {
		for _, p := range pins {
			m[p.Key] = p
		}
		return true
	})
}

// modify applies change to the live pins and writes them back on the
// resourceVersion it read; a conflict (another replica wrote meanwhile)
// reads and applies again.
func (s *ConfigMapStore) modify(ctx context.Context, change func(map[Key]Pin) bool) error {
	cms := s.client.CoreV1().ConfigMaps(s.namespace)
	err := retry.OnError(retry.DefaultRetry, func(err error) bool {
		return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err)
	}, func() error {
		cm, err := cms.Get(ctx, ConfigMapName, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		switch {
		case create:
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: s.namespace,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "mcp-hub"}}}
		case err != nil:
			return err
		}
		pins, err := decodeConfigMap(cm)
		if err != nil {
			return err // never overwrite pins that cannot be read
		}
		if !change(pins) {
			s.observe(cm, false)
			return nil
		}
		data, err := encodePins(pins)
		if err != nil {
			return fmt.Errorf("encode pins: %w", err)
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[configMapKey] = string(data)
		var written *corev1.ConfigMap
		if create {
			written, err = cms.Create(ctx, cm, metav1.CreateOptions{})
		} else {
			written, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		}
		if err != nil {
			return err
		}
		s.observe(written, false)
		return nil
	})
	if err != nil {
		return fmt.Errorf("write pins to ConfigMap %s/%s: %w", s.namespace, ConfigMapName, err)
	}
	return nil
}
