// Package store keeps the hub's per-user OAuth grants at rest: opaque records
// by key, sealed with AES-256-GCM (Keyring), in a file of a laptop hub's state
// directory (File) or in one Kubernetes Secret every replica reads and writes
// (Secret). Writes are compare-and-swap, so replicas racing to refresh the same
// grant cannot both win. What a record means is the grant logic's business,
// not this package's.
package store

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

const (
	// formatVersion is the first byte of every sealed record, so a later
	// format can be told apart from this one.
	formatVersion byte = 1
	keyIDLen           = 4
	headerLen          = 1 + keyIDLen
	keyLen             = 32
)

// Keyring seals and opens records with AES-256-GCM. The first key seals; every key opens
// (key rotation: put the new key first, keep the old ones until every record was rewritten,
// which Rewrap does). Each sealed record starts with a 1-byte format version and a 4-byte key id
// (first 4 bytes of SHA-256 of the key) so Open picks the key without trying all.
//
// A Keyring never changes after NewKeyring and is safe for concurrent use.
type Keyring struct {
	keys []sealingKey // keys[0] seals
}

// sealingKey is one key of a ring: its id and its AEAD, which draws a fresh
// random nonce for every Seal and prefixes it to the ciphertext.
type sealingKey struct {
	id   [keyIDLen]byte
	aead cipher.AEAD
}

// NewKeyring takes one or more secrets. A secret is accepted as 32 raw bytes, or as a string of
// base64 (std or url, padded or not) decoding to exactly 32 bytes, or hex of 32 bytes. Anything
// else is refused with an error saying what a key must be (never echoing the secret).
func NewKeyring(secrets ...[]byte) (*Keyring, error) {
	if len(secrets) == 0 {
		return nil, errors.New("no key given: " + keyRule)
	}
	k := &Keyring{keys: make([]sealingKey, 0, len(secrets))}
	for i, s := range secrets {
		raw, ok := decodeKey(s)
		if !ok {
			return nil, fmt.Errorf("key %d of %d (%d bytes) is not a key: %s", i+1, len(secrets), len(s), keyRule)
		}
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("key %d of %d: %w", i+1, len(secrets), err)
		}
		aead, err := cipher.NewGCMWithRandomNonce(block)
		if err != nil {
			return nil, fmt.Errorf("key %d of %d: %w", i+1, len(secrets), err)
		}
		sum := sha256.Sum256(raw)
		k.keys = append(k.keys, sealingKey{id: [keyIDLen]byte(sum[:keyIDLen]), aead: aead})
		clear(raw)
	}
	return k, nil
}

// keyRule is what every refused key is told.
const keyRule = "a key must be 32 random bytes, given raw, as base64 (44 characters, or 43 unpadded; " +
	"standard or URL alphabet) or as hex (64 characters), e.g. the output of `openssl rand -base64 32`"

// decodeKey reads one secret in any of the accepted forms into a new slice
// of 32 bytes. Text forms may carry surrounding whitespace (a file's newline).
func decodeKey(s []byte) ([]byte, bool) {
	if len(s) == keyLen {
		return bytes.Clone(s), true
	}
	text := strings.TrimSpace(string(s))
	if len(text) == 2*keyLen {
		if raw, err := hex.DecodeString(text); err == nil {
			return raw, true
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if raw, err := enc.Strict().DecodeString(text); err == nil && len(raw) == keyLen {
			return raw, true
		}
	}
	return nil, false
}

// ParseKeys splits a key source's text (the content of an env var, a file, or a Secret value)
// into keys: one per non-empty line, surrounding whitespace trimmed. (So rotation = put the new
// key on the first line.)
func ParseKeys(text string) [][]byte {
	var keys [][]byte
	for line := range strings.Lines(text) {
		if line = strings.TrimSpace(line); line != "" {
			keys = append(keys, []byte(line))
		}
	}
	return keys
}

// Seal encrypts plaintext, binding aad (additional authenticated data: the record's key, so a
// record copied under another key fails to open). Fresh random nonce every time.
//
// The header (format version and key id) is authenticated too: changing it
// makes the record fail to open.
func (k *Keyring) Seal(plaintext, aad []byte) ([]byte, error) {
	if k == nil || len(k.keys) == 0 {
		return nil, errors.New("seal: no keyring")
	}
	key := k.keys[0]
	out := make([]byte, headerLen, headerLen+len(plaintext)+key.aead.Overhead())
	out[0] = formatVersion
	copy(out[1:headerLen], key.id[:])
	return key.aead.Seal(out, nil, plaintext, additional(out[:headerLen], aad)), nil
}

// Open decrypts; the error names the reason (unknown key id: "sealed with a key this hub does not
// hold", or authentication failed) and never contains the data.
func (k *Keyring) Open(sealed, aad []byte) ([]byte, error) {
	if k == nil || len(k.keys) == 0 {
		return nil, errors.New("open: no keyring")
	}
	if len(sealed) < headerLen {
		return nil, fmt.Errorf("open: %d bytes is too short for a sealed record", len(sealed))
	}
	if sealed[0] != formatVersion {
		return nil, fmt.Errorf("open: sealed in format version %d, this hub reads version %d", sealed[0], formatVersion)
	}
	id, found := sealed[1:headerLen], false
	for _, key := range k.keys {
		if !bytes.Equal(key.id[:], id) {
			continue
		}
		found = true // ids of 4 bytes may collide: try every key that has this one
		if plain, err := key.aead.Open(nil, nil, sealed[headerLen:], additional(sealed[:headerLen], aad)); err == nil {
			return plain, nil
		}
	}
	if !found {
		return nil, fmt.Errorf("open: sealed with a key this hub does not hold (key id %x)", id)
	}
	return nil, errors.New("open: authentication failed: the record was altered, or sealed under another record key (aad)")
}

// Current reports whether sealed was sealed with the first key (Rewrap uses it).
func (k *Keyring) Current(sealed []byte) bool {
	return k != nil && len(k.keys) > 0 && len(sealed) >= headerLen &&
		sealed[0] == formatVersion && bytes.Equal(sealed[1:headerLen], k.keys[0].id[:])
}

// additional is what GCM authenticates besides the ciphertext: the record's
// header, then the caller's aad.
func additional(header, aad []byte) []byte {
	return append(append(make([]byte, 0, len(header)+len(aad)), header...), aad...)
}
