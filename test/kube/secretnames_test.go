package kube

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// TestSecretNamesNarrowRBAC: with the chart's rbac.secretNames the hub's
// Role grants get, list and watch on the named Secrets only, and the hub
// run with --secret-names (as the chart's Deployment passes it) syncs,
// reads a listed Secret's token and sees its rotation, and refuses a
// Secret outside the list: a Secret informer over the whole namespace
// would be forbidden and never sync.
func TestSecretNamesNarrowRBAC(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()

	ns = freshNamespace(t, kc, "narrow")
	saName := applyChartAccess(t, admin, ns, "--set", "rbac.secretNames={listed-token}")
	cluster.WaitForCRD(t, "mcpservers.purko.io")
	for name, tok := range map[string]string{"listed-token": "listed-1", "unlisted-token": "unlisted"} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: upstreamCredential}, Data: map[string][]byte{"token": []byte(tok)}}
		if _, err := kc.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	listed, unlisted := startUpstream(t, "listed_tool"), startUpstream(t, "unlisted_tool")
	hub := startHub(t, kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(ns, saName)), "--secret-names", "listed-token")
	c, _ := dialHub(t, hub.Base)
	mcps := dyn.Resource(gvr).Namespace(ns)
	for _, u := range []struct{ name, url, secret string }{{"listed", listed.URL, "listed-token"}, {"unlisted", unlisted.URL, "unlisted-token"}} {
		obj := mcpServerObj(u.name, u.url, map[string]any{"auth": "bearer", "secretRef": u.secret})
		if err := kubetest.Retry(ctx, 10*time.Second, func() error {
			_, err := mcps.Create(ctx, obj, metav1.CreateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	hubtest.Eventually(t, 15*time.Second, poll, "listed_tool called with the listed Secret's token", func() error {
		if _, err := callText(c, "listed_tool"); err != nil {
			return err
		}
		if got := listed.Authorization(); got != "Bearer listed-1" {
			return fmt.Errorf("upstream saw %q", got)
		}
		return nil
	})
	s, err := kc.CoreV1().Secrets(ns).Get(ctx, "listed-token", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Data["token"] = []byte("listed-2")
	if _, err := kc.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	hubtest.Eventually(t, 15*time.Second, poll, "the rotated token used", func() error {
		if _, err := callText(c, "listed_tool"); err != nil {
			return err
		}
		if got := listed.Authorization(); got != "Bearer listed-2" {
			return fmt.Errorf("upstream saw %q", got)
		}
		return nil
	})
	hubtest.Eventually(t, 15*time.Second, poll, "the unlisted Secret is refused", func() error {
		status, msg, _, ok := hub.server("unlisted")
		if !ok || status != "error" || !strings.Contains(msg, "secretRef: Secret "+ns+"/unlisted-token is not in kubernetes.secretNames") {
			return fmt.Errorf("unlisted = %q %q", status, msg)
		}
		return nil
	})
	if strings.Contains(strings.ToLower(hub.Output()), "forbidden") {
		t.Errorf("the hub met an RBAC denial:\n%s", hubtest.Tail(hub.Output()))
	}
}
