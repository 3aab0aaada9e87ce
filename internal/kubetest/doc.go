// Package kubetest starts a real kube-apiserver backed by etcd on 127.0.0.1 for
// integration tests. It is a normal package so that the _test.go files of other
// packages can import it; nothing outside tests should.
//
// Binaries are found through MCPHUB_KUBE_APISERVER and MCPHUB_ETCD, else in
// ${MCPHUB_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mcp-hub} as
// kube-apiserver-v1.34.4 and etcd-v3.6.4, which `make test-deps`
// (hack/kube-bins.sh) builds. Missing binaries fail the test; they never skip it.
//
// Starting a cluster takes a few seconds, so share one per test binary:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
//	func TestSomething(t *testing.T) {
//		c := kubetest.Shared(t)
//		cs := kubernetes.NewForConfigOrDie(c.AdminConfig())
//		...
//	}
//
// Tests sharing a cluster should use their own namespaces (and unique names for
// cluster-scoped objects). StartCluster starts a private cluster, which the
// caller stops with Stop.
package kubetest
