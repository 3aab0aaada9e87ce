package config

import (
	"bytes"
	"encoding/json"
	"testing"
)

// fuzzSeeds are realistic configs: the embedded default, a laptop file, a
// cluster file with every section, and the same in JSON.
func fuzzSeeds() []string {
	return []string{
		string(defaultYAML),
		`servers:
  - name: github
    url: http://github-mcp.purko.svc:8000/mcp
    token: {env: HOME}
    headers: {X-Team: platform}
    timeout: 30s
    toolPolicy: {readOnly: ["get_*"], write: [run_query]}
  - name: docs
    url: http://docs:9000/sse
  - name: shell
    url: ws://127.0.0.1:7000/ws
  - name: everything
    command: npx
    args: ["-y", "@modelcontextprotocol/server-everything", "stdio"]
    env: {LOG_LEVEL: warn}
naming: {prefix: always, separator: "__"}
upstream: {timeout: 60s, connectTimeout: 15, backoffMin: 250ms, backoffMax: 30s, logLevel: "off"}
catalog: {routeCacheSize: 100, notifyDebounce: 0.1}
shutdownGrace: 10s
`,
		`servers: []
kubernetes: {namespaces: [purko, tools], labelSelector: "team=a"}
replicas: {peers: "mcp-hub-peers.purko.svc.cluster.local:8080"}
auth:
  tokens:
    - {name: executor, token: {env: HOME}, maxLevel: Ha, tools: [get_issue]}
  anonymous: {enabled: true, maxLevel: manual}
  serviceAccounts: {enabled: true, audiences: [mcp-hub]}
builtins:
  staticAnalysis: {enabled: false}
  triggerWorkflow: {dashboardURL: "http://purko-operator.purko.svc:8082", namespace: purko, timeout: 1m}
http:
  maxBodyBytes: 1048576
  allowedOrigins: ["https://dashboard.example.com", "http://localhost:3000"]
  maxSessions: 100
  maxSessionsPerCaller: 10
  sessionIdleTimeout: 2m
  readTimeout: 20s
  readHeaderTimeout: 5s
apiTools:
  - name: get_weather
    url: https://api.example.com:8443/v1/weather/{city}
    method: GET
    authScheme: ApiKey
    credentials: {env: HOME}
    bindings: [{from: caller, header: X-Caller}]
    inputSchema: {type: object, properties: {city: {type: string}}, required: [city]}
openapi:
  - file: /nonexistent/petstore.yaml
    base: {url: "http://pets.tools.svc:8080/v1", timeoutSeconds: 10}
`,
		`{"servers":[{"name":"a","url":"http://127.0.0.1:9000/mcp","timeout":"5s"}],"http":{"maxBodyBytes":4194304}}`,
		"servers:\n",
		"upstream: {timeout: 9999999999h}\n",
	}
}

// FuzzParse feeds arbitrary bytes to Parse. It must never panic, and what
// it accepts must survive being written out (as JSON, which Parse reads
// too) and read again: accepted again, and unchanged. That fails if
// validation depends on something the parsed Config lost, if a default or
// a normalisation is not a fixed point, or if a value marshals to text
// Parse refuses (a duration that does not read back, say).
//
// Run: go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 30s ./internal/config/
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("accepted config does not marshal: %v", err)
		}
		again, err := Parse("fuzz.json", out)
		if err != nil {
			t.Fatalf("accepted config is refused when read back: %v\ninput: %q\nwritten: %s", err, data, out)
		}
		out2, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("re-read config does not marshal: %v", err)
		}
		if !bytes.Equal(out, out2) {
			t.Fatalf("config changed on a round trip\ninput: %q\nfirst:  %s\nsecond: %s", data, out, out2)
		}
	})
}

// TestFuzzSeedsParse keeps the seeds meaningful: the realistic ones must
// be accepted, or the fuzzer starts from nothing but errors.
func TestFuzzSeedsParse(t *testing.T) {
	for i, s := range fuzzSeeds()[:4] {
		if _, err := Parse("seed.yaml", []byte(s)); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}
