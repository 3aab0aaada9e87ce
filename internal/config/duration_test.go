package config

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDurationUnmarshal(t *testing.T) {
	cases := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{`"1m30s"`, 90 * time.Second, ""},
		{`30`, 30 * time.Second, ""},
		{`0.25`, 250 * time.Millisecond, ""},
		{`"-5s"`, -5 * time.Second, ""}, // negative is the config's to refuse, by field
		{`null`, 7, ""},                 // null leaves the value alone
		{`"soon"`, 0, `invalid duration "soon"`},
		{`"9999999999h"`, 0, `invalid duration "9999999999h"`},
		{`1e20`, 0, "invalid duration 1e+20 seconds"},
		{`-1e20`, 0, "invalid duration -1e+20 seconds"},
		{`9223372037`, 0, "invalid duration"},
		{`9223372036`, 9223372036 * time.Second, ""},
		{`true`, 0, "duration must be"},
	}
	for _, tc := range cases {
		d := Duration(7)
		err := json.Unmarshal([]byte(tc.in), &d)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("Unmarshal(%s) = %s, %v; want error %q", tc.in, d.D(), err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || d.D() != tc.want):
			t.Errorf("Unmarshal(%s) = %s, %v; want %s", tc.in, d.D(), err, tc.want)
		}
	}
}

// TestEveryDurationRejectsNegative finds every Duration field of Config by
// reflection, so one added later is covered without touching this test,
// and checks that a negative value there fails with the field named.
func TestEveryDurationRejectsNegative(t *testing.T) {
	paths := durationPaths(reflect.TypeFor[Config](), "")
	if len(paths) < 14 {
		t.Fatalf("found only %d Duration fields: %v", len(paths), paths)
	}
	for _, p := range paths {
		t.Run(p, func(t *testing.T) {
			doc := map[string]any{"servers": []any{map[string]any{"name": "a", "url": "http://127.0.0.1:1/mcp"}}}
			set(t, doc, strings.Split(p, "."), "-1s")
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			want := strings.ReplaceAll(p, "servers[]", "servers[0] (a)") + ": -1s must not be negative"
			if _, err := Parse("t.yaml", data); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("Parse(%s) = %v, want %q", data, err, want)
			}
		})
	}
}

// durationPaths lists the JSON paths of every Duration field under t; a
// slice element is written "name[]".
func durationPaths(t reflect.Type, prefix string) []string {
	if t == reflect.TypeFor[Duration]() {
		return []string{prefix}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return durationPaths(t.Elem(), prefix)
	case reflect.Slice:
		return durationPaths(t.Elem(), prefix+"[]")
	case reflect.Struct:
		var out []string
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" || !f.IsExported() {
				continue
			}
			if f.Anonymous && name == "" {
				out = append(out, durationPaths(f.Type, prefix)...)
				continue
			}
			if prefix != "" {
				name = prefix + "." + name
			}
			out = append(out, durationPaths(f.Type, name)...)
		}
		return out
	}
	return nil
}

// set puts v at path in doc, creating objects on the way; "x[]" is the
// first element of the list x, which doc must already hold.
func set(t *testing.T, doc map[string]any, path []string, v any) {
	t.Helper()
	key := path[0]
	if strings.HasSuffix(key, "[]") {
		list, ok := doc[strings.TrimSuffix(key, "[]")].([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("the test document has no list %s to put a Duration in; add one", key)
		}
		set(t, list[0].(map[string]any), path[1:], v)
		return
	}
	if len(path) == 1 {
		doc[key] = v
		return
	}
	child, ok := doc[key].(map[string]any)
	if !ok {
		child = map[string]any{}
		doc[key] = child
	}
	set(t, child, path[1:], v)
}

func TestDurationNullIsUnset(t *testing.T) {
	c, err := Parse("t.yaml", []byte("servers:\n- name: a\n  url: http://x/mcp\n  timeout:\nupstream:\n  timeout: ~\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Upstream.Timeout.D(); got != 60*time.Second {
		t.Errorf("upstream.timeout = %s, want the default", got)
	}
	if got := c.Servers[0].Timeout; got != 0 {
		t.Errorf("servers[0].timeout = %s, want unset", fmt.Sprint(got.D()))
	}
}
