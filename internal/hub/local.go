package hub

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/purko-io/mcp-hub/internal/apitools"
	"github.com/purko-io/mcp-hub/internal/autonomy"
	"github.com/purko-io/mcp-hub/internal/builtin"
	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/credential"
	"github.com/purko-io/mcp-hub/internal/kubeclient"
	"github.com/purko-io/mcp-hub/internal/registry"
	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// localTools builds the hub's own tools: the builtins, the config's api
// tools and those imported from OpenAPI documents. A missing credential
// fails start-up with the tool and field named.
func localTools(ctx context.Context, cfg *config.Config, o Options, httpClient *http.Client) ([]registry.LocalTool, error) {
	var out []registry.LocalTool
	if cfg.Builtins.StaticAnalysis.On() {
		def, run := builtin.StaticAnalysis(builtin.StaticOptions{})
		out = append(out, registry.LocalTool{Def: def, Kind: autonomy.Builtin,
			Run: func(ctx context.Context, args map[string]any, _ map[string]string) *mcp.CallToolResult {
				return run(ctx, args)
			}})
	}
	rc, ownNamespace, err := clusterConfig(o)
	if err != nil {
		return nil, err
	}
	if tr := cfg.Builtins.TriggerWorkflow; tr.On() {
		url, ns := tr.DashboardURL, tr.Namespace
		if ns == "" {
			ns = ownNamespace
		}
		// The default dashboard is a cluster-internal name: only inside a
		// cluster can it resolve.
		if url == "" && ownNamespace != "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
			url = fmt.Sprintf("http://purko-operator.%s.svc:8082", ownNamespace)
		}
		if url != "" {
			def, run := builtin.TriggerWorkflow(builtin.TriggerOptions{DashboardURL: url, DefaultNamespace: ns,
				Token: tr.TokenValue.Reveal(), HTTPClient: httpClient, Timeout: tr.Timeout.D()})
			out = append(out, registry.LocalTool{Def: def, Kind: autonomy.Builtin, Run: run})
		}
	}
	specs := append([]toolspec.EndpointSpec(nil), cfg.APITools...)
	for i, imp := range cfg.OpenAPI {
		doc, where, err := openAPIDocument(ctx, imp, httpClient)
		if err != nil {
			return nil, fmt.Errorf("openapi[%d]: %w", i, err)
		}
		imported, _, err := apitools.ImportOpenAPI(ctx, doc, imp.Base)
		if err != nil {
			return nil, fmt.Errorf("openapi[%d] (%s): %w", i, where, err)
		}
		specs = append(specs, imported...)
	}
	secrets := apiSecrets(rc)
	for _, spec := range specs {
		cred, err := apiCredential(ctx, spec.Credential, secrets, ownNamespace)
		if err != nil {
			return nil, fmt.Errorf("api tool %s: credentials: %w", spec.Name, err)
		}
		def, run, err := apitools.New(spec, cred, httpClient)
		if err != nil {
			return nil, fmt.Errorf("api tool %s: %w", spec.Name, err)
		}
		out = append(out, registry.LocalTool{Def: def, Kind: autonomy.API, Method: spec.EffectiveMethod(), Run: run})
	}
	seen := map[string]bool{}
	for _, l := range out {
		if seen[l.Def.Name] {
			return nil, fmt.Errorf("tool name %q is used by two of the hub's own tools (builtins and api tools must differ)", l.Def.Name)
		}
		seen[l.Def.Name] = true
	}
	return out, nil
}

// apiCredential resolves an api tool's credential (read once at start-up)
// with the hub's one credential resolver, so an env variable, a file and a
// Secret obey the same rules as every other token. A tool without
// credentials gets "". A Secret's namespace defaults to the hub's own.
func apiCredential(ctx context.Context, c toolspec.CredentialRef, secrets credential.SecretReader, ownNamespace string) (string, error) {
	if c.IsZero() {
		return "", nil
	}
	ref := credential.Ref{Env: c.Env, File: c.File}
	if r := c.SecretRef; r != nil {
		if secrets == nil {
			return "", fmt.Errorf("secretRef %s needs a cluster: run in one, or pass --kubeconfig", r.Name)
		}
		ns := r.Namespace
		if ns == "" {
			ns = ownNamespace
		}
		ref.Secret = &credential.SecretKey{Namespace: ns, Name: r.Name, Key: r.Key}
	}
	return credential.Resolve(ctx, ref, secrets)
}

// apiSecrets reads Secrets through the API server, with a client made on
// the first read (most configs name no Secret); start-up reads them one at a
// time, so the lazy client needs no lock. Without a cluster it is nil.
func apiSecrets(rc *rest.Config) credential.SecretReader {
	if rc == nil {
		return nil
	}
	var dyn dynamic.Interface
	return func(ctx context.Context, namespace, name string) (map[string][]byte, bool, error) {
		if dyn == nil {
			c, err := dynamic.NewForConfig(rc)
			if err != nil {
				return nil, false, fmt.Errorf("kubernetes client: %w", err)
			}
			dyn = c
		}
		sec, err := kubeclient.Secrets.In(dyn, namespace).Get(ctx, name)
		switch {
		case apierrors.IsNotFound(err):
			return nil, false, nil
		case err != nil:
			return nil, false, err
		}
		return sec.Data, true, nil
	}
}

// openAPIDocument reads an OpenAPI document from its file or URL (fetched
// once at start-up, bounded to 10 s and 8 MiB).
func openAPIDocument(ctx context.Context, imp config.OpenAPIImport, hc *http.Client) ([]byte, string, error) {
	if imp.File != "" {
		b, err := os.ReadFile(imp.File)
		if err != nil {
			return nil, imp.File, fmt.Errorf("file: %w", err)
		}
		return b, imp.File, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, imp.URL, nil)
	if err != nil {
		return nil, imp.URL, fmt.Errorf("url: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, imp.URL, fmt.Errorf("url: fetch: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, imp.URL, fmt.Errorf("url: fetch: HTTP %s", resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return b, imp.URL, err
}
