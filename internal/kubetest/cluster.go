//go:build unix

package kubetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// Versions of the binaries that hack/kube-bins.sh builds into the cache.
const (
	KubeVersion = "v1.34.4"
	EtcdVersion = "v3.6.4"
)

// Environment variables that override the binary locations.
const (
	EnvKubeAPIServer = "MCPHUB_KUBE_APISERVER"
	EnvEtcd          = "MCPHUB_ETCD"
	EnvCacheDir      = "MCPHUB_KUBE_CACHE"
)

// Options tune StartCluster. The zero value is fine.
type Options struct {
	// ExtraAPIServerFlags are appended to the kube-apiserver command line
	// ("--name=value"; a later flag overrides an earlier one).
	ExtraAPIServerFlags []string
	// StartTimeout bounds the wait for etcd and kube-apiserver to be ready
	// (default 90s).
	StartTimeout time.Duration
}

// Cluster is a running kube-apiserver + etcd pair.
type Cluster struct {
	// Host is the API server URL, https://127.0.0.1:<port>.
	Host string
	// CAData is the PEM certificate the API server serves (self-signed).
	CAData []byte
	// AdminToken is a bearer token of user "admin" in group system:masters.
	AdminToken string
	// EtcdURL is the etcd client URL, http://127.0.0.1:<port>.
	EtcdURL string
	// Dir holds certificates, logs and the etcd data; it is removed by Stop.
	Dir string
	// StartupTime is how long StartCluster took.
	StartupTime time.Duration

	etcd, apiserver *process
	stopOnce        sync.Once
	stopErr         error
}

// Binaries returns the kube-apiserver and etcd paths: $MCPHUB_KUBE_APISERVER and
// $MCPHUB_ETCD, else the hack/kube-bins.sh cache. The error (binaries missing)
// says how to get them.
func Binaries() (kubeAPIServer, etcd string, err error) {
	cache := os.Getenv(EnvCacheDir)
	if cache == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, herr := os.UserHomeDir()
			if herr != nil {
				return "", "", fmt.Errorf("kubetest: cannot find the cache dir: %w; set %s and %s", herr, EnvKubeAPIServer, EnvEtcd)
			}
			base = filepath.Join(home, ".cache")
		}
		cache = filepath.Join(base, "mcp-hub")
	}
	kubeAPIServer = os.Getenv(EnvKubeAPIServer)
	if kubeAPIServer == "" {
		kubeAPIServer = filepath.Join(cache, "kube-apiserver-"+KubeVersion)
	}
	etcd = os.Getenv(EnvEtcd)
	if etcd == "" {
		etcd = filepath.Join(cache, "etcd-"+EtcdVersion)
	}
	var missing []string
	for _, p := range []struct{ env, path string }{{EnvKubeAPIServer, kubeAPIServer}, {EnvEtcd, etcd}} {
		st, serr := os.Stat(p.path)
		switch {
		case serr != nil:
			missing = append(missing, fmt.Sprintf("%s (%s): %v", p.path, p.env, serr))
		case st.IsDir() || st.Mode()&0o111 == 0:
			missing = append(missing, fmt.Sprintf("%s (%s): not an executable file", p.path, p.env))
		}
	}
	if len(missing) > 0 {
		return kubeAPIServer, etcd, fmt.Errorf("kubetest: missing test binaries: %s; run `make test-deps` (hack/kube-bins.sh) or set %s/%s",
			strings.Join(missing, "; "), EnvKubeAPIServer, EnvEtcd)
	}
	return kubeAPIServer, etcd, nil
}

var shared struct {
	once    sync.Once
	mu      sync.Mutex
	cluster *Cluster
	err     error
}

// Shared returns the cluster of this test binary, starting it on first use. It is
// stopped by Main, which TestMain must call. A start failure fails every test
// that asks for the cluster.
func Shared(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		c, err := StartCluster(context.Background(), Options{})
		shared.mu.Lock()
		shared.cluster, shared.err = c, err
		shared.mu.Unlock()
		if err == nil {
			t.Logf("kubetest: shared cluster %s started in %v", c.Host, c.StartupTime.Round(time.Millisecond))
		}
	})
	shared.mu.Lock()
	c, err := shared.cluster, shared.err
	shared.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kubetest: logs of the shared cluster: %s", c.Dir)
		}
	})
	return c
}

// Main runs the tests, stops the shared cluster (if a test started it) and exits.
// Call it from TestMain: func TestMain(m *testing.M) { kubetest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	shared.mu.Lock()
	c := shared.cluster
	shared.mu.Unlock()
	if c != nil {
		if code != 0 {
			c.printLogTails(os.Stderr)
		}
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest: stop shared cluster:", err)
			if code == 0 {
				code = 1
			}
		}
	}
	os.Exit(code)
}

// StartCluster starts etcd and kube-apiserver on free 127.0.0.1 ports and waits
// until /readyz is ok. The caller must call Stop.
func StartCluster(ctx context.Context, opts Options) (*Cluster, error) {
	begin := time.Now()
	kasBin, etcdBin, err := Binaries()
	if err != nil {
		return nil, err
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 90 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	sweepStaleDirs()
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	ok := false
	defer func() {
		if !ok {
			_ = c.Stop()
		}
	}()

	if err := c.startEtcd(ctx, etcdBin); err != nil {
		return nil, err
	}
	if err := c.writeCredentials(); err != nil {
		return nil, err
	}
	if err := c.startAPIServer(ctx, kasBin, opts.ExtraAPIServerFlags); err != nil {
		return nil, err
	}
	c.StartupTime = time.Since(begin)
	ok = true
	return c, nil
}

const ownerFile = "owner.pid"

// sweepStaleDirs removes the dirs of clusters whose test binary died without
// stopping them (panic, -timeout: the servers die with it, see sysProcAttr, but
// the dir stays).
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "kubetest-*"))
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(d)
		}
	}
}

// Ports are picked by binding :0 and closing, so another process can grab one
// before the server binds it; each server start is retried a few times.
const startAttempts = 3

func (c *Cluster) startEtcd(ctx context.Context, bin string) error {
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
		peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
		dataDir := filepath.Join(c.Dir, "etcd-data")
		_ = os.RemoveAll(dataDir)
		args := []string{
			"--name=kubetest",
			"--data-dir=" + dataDir,
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=kubetest=" + peerURL,
			"--log-level=warn",
		}
		if etcdSupportsNoFsync(bin) {
			args = append(args, "--unsafe-no-fsync")
		}
		p, err := startProcess("etcd", bin, args, filepath.Join(c.Dir, "etcd.log"))
		if err != nil {
			return err
		}
		c.etcd, c.EtcdURL = p, clientURL
		client := &http.Client{Timeout: 2 * time.Second}
		lastErr = waitReady(ctx, p, func() error {
			return checkOK(client, nil, clientURL+"/health", `"true"`)
		})
		if lastErr == nil {
			return nil
		}
		_ = p.stop(5 * time.Second)
		c.etcd = nil
		if exited, _ := p.exited(); !exited || ctx.Err() != nil || attempt == startAttempts {
			break
		}
	}
	return fmt.Errorf("kubetest: etcd did not start: %w\n--- %s (tail) ---\n%s",
		lastErr, filepath.Join(c.Dir, "etcd.log"), fileTail(filepath.Join(c.Dir, "etcd.log"), 40))
}

var noFsync sync.Map // etcd path -> bool

// etcdSupportsNoFsync reports whether the etcd binary knows --unsafe-no-fsync
// (etcd >= 3.5 and hack/build-etcd.sh's binary). It speeds up the many writes of
// the API server's bootstrap; durability does not matter for a throwaway store.
func etcdSupportsNoFsync(bin string) bool {
	if v, ok := noFsync.Load(bin); ok {
		return v.(bool)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := execOutput(ctx, bin, "--help")
	ok := strings.Contains(out, "unsafe-no-fsync")
	noFsync.Store(bin, ok)
	return ok
}

func (c *Cluster) writeCredentials() error {
	certPEM, keyPEM, err := selfSignedServingCert()
	if err != nil {
		return err
	}
	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	saPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(saKey)})
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return err
	}
	c.AdminToken = hex.EncodeToString(tok)
	c.CAData = certPEM
	files := map[string][]byte{
		"apiserver.crt": certPEM,
		"apiserver.key": keyPEM,
		"sa.key":        saPEM,
		"tokens.csv":    []byte(c.AdminToken + `,admin,kubetest-admin,"system:masters"` + "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.Dir, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startAPIServer(ctx context.Context, bin string, extra []string) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.CAData)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
	}
	defer client.CloseIdleConnections()
	logPath := filepath.Join(c.Dir, "kube-apiserver.log")
	var lastErr error
	for attempt := 1; attempt <= startAttempts; attempt++ {
		ports, err := freePorts(1)
		if err != nil {
			return err
		}
		f := func(name string) string { return filepath.Join(c.Dir, name) }
		args := []string{
			"--etcd-servers=" + c.EtcdURL,
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(ports[0]),
			"--cert-dir=" + f("certs"),
			"--tls-cert-file=" + f("apiserver.crt"),
			"--tls-private-key-file=" + f("apiserver.key"),
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + f("sa.key"),
			"--service-account-signing-key-file=" + f("sa.key"),
			"--token-auth-file=" + f("tokens.csv"),
			"--authorization-mode=RBAC",
			"--service-cluster-ip-range=10.96.0.0/24",
			// No controller-manager creates the "default" ServiceAccount of a
			// namespace; without this, creating a Pod fails.
			"--disable-admission-plugins=ServiceAccount",
			// Keep the "kubernetes" Endpoints out of it (127.0.0.1 is not a valid
			// endpoint address).
			"--endpoint-reconciler-type=none",
			"--profiling=false",
		}
		args = append(args, extra...)
		p, err := startProcess("kube-apiserver", bin, args, logPath)
		if err != nil {
			return err
		}
		c.apiserver = p
		c.Host = "https://127.0.0.1:" + strconv.Itoa(ports[0])
		lastErr = waitReady(ctx, p, func() error {
			return checkOK(client, &c.AdminToken, c.Host+"/readyz", "ok")
		})
		if lastErr == nil {
			return nil
		}
		_ = p.stop(5 * time.Second)
		c.apiserver = nil
		exited, _ := p.exited()
		if !exited || ctx.Err() != nil || attempt == startAttempts ||
			!strings.Contains(fileTail(logPath, 20), "address already in use") {
			break
		}
	}
	return fmt.Errorf("kubetest: kube-apiserver did not become ready: %w\n--- %s (tail) ---\n%s",
		lastErr, logPath, fileTail(logPath, 60))
}

// waitReady polls check until it succeeds, the process exits or ctx ends.
func waitReady(ctx context.Context, p *process, check func() error) error {
	var last error
	for {
		if exited, err := p.exited(); exited {
			return fmt.Errorf("%s exited: %v", p.name, err)
		}
		if last = check(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last check: %v)", ctx.Err(), last)
		case <-p.done:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func checkOK(client *http.Client, token *string, url, want string) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != nil {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Stop stops kube-apiserver, then etcd (the other order can hang the API
// server), and removes Dir. It is idempotent.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		var errs []error
		if c.apiserver != nil {
			errs = append(errs, c.apiserver.stop(15*time.Second))
		}
		if c.etcd != nil {
			errs = append(errs, c.etcd.stop(10*time.Second))
		}
		if c.Dir != "" {
			errs = append(errs, os.RemoveAll(c.Dir))
		}
		c.stopErr = errors.Join(errs...)
	})
	return c.stopErr
}

// KillAPIServer kills kube-apiserver alone (SIGKILL; etcd keeps running),
// for tests of what clients do when the API server becomes unreachable:
// it vanishes as from a crash or a partition, where a graceful stop would
// first drain its watches for seconds. Stop still stops the rest.
func (c *Cluster) KillAPIServer() error {
	if c.apiserver == nil {
		return nil
	}
	return c.apiserver.kill()
}

// PIDs returns the process ids of kube-apiserver and etcd (0 when not running).
func (c *Cluster) PIDs() (apiserver, etcd int) {
	if c.apiserver != nil {
		apiserver = c.apiserver.pid()
	}
	if c.etcd != nil {
		etcd = c.etcd.pid()
	}
	return apiserver, etcd
}

func (c *Cluster) printLogTails(w io.Writer) {
	for _, p := range []*process{c.apiserver, c.etcd} {
		if p != nil {
			fmt.Fprintf(w, "--- %s (tail) ---\n%s\n", p.logPath, p.logTail(30))
		}
	}
}

// AdminConfig returns a config authenticating as "admin" (group system:masters),
// with client-side rate limiting relaxed for tests.
func (c *Cluster) AdminConfig() *rest.Config {
	return &rest.Config{
		Host:            c.Host,
		BearerToken:     c.AdminToken,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.CAData...)},
		QPS:             1000,
		Burst:           2000,
		Timeout:         30 * time.Second,
	}
}

// ImpersonatedConfig returns the admin config impersonating user with exactly
// the given groups (the API server adds system:authenticated). Requests are
// authorized (RBAC) as that user.
func (c *Cluster) ImpersonatedConfig(user string, groups ...string) *rest.Config {
	cfg := c.AdminConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append([]string(nil), groups...)}
	return cfg
}

// ServiceAccountConfig impersonates the service account namespace/name with the
// groups a real token of it would carry.
func (c *Cluster) ServiceAccountConfig(namespace, name string) *rest.Config {
	return c.ImpersonatedConfig(ServiceAccountUser(namespace, name), ServiceAccountGroups(namespace)...)
}

// ServiceAccountUser is the user name of a service account token.
func ServiceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// ServiceAccountGroups are the groups of a service account token.
func ServiceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
}

// freePorts returns n distinct free TCP ports on 127.0.0.1.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func selfSignedServingCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "kubetest-apiserver"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
