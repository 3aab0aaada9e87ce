package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Store holds records (key -> sealed bytes) that every replica reads and writes.
// Keys match [-._a-zA-Z0-9]{1,253} (the Kubernetes Secret data key rule); Update refuses others.
// Like Kubernetes, it also refuses ".", ".." and keys starting with "..".
type Store interface {
	// Load returns a copy of every record.
	Load(ctx context.Context) (map[string][]byte, error)
	// Update reads the current records, calls change with a copy it may modify (set, delete
	// keys), and writes the result only if nobody wrote in between; if somebody did, it reads
	// again and calls change again (up to 10 times, then an error that says it kept conflicting).
	// change returning an error aborts without writing and Update returns that error unwrapped
	// (errors.Is works). change returning ErrUnchanged (exported sentinel) means nothing to write,
	// and Update returns it too: the caller learns that change found nothing to do.
	Update(ctx context.Context, change func(records map[string][]byte) error) error
	// Where names the store for messages ("file /path/grants.sealed", "Secret ns/name").
	Where() string
}

// ErrUnchanged is what an Update's change returns when it has nothing to
// write (a grant already refreshed by another replica, say): Update then
// writes nothing, whatever change did to the map, and returns it.
var ErrUnchanged = errors.New("records unchanged")

// maxAttempts bounds how often Update reads and calls change again after
// another writer won: past it, the store is too contended to make progress.
const maxAttempts = 10

// errConflict is what a store's write returns when somebody wrote since it
// read; Update reads and tries again.
var errConflict = errors.New("written by somebody else since read")

// changeError carries the error of an Update's change out of a store's
// attempt, so Update returns it exactly as change did.
type changeError struct{ err error }

func (c changeError) Error() string { return c.err.Error() }

// attempt is one read-change-write of a store: it reads, calls apply with
// the records read, and writes what apply returns unless apply says there
// is nothing to write. It returns errConflict (possibly wrapped) when the
// write lost to another writer.
type attempt func(ctx context.Context, apply func(map[string][]byte) (map[string][]byte, bool, error)) error

// update runs attempts until one does not conflict, at most maxAttempts
// times, waiting a short random while between them so racing replicas
// spread out.
func update(ctx context.Context, where string, try attempt, change func(map[string][]byte) error) error {
	apply := func(read map[string][]byte) (map[string][]byte, bool, error) {
		records := cloneRecords(read)
		switch err := change(records); {
		case err != nil: // ErrUnchanged too: the caller learns change did nothing
			return nil, false, changeError{err}
		}
		if err := checkKeys(records); err != nil {
			return nil, false, fmt.Errorf("update %s: %w", where, err)
		}
		if equalRecords(read, records) {
			return nil, false, nil
		}
		return records, true, nil
	}
	var last error
	for i := range maxAttempts {
		if i > 0 {
			wait := time.Duration(rand.Int64N(int64(5*time.Millisecond) << min(i, 5)))
			select {
			case <-ctx.Done():
				return fmt.Errorf("update %s: %w (after: %w)", where, ctx.Err(), last)
			case <-time.After(wait):
			}
		}
		err := try(ctx, apply)
		if ce := (changeError{}); errors.As(err, &ce) {
			return ce.err
		}
		if !errors.Is(err, errConflict) {
			return err
		}
		last = err
	}
	return fmt.Errorf("update %s: kept conflicting with other writers, gave up after %d attempts: %w", where, maxAttempts, last)
}

// gate lets one Update of a store value run at a time; unlike a mutex, a
// caller waiting for it gives up when its context ends.
type gate chan struct{}

func newGate() gate { return make(gate, 1) }

// enter waits for the gate; the caller calls leave when done.
func (g gate) enter(ctx context.Context, where string) error {
	select {
	case g <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("update %s: waiting for this process's other update: %w", where, ctx.Err())
	}
}

func (g gate) leave() { <-g }

// checkKeys refuses keys a Kubernetes Secret would refuse, so a record that
// lands in a file would land in a Secret too.
func checkKeys(records map[string][]byte) error {
	for _, key := range slices.Sorted(maps.Keys(records)) {
		if errs := validation.IsConfigMapKey(key); len(errs) > 0 {
			return fmt.Errorf("invalid record key %q: %s", key, strings.Join(errs, "; "))
		}
	}
	return nil
}

func cloneRecords(records map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(records))
	for k, v := range records {
		out[k] = bytes.Clone(v)
	}
	return out
}

func equalRecords(a, b map[string][]byte) bool {
	return maps.EqualFunc(a, b, bytes.Equal)
}

// Rewrap is the last step of a key rotation: in one Update, it opens every record not sealed
// with k's first key and seals it again with that key, so the old keys can then be dropped.
// aad gives a record's additional data from its key, as the records were sealed (nil: the key's
// bytes). Records no key of k opens are left as they are, never dropped, and named in the
// error returned after the others were rewritten.
func Rewrap(ctx context.Context, s Store, k *Keyring, aad func(key string) []byte) (rewrapped int, err error) {
	if aad == nil {
		aad = func(key string) []byte { return []byte(key) }
	}
	var unopened []string
	var firstErr error
	err = s.Update(ctx, func(records map[string][]byte) error {
		rewrapped, unopened, firstErr = 0, nil, nil // change runs again after a conflict
		for _, key := range slices.Sorted(maps.Keys(records)) {
			sealed := records[key]
			if k.Current(sealed) {
				continue
			}
			plain, err := k.Open(sealed, aad(key))
			if err != nil {
				unopened = append(unopened, key)
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			resealed, err := k.Seal(plain, aad(key))
			clear(plain)
			if err != nil {
				return fmt.Errorf("rewrap record %q: %w", key, err)
			}
			records[key] = resealed
			rewrapped++
		}
		if rewrapped == 0 {
			return ErrUnchanged
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrUnchanged) {
		return 0, fmt.Errorf("rewrap records of %s: %w", s.Where(), err)
	}
	if len(unopened) > 0 {
		shown := unopened[:min(len(unopened), 5)]
		more := ""
		if len(unopened) > len(shown) {
			more = fmt.Sprintf(" and %d more", len(unopened)-len(shown))
		}
		return rewrapped, fmt.Errorf("rewrap records of %s: rewrapped %d; %d could not be opened with any key of this hub and were left as they are (%s%s; first reason: %w)",
			s.Where(), rewrapped, len(unopened), strings.Join(quoteAll(shown), ", "), more, firstErr)
	}
	return rewrapped, nil
}

func quoteAll(keys []string) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%q", k)
	}
	return out
}
