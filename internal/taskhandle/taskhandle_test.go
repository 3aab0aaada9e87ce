package taskhandle

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	c := New([]byte("replicas-secret"))
	alice, bob := []byte("alice"), []byte("bob")
	task := Task{Replica: "r1", Server: "ev", Tool: "ev__simulate-research-query", ID: "0f7c-41.x"}
	h := c.Seal(alice, task)
	other := New([]byte("another-secret"))
	// What a caller may try instead of the handle it was given.
	p, m, _ := strings.Cut(strings.TrimPrefix(h, prefix), ".")
	forgedPayload := prefix + encodeB64(encodePayload(Task{Replica: "r1", Server: "db", Tool: "db__drop", ID: task.ID})) + "." + m
	for _, tc := range []struct {
		name   string
		codec  *Codec
		caller []byte
		handle string
		want   *Task
	}{
		{"its caller", c, alice, h, &task},
		{"another replica with the same key", mustNew(t, "replicas-secret"), alice, h, &task},
		{"another caller", c, bob, h, nil},
		{"a caller whose key prefixes the owner's", c, []byte("alic"), h, nil},
		{"another key", other, alice, h, nil},
		{"another server under the same MAC", c, alice, forgedPayload, nil},
		{"MAC cut short", c, alice, h[:len(h)-2], nil},
		{"no MAC", c, alice, prefix + p, nil},
		{"the upstream's own id", c, alice, task.ID, nil},
		{"empty", c, alice, "", nil},
		{"not base64", c, alice, prefix + "!!." + m, nil},
		{"too long", c, alice, prefix + strings.Repeat("A", maxHandle) + "." + m, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.codec.Open(tc.caller, tc.handle)
			if tc.want == nil {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("Open = %+v, %v; want ErrInvalid", got, err)
				}
				return
			}
			if err != nil || got != *tc.want {
				t.Fatalf("Open = %+v, %v; want %+v", got, err, *tc.want)
			}
		})
	}
}

func TestRandomKeysDiffer(t *testing.T) {
	a, b := mustNew(t, ""), mustNew(t, "")
	h := a.Seal([]byte("x"), Task{Server: "s", ID: "1"})
	if _, err := b.Open([]byte("x"), h); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a handle of one random key opens with another: %v", err)
	}
	if _, err := a.Open([]byte("x"), h); err != nil {
		t.Fatalf("a handle does not open with its own key: %v", err)
	}
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, task := range []Task{
		{Server: "s", ID: "1"},
		{Replica: "r", Server: "s", Tool: "t", ID: strings.Repeat("é", 300)},
	} {
		got, ok := decodePayload(encodePayload(task))
		if !ok || got != task {
			t.Fatalf("decode(encode(%+v)) = %+v, %v", task, got, ok)
		}
	}
	for _, bad := range [][]byte{nil, {5, 'a'}, {0, 1, 's', 0, 0}, {0, 1, 's', 0, 1, 'i', 'x'}, {0, 0, 0, 1, 'i'}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}} {
		if got, ok := decodePayload(bad); ok {
			t.Fatalf("decode(%q) = %+v; want refused", bad, got)
		}
	}
}

func mustNew(t *testing.T, key string) *Codec {
	t.Helper()
	return New([]byte(key))
}

func encodeB64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
