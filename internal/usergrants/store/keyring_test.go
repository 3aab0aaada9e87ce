package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// newKey returns 32 fresh random bytes.
func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, keyLen)
	rand.Read(k)
	return k
}

func mustKeyring(t *testing.T, secrets ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(secrets...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpenRoundTrip(t *testing.T) {
	k := mustKeyring(t, newKey(t))
	for _, tc := range []struct {
		name      string
		plaintext []byte
		aad       []byte
	}{
		{"empty", nil, []byte("alice.github")},
		{"token", []byte(`{"access_token":"gho_secret","refresh_token":"ghr_secret"}`), []byte("alice.github")},
		{"no aad", []byte("x"), nil},
		{"large", bytes.Repeat([]byte("0123456789"), 10_000), []byte("bob.linear")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := k.Seal(tc.plaintext, tc.aad)
			if err != nil {
				t.Fatal(err)
			}
			b, err := k.Seal(tc.plaintext, tc.aad)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(a, b) {
				t.Error("two seals of the same plaintext are equal: the nonce is not fresh")
			}
			if a[0] != formatVersion || !k.Current(a) {
				t.Errorf("header % x: want version %d and the first key's id", a[:headerLen], formatVersion)
			}
			if len(tc.plaintext) > 8 && bytes.Contains(a, tc.plaintext[:8]) {
				t.Error("sealed record contains the plaintext")
			}
			for _, sealed := range [][]byte{a, b} {
				got, err := k.Open(sealed, tc.aad)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.plaintext) {
					t.Errorf("Open = %q, want %q", got, tc.plaintext)
				}
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	k := mustKeyring(t, newKey(t))
	secret := []byte("refresh-token-ghr_0123456789abcdef")
	aad := []byte("alice.github")
	sealed, err := k.Seal(secret, aad)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		s := bytes.Clone(sealed)
		s[i] ^= 0x01
		return s
	}
	foreign, err := mustKeyring(t, newKey(t)).Seal(secret, aad)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		sealed []byte
		aad    []byte
		want   string
	}{
		{"wrong aad", sealed, []byte("mallory.github"), "authentication failed"},
		{"no aad", sealed, nil, "authentication failed"},
		{"version byte", flip(0), aad, "format version"},
		{"key id byte", flip(2), aad, "sealed with a key this hub does not hold"},
		{"nonce byte", flip(headerLen + 3), aad, "authentication failed"},
		{"ciphertext byte", flip(headerLen + 12 + 5), aad, "authentication failed"},
		{"tag byte", flip(len(sealed) - 1), aad, "authentication failed"},
		{"truncated", sealed[:len(sealed)-1], aad, "authentication failed"},
		{"header only", sealed[:headerLen], aad, "authentication failed"},
		{"too short", sealed[:3], aad, "too short"},
		{"empty", nil, aad, "too short"},
		{"another key", foreign, aad, "sealed with a key this hub does not hold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := k.Open(tc.sealed, tc.aad)
			if err == nil {
				t.Fatalf("Open succeeded: %q", got)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), string(secret)) || strings.Contains(err.Error(), "ghr_") {
				t.Errorf("error %q contains the data", err)
			}
		})
	}
}

// storeFixture is a store the rotation test runs on, and what it needs from the test.
type storeFixture struct {
	name string
	make func(t *testing.T) Store
}

// rotationStores are the stores a rotation is tried on; the Secret one
// (secret_test.go) adds a real API server's.
func rotationStores() []storeFixture {
	return []storeFixture{
		{"file", func(t *testing.T) Store { return File(t.TempDir() + "/grants.sealed") }},
		{"Secret", func(t *testing.T) Store { return hubSecret(t, "rotation") }},
	}
}

func TestRotation(t *testing.T) {
	for _, fx := range rotationStores() {
		t.Run(fx.name, func(t *testing.T) {
			ctx := context.Background()
			s := fx.make(t)
			oldKey, newK := newKey(t), newKey(t)
			old := mustKeyring(t, oldKey)
			plain := map[string][]byte{}
			if err := s.Update(ctx, func(records map[string][]byte) error {
				for i := range 5 {
					key := fmt.Sprintf("user-%d.github", i)
					plain[key] = fmt.Appendf(nil, "token of user %d", i)
					sealed, err := old.Seal(plain[key], []byte(key))
					if err != nil {
						return err
					}
					records[key] = sealed
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}

			rotated := mustKeyring(t, newK, oldKey)
			records, err := s.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for key, sealed := range records {
				if rotated.Current(sealed) {
					t.Errorf("%s: Current = true for a record of the old key", key)
				}
				got, err := rotated.Open(sealed, []byte(key))
				if err != nil || !bytes.Equal(got, plain[key]) {
					t.Errorf("%s: the old key second does not open it: %q, %v", key, got, err)
				}
			}
			fresh, err := rotated.Seal([]byte("x"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if !rotated.Current(fresh) || old.Current(fresh) {
				t.Error("a record sealed after the rotation is not Current for the new ring only")
			}

			n, err := Rewrap(ctx, s, rotated, nil)
			if err != nil || n != len(plain) {
				t.Fatalf("Rewrap = %d, %v; want %d, nil", n, err, len(plain))
			}
			if n, err := Rewrap(ctx, s, rotated, nil); err != nil || n != 0 {
				t.Errorf("second Rewrap = %d, %v; want 0, nil", n, err)
			}

			newOnly := mustKeyring(t, newK)
			records, err = s.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(records) != len(plain) {
				t.Fatalf("%d records after Rewrap, want %d", len(records), len(plain))
			}
			for key, sealed := range records {
				got, err := newOnly.Open(sealed, []byte(key))
				if err != nil || !bytes.Equal(got, plain[key]) || !newOnly.Current(sealed) {
					t.Errorf("%s: after dropping the old key: %q, %v", key, got, err)
				}
			}
		})
	}
}

func TestRewrapLeavesWhatNoKeyOpens(t *testing.T) {
	ctx := context.Background()
	s := File(t.TempDir() + "/grants.sealed")
	lost, oldKey, newK := mustKeyring(t, newKey(t)), newKey(t), newKey(t)
	old := mustKeyring(t, oldKey)
	aad := func(key string) []byte { return []byte("grant/" + key) }
	var lostRecord []byte
	if err := s.Update(ctx, func(records map[string][]byte) error {
		var err error
		records["a.x"], _ = old.Seal([]byte("a"), aad("a.x"))
		records["b.x"], _ = old.Seal([]byte("b"), aad("b.x"))
		records["lost.x"], err = lost.Seal([]byte("lost"), aad("lost.x"))
		lostRecord = records["lost.x"]
		return err
	}); err != nil {
		t.Fatal(err)
	}
	n, err := Rewrap(ctx, s, mustKeyring(t, newK, oldKey), aad)
	if n != 2 || err == nil {
		t.Fatalf("Rewrap = %d, %v; want 2 and an error about the record no key opens", n, err)
	}
	for _, want := range []string{"1 could not be opened", `"lost.x"`, "left as they are", s.Where()} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	records, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(records["lost.x"], lostRecord) {
		t.Error("the record no key opens was changed or dropped")
	}
	newOnly := mustKeyring(t, newK)
	for _, key := range []string{"a.x", "b.x"} {
		if _, err := newOnly.Open(records[key], aad(key)); err != nil {
			t.Errorf("%s not rewrapped with the aad given: %v", key, err)
		}
	}
}

func TestNewKeyring(t *testing.T) {
	raw := newKey(t)
	// Bytes whose base64 has '+' and '/' in the standard alphabet, '-' and '_' in the URL one.
	urlish := bytes.Repeat([]byte{0xfb, 0xff, 0xbf}, 11)[:keyLen]
	accepted := []struct {
		name   string
		secret []byte
		raw    []byte
	}{
		{"raw", raw, raw},
		{"hex", []byte(hex.EncodeToString(raw)), raw},
		{"hex upper with newline", []byte(strings.ToUpper(hex.EncodeToString(raw)) + "\n"), raw},
		{"base64 std", []byte(base64.StdEncoding.EncodeToString(urlish)), urlish},
		{"base64 url", []byte(base64.URLEncoding.EncodeToString(urlish)), urlish},
		{"base64 std unpadded", []byte(base64.RawStdEncoding.EncodeToString(urlish)), urlish},
		{"base64 url unpadded", []byte(base64.RawURLEncoding.EncodeToString(urlish)), urlish},
		{"base64 with spaces around", []byte("  " + base64.StdEncoding.EncodeToString(raw) + " \r\n"), raw},
	}
	reference := mustKeyring(t, raw)
	urlRef := mustKeyring(t, urlish)
	for _, tc := range accepted {
		t.Run("accepts "+tc.name, func(t *testing.T) {
			k, err := NewKeyring(tc.secret)
			if err != nil {
				t.Fatal(err)
			}
			ref := reference
			if bytes.Equal(tc.raw, urlish) {
				ref = urlRef
			}
			sealed, err := k.Seal([]byte("p"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ref.Open(sealed, nil); err != nil || string(got) != "p" {
				t.Errorf("not the same key as the raw bytes: %v", err)
			}
		})
	}

	refused := []struct {
		name   string
		secret []byte
	}{
		{"empty", nil},
		{"short raw", raw[:31]},
		{"long raw", append(bytes.Clone(raw), 7)},
		{"hex of 31 bytes", []byte(hex.EncodeToString(raw[:31]))},
		{"hex of 33 bytes", []byte(hex.EncodeToString(append(bytes.Clone(raw), 1)))},
		{"base64 of 16 bytes", []byte(base64.StdEncoding.EncodeToString(raw[:16]))},
		{"base64 of 48 bytes", []byte(base64.StdEncoding.EncodeToString(append(bytes.Clone(raw), raw[:16]...)))},
		{"a password", []byte("correct-horse-battery-staple!")},
		{"64 chars not hex", []byte(strings.Repeat("zq", 32))},
		{"44 chars not base64", []byte(strings.Repeat("*", 44))},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			_, err := NewKeyring(raw, tc.secret) // a good key first: the error must name the second
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.Contains(msg, "key 2 of 2") || !strings.Contains(msg, "a key must be 32 random bytes") {
				t.Errorf("error %q does not say which key and what a key must be", msg)
			}
			if len(tc.secret) > 0 && strings.Contains(msg, string(tc.secret)) {
				t.Errorf("error %q echoes the secret", msg)
			}
			for _, leak := range []string{hex.EncodeToString(raw[:8]), base64.StdEncoding.EncodeToString(raw[:6]), string(raw[:8])} {
				if strings.Contains(msg, leak) {
					t.Errorf("error %q contains key material", msg)
				}
			}
		})
	}
	if _, err := NewKeyring(); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("NewKeyring() = %v, want an error saying no key was given", err)
	}
}

func TestParseKeys(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", nil},
		{"blank lines", "\n  \n\t\n", nil},
		{"one", "abc", []string{"abc"}},
		{"one with newline", "abc\n", []string{"abc"}},
		{"rotation", "new\nold\n", []string{"new", "old"}},
		{"trimmed, CRLF, blank lines", "  new \r\n\r\n\told\t\n\n older", []string{"new", "old", "older"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, k := range ParseKeys(tc.text) {
				got = append(got, string(k))
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("ParseKeys(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
	// What ParseKeys returns, NewKeyring takes.
	a, b := newKey(t), newKey(t)
	keys := ParseKeys(base64.StdEncoding.EncodeToString(a) + "\n" + hex.EncodeToString(b) + "\n")
	k, err := NewKeyring(keys...)
	if err != nil {
		t.Fatal(err)
	}
	sealed, _ := mustKeyring(t, b).Seal([]byte("p"), nil)
	if _, err := k.Open(sealed, nil); err != nil || k.Current(sealed) {
		t.Errorf("second line is not an opening-only key: %v", err)
	}
}
