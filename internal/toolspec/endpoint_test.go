package toolspec

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	ok := EndpointSpec{Name: "ok", URL: "https://api.example.com/v1/{id}"}
	cases := []struct {
		name string
		mut  func(*EndpointSpec)
		want string // "" = valid
	}{
		{"valid", func(*EndpointSpec) {}, ""},
		{"bad method", func(s *EndpointSpec) { s.Method = "FETCH" }, `method: "FETCH" is not one of GET, POST, PUT, DELETE, PATCH`},
		{"bad scheme", func(s *EndpointSpec) { s.AuthScheme = "Digest"; s.Credential.Env = "X" }, `authScheme: "Digest" is not one of`},
		{"relative url", func(s *EndpointSpec) { s.URL = "/v1/x" }, "url: "},
		{"ftp url", func(s *EndpointSpec) { s.URL = "ftp://h/x" }, "url: "},
		{"userinfo url", func(s *EndpointSpec) { s.URL = "https://u:p@h/x" }, "url: must not carry user info"},
		{"placeholder in host", func(s *EndpointSpec) { s.URL = "https://{tenant}.example.com/x" }, "url: "},
		{"port too large", func(s *EndpointSpec) { s.URL = "https://h:65536/x" }, `url: "https://h:65536/x": port "65536" is not within 1..65535`},
		{"port zero", func(s *EndpointSpec) { s.URL = "https://h:0/x" }, `port "0" is not within 1..65535`},
		{"highest port", func(s *EndpointSpec) { s.URL = "https://h:65535/x/{id}" }, ""},
		{"bad name", func(s *EndpointSpec) { s.Name = "has space" }, "name: "},
		{"timeout", func(s *EndpointSpec) { s.TimeoutSeconds = -1 }, "timeoutSeconds: "},
		{"auth without credentials", func(s *EndpointSpec) { s.AuthScheme = "Bearer" }, "credentials: "},
		{"credentials without auth", func(s *EndpointSpec) { s.Credential.Env = "X" }, "credentials: "},
		{"two sources", func(s *EndpointSpec) { s.AuthScheme = "Bearer"; s.Credential = CredentialRef{Env: "X", File: "/f"} }, "credentials: set only one"},
		{"binding from", func(s *EndpointSpec) { s.Bindings = []Binding{{From: "model", Field: "x"}} }, `bindings[0].from: "model"`},
		{"binding both", func(s *EndpointSpec) { s.Bindings = []Binding{{From: "caller", Field: "x", Header: "X-A"}} }, "bindings[0]: set exactly one"},
		{"binding auth header", func(s *EndpointSpec) {
			s.AuthScheme = "Bearer"
			s.Credential.Env = "X"
			s.Bindings = []Binding{{From: "caller", Header: "authorization"}}
		}, "bindings[0].header"},
		{"static auth header", func(s *EndpointSpec) {
			s.AuthScheme = "ApiKey"
			s.Credential.Env = "X"
			s.Headers = map[string]string{"x-api-key": "v"}
		}, "headers: "},
		{"schema not object", func(s *EndpointSpec) { s.InputSchema = json.RawMessage(`{"type":"array"}`) }, "inputSchema: "},
		{"schema invalid", func(s *EndpointSpec) {
			s.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"nope"}}}`)
		}, "inputSchema: "},
		{"schema remote ref", func(s *EndpointSpec) { s.InputSchema = json.RawMessage(`{"$ref":"http://169.254.169.254/x"}`) }, "inputSchema: "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.mut(&s)
			err := s.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if m := (EndpointSpec{}).EffectiveMethod(); m != "POST" {
		t.Errorf("EffectiveMethod() = %q", m)
	}
	if m := (EndpointSpec{Method: "get"}).EffectiveMethod(); m != "GET" {
		t.Errorf("EffectiveMethod() = %q", m)
	}
}

func TestSpecYAMLTags(t *testing.T) {
	var s EndpointSpec
	doc := `{"name":"n","url":"https://h/x","timeoutSeconds":5,"authScheme":"Bearer","authHeader":"X-A","credentials":{"secretRef":{"name":"s","key":"k"}},"inputSchema":{"type":"object"},"bindings":[{"from":"caller","header":"X-C"}],"maxResponseChars":10}`
	if err := json.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	if s.TimeoutSeconds != 5 || s.AuthHeader != "X-A" || s.Credential.SecretRef == nil || s.Credential.SecretRef.Key != "k" ||
		string(s.InputSchema) != `{"type":"object"}` || len(s.Bindings) != 1 || s.MaxResponseChars != 10 {
		t.Fatalf("decoded %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidatePort(t *testing.T) {
	cases := []struct {
		port string
		ok   bool
	}{
		{"", true}, {"1", true}, {"8080", true}, {"65535", true},
		{"0", false}, {"65536", false}, {"99999", false}, {"-1", false}, {"http", false}, {"99999999999999999999", false},
	}
	for _, tc := range cases {
		if err := ValidatePort(tc.port); (err == nil) != tc.ok {
			t.Errorf("ValidatePort(%q) = %v, want ok=%v", tc.port, err, tc.ok)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	const u = "https://h/v1/{org}/repos/{repo}?q=1"
	if got := Placeholders(u); !reflect.DeepEqual(got, []string{"org", "repo"}) {
		t.Fatalf("Placeholders = %v", got)
	}
	got := FillPlaceholders(u, func(name string) (string, bool) { return "X" + name, name == "org" })
	if got != "https://h/v1/Xorg/repos/{repo}?q=1" {
		t.Fatalf("FillPlaceholders = %q: a placeholder the filler declines must stay as written", got)
	}
}

func TestPublishedSchemaDropsBoundFields(t *testing.T) {
	s := EndpointSpec{Name: "n", URL: "https://h/{id}/{tenant}", Bindings: []Binding{{From: FromCaller, Field: "tenant"}}}
	schema, err := s.PublishedSchema()
	if err != nil {
		t.Fatal(err)
	}
	props, _ := schema["properties"].(map[string]any)
	if _, ok := props["id"]; !ok {
		t.Errorf("placeholder id missing from %v", schema)
	}
	if _, ok := props["tenant"]; ok {
		t.Errorf("bound field tenant published in %v", schema)
	}
}

func TestEffectiveAuth(t *testing.T) {
	cases := []struct {
		scheme, header, wantScheme, wantHeader string
	}{
		{"", "", "", ""},
		{"bearer", "", AuthBearer, DefaultAuthHeader},
		{"APIKEY", "", AuthAPIKey, DefaultAPIKeyHeader},
		{"ApiKey", "x-token", AuthAPIKey, "X-Token"},
		{"Digest", "", "Digest", DefaultAuthHeader},
	}
	for _, tc := range cases {
		s := EndpointSpec{AuthScheme: tc.scheme, AuthHeader: tc.header}
		if got := s.EffectiveAuthScheme(); got != tc.wantScheme {
			t.Errorf("EffectiveAuthScheme(%q) = %q, want %q", tc.scheme, got, tc.wantScheme)
		}
		if got := s.EffectiveAuthHeader(); got != tc.wantHeader {
			t.Errorf("EffectiveAuthHeader(%q, %q) = %q, want %q", tc.scheme, tc.header, got, tc.wantHeader)
		}
	}
}
