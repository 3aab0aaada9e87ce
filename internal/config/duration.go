package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Duration is a time.Duration written as "30s" in YAML and JSON, or as a
// plain number of seconds.
type Duration time.Duration

// UnmarshalJSON accepts "1m30s" strings and plain seconds. A value that
// does not fit a time.Duration (about 292 years) is an error rather than a
// wrapped-around negative number.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	if v == nil {
		// "timeout:" with no value leaves the field unset, as null does
		// for every other type.
		return nil
	}
	parsed, err := parseDuration(v)
	if err != nil {
		return err
	}
	*d = Duration(parsed)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// maxDurationNanos is 2^63, the first float64 no time.Duration can hold.
const maxDurationNanos = float64(1 << 63)

// parseDuration reads a decoded JSON value as a duration: the one rule
// both UnmarshalJSON and the config's field-naming check (checkFields)
// apply. null is an unset duration.
func parseDuration(v any) (time.Duration, error) {
	switch v := v.(type) {
	case nil:
		return 0, nil
	case string:
		d, err := time.ParseDuration(v)
		if err != nil {
			// ParseDuration says "invalid duration" for junk and for
			// overflow alike; say what would be accepted.
			return 0, fmt.Errorf("invalid duration %q: write it like \"30s\" or \"1m30s\", at most %s", v, time.Duration(1<<63-1).Truncate(time.Hour))
		}
		return d, nil
	case float64:
		ns := v * float64(time.Second)
		if ns != ns || ns >= maxDurationNanos || ns < -maxDurationNanos {
			return 0, fmt.Errorf("invalid duration %v seconds: at most %d seconds", v, int64(math.MaxInt64/time.Second))
		}
		return time.Duration(ns), nil
	}
	return 0, errors.New("duration must be a string like \"30s\" or a number of seconds")
}

// checkFields walks a decoded config document alongside the Config type
// and checks every value that lands in a Duration (it must parse, fit and
// not be negative) or a TokenRef (it must not be the token itself). The
// error names the field (servers[0] (a).timeout), which the YAML decoder
// cannot do. Walking the type, rather than listing the fields, covers
// every such field added later.
func checkFields(t reflect.Type, doc any, path string) error {
	if t == reflect.TypeFor[TokenRef]() {
		if _, inline := doc.(string); inline {
			return fmt.Errorf("%s: a token is never written into the config file; give where to read it: {env: VARIABLE} or {file: /path/to/token}", path)
		}
		return nil
	}
	if t == reflect.TypeFor[Duration]() {
		d, err := parseDuration(doc)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if d < 0 {
			return fmt.Errorf("%s: %s must not be negative", path, d)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		return checkFields(t.Elem(), doc, path)
	case reflect.Slice:
		items, _ := doc.([]any)
		for i, item := range items {
			obj, _ := item.(map[string]any)
			name, _ := obj["name"].(string)
			if err := checkFields(t.Elem(), item, fmt.Sprintf("%s[%d]%s", path, i, nameHint(name))); err != nil {
				return err
			}
		}
	case reflect.Struct:
		obj, _ := doc.(map[string]any)
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case f.Anonymous && name == "":
				// Embedded fields are inlined, as encoding/json does.
				if err := checkFields(f.Type, doc, path); err != nil {
					return err
				}
				continue
			case name == "":
				name = f.Name
			}
			child := name
			if path != "" {
				child = path + "." + name
			}
			// encoding/json matches keys case-insensitively; so does this.
			for _, k := range slices.Sorted(maps.Keys(obj)) {
				if strings.EqualFold(k, name) {
					if err := checkFields(f.Type, obj[k], child); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}
