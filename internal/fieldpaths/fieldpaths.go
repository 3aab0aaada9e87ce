// Package fieldpaths finds, by reflection, every value of one type in a tree
// of structs, pointers, slices and maps, each with the path a config file
// writes it at (servers[2] (github).oauth.clientSecret), the way
// encoding/json names fields. A check over "every credential the config
// holds" built on it cannot go stale: a field added later is found like the
// others, without anyone remembering to list it.
package fieldpaths

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Found is one value of the type looked for.
type Found[T any] struct {
	// Path is where it is: JSON field names joined by dots, list items by
	// index and, when the item has a non-empty name field, the name in
	// parentheses, as the hub's config errors write it:
	// auth.tokens[1] (ops).token.
	Path string
	// Pattern is Path without indices and names: auth.tokens[].token.
	Pattern string
	Value   T
}

// All returns every value of type T reachable from root (a struct or a
// pointer to one) through exported fields, set pointers, list items and map
// values (map keys as [key], in sorted order), in field order. A nil
// pointer holds nothing; a T inside a T is not looked for. root must not
// hold a cycle of pointers (a decoded document never does).
func All[T any](root any) []Found[T] {
	w := walker[T]{holds: map[reflect.Type]bool{}}
	w.value(reflect.ValueOf(root), "", "")
	return w.found
}

// Patterns returns the pattern of every place a T can be in a value of type
// root, whether set or not: what All could find, but inside interfaces
// (their types are known only in a value) and deeper than the first level
// of a recursive type.
func Patterns[T any](root reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type, pattern string, stack []reflect.Type)
	walk = func(t reflect.Type, pattern string, stack []reflect.Type) {
		if t == reflect.TypeFor[T]() {
			out = append(out, pattern)
			return
		}
		if slices.Contains(stack, t) {
			return
		}
		stack = append(stack, t)
		switch t.Kind() {
		case reflect.Pointer:
			walk(t.Elem(), pattern, stack)
		case reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem(), pattern+"[]", stack)
		case reflect.Struct:
			for _, f := range fields(t) {
				walk(f.typ, join(pattern, f.name), stack)
			}
		}
	}
	walk(root, "", nil)
	return out
}

// walker collects the Ts of one value.
type walker[T any] struct {
	found []Found[T]
	holds map[reflect.Type]bool // memo of mayHold
}

// mayHold reports whether a value of type t can hold a T, so that All does
// not walk byte slices and string maps item by item.
func (w *walker[T]) mayHold(t reflect.Type) bool {
	h, ok := w.holds[t]
	if !ok {
		h = t.Kind() == reflect.Interface || len(Patterns[T](t)) > 0
		w.holds[t] = h
	}
	return h
}

func (w *walker[T]) value(v reflect.Value, path, pattern string) {
	if !v.IsValid() || !w.mayHold(v.Type()) {
		return
	}
	if v.Type() == reflect.TypeFor[T]() {
		w.found = append(w.found, Found[T]{Path: path, Pattern: pattern, Value: v.Interface().(T)})
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			w.value(v.Elem(), path, pattern)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			w.value(v.Index(i), fmt.Sprintf("%s[%d]%s", path, i, nameHint(v.Index(i))), pattern+"[]")
		}
	case reflect.Map:
		keys := v.MapKeys()
		slices.SortFunc(keys, func(a, b reflect.Value) int { return strings.Compare(fmt.Sprint(a), fmt.Sprint(b)) })
		for _, k := range keys {
			w.value(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k), pattern+"[]")
		}
	case reflect.Struct:
		for _, f := range fields(v.Type()) {
			w.value(v.FieldByIndex(f.index), join(path, f.name), join(pattern, f.name))
		}
	}
}

// field is one field as encoding/json sees it, embedded structs inlined.
type field struct {
	name  string
	index []int
	typ   reflect.Type
}

// fields lists the fields of struct type t by their JSON names: the tag's
// name, else the Go name; "-" and unexported fields left out (an
// unexported embedded struct too, unlike encoding/json); an embedded struct
// without a tag name inlined.
func fields(t reflect.Type) []field {
	var out []field
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for _, g := range fields(f.Type) {
				out = append(out, field{g.name, append([]int{i}, g.index...), g.typ})
			}
			continue
		case name == "":
			name = f.Name
		}
		out = append(out, field{name, []int{i}, f.Type})
	}
	return out
}

// nameHint is " (name)" for a list item whose name field is set.
func nameHint(item reflect.Value) string {
	for item.Kind() == reflect.Pointer && !item.IsNil() {
		item = item.Elem()
	}
	if item.Kind() != reflect.Struct {
		return ""
	}
	for _, f := range fields(item.Type()) {
		if f.name == "name" && f.typ.Kind() == reflect.String {
			if s := item.FieldByIndex(f.index).String(); s != "" {
				return " (" + s + ")"
			}
		}
	}
	return ""
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
