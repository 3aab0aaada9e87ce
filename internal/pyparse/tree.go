package pyparse

// Tree is a parsed Python source: every node in one slice, read-only and
// safe to read from several goroutines.
type Tree struct {
	src      []byte
	nodes    []Node
	children []int32
	kinds    []string
	fields   []string
}

// Root is the module node.
func (t *Tree) Root() *Node {
	if len(t.nodes) == 0 {
		return nil
	}
	return &t.nodes[0]
}

// Len is the number of nodes, named or not.
func (t *Tree) Len() int { return len(t.nodes) }

// Point is a position in the source: Row and Column from 0, Column in
// bytes, as tree-sitter counts.
type Point struct {
	Row, Column uint
}

// Node is one node of a Tree. Its methods mirror go-tree-sitter's Node,
// whose semantics they keep: Kind is the grammar's node type, fields are
// the grammar's field names, positions are byte offsets into the source.
type Node struct {
	t             *Tree
	idx, parent   int32
	first, count  int32 // window of t.children
	named         int32
	start, end    uint32
	row, col      uint32
	symbol, field uint16
	flags         uint8
}

// Kind is the node's type in the grammar ("call", "identifier", "ERROR").
func (n *Node) Kind() string { return n.t.kinds[n.symbol] }

// IsNamed is false for anonymous nodes (punctuation and keywords).
func (n *Node) IsNamed() bool { return n.flags&flagNamed != 0 }

// IsError tells an ERROR node, where the parser skipped input it could
// not fit into the grammar.
func (n *Node) IsError() bool { return n.flags&flagError != 0 }

// IsMissing tells a node the parser inserted to recover from an error.
func (n *Node) IsMissing() bool { return n.flags&flagMissing != 0 }

// HasError tells whether the node or anything below it is an error or
// missing.
func (n *Node) HasError() bool { return n.flags&flagHasError != 0 }

// StartByte and EndByte delimit the node's text in the source.
func (n *Node) StartByte() uint { return uint(n.start) }

// EndByte is the offset just past the node's text.
func (n *Node) EndByte() uint { return uint(n.end) }

// StartPosition is where the node starts, by row and column.
func (n *Node) StartPosition() Point { return Point{Row: uint(n.row), Column: uint(n.col)} }

// Utf8Text is the node's text in source.
func (n *Node) Utf8Text(source []byte) string {
	if int(n.end) > len(source) {
		return ""
	}
	return string(source[n.start:n.end])
}

// Parent is nil for the root.
func (n *Node) Parent() *Node {
	if n.parent < 0 {
		return nil
	}
	return &n.t.nodes[n.parent]
}

// ChildCount counts every child, named or not.
func (n *Node) ChildCount() uint { return uint(n.count) }

// Child is the i-th child (nil when out of range).
func (n *Node) Child(i uint) *Node {
	if i >= uint(n.count) {
		return nil
	}
	return &n.t.nodes[n.t.children[uint(n.first)+i]]
}

// NamedChildCount counts the named children.
func (n *Node) NamedChildCount() uint { return uint(n.named) }

// NamedChild is the i-th named child (nil when out of range).
func (n *Node) NamedChild(i uint) *Node {
	for _, c := range n.t.children[n.first : n.first+n.count] {
		if n.t.nodes[c].flags&flagNamed == 0 {
			continue
		}
		if i == 0 {
			return &n.t.nodes[c]
		}
		i--
	}
	return nil
}

// ChildByFieldName is the first child in the named field (nil when none).
func (n *Node) ChildByFieldName(name string) *Node {
	for _, c := range n.t.children[n.first : n.first+n.count] {
		if f := n.t.nodes[c].field; f != 0 && n.t.fields[f] == name {
			return &n.t.nodes[c]
		}
	}
	return nil
}
