// Package pyparse parses Python into a concrete syntax tree without cgo:
// tree-sitter and tree-sitter-python's grammar, compiled to WebAssembly
// (python.wasm, built by wasm/build.sh), run by wazero, a WebAssembly
// runtime in pure Go. The static-analysis tool keeps the parser it was
// tuned on, and the hub cross-builds for every GOOS/GOARCH and installs
// with `go install` where there is no C toolchain (IDE users on macOS and
// Windows).
//
// A parse runs in a module instance of its own (instances are pooled), so
// parses run in parallel; it ends when its context does (the instance is
// then closed and dropped), and the tree comes back in one copy as flat
// records, which Node reads like go-tree-sitter's node.
package pyparse

import (
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

//go:embed python.wasm
var pythonWasm []byte

// Record layout written by wasm/shim.c: seven uint32 per node.
const (
	recordWords = 7
	recordBytes = recordWords * 4
	noParent    = 0xffffffff

	flagNamed    = 1
	flagError    = 2
	flagMissing  = 4
	flagHasError = 8

	errorSymbol = 0xffff // ts_builtin_sym_error
)

// maxIdle bounds the instances kept between parses; each holds the linear
// memory its largest parse grew to.
const maxIdle = 4

// maxKeptMemory is the linear memory above which an instance is dropped
// after its parse rather than kept for the next one.
const maxKeptMemory = 64 << 20

// ErrCancelled is returned when the context ended during a parse.
var ErrCancelled = errors.New("python parse cancelled")

// Parser parses Python. The zero value is not usable; make one with New.
// It compiles the module at its first parse (tens of milliseconds to a
// few hundred on a slow machine) and keeps it until Close.
type Parser struct {
	once    sync.Once
	initErr error
	rt      wazero.Runtime
	mod     wazero.CompiledModule
	kinds   []string // symbol id -> node kind
	fields  []string // field id -> field name ("" for none)

	mu     sync.Mutex
	idle   []*instance
	closed bool
}

// New returns a parser; nothing is compiled until the first Parse.
func New() *Parser { return &Parser{} }

type instance struct {
	mod    api.Module
	alloc  api.Function
	free   api.Function
	parse  api.Function
	result api.Function
}

func (p *Parser) init() error {
	p.once.Do(func() {
		ctx := context.Background()
		p.rt = wazero.NewRuntime(ctx)
		if _, err := wasi_snapshot_preview1.Instantiate(ctx, p.rt); err != nil {
			p.initErr = fmt.Errorf("python parser: wasi: %w", err)
			return
		}
		// The module asks, every hundred parse operations, whether the
		// context of the call has ended (wazero hands a host function the
		// context of the call that reached it).
		_, err := p.rt.NewHostModuleBuilder("env").NewFunctionBuilder().
			WithFunc(func(ctx context.Context) uint32 {
				if ctx.Err() != nil {
					return 1
				}
				return 0
			}).Export("pp_cancelled").Instantiate(ctx)
		if err != nil {
			p.initErr = fmt.Errorf("python parser: host functions: %w", err)
			return
		}
		mod, err := p.rt.CompileModule(ctx, pythonWasm)
		if err != nil {
			p.initErr = fmt.Errorf("python parser: compiling python.wasm: %w", err)
			return
		}
		p.mod = mod
		in, err := p.instantiate(ctx)
		if err != nil {
			p.initErr = err
			return
		}
		if p.kinds, err = in.names(ctx, "pp_symbol_count", "pp_symbol_name"); err == nil {
			p.fields, err = in.names(ctx, "pp_field_count", "pp_field_name")
		}
		// tree-sitter's ERROR symbol is 0xffff, past the table: it gets
		// the table's last slot.
		p.kinds = append(p.kinds, "ERROR")
		if err != nil {
			p.initErr = fmt.Errorf("python parser: reading the grammar's names: %w", err)
			return
		}
		p.idle = append(p.idle, in)
	})
	return p.initErr
}

func (p *Parser) instantiate(ctx context.Context) (*instance, error) {
	// An anonymous module: any number of instances side by side.
	m, err := p.rt.InstantiateModule(ctx, p.mod, wazero.NewModuleConfig().WithName("").WithStartFunctions("_initialize"))
	if err != nil {
		return nil, fmt.Errorf("python parser: instantiating python.wasm: %w", err)
	}
	in := &instance{mod: m, alloc: m.ExportedFunction("pp_alloc"), free: m.ExportedFunction("pp_free"),
		parse: m.ExportedFunction("pp_parse"), result: m.ExportedFunction("pp_result")}
	if in.alloc == nil || in.free == nil || in.parse == nil || in.result == nil {
		_ = m.Close(ctx)
		return nil, errors.New("python parser: python.wasm lacks an export of shim.c")
	}
	return in, nil
}

// names reads a table of NUL-terminated names (symbols or fields).
func (in *instance) names(ctx context.Context, count, name string) ([]string, error) {
	cf, nf := in.mod.ExportedFunction(count), in.mod.ExportedFunction(name)
	if cf == nil || nf == nil {
		return nil, fmt.Errorf("missing export %s or %s", count, name)
	}
	res, err := cf.Call(ctx)
	if err != nil {
		return nil, err
	}
	n := uint32(res[0])
	out := make([]string, n+1)
	for i := uint32(0); i <= n; i++ {
		r, err := nf.Call(ctx, uint64(i))
		if err != nil {
			return nil, err
		}
		if r[0] != 0 {
			out[i] = in.cString(uint32(r[0]))
		}
	}
	return out, nil
}

func (in *instance) cString(ptr uint32) string {
	mem := in.mod.Memory()
	var b []byte
	for {
		c, ok := mem.ReadByte(ptr)
		if !ok || c == 0 {
			return string(b)
		}
		b = append(b, c)
		ptr++
	}
}

func (p *Parser) get(ctx context.Context) (*instance, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errors.New("python parser: closed")
	}
	if n := len(p.idle); n > 0 {
		in := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return in, nil
	}
	p.mu.Unlock()
	return p.instantiate(ctx)
}

func (p *Parser) put(in *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed && len(p.idle) < maxIdle && in.mod.Memory().Size() <= maxKeptMemory {
		p.idle = append(p.idle, in)
		return
	}
	_ = in.mod.Close(context.Background())
}

// Close releases the compiled module and every idle instance; parses
// running now end with an error.
func (p *Parser) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	p.idle = nil
	p.mu.Unlock()
	if p.rt == nil {
		return nil
	}
	return p.rt.Close(ctx)
}

// Parse parses src, which should be UTF-8 Python. A syntax error is not an
// error: the tree then holds error nodes (Tree.Root().HasError()), as
// tree-sitter recovers and goes on. Parse fails only when ctx ends
// (ErrCancelled, within a hundred parse operations) or the module cannot
// run.
func (p *Parser) Parse(ctx context.Context, src []byte) (*Tree, error) {
	if err := p.init(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ErrCancelled
	}
	in, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	t, err := p.parseIn(ctx, in, src)
	if errors.Is(err, ErrCancelled) {
		p.put(in) // the shim reset its parser: the instance is as good as new
		return nil, err
	}
	if err != nil {
		// A trap leaves the instance in any state: drop it.
		_ = in.mod.Close(context.Background())
		return nil, err
	}
	p.put(in)
	return t, nil
}

func (p *Parser) parseIn(ctx context.Context, in *instance, src []byte) (*Tree, error) {
	res, err := in.alloc.Call(ctx, uint64(len(src)+1))
	if err != nil {
		return nil, fmt.Errorf("python parser: allocating %d bytes: %w", len(src), err)
	}
	buf := uint32(res[0])
	if buf == 0 {
		return nil, fmt.Errorf("python parser: out of memory for %d bytes of source", len(src))
	}
	defer func() { _, _ = in.free.Call(context.Background(), uint64(buf)) }()
	mem := in.mod.Memory()
	if !mem.Write(buf, src) {
		return nil, errors.New("python parser: source outside the module's memory")
	}
	res, err = in.parse.Call(ctx, uint64(buf), uint64(len(src)))
	if err != nil {
		return nil, fmt.Errorf("python parser: parsing: %w", err)
	}
	n := uint32(res[0])
	if n == 0 {
		if ctx.Err() != nil {
			return nil, ErrCancelled
		}
		return nil, errors.New("python parser: no tree (out of memory in the module)")
	}
	res, err = in.result.Call(ctx)
	if err != nil {
		return nil, fmt.Errorf("python parser: reading the tree: %w", err)
	}
	raw, ok := mem.Read(uint32(res[0]), n*recordBytes)
	if !ok {
		return nil, errors.New("python parser: tree outside the module's memory")
	}
	return p.build(raw, n, src)
}

// build turns the flat records (pre-order, each with its parent) into
// nodes with child lists, all in two slices.
func (p *Parser) build(raw []byte, n uint32, src []byte) (*Tree, error) {
	t := &Tree{src: src, nodes: make([]Node, n), kinds: p.kinds, fields: p.fields}
	counts := make([]int32, n)
	for i := range t.nodes {
		r := raw[i*recordBytes:]
		w := func(k int) uint32 { return binary.LittleEndian.Uint32(r[k*4:]) }
		sf := w(0)
		nd := &t.nodes[i]
		nd.t = t
		nd.idx = int32(i)
		nd.symbol = uint16(sf)
		if nd.symbol == errorSymbol {
			nd.symbol = uint16(len(t.kinds) - 1)
		}
		nd.field = uint16(sf >> 16)
		nd.flags = uint8(w(1))
		nd.start, nd.end = w(2), w(3)
		nd.row, nd.col = w(4), w(5)
		parent := w(6)
		if int(nd.symbol) >= len(t.kinds) || int(nd.field) >= len(t.fields) || nd.end < nd.start || int(nd.end) > len(src) {
			return nil, fmt.Errorf("python parser: malformed record %d", i)
		}
		if parent == noParent {
			if i != 0 {
				return nil, fmt.Errorf("python parser: record %d has no parent", i)
			}
			nd.parent = -1
			continue
		}
		if parent >= uint32(i) {
			return nil, fmt.Errorf("python parser: record %d names a later parent", i)
		}
		nd.parent = int32(parent)
		counts[parent]++
	}
	// Children of each node, in order, as a window of one slice.
	t.children = make([]int32, 0, max(int(n)-1, 0))
	off := int32(0)
	for i := range t.nodes {
		t.nodes[i].first = off
		t.nodes[i].count = counts[i]
		off += counts[i]
	}
	t.children = t.children[:off]
	fill := make([]int32, n)
	for i := 1; i < len(t.nodes); i++ {
		par := t.nodes[i].parent
		pn := &t.nodes[par]
		t.children[pn.first+fill[par]] = int32(i)
		fill[par]++
	}
	for i := range t.nodes {
		nd := &t.nodes[i]
		for _, c := range t.children[nd.first : nd.first+nd.count] {
			if t.nodes[c].flags&flagNamed != 0 {
				nd.named++
			}
		}
	}
	return t, nil
}
