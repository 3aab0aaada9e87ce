package apitools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/purko-io/mcp-hub/internal/toolspec"
)

// maxSchemaDepth bounds the inlining of nested/recursive schemas.
const maxSchemaDepth = 32

var invalidNameChars = regexp.MustCompile(`[^a-zA-Z0-9_-]+`)

// SanitizeName maps s to [a-zA-Z0-9_-]{1,64} ("" when nothing is left).
func SanitizeName(s string) string {
	s = strings.Trim(invalidNameChars.ReplaceAllString(s, "_"), "_")
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// FromOpenAPI imports an OpenAPI 3.x document (JSON or YAML) as one
// EndpointSpec per operation; see ImportOpenAPI. Notes about skipped
// operations are dropped; use ImportOpenAPI to get them.
func FromOpenAPI(ctx context.Context, doc []byte, base toolspec.EndpointSpec) ([]toolspec.EndpointSpec, error) {
	specs, _, err := ImportOpenAPI(ctx, doc, base)
	return specs, err
}

// ImportOpenAPI imports an OpenAPI 3.x document as one EndpointSpec per
// operation, plus human-readable notes about what was skipped or dropped.
//
// base is a template: its auth, credentials, headers, bindings, timeout and
// response cap are copied into every spec. When base.URL is set it replaces
// the document's servers (e.g. an in-cluster address); otherwise the first
// absolute server URL (operation, path, then document level, variables at
// their defaults) is used.
//
// Each spec gets: Name = sanitized operationId (operations without one are
// skipped), Description = summary + description, Method, URL = server +
// path (path templates are our {placeholders}), and an InputSchema merging
// path and query parameters and the properties of an application/json
// object request body. Query parameters of non-GET/DELETE operations are
// listed in Query. Header and cookie parameters are not imported (note).
// $refs are inlined; external $refs are refused.
func ImportOpenAPI(ctx context.Context, doc []byte, base toolspec.EndpointSpec) ([]toolspec.EndpointSpec, []string, error) {
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	loader.Context = ctx
	t, err := loader.LoadFromData(doc)
	if err != nil {
		return nil, nil, fmt.Errorf("openapi: %w", err)
	}
	if t.Paths == nil || t.Paths.Len() == 0 {
		return nil, nil, errors.New("openapi: the document has no paths")
	}
	var notes []string
	note := func(format string, a ...any) { notes = append(notes, fmt.Sprintf(format, a...)) }

	var specs []toolspec.EndpointSpec
	names := map[string]string{}
	methodOrder := []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
	paths := t.Paths.Map()
	for _, p := range sortedKeys(paths) {
		item := paths[p]
		if item == nil {
			continue
		}
		for _, m := range []string{http.MethodHead, http.MethodOptions, http.MethodTrace} {
			if op := item.GetOperation(m); op != nil {
				note("%s %s: method %s is not supported, skipped", m, p, m)
			}
		}
		for _, method := range methodOrder {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			op := item.GetOperation(method)
			if op == nil {
				continue
			}
			where := method + " " + p
			if op.OperationID == "" {
				note("%s: no operationId, skipped", where)
				continue
			}
			name := SanitizeName(op.OperationID)
			if name == "" {
				note("%s: operationId %q has no usable characters, skipped", where, op.OperationID)
				continue
			}
			if prev, dup := names[name]; dup {
				note("%s: name %q already used by %s, skipped", where, name, prev)
				continue
			}
			spec, err := importOperation(t, p, method, item, op, name, base, func(format string, a ...any) {
				note(where+": "+format, a...)
			})
			if err != nil {
				note("%s: %v, skipped", where, err)
				continue
			}
			if err := spec.Validate(); err != nil {
				note("%s: %v, skipped", where, strings.ReplaceAll(err.Error(), "\n", "; "))
				continue
			}
			names[name] = where
			specs = append(specs, spec)
		}
	}
	if len(specs) == 0 {
		return nil, notes, fmt.Errorf("openapi: no importable operations (%s)", strings.Join(notes, "; "))
	}
	return specs, notes, nil
}

func importOperation(t *openapi3.T, p, method string, item *openapi3.PathItem, op *openapi3.Operation,
	name string, base toolspec.EndpointSpec, note func(string, ...any)) (toolspec.EndpointSpec, error) {
	spec := base
	spec.Name = name
	spec.Method = method
	spec.InputSchema = nil
	spec.Query = nil
	spec.Headers = cloneMap(base.Headers)
	spec.Bindings = append([]toolspec.Binding(nil), base.Bindings...)
	desc := strings.TrimSpace(op.Summary)
	if d := strings.TrimSpace(op.Description); d != "" && d != desc {
		if desc != "" {
			desc += "\n\n"
		}
		desc += d
	}
	if r := []rune(desc); len(r) > 1024 {
		desc = string(r[:1024]) + "…"
	}
	if desc == "" {
		desc = method + " " + p
	}
	spec.Description = desc

	server := strings.TrimSpace(base.URL)
	if server == "" {
		var err error
		if server, err = serverURL(t, item, op); err != nil {
			return spec, err
		}
	}
	spec.URL = strings.TrimRight(server, "/") + p

	props := map[string]any{}
	var required []string
	// Path-level parameters, overridden by operation-level ones.
	params := map[string]*openapi3.Parameter{}
	var order []string
	for _, list := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, ref := range list {
			if ref == nil || ref.Value == nil {
				continue
			}
			key := ref.Value.In + ":" + ref.Value.Name
			if _, seen := params[key]; !seen {
				order = append(order, key)
			}
			params[key] = ref.Value
		}
	}
	sendsQuery := method == http.MethodGet || method == http.MethodDelete
	for _, key := range order {
		prm := params[key]
		switch prm.In {
		case openapi3.ParameterInPath, openapi3.ParameterInQuery:
		default:
			note("%s parameter %q is not imported", prm.In, prm.Name)
			continue
		}
		if _, dup := props[prm.Name]; dup {
			note("parameter %q appears twice, only the first is used", prm.Name)
			continue
		}
		var ps map[string]any
		if prm.Schema != nil {
			ps = schemaToJSON(prm.Schema, nil, 0)
		} else {
			ps = map[string]any{"type": "string"}
		}
		if prm.Description != "" {
			if _, has := ps["description"]; !has {
				ps["description"] = prm.Description
			}
		}
		props[prm.Name] = ps
		if prm.In == openapi3.ParameterInPath || prm.Required {
			required = append(required, prm.Name)
		}
		if prm.In == openapi3.ParameterInQuery && !sendsQuery {
			spec.Query = append(spec.Query, prm.Name)
		}
	}
	for _, ph := range toolspec.Placeholders(spec.URL) {
		if _, ok := params[openapi3.ParameterInPath+":"+ph]; !ok {
			if _, ok := props[ph]; !ok {
				props[ph] = map[string]any{"type": "string"}
				required = append(required, ph)
				note("path parameter %q is not declared, imported as a string", ph)
			}
		}
	}

	if rb := op.RequestBody; rb != nil && rb.Value != nil {
		mt := jsonMediaType(rb.Value.Content)
		switch {
		case mt == nil:
			if rb.Value.Required {
				return spec, errors.New("the request body is not application/json")
			}
			note("non-JSON request body is not imported")
		case sendsQuery:
			note("request body of %s is not imported (arguments are sent as query parameters)", method)
		case mt.Schema == nil:
		default:
			bs := schemaToJSON(mt.Schema, nil, 0)
			bprops, _ := bs["properties"].(map[string]any)
			if t, _ := bs["type"].(string); t != "object" && bprops == nil {
				return spec, fmt.Errorf("the request body schema is not an object")
			}
			for _, k := range sortedKeys(bprops) {
				if _, dup := props[k]; dup {
					note("body property %q clashes with a parameter, dropped", k)
					continue
				}
				props[k] = bprops[k]
			}
			if rb.Value.Required {
				if req, ok := bs["required"].([]any); ok {
					for _, r := range req {
						if s, ok := r.(string); ok {
							if _, has := props[s]; has && !containsStr(required, s) {
								required = append(required, s)
							}
						}
					}
				}
			}
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	raw, err := json.Marshal(schema)
	if err != nil {
		return spec, err
	}
	spec.InputSchema = raw
	return spec, nil
}

func containsStr(list []string, s string) bool { return slices.Contains(list, s) }

func cloneMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// serverURL picks the first absolute server URL (operation, path item,
// document), with variables at their defaults.
func serverURL(t *openapi3.T, item *openapi3.PathItem, op *openapi3.Operation) (string, error) {
	var lists []openapi3.Servers
	if op.Servers != nil {
		lists = append(lists, *op.Servers)
	}
	lists = append(lists, item.Servers, t.Servers)
	for _, list := range lists {
		for _, s := range list {
			if s == nil {
				continue
			}
			u := s.URL
			for name, v := range s.Variables {
				if v != nil {
					u = strings.ReplaceAll(u, "{"+name+"}", v.Default)
				}
			}
			if pu, err := url.Parse(u); err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != "" {
				return u, nil
			}
		}
	}
	return "", errors.New("no absolute http(s) server URL (set url in the template)")
}

// jsonMediaType returns the application/json (or +json) entry of content.
func jsonMediaType(content openapi3.Content) *openapi3.MediaType {
	if mt := content["application/json"]; mt != nil {
		return mt
	}
	for _, k := range sortedKeys(content) {
		t, _, err := mime.ParseMediaType(k)
		if err == nil && (t == "application/json" || strings.HasSuffix(t, "+json")) {
			return content[k]
		}
	}
	return nil
}

// schemaToJSON converts an OpenAPI schema into a self-contained JSON Schema
// (2020-12) object: $refs are inlined, recursion and depth beyond
// maxSchemaDepth become an open schema, OpenAPI 3.0 forms (nullable,
// boolean exclusiveMinimum/Maximum) are rewritten and OpenAPI-only keywords
// dropped.
func schemaToJSON(ref *openapi3.SchemaRef, stack []*openapi3.Schema, depth int) map[string]any {
	if ref == nil || ref.Value == nil || depth > maxSchemaDepth {
		return map[string]any{}
	}
	s := ref.Value
	for _, seen := range stack {
		if seen == s {
			return map[string]any{}
		}
	}
	if s.Always != nil {
		if *s.Always {
			return map[string]any{}
		}
		return map[string]any{"not": map[string]any{}}
	}
	stack = append(stack, s)
	b, err := json.Marshal(s)
	if err != nil {
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return map[string]any{}
	}
	sub := func(r *openapi3.SchemaRef) map[string]any { return schemaToJSON(r, stack, depth+1) }
	subs := func(key string, rs openapi3.SchemaRefs) {
		if len(rs) == 0 {
			return
		}
		out := make([]any, 0, len(rs))
		for _, r := range rs {
			out = append(out, sub(r))
		}
		m[key] = out
	}
	subMap := func(key string, ss openapi3.Schemas) {
		if len(ss) == 0 {
			return
		}
		out := map[string]any{}
		for k, r := range ss {
			out[k] = sub(r)
		}
		m[key] = out
	}
	one := func(key string, r *openapi3.SchemaRef) {
		if r != nil {
			m[key] = sub(r)
		}
	}
	subMap("properties", s.Properties)
	subMap("patternProperties", s.PatternProperties)
	subMap("dependentSchemas", s.DependentSchemas)
	subs("allOf", s.AllOf)
	subs("anyOf", s.AnyOf)
	subs("oneOf", s.OneOf)
	subs("prefixItems", s.PrefixItems)
	one("not", s.Not)
	one("items", s.Items)
	one("contains", s.Contains)
	one("propertyNames", s.PropertyNames)
	one("if", s.If)
	one("then", s.Then)
	one("else", s.Else)
	boolSchema := func(key string, bs openapi3.BoolSchema) {
		switch {
		case bs.Schema != nil:
			m[key] = sub(bs.Schema)
		case bs.Has != nil:
			m[key] = *bs.Has
		}
	}
	boolSchema("additionalProperties", s.AdditionalProperties)
	boolSchema("unevaluatedItems", s.UnevaluatedItems)
	boolSchema("unevaluatedProperties", s.UnevaluatedProperties)

	// OpenAPI 3.0 exclusive bounds are booleans modifying minimum/maximum.
	if eb := s.ExclusiveMin; eb.Value == nil && eb.Bool != nil {
		delete(m, "exclusiveMinimum")
		if *eb.Bool && s.Min != nil {
			m["exclusiveMinimum"] = *s.Min
			delete(m, "minimum")
		}
	}
	if eb := s.ExclusiveMax; eb.Value == nil && eb.Bool != nil {
		delete(m, "exclusiveMaximum")
		if *eb.Bool && s.Max != nil {
			m["exclusiveMaximum"] = *s.Max
			delete(m, "maximum")
		}
	}
	if s.Nullable {
		delete(m, "nullable")
		switch t := m["type"].(type) {
		case string:
			m["type"] = []any{t, "null"}
		case []any:
			if !containsAny(t, "null") {
				m["type"] = append(t, "null")
			}
		}
	}
	for _, k := range []string{"discriminator", "xml", "externalDocs", "example", "$defs", "$id", "$schema", "$dynamicRef", "$dynamicAnchor", "$anchor", "$ref"} {
		delete(m, k)
	}
	for k := range m {
		if strings.HasPrefix(k, "x-") {
			delete(m, k)
		}
	}
	return m
}

func containsAny(list []any, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
