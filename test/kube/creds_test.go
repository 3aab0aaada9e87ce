package kube

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// upstreamCredential is the label that sets a Secret aside for upstreams;
// the hub reads no Secret without it.
var upstreamCredential = map[string]string{"mcp-hub.purko.io/upstream-credential": "true"}

// TestUpstreamCredentialsNeedTheLabel is issue 20's first red-team win in a
// cluster: a registration, an entry of the mcp-servers ConfigMap or an
// MCPServer that names the Secret holding the hub's own caller tokens,
// pointed at a listener of the writer's, must not make the hub send that
// token. Only a Secret labelled mcp-hub.purko.io/upstream-credential:
// "true" is read: the API refuses any other (400 naming secretRef, nothing
// written), an object written directly lists its server as error, and the
// listener is never dialled. A labelled Secret works, and taking the label
// off takes the credential away.
func TestUpstreamCredentialsNeedTheLabel(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()
	ns = freshNamespace(t, kc, "creds")
	saName := applyChartAccess(t, admin, ns)
	cluster.WaitForCRD(t, "mcpservers.purko.io")
	secrets := kc.CoreV1().Secrets(ns)
	for _, s := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "mcp-hub-tokens"}, Data: map[string][]byte{"token": []byte("admin-secret")}},
		{ObjectMeta: metav1.ObjectMeta{Name: "up-token", Labels: upstreamCredential}, Data: map[string][]byte{"token": []byte("up-secret")}},
	} {
		if _, err := secrets.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bait := hubtest.StartBait(t)
	baitURL := bait.URL
	up := startUpstream(t, "up_tool")
	h := startHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName)))
	const refused = `secretRef: no Secret %s/mcp-hub-tokens carries the label mcp-hub.purko.io/upstream-credential: \"true\"`

	// Through the API: refused before anything is written.
	for _, body := range []string{
		`{"name":"steal","url":"` + baitURL + `","auth":"bearer","secretRef":"mcp-hub-tokens"}`,
		`{"name":"steal","image":"example/mcp:1","auth":"bearer","secretRef":"mcp-hub-tokens"}`,
		`{"name":"steal","url":"` + baitURL + `","auth":"bearer","secretRef":"no-such-secret"}`,
	} {
		status, answer := apiRequest(t, "POST", h.Base+"/api/mcp/server", "", body)
		want := fmt.Sprintf(refused, ns)
		if strings.Contains(body, "no-such-secret") {
			want = strings.Replace(want, "mcp-hub-tokens", "no-such-secret", 1)
		}
		if status != http.StatusBadRequest || !strings.Contains(answer, want) || strings.Contains(answer, "admin-secret") {
			t.Errorf("POST %s: %d %s, want 400 with %s", body, status, answer, want)
		}
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "mcp-servers", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the mcp-servers ConfigMap after refused registrations: %v", err)
	}
	if _, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "steal", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("MCPServer steal after a refused registration: %v", err)
	}
	if status, answer := apiRequest(t, "POST", h.Base+"/api/mcp/server", "",
		`{"name":"good","url":"`+up.URL+`","auth":"bearer","secretRef":"up-token"}`); status != http.StatusOK {
		t.Fatalf("POST good: %d %s", status, answer)
	}

	// Written directly: the ConfigMap entry (now holding good) and an
	// MCPServer, both naming the hub's tokens.
	if err := kubetest.Retry(ctx, 10*time.Second, func() error {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "mcp-servers", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["servers"] = strings.TrimSuffix(strings.TrimSpace(cm.Data["servers"]), "]") +
			`,{"name":"planted-entry","url":"` + baitURL + `","auth":"bearer","secretRef":"mcp-hub-tokens"}]`
		_, err = kc.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := kubetest.Retry(ctx, 10*time.Second, func() error {
		_, err := dyn.Resource(gvr).Namespace(ns).Create(ctx,
			mcpServerObj("planted-cr", baitURL, map[string]any{"auth": "bearer", "secretRef": "mcp-hub-tokens"}), metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	hubtest.Eventually(t, 20*time.Second, poll, "good connected with the labelled Secret's token", func() error {
		if status, msg, _, ok := h.server("good"); !ok || status != "connected" {
			return fmt.Errorf("good = %q %q", status, msg)
		}
		if got := up.Authorization(); got != "Bearer up-secret" {
			return fmt.Errorf("upstream saw %q", got)
		}
		return nil
	})
	for _, name := range []string{"planted-entry", "planted-cr"} {
		hubtest.Eventually(t, 20*time.Second, poll, name+" in error naming secretRef", func() error {
			status, msg, _, ok := h.server(name)
			if !ok || status != "error" || !strings.Contains(msg, "secretRef: Secret "+ns+"/mcp-hub-tokens not found with the label mcp-hub.purko.io/upstream-credential") {
				return fmt.Errorf("%s = %q %q", name, status, msg)
			}
			return nil
		})
	}

	// Taking the label off takes the credential away.
	if err := kubetest.Retry(ctx, 10*time.Second, func() error {
		s, err := secrets.Get(ctx, "up-token", metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Labels = nil
		_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	hubtest.Eventually(t, 20*time.Second, poll, "good in error once its Secret lost the label", func() error {
		if status, msg, _, ok := h.server("good"); !ok || status != "error" || !strings.Contains(msg, "secretRef: Secret "+ns+"/up-token not found with the label") {
			return fmt.Errorf("good = %q %q", status, msg)
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond) // room for a dial that should not come
	if n, auth := bait.Seen(); n != 0 {
		t.Fatalf("the hub opened %d connections to the registered listener (Authorization %q)", n, auth)
	}
	if strings.Contains(h.Output(), "admin-secret") || strings.Contains(h.Output(), "up-secret") {
		t.Error("a Secret's value is in the hub's log")
	}
}
