// Package lint checks a config file as a linter does: every mistake in one
// run, each with its line and column and the field's path, a suggestion for
// a misspelt field, stdio commands looked up on PATH and URLs checked for a
// scheme. `mcp-hub validate FILE` prints what it finds.
//
// The checks are config.Parse's own (so the linter and the hub never
// disagree), run again and again: after each mistake Parse reports, the
// list element or field it names is taken out of the document and the rest
// is parsed anew, until Parse accepts what is left. Unknown fields, which
// Parse reports only one at a time, are found first by a walk of the YAML
// nodes against the config's Go types.
package lint

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/purko-io/mcp-hub/internal/config"
)

// Problem is one mistake in a config file.
type Problem struct {
	// Line and Column are where it is (1-based); 0 when it has no place
	// in the file (an unset environment variable, say).
	Line, Column int
	// Path is the field, as the hub's errors name it:
	// servers[2] (gh).command; empty for the file as a whole.
	Path    string
	Message string
}

// Format is the problem as a compiler or linter prints it:
// hub.yaml:12:5: servers[2] (gh).comand: unknown field; did you mean "command"?
func (p Problem) Format(file string) string {
	where := file
	if p.Line > 0 {
		where = fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column)
	}
	if p.Path == "" {
		return where + ": " + p.Message
	}
	return where + ": " + p.Path + ": " + p.Message
}

// Options change what Check looks at.
type Options struct {
	// LookPath finds a stdio server's command; exec.LookPath when nil.
	LookPath func(string) (string, error)
}

// maxRounds bounds the parse-and-remove rounds: a file with more mistakes
// than that gets the first ones.
const maxRounds = 200

// Check returns every mistake in data, the config file name, sorted by
// place; none when the hub would accept it.
func Check(name string, data []byte, o Options) []Problem {
	if o.LookPath == nil {
		o.LookPath = exec.LookPath
	}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return []Problem{syntaxProblem(err)}
	}
	if len(root.Content) == 0 || root.Content[0].Kind != yaml.MappingNode {
		if _, err := config.Parse(name, data); err != nil {
			return []Problem{{Line: 1, Column: 1, Message: strings.TrimPrefix(err.Error(), "config "+name+": ")}}
		}
		return nil
	}
	// What the hub's YAML reader refuses that this one took (an anchor
	// that holds itself) is a syntax error too.
	if _, err := config.Parse(name, data); err != nil {
		if msg := strings.TrimPrefix(err.Error(), "config "+name+": "); strings.HasPrefix(msg, "yaml: ") {
			return []Problem{syntaxProblem(errors.New(msg))}
		}
	}
	doc := root.Content[0]
	expandAliases(doc, map[*yaml.Node]bool{}, map[*yaml.Node]bool{})
	if size(doc, map[*yaml.Node]int{}) > maxNodes {
		return []Problem{{Line: 1, Column: 1, Message: fmt.Sprintf("more than %d values with its aliases expanded", maxNodes)}}
	}
	l := &linter{index: map[*yaml.Node]int{}}
	l.numberItems(doc)
	l.walk(doc, reflect.TypeFor[config.Config](), "")
	l.checkServers(doc, o.LookPath)
	l.parseRounds(name, doc)
	sort.SliceStable(l.problems, func(i, j int) bool {
		a, b := l.problems[i], l.problems[j]
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	return l.problems
}

// linter collects problems over one document, which it edits: what a
// problem names is taken out (cut) before the next round of parsing.
type linter struct {
	problems []Problem
	// index is each list item's index in the file as written, so that a
	// problem found after items were cut still names the item by it.
	index map[*yaml.Node]int
}

func (l *linter) add(n *yaml.Node, path, msg string) {
	p := Problem{Path: path, Message: msg}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	l.problems = append(l.problems, p)
}

func (l *linter) numberItems(n *yaml.Node) {
	for i, c := range n.Content {
		if n.Kind == yaml.SequenceNode {
			l.index[c] = i
		}
		l.numberItems(c)
	}
}

// expandAliases replaces each alias (*name) under n by what it names, so
// that cutting a field never leaves an alias without its anchor; an alias
// of its own ancestor becomes null. done are the nodes already expanded,
// onPath n's ancestors.
func expandAliases(n *yaml.Node, done, onPath map[*yaml.Node]bool) {
	done[n], onPath[n] = true, true
	defer delete(onPath, n)
	n.Anchor = ""
	for i, c := range n.Content {
		for c.Kind == yaml.AliasNode && c.Alias != nil {
			c = c.Alias
		}
		if onPath[c] {
			c = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: n.Content[i].Line, Column: n.Content[i].Column}
		}
		n.Content[i] = c
		if !done[c] {
			expandAliases(c, done, onPath)
		}
	}
}

// maxNodes bounds the expanded document: aliases of aliases can make a
// small file a huge one.
const maxNodes = 100000

// size is the number of nodes of n with aliases expanded, at most
// maxNodes+1; memo holds the sizes of nodes already counted.
func size(n *yaml.Node, memo map[*yaml.Node]int) int {
	if v, ok := memo[n]; ok {
		return v
	}
	total := 1
	for _, c := range n.Content {
		total = min(total+size(c, memo), maxNodes+1)
	}
	memo[n] = total
	return total
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxProblem is a YAML syntax error, at its line.
func syntaxProblem(err error) Problem {
	msg := err.Error()
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Column: 1, Message: "not YAML: " + m[2]}
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	return Problem{Message: "not YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// walk reports the mapping keys of n that are no field of t (as
// encoding/json matches them: by json tag, any case), and cuts them.
func (l *linter) walk(n *yaml.Node, t reflect.Type, path string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if isLeaf(t) {
		return
	}
	switch t.Kind() {
	case reflect.Slice:
		if n.Kind == yaml.SequenceNode {
			for i, item := range n.Content {
				l.walk(item, t.Elem(), fmt.Sprintf("%s[%d]%s", path, i, nameHint(item)))
			}
		}
	case reflect.Map:
		if n.Kind == yaml.MappingNode {
			for i := 1; i < len(n.Content); i += 2 {
				l.walk(n.Content[i], t.Elem(), join(path, n.Content[i-1].Value))
			}
		}
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return // config.Parse says what it wants instead
		}
		fields := jsonFields(t)
		kept := n.Content[:0]
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag == "!!merge" {
				kept = append(kept, k, v) // <<: *anchor, the anchor's fields checked where it is
				continue
			}
			ft, ok := fieldType(fields, k.Value)
			if !ok {
				l.add(k, join(path, k.Value), unknownField(k.Value, fields))
				continue
			}
			l.walk(v, ft, join(path, k.Value))
			kept = append(kept, k, v)
		}
		n.Content = kept
	}
}

// isLeaf: a type that decodes itself (Duration) or anything (any) has no
// fields to check.
func isLeaf(t reflect.Type) bool {
	type jsonUnmarshaler interface{ UnmarshalJSON([]byte) error }
	return t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(reflect.TypeFor[jsonUnmarshaler]())
}

// jsonFields are t's fields by JSON name, embedded structs' inlined.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

func fieldType(fields map[string]reflect.Type, key string) (reflect.Type, bool) {
	if t, ok := fields[key]; ok {
		return t, true
	}
	for name, t := range fields {
		if strings.EqualFold(name, key) {
			return t, true
		}
	}
	return nil, false
}

// unknownField is the message for key: the known field nearest to it, or
// the known fields when they are few.
func unknownField(key string, fields map[string]reflect.Type) string {
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range fields {
			if !yield(k) {
				return
			}
		}
	})
	best, bestD := "", 1<<30
	for _, name := range names {
		if d := distance(strings.ToLower(key), strings.ToLower(name)); d < bestD {
			best, bestD = name, d
		}
	}
	if best != "" && (bestD <= 2 || bestD <= len(key)/3 || strings.Contains(strings.ToLower(best), strings.ToLower(key))) {
		return fmt.Sprintf("unknown field; did you mean %q?", best)
	}
	if len(names) <= 12 {
		return "unknown field; known fields here: " + strings.Join(names, ", ")
	}
	return "unknown field"
}

// distance is the Levenshtein edit distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// nameHint is " (NAME)" for a list item with a name, as the hub's errors
// write it.
func nameHint(item *yaml.Node) string {
	if v := mapValue(item, "name"); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
		return " (" + v.Value + ")"
	}
	return ""
}

// mapValue is the value of key in mapping n (any case), nil when absent.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if strings.EqualFold(n.Content[i].Value, key) {
			return n.Content[i+1]
		}
	}
	return nil
}

// checkServers adds what config.Parse cannot know to its checks of each
// stdio server and URL: the command is on PATH, the URL has a scheme. A
// server with such a problem is cut.
func (l *linter) checkServers(doc *yaml.Node, lookPath func(string) (string, error)) {
	servers := mapValue(doc, "servers")
	if servers == nil || servers.Kind != yaml.SequenceNode {
		return
	}
	kept := servers.Content[:0]
	for i, item := range servers.Content {
		path := fmt.Sprintf("servers[%d]%s", i, nameHint(item))
		bad := false
		if c := mapValue(item, "command"); c != nil && c.Kind == yaml.ScalarNode && c.Value != "" {
			if _, err := lookPath(c.Value); err != nil {
				msg := fmt.Sprintf("%q not found on PATH", c.Value)
				if strings.ContainsRune(c.Value, '/') {
					msg = fmt.Sprintf("%q is not an executable file", c.Value)
				}
				l.add(c, path+".command", msg)
				bad = true
			}
		}
		if u := mapValue(item, "url"); u != nil && u.Kind == yaml.ScalarNode && u.Value != "" && !strings.Contains(u.Value, "://") {
			l.add(u, path+".url", fmt.Sprintf("%q has no scheme: want http://, https://, ws:// or wss://", u.Value))
			bad = true
		}
		if !bad {
			kept = append(kept, item)
		}
	}
	servers.Content = kept
}

// errPathRE is the field an error of config.Parse starts with, name hints
// included: servers[0] (gh).token.
var errPathRE = regexp.MustCompile(`^([A-Za-z_]\w*(?:\[\d+\])*(?: \([^)]*\))?(?:\.[A-Za-z_$]\w*(?:\[\d+\])*(?: \([^)]*\))?)*): (.+)$`)

var hintRE = regexp.MustCompile(` \([^)]*\)`)

// parseRounds runs config.Parse on what is left of doc until it accepts
// it, each time reporting the mistake and cutting what it names.
func (l *linter) parseRounds(name string, doc *yaml.Node) {
	for range maxRounds {
		data, err := yaml.Marshal(doc)
		if err != nil {
			l.add(nil, "", fmt.Sprintf("re-encode the document: %v", err))
			return
		}
		_, err = config.Parse(name, data)
		if err == nil {
			return
		}
		msg := typeError(strings.TrimPrefix(err.Error(), "config "+name+": "))
		m := errPathRE.FindStringSubmatch(msg)
		if m == nil {
			l.add(nil, "", msg)
			return
		}
		node, path, cut, rename := l.resolve(doc, m[1])
		if cut == nil {
			l.add(nil, m[1], m[2])
			return
		}
		msg = rename(m[2])
		if n := len(l.problems); n > 0 && l.problems[n-1].Path == path && l.problems[n-1].Message == msg {
			return // cutting did not help: say it once
		}
		l.add(node, path, msg)
		cut()
	}
}

// typeErrorRE is encoding/json's error for a value of the wrong type.
var typeErrorRE = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field \w+\.(\S+) of type (\S+)`)

// typeError is msg in the linter's form, "FIELD: got a number, want a
// list", when it is encoding/json's error for a value of the wrong type.
func typeError(msg string) string {
	m := typeErrorRE.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	want := strings.TrimPrefix(m[3], "*")
	switch {
	case strings.HasPrefix(want, "[]"):
		want = "a list"
	case strings.HasPrefix(want, "map["), strings.Contains(want, "."):
		want = "a mapping"
	}
	got := map[string]string{"number": "a number", "string": "a string", "bool": "true or false", "array": "a list", "object": "a mapping"}[m[1]]
	return fmt.Sprintf("%s: got %s, want %s", m[2], cmp.Or(got, m[1]), want)
}

var segmentRE = regexp.MustCompile(`^([^\[]+)((?:\[\d+\])*)$`)
var indexRE = regexp.MustCompile(`\[(\d+)\]`)

// resolve finds the node an error's path names in doc (the deepest part
// of it that is there), the path with the file's indices, a cut that takes
// out the outermost list item on the path, or else the field, and rename,
// which gives the items of that list named in a message (servers[2]) the
// file's indices too.
func (l *linter) resolve(doc *yaml.Node, errPath string) (node *yaml.Node, path string, cut func(), rename func(string) string) {
	cur := doc
	var outerList *yaml.Node
	var outerItem int
	outerKey := ""
	var lastMap *yaml.Node
	var lastKey int
	indices := []string{}
	for seg := range strings.SplitSeq(hintRE.ReplaceAllString(errPath, ""), ".") {
		m := segmentRE.FindStringSubmatch(seg)
		if m == nil || cur.Kind != yaml.MappingNode {
			break
		}
		found := -1
		for i := 0; i+1 < len(cur.Content); i += 2 {
			if strings.EqualFold(cur.Content[i].Value, m[1]) {
				found = i
			}
		}
		if found < 0 {
			break
		}
		lastMap, lastKey = cur, found
		cur = cur.Content[found+1]
		for _, im := range indexRE.FindAllStringSubmatch(m[2], -1) {
			i, _ := strconv.Atoi(im[1])
			if cur.Kind != yaml.SequenceNode || i >= len(cur.Content) {
				break
			}
			if outerList == nil {
				outerList, outerItem, outerKey = cur, i, m[1]
			}
			cur = cur.Content[i]
			indices = append(indices, "["+strconv.Itoa(l.index[cur])+"]")
		}
	}
	rename = func(msg string) string { return msg }
	if lastMap == nil {
		return nil, errPath, nil, rename
	}
	// The path as the error wrote it, with the file's indices.
	n := 0
	path = indexRE.ReplaceAllStringFunc(errPath, func(s string) string {
		if n < len(indices) {
			s = indices[n]
		}
		n++
		return s
	})
	if outerList != nil {
		items := regexp.MustCompile(`\b` + regexp.QuoteMeta(outerKey) + `\[(\d+)\]`)
		rename = func(msg string) string {
			return items.ReplaceAllStringFunc(msg, func(s string) string {
				i, _ := strconv.Atoi(items.FindStringSubmatch(s)[1])
				if i >= len(outerList.Content) {
					return s
				}
				return fmt.Sprintf("%s[%d]", outerKey, l.index[outerList.Content[i]])
			})
		}
		return cur, path, func() { outerList.Content = slices.Delete(outerList.Content, outerItem, outerItem+1) }, rename
	}
	return cur, path, func() { lastMap.Content = slices.Delete(lastMap.Content, lastKey, lastKey+2) }, rename
}

// File checks the config file at path; the error is for a file it cannot
// read.
func File(path string, o Options) ([]Problem, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return Check(path, data, o), nil
}
