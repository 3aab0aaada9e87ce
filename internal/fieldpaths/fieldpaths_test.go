package fieldpaths

import (
	"reflect"
	"slices"
	"testing"
)

type ref struct{ Env string }

type inner struct {
	Secret *ref `json:"secret,omitempty"`
}

type item struct {
	Name  string `json:"name"`
	Token ref    `json:"token"`
}

type Embedded struct {
	Key *ref `json:"key"`
}

type node struct {
	Next *node `json:"next"`
	Ref  *ref  `json:"ref"`
}

type root struct {
	Plain    ref              `json:"plain"`
	Unset    *ref             `json:"unset,omitempty"`
	Items    []item           `json:"items"`
	ByName   map[string]ref   `json:"byName"`
	Inner    *inner           `json:"inner"`
	Skipped  ref              `json:"-"`
	hidden   ref              // unexported: not looked at
	Untagged ref              // the Go name
	Any      any              `json:"any"`
	Bytes    []byte           `json:"bytes"`
	Node     *node            `json:"node"`
	Embedded `json:",inline"` // inlined, as encoding/json does
}

// TestAll: every set value of the type, with its path as the hub's errors
// write it and its pattern, in field order; nil pointers, "-" and
// unexported fields hold nothing; embedded structs are inlined; map keys
// sorted; an interface's value is looked into.
func TestAll(t *testing.T) {
	v := root{
		Plain:    ref{"P"},
		Items:    []item{{Name: "ops", Token: ref{"A"}}, {Token: ref{"B"}}},
		ByName:   map[string]ref{"z": {"Z"}, "a": {"A2"}},
		Inner:    &inner{Secret: &ref{"S"}},
		Skipped:  ref{"no"},
		hidden:   ref{"no"},
		Untagged: ref{"U"},
		Any:      &inner{Secret: &ref{"I"}},
		Node:     &node{Next: &node{Ref: &ref{"N"}}},
		Embedded: Embedded{Key: &ref{"K"}},
	}
	var got [][3]string
	for _, f := range All[ref](&v) {
		got = append(got, [3]string{f.Path, f.Pattern, f.Value.Env})
	}
	want := [][3]string{
		{"plain", "plain", "P"},
		{"items[0] (ops).token", "items[].token", "A"},
		{"items[1].token", "items[].token", "B"},
		{"byName[a]", "byName[]", "A2"},
		{"byName[z]", "byName[]", "Z"},
		{"inner.secret", "inner.secret", "S"},
		{"Untagged", "Untagged", "U"},
		{"any.secret", "any.secret", "I"},
		{"node.next.ref", "node.next.ref", "N"},
		{"key", "key", "K"},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("All =\n  %v\nwant\n  %v", got, want)
	}
	_ = v.hidden
}

// TestPatterns: every place the type can be, set or not, once per field
// of a recursive type; not inside interfaces.
func TestPatterns(t *testing.T) {
	got := Patterns[ref](reflect.TypeFor[root]())
	want := []string{"plain", "unset", "items[].token", "byName[]", "inner.secret", "Untagged", "node.ref", "key"}
	if !slices.Equal(got, want) {
		t.Fatalf("Patterns = %v, want %v", got, want)
	}
	if got := Patterns[ref](reflect.TypeFor[*ref]()); !slices.Equal(got, []string{""}) {
		t.Fatalf("Patterns of *ref = %q", got)
	}
}
