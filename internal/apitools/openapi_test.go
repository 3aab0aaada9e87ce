package apitools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

const petstore = `
openapi: 3.0.3
info: {title: pets, version: "1"}
servers:
  - url: https://{region}.pets.example.com/v1
    variables:
      region: {default: eu}
paths:
  /pets/{petId}:
    parameters:
      - {name: petId, in: path, required: true, schema: {type: integer, minimum: 0, exclusiveMinimum: true}}
    get:
      operationId: pets.get
      summary: Get a pet
      parameters:
        - {name: fields, in: query, schema: {type: string}}
        - {name: X-Trace, in: header, schema: {type: string}}
    delete:
      summary: no operationId here
  /pets:
    post:
      operationId: createPet
      description: Create a pet.
      parameters:
        - {name: dryRun, in: query, schema: {type: boolean}}
      requestBody:
        required: true
        content:
          application/json:
            schema: {$ref: '#/components/schemas/Pet'}
components:
  schemas:
    Pet:
      type: object
      required: [name]
      properties:
        name: {type: string}
        tag: {type: string, nullable: true}
        parent: {$ref: '#/components/schemas/Pet'}
`

func TestImportOpenAPI(t *testing.T) {
	base := toolspec.EndpointSpec{
		AuthScheme: "Bearer", Credential: toolspec.CredentialRef{Env: "PETS_TOKEN"},
		Headers:  map[string]string{"X-Client": "hub"},
		Bindings: []toolspec.Binding{{From: toolspec.FromCaller, Header: "X-Caller"}},
	}
	specs, notes, err := ImportOpenAPI(context.Background(), []byte(petstore), base)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("%d specs: %+v", len(specs), specs)
	}
	joined := strings.Join(notes, "\n")
	for _, want := range []string{"DELETE /pets/{petId}: no operationId", `header parameter "X-Trace"`} {
		if !strings.Contains(joined, want) {
			t.Errorf("notes %q lack %q", joined, want)
		}
	}
	byName := map[string]toolspec.EndpointSpec{}
	for _, s := range specs {
		byName[s.Name] = s
		if s.AuthScheme != "Bearer" || s.Credential.Env != "PETS_TOKEN" || s.Headers["X-Client"] != "hub" || len(s.Bindings) != 1 {
			t.Errorf("%s: template not applied: %+v", s.Name, s)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if _, _, err := New(s, "tok", nil); err != nil {
			t.Errorf("%s: New: %v", s.Name, err)
		}
	}

	get, ok := byName["pets_get"]
	if !ok {
		t.Fatalf("no pets_get in %v", byName)
	}
	if get.EffectiveMethod() != "GET" || get.URL != "https://eu.pets.example.com/v1/pets/{petId}" || get.Description != "Get a pet" {
		t.Errorf("get: %s %s %q", get.Method, get.URL, get.Description)
	}
	var gs map[string]any
	_ = json.Unmarshal(get.InputSchema, &gs)
	props := gs["properties"].(map[string]any)
	if mustJSON(props["petId"]) != `{"exclusiveMinimum":0,"type":"integer"}` {
		t.Errorf("petId schema %s", mustJSON(props["petId"]))
	}
	if _, ok := props["fields"]; !ok || mustJSON(gs["required"]) != `["petId"]` {
		t.Errorf("get schema %s", get.InputSchema)
	}
	if len(get.Query) != 0 {
		t.Errorf("GET query list %v", get.Query)
	}

	post := byName["createPet"]
	if post.EffectiveMethod() != "POST" || post.URL != "https://eu.pets.example.com/v1/pets" {
		t.Errorf("post: %s %s", post.Method, post.URL)
	}
	if mustJSON(post.Query) != `["dryRun"]` {
		t.Errorf("post query %v", post.Query)
	}
	var ps map[string]any
	_ = json.Unmarshal(post.InputSchema, &ps)
	pprops := ps["properties"].(map[string]any)
	if mustJSON(pprops["tag"]) != `{"type":["string","null"]}` {
		t.Errorf("tag %s", mustJSON(pprops["tag"]))
	}
	if _, ok := pprops["parent"].(map[string]any); !ok {
		t.Errorf("parent %v", pprops["parent"])
	}
	if mustJSON(ps["required"]) != `["name"]` {
		t.Errorf("post required %s", mustJSON(ps["required"]))
	}

	// base.URL overrides servers.
	base.URL = "http://pets.internal:8080/"
	specs, err = FromOpenAPI(context.Background(), []byte(petstore), base)
	if err != nil || len(specs) != 2 {
		t.Fatalf("%v %d", err, len(specs))
	}
	for _, s := range specs {
		if !strings.HasPrefix(s.URL, "http://pets.internal:8080/pets") {
			t.Errorf("url %s", s.URL)
		}
	}
}

func TestImportOpenAPIErrors(t *testing.T) {
	if _, err := FromOpenAPI(context.Background(), []byte("not: [valid"), toolspec.EndpointSpec{}); err == nil {
		t.Error("garbage accepted")
	}
	noServer := `{"openapi":"3.0.0","info":{"title":"x","version":"1"},"paths":{"/a":{"get":{"operationId":"a","responses":{"200":{"description":"ok"}}}}}}`
	if _, err := FromOpenAPI(context.Background(), []byte(noServer), toolspec.EndpointSpec{}); err == nil || !strings.Contains(err.Error(), "server") {
		t.Errorf("err = %v", err)
	}
	external := `{"openapi":"3.0.0","info":{"title":"x","version":"1"},"servers":[{"url":"https://h"}],"paths":{"/a":{"post":{"operationId":"a","requestBody":{"content":{"application/json":{"schema":{"$ref":"http://169.254.169.254/s.json"}}}}}}}}`
	if _, err := FromOpenAPI(context.Background(), []byte(external), toolspec.EndpointSpec{}); err == nil {
		t.Error("external $ref accepted")
	}
	if got := SanitizeName("pets.get/{id}"); got != "pets_get_id" {
		t.Errorf("SanitizeName = %q", got)
	}
	if got := SanitizeName(strings.Repeat("a", 80)); len(got) != 64 {
		t.Errorf("SanitizeName length %d", len(got))
	}
}
