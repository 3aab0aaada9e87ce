package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// fileVersion is the "version" of the file's JSON, so a later layout can be
// told apart from this one.
const fileVersion = 1

// File is a Store in one file (e.g. <state dir>/grants.sealed), for a hub whose state directory
// one process holds. Written atomically (temp file in the same dir, fsync, rename), mode 0600.
// A missing file is an empty store. Concurrent Update calls in the process are serialised by a
// mutex. Content format: JSON object {"version":1,"records":{key: base64}} — human-inspectable
// structure, opaque values.
//
// The mutex is the File value's (a caller waiting for it gives up when its context ends): two
// File values on one path do not exclude each other, so hand one to every user of the path;
// the state directory's lock keeps other processes out.
func File(path string) Store {
	return &fileStore{path: path, gate: newGate()}
}

type fileStore struct {
	path string
	gate gate // held by Update from read to rename
}

// fileContent is the file's JSON; encoding/json writes []byte as base64.
type fileContent struct {
	Version int               `json:"version"`
	Records map[string][]byte `json:"records"`
}

func (f *fileStore) Where() string { return "file " + f.path }

func (f *fileStore) Load(ctx context.Context) (map[string][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("load %s: %w", f.Where(), err)
	}
	records, err := f.read()
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", f.Where(), err)
	}
	return records, nil
}

func (f *fileStore) Update(ctx context.Context, change func(records map[string][]byte) error) error {
	if err := f.gate.enter(ctx, f.Where()); err != nil {
		return err
	}
	defer f.gate.leave()
	// The mutex leaves no writer in this process to conflict with: one attempt always does.
	return update(ctx, f.Where(), func(ctx context.Context, apply func(map[string][]byte) (map[string][]byte, bool, error)) error {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("update %s: %w", f.Where(), err)
		}
		read, err := f.read()
		if err != nil {
			return fmt.Errorf("update %s: %w", f.Where(), err)
		}
		records, write, err := apply(read)
		if err != nil || !write {
			return err
		}
		if err := f.write(records); err != nil {
			return fmt.Errorf("update %s (%d records): %w", f.Where(), len(records), err)
		}
		return nil
	}, change)
}

// read returns the file's records; a missing file holds none.
func (f *fileStore) read() (map[string][]byte, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, err
	}
	var c fileContent
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("read records: the file is not the hub's sealed records (a JSON object {\"version\":%d,\"records\":{...}}): %w", fileVersion, err)
	}
	if c.Version != fileVersion {
		return nil, fmt.Errorf("read records: format version %d, this hub reads version %d", c.Version, fileVersion)
	}
	if c.Records == nil {
		c.Records = map[string][]byte{}
	}
	return c.Records, nil
}

// write replaces the file with records through a temporary file in the same
// directory, synced, then renamed over it and the directory synced, so a
// crash leaves the old records or the new ones, never half of them.
func (f *fileStore) write(records map[string][]byte) error {
	data, err := json.MarshalIndent(fileContent{Version: fileVersion, Records: records}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode records: %w", err)
	}
	data = append(data, '\n')
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create directory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(f.path)+"-*") // mode 0600
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; cleans up after a failure
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o600) // CreateTemp's mode, made explicit
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("replace file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		err = d.Sync()
		if cerr := d.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("sync directory: %w", err)
		}
	}
	return nil
}
