package kubetest_test

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/purko-io/mcp-hub/internal/kubetest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

func newNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func TestBinariesMissingFailsWithHint(t *testing.T) {
	t.Setenv(kubetest.EnvKubeAPIServer, "/nonexistent/kube-apiserver")
	_, _, err := kubetest.Binaries()
	if err == nil || !strings.Contains(err.Error(), "make test-deps") || !strings.Contains(err.Error(), "hack/kube-bins.sh") {
		t.Fatalf("Binaries() error = %v, want a hint at make test-deps", err)
	}
	_, err = kubetest.StartCluster(context.Background(), kubetest.Options{})
	if err == nil {
		t.Fatal("StartCluster succeeded without a kube-apiserver binary")
	}
}

func TestConfigMap(t *testing.T) {
	c := kubetest.Shared(t)
	cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
	ctx := context.Background()

	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != kubetest.KubeVersion {
		t.Errorf("server version %q, want %q", v.GitVersion, kubetest.KubeVersion)
	}

	newNamespace(t, cs, "cm-test")
	_, err = cs.CoreV1().ConfigMaps("cm-test").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "settings"},
		Data:       map[string]string{"k": "v"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().ConfigMaps("cm-test").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Data["k"] != "v" {
		t.Fatalf("data = %v", got.Data)
	}
}

const crdYAML = `
# a comment and an empty document first
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.kubetest.example.com
spec:
  group: kubetest.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
  - name: v1alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
`

func TestCRDAndCustomResource(t *testing.T) {
	c := kubetest.Shared(t)
	cfg := c.AdminConfig()
	ctx := context.Background()

	objs := kubetest.ApplyYAML(t, cfg, []byte(crdYAML))
	if len(objs) != 1 || objs[0].GetKind() != "CustomResourceDefinition" {
		t.Fatalf("applied %d objects: %v", len(objs), objs)
	}
	c.WaitForCRD(t, "widgets.kubetest.example.com")

	newNamespace(t, kubernetes.NewForConfigOrDie(cfg), "crd-test")
	dyn := dynamic.NewForConfigOrDie(cfg)
	gvr := schema.GroupVersionResource{Group: "kubetest.example.com", Version: "v1alpha1", Resource: "widgets"}
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kubetest.example.com/v1alpha1",
		"kind":       "Widget",
		"metadata":   map[string]any{"name": "w1"},
		"spec":       map[string]any{"size": int64(3)},
	}}
	kubetest.Eventually(t, 0, func() error {
		_, err := dyn.Resource(gvr).Namespace("crd-test").Create(ctx, w, metav1.CreateOptions{})
		return err
	})

	// ApplyYAML creates and updates (server-side apply), also for custom resources,
	// and puts namespace-less namespaced objects into "default".
	for _, size := range []string{"5", "7"} {
		kubetest.ApplyYAML(t, cfg, []byte(`
apiVersion: kubetest.example.com/v1alpha1
kind: Widget
metadata: {name: w2, namespace: crd-test}
spec: {size: `+size+`}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: applied}
data: {size: "`+size+`"}
`))
	}
	got, err := dyn.Resource(gvr).Namespace("crd-test").Get(ctx, "w2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 7 {
		t.Errorf("w2 spec.size = %d, want 7", size)
	}
	cm, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("default").Get(ctx, "applied", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["size"] != "7" {
		t.Errorf("configmap data = %v", cm.Data)
	}

	// From a file, too.
	path := t.TempDir() + "/w3.yaml"
	if err := os.WriteFile(path, []byte("apiVersion: kubetest.example.com/v1alpha1\nkind: Widget\nmetadata: {name: w3, namespace: crd-test}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	kubetest.ApplyYAML(t, cfg, path)
	list, err := dyn.Resource(gvr).Namespace("crd-test").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 {
		t.Errorf("got %d widgets, want 3", len(list.Items))
	}
}

func TestImpersonationIsSubjectToRBAC(t *testing.T) {
	c := kubetest.Shared(t)
	ctx := context.Background()
	admin := kubernetes.NewForConfigOrDie(c.AdminConfig())
	newNamespace(t, admin, "rbac-test")

	sa := kubernetes.NewForConfigOrDie(c.ImpersonatedConfig(
		"system:serviceaccount:rbac-test:reader",
		"system:serviceaccounts", "system:serviceaccounts:rbac-test", "system:authenticated"))
	_, err := sa.CoreV1().ConfigMaps("rbac-test").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Fatalf("list configmaps without a RoleBinding: err = %v, want Forbidden", err)
	}

	_, err = admin.RbacV1().Roles("rbac-test").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"list"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = admin.RbacV1().RoleBindings("rbac-test").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "cm-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "reader", Namespace: "rbac-test"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.Eventually(t, 10*time.Second, func() error {
		_, err := sa.CoreV1().ConfigMaps("rbac-test").List(ctx, metav1.ListOptions{})
		return err
	})

	// Still only what the Role allows.
	if _, err := sa.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list configmaps in another namespace: err = %v, want Forbidden", err)
	}
	if _, err := sa.CoreV1().Secrets("rbac-test").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("list secrets: err = %v, want Forbidden", err)
	}
	// ServiceAccountConfig is the same identity.
	sa2 := kubernetes.NewForConfigOrDie(c.ServiceAccountConfig("rbac-test", "reader"))
	if _, err := sa2.CoreV1().ConfigMaps("rbac-test").List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("ServiceAccountConfig: %v", err)
	}
}

func TestKubeconfig(t *testing.T) {
	c := kubetest.Shared(t)
	path := c.Kubeconfig(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kc struct {
		CurrentContext string `json:"current-context"`
		Clusters       []struct {
			Cluster struct {
				Server string `json:"server"`
				CAData string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Token string `json:"token"`
			} `json:"user"`
		} `json:"users"`
	}
	if err := yaml.Unmarshal(data, &kc); err != nil {
		t.Fatal(err)
	}
	if kc.CurrentContext != "kubetest" || len(kc.Clusters) != 1 || len(kc.Users) != 1 {
		t.Fatalf("unexpected kubeconfig:\n%s", data)
	}
	ca, err := base64.StdEncoding.DecodeString(kc.Clusters[0].Cluster.CAData)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &rest.Config{Host: kc.Clusters[0].Cluster.Server, BearerToken: kc.Users[0].User.Token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	if _, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatalf("using the kubeconfig's credentials: %v", err)
	}

	// Extra check with a real kubeconfig loader when kubectl happens to be installed.
	if kubectl, err := exec.LookPath("kubectl"); err == nil {
		out, err := exec.Command(kubectl, "--kubeconfig", path, "get", "namespace", "default", "-o", "name").CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != "namespace/default" {
			t.Errorf("kubectl --kubeconfig: %v: %s", err, out)
		}
	}
}

func TestStartStop(t *testing.T) {
	begin := time.Now()
	c, err := kubetest.StartCluster(context.Background(), kubetest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("private cluster started in %v", c.StartupTime.Round(time.Millisecond))
	kas, etcd := c.PIDs()
	for _, pid := range []int{kas, etcd} {
		if pid == 0 || syscall.Kill(pid, 0) != nil {
			t.Errorf("process %d not running", pid)
		}
	}
	if _, err := kubernetes.NewForConfigOrDie(c.AdminConfig()).CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Error(err)
	}
	stopBegin := time.Now()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("stopped in %v (total %v)", time.Since(stopBegin).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	for _, pid := range []int{kas, etcd} {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("%s not removed: %v", c.Dir, err)
	}
	if err := c.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}
