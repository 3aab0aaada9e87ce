package useroauth

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

var hubMetadata = ClientMetadata{
	ClientName:   "mcp-hub",
	RedirectURIs: []string{"https://hub.example/oauth/callback"},
	ClientURI:    "https://hub.example/",
}

func TestDocument(t *testing.T) {
	md := hubMetadata
	md.ClientID = "https://hub.example/oauth/client.json"
	var doc map[string]any
	if err := json.Unmarshal(md.Document(), &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"client_id":                  "https://hub.example/oauth/client.json",
		"client_name":                "mcp-hub",
		"client_uri":                 "https://hub.example/",
		"redirect_uris":              []any{"https://hub.example/oauth/callback"},
		"grant_types":                []any{"authorization_code", "refresh_token"},
		"response_types":             []any{"code"},
		"token_endpoint_auth_method": "none",
	}
	if len(doc) != len(want) {
		t.Errorf("document %v, want %v", doc, want)
	}
	for k, v := range want {
		if b1, _ := json.Marshal(doc[k]); string(b1) != mustMarshal(v) {
			t.Errorf("%s = %s, want %s", k, b1, mustMarshal(v))
		}
	}
	if bare := (ClientMetadata{}).Document(); !strings.Contains(string(bare), `"redirect_uris":[]`) || strings.Contains(string(bare), "client_uri") {
		t.Errorf("empty metadata's document %s", bare)
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRegister(t *testing.T) {
	tests := []struct {
		name    string
		answers []answer
		want    Client
		methods []string // token_endpoint_auth_method of each request
		errHas  []string
		code    string
	}{{
		name:    "public client",
		answers: []answer{{status: 201, body: `{"client_id":"c-1","token_endpoint_auth_method":"none","redirect_uris":["https://hub.example/oauth/callback"]}`}},
		want:    Client{ID: "c-1"},
		methods: []string{"none"},
	}, {
		name: "none refused, confidential next",
		answers: []answer{
			{status: 400, body: `{"error":"invalid_client_metadata","error_description":"token_endpoint_auth_method none is not allowed"}`},
			{status: 201, body: `{"client_id":"c-2","client_secret":"REGISTERED-SECRET-77","token_endpoint_auth_method":"client_secret_basic"}`},
		},
		want:    Client{ID: "c-2", Secret: "REGISTERED-SECRET-77", AuthStyle: "basic"},
		methods: []string{"none", "client_secret_basic"},
	}, {
		name:    "the server's choice wins: post",
		answers: []answer{{status: 200, body: `{"client_id":"c-3","client_secret":"sec","token_endpoint_auth_method":"client_secret_post"}`}},
		want:    Client{ID: "c-3", Secret: "sec", AuthStyle: "post"},
		methods: []string{"none"},
	}, {
		name:    "a secret without a method is basic (RFC 7591 default)",
		answers: []answer{{status: 201, body: `{"client_id":"c-4","client_secret":"sec"}`}},
		want:    Client{ID: "c-4", Secret: "sec", AuthStyle: "basic"},
		methods: []string{"none"},
	}, {
		name:    "a method the hub does not speak",
		answers: []answer{{status: 201, body: `{"client_id":"c-5","token_endpoint_auth_method":"private_key_jwt"}`}},
		errHas:  []string{"client registration at ", "/register: 201", `"private_key_jwt"`},
		methods: []string{"none"},
	}, {
		name:    "refused: the error names the server and its answer",
		answers: []answer{{status: 400, body: `{"error":"invalid_redirect_uri","error_description":"redirect_uris must use https"}`}},
		errHas:  []string{"client registration at ", "/register: 400 invalid_redirect_uri: redirect_uris must use https"},
		code:    "invalid_redirect_uri",
		methods: []string{"none"},
	}, {
		name: "refused twice",
		answers: []answer{
			{status: 400, body: `{"error":"invalid_client_metadata"}`},
			{status: 400, body: `{"error":"invalid_client_metadata","error_description":"no"}`},
		},
		errHas:  []string{"400 invalid_client_metadata: no"},
		code:    "invalid_client_metadata",
		methods: []string{"none", "client_secret_basic"},
	}, {
		name:    "a 2xx that is not JSON is not quoted: it may hold a secret",
		answers: []answer{{status: 201, ctype: "text/plain", body: `client_id=c-6&client_secret=PLAIN-SECRET-123456`}},
		errHas:  []string{"not a JSON object"},
		methods: []string{"none"},
	}, {
		name:    "no client_id",
		answers: []answer{{status: 201, body: `{"client_secret":"HIDDEN-SECRET-0000"}`}},
		errHas:  []string{"no client_id"},
		methods: []string{"none"},
	}, {
		name:    "HTML",
		answers: []answer{{status: 404, ctype: "text/html", body: `<html>Not Found</html>`}},
		errHas:  []string{"404: HTML: <html>Not Found</html>"},
		methods: []string{"none"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var methods []string
			answers := slices.Clone(tc.answers)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				var md map[string]any
				if err := json.Unmarshal(raw, &md); err != nil || r.Header.Get("Content-Type") != "application/json" {
					t.Errorf("registration request %s (%s): %v", raw, r.Header.Get("Content-Type"), err)
				}
				for k, v := range map[string]string{
					"client_name": `"mcp-hub"`, "redirect_uris": `["https://hub.example/oauth/callback"]`, "client_uri": `"https://hub.example/"`,
					"grant_types": `["authorization_code","refresh_token"]`, "response_types": `["code"]`,
				} {
					if got := mustMarshal(md[k]); got != v {
						t.Errorf("registration %s = %s, want %s", k, got, v)
					}
				}
				if _, ok := md["client_id"]; ok {
					t.Errorf("registration sends a client_id: %s", raw)
				}
				mu.Lock()
				methods = append(methods, md["token_endpoint_auth_method"].(string))
				a := answer{status: 500}
				if len(answers) > 0 {
					a, answers = answers[0], answers[1:]
				}
				mu.Unlock()
				w.Header().Set("Content-Type", cmpOr(a.ctype, "application/json"))
				w.WriteHeader(a.status)
				io.WriteString(w, a.body)
			}))
			defer srv.Close()
			ep := Endpoints{Issuer: srv.URL + "/", Registration: srv.URL + "/register"}
			got, err := Register(context.Background(), srv.Client(), ep, hubMetadata)
			if tc.errHas == nil {
				if err != nil {
					t.Fatalf("error: %v", err)
				}
				if got != tc.want {
					t.Errorf("client %+v, want %+v", got, tc.want)
				}
			} else {
				if err == nil {
					t.Fatalf("no error: %+v", got)
				}
				for _, s := range tc.errHas {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error lacks %q: %v", s, err)
					}
				}
				for _, s := range []string{"SECRET", "client_secret="} {
					if strings.Contains(err.Error(), s) {
						t.Errorf("error holds %q: %v", s, err)
					}
				}
				var oe *Error
				if !errors.As(err, &oe) || oe.Code != tc.code || oe.Op != "client registration" {
					t.Errorf("error %#v, want an *Error with code %q", err, tc.code)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(methods, tc.methods) {
				t.Errorf("asked for methods %q, want %q", methods, tc.methods)
			}
		})
	}
	if _, err := Register(context.Background(), http.DefaultClient, Endpoints{Issuer: "https://as.example/"}, hubMetadata); err == nil ||
		!strings.Contains(err.Error(), "https://as.example/ offers no dynamic client registration") {
		t.Errorf("without an endpoint: %v", err)
	}
}
