package kube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/purko-io/mcp-hub/internal/hubtest"
	"github.com/purko-io/mcp-hub/internal/hubtest/idp"
	"github.com/purko-io/mcp-hub/internal/kubetest"
)

// TestServiceAccountTokenExchange is issue 24 for pods: an executor pod
// calls the hub with its projected ServiceAccount token, the hub (which
// reviews it with TokenReview and finds the pod's Agent) trades it at a
// token service that trusts the cluster's service-account issuer for a
// token minted for the upstream (RFC 8693, subjectToken: serviceAccount),
// and the upstream sees the pod's ServiceAccount as the subject and the hub
// as the actor, never the pod's own token. A pod of another ServiceAccount
// is seen as itself. The token service (hack/idp, zitadel's OpenID
// provider) verifies the pod tokens with the apiserver's own JWKS, read
// from /openid/v1/jwks as any federating token service would.
func TestServiceAccountTokenExchange(t *testing.T) {
	cluster := kubetest.Shared(t)
	admin := cluster.AdminConfig()
	kc := kubernetes.NewForConfigOrDie(admin)
	dyn := dynamic.NewForConfigOrDie(admin)
	ctx := context.Background()
	exNS := freshNamespace(t, kc, "exchange")
	saName := applyChartAccess(t, admin, exNS, "--set", "auth.serviceAccounts.enabled=true")
	kubetest.ApplyYAML(t, admin, filepath.Join(repoRoot, "internal", "kubeauth", "testdata", "agents.purko.io.yaml"))
	cluster.WaitForCRD(t, "agents.purko.io")

	// The Agent both pods run as: restricted autonomy, allowed the
	// read-only whoami.
	agent := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "purko.io/v1alpha1", "kind": "Agent", "metadata": map[string]any{"name": "notes-reader"},
		"spec": map[string]any{"autonomyLevel": "Shu", "tools": []any{"notes__whoami"}},
	}}
	agents := dyn.Resource(schema.GroupVersionResource{Group: "purko.io", Version: "v1alpha1", Resource: "agents"}).Namespace(exNS)
	if err := kubetest.Retry(ctx, 10*time.Second, func() error { _, err := agents.Create(ctx, agent, metav1.CreateOptions{}); return err }); err != nil {
		t.Fatal(err)
	}
	// Two ServiceAccounts, a pod of each, and each pod's token as the
	// kubelet would project it (a TokenRequest bound to the pod).
	podToken := func(sa string) string {
		if _, err := kc.CoreV1().ServiceAccounts(exNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod, err := kc.CoreV1().Pods(exNS).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: sa + "-run-1", Labels: map[string]string{"purko.io/agent": "notes-reader"}},
			Spec:       corev1.PodSpec{ServiceAccountName: sa, Containers: []corev1.Container{{Name: "executor", Image: "example/executor:1"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := kc.CoreV1().ServiceAccounts(exNS).CreateToken(ctx, sa, &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{
			BoundObjectRef: &authnv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	executorToken, auditorToken := podToken("executor"), podToken("auditor")

	// The cluster's service-account issuer, as a token service that
	// federates the cluster learns it: iss from a pod token, the keys
	// from the apiserver's JWKS (here with the admin's credentials; a
	// real cluster grants it to system:serviceaccounts or anonymous).
	issuer := jwtIssuer(t, executorToken)
	var discovery struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	raw, err := kc.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err == nil {
		err = json.Unmarshal(raw, &discovery)
	}
	if err != nil || discovery.Issuer != issuer {
		t.Fatalf("the apiserver's discovery document: %v, issuer %q; pod tokens say %q", err, discovery.Issuer, issuer)
	}
	jwks, err := kc.CoreV1().RESTClient().Get().AbsPath("/openid/v1/jwks").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /openid/v1/jwks: %v", err)
	}
	jwksFile := filepath.Join(t.TempDir(), "cluster-jwks.json")
	if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("service-account issuer %s, jwks_uri %s", issuer, discovery.JWKSURI)

	const hubSecret = "hub-client-secret-at-the-idp"
	svc := idp.Start(t, idp.Options{
		Clients:        []idp.Client{{ID: "mcp-hub", Secret: hubSecret, Exchange: true, Audiences: []string{"notes-api"}}},
		TrustedIssuers: []idp.TrustedIssuer{{Issuer: issuer, JWKSFile: jwksFile}},
	})
	notes := idp.StartUpstream(t, svc, "notes-api")

	// Token exchange is set in the hub's config file only; the kube tests
	// run the hub binary with one (as TestServiceAccountCallers does).
	cfg := fmt.Sprintf(`naming:
  prefix: always
auth:
  serviceAccounts: {enabled: true}
servers:
  - name: notes
    url: %q
    trustAnnotations: true
    tokenExchange:
      tokenURL: %q
      clientID: mcp-hub
      clientSecret: {env: IDP_CLIENT_SECRET}
      audience: notes-api
      subjectToken: serviceAccount
`, notes.URL, svc.TokenURL())
	hub := hubProc{hubtest.StartHub(t, hubtest.HubOptions{Bin: hubBin, LogLevel: "info", Wait: hubtest.Ready, Timeout: 30 * time.Second,
		Config: cfg, Env: []string{"IDP_CLIENT_SECRET=" + hubSecret},
		Args: []string{"--kubeconfig", kubetest.KubeconfigFor(t, cluster.ServiceAccountConfig(exNS, saName)), "--namespaces", exNS}})}
	hubtest.Eventually(t, 15*time.Second, poll, "notes connected", func() error {
		if status, msg, _, ok := hub.server("notes"); !ok || status != "connected" {
			return fmt.Errorf("notes = %q %q", status, msg)
		}
		return nil
	})

	// Each pod, twice: the upstream sees its ServiceAccount and the hub.
	for _, c := range []struct{ sa, token string }{{"executor", executorToken}, {"auditor", auditorToken}} {
		mc, _ := dialHubWith(t, hub.Base, c.token)
		want := fmt.Sprintf("subject=system:serviceaccount:%s:%s actor=mcp-hub", exNS, c.sa)
		for i := range 2 {
			if got, err := callText(mc, "notes__whoami"); err != nil || got != want {
				t.Fatalf("%s's call %d: %q, %v; want %q\nhub:\n%s", c.sa, i, got, err, want, hub.Output())
			}
		}
	}
	// One exchange per pod token: the hub keeps the exchanged token.
	if exchanges, _ := svc.Stats(t); exchanges != 2 {
		t.Errorf("%d token exchanges for 2 pod tokens' 4 calls, want 2", exchanges)
	}

	calls := map[string]int{}
	for _, s := range notes.Seen() {
		if s.Token == executorToken || s.Token == auditorToken {
			t.Fatalf("the upstream got a pod's own token (%s %s)", s.HTTPMethod, s.Method)
		}
		if s.Status == 401 {
			t.Fatalf("the upstream refused a request (%s %s as %q)", s.HTTPMethod, s.Method, s.Subject)
		}
		if s.Method == "tools/call" {
			calls[s.Subject+" by "+s.Actor]++
		}
	}
	want := map[string]int{
		"system:serviceaccount:" + exNS + ":executor by mcp-hub": 2,
		"system:serviceaccount:" + exNS + ":auditor by mcp-hub":  2,
	}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("the upstream's tools/calls by subject and actor: %v, want %v", calls, want)
	}
	out := hub.Output()
	if !strings.Contains(out, `"upstream_subject":"system:serviceaccount:`+exNS+`:executor"`) {
		t.Errorf("no audit line names the pod's ServiceAccount as the upstream's subject")
	}
	for _, secret := range []string{executorToken, auditorToken, hubSecret} {
		if strings.Contains(out, secret) || strings.Contains(svc.Process().Output(), secret) {
			t.Fatal("a pod token or the hub's client secret is in a log")
		}
	}
}

// jwtIssuer is the iss claim of a JWT, read without verifying it.
func jwtIssuer(t *testing.T, token string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %d parts", len(parts))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Issuer string `json:"iss"`
	}
	if err == nil {
		err = json.Unmarshal(payload, &claims)
	}
	if err != nil || claims.Issuer == "" {
		t.Fatalf("the token's iss: %v", err)
	}
	return claims.Issuer
}
