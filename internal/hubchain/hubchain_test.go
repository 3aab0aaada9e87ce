package hubchain

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestIDOf(t *testing.T) {
	a, b := IDOf("mcp/mcp-hub"), IDOf("mcp/mcp-hub")
	if a != b || !valid(string(a)) {
		t.Fatalf("IDOf of one name: %q, %q; want equal valid ids", a, b)
	}
	if IDOf("other/mcp-hub") == a {
		t.Fatal("two names, one id")
	}
	r1, r2 := IDOf(""), IDOf("")
	if r1 == r2 || !valid(string(r1)) || !valid(string(r2)) {
		t.Fatalf("random ids %q, %q: want two different valid ids", r1, r2)
	}
	if strings.Contains(string(a), "mcp") {
		t.Fatalf("id %q shows the name", a)
	}
}

func ids(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%016x", i+1)
	}
	return out
}

func TestParse(t *testing.T) {
	many := ids(MaxIDs + 10)
	for _, tc := range []struct {
		name   string
		values []string
		want   []ID
	}{
		{"absent", nil, nil},
		{"empty", []string{""}, nil},
		{"one", []string{"00000000000000aa"}, []ID{"00000000000000aa"}},
		{"spaces and repeats", []string{" 00000000000000aa , 00000000000000bb,00000000000000aa"}, []ID{"00000000000000aa", "00000000000000bb"}},
		{"several header lines", []string{"00000000000000aa", "00000000000000bb"}, []ID{"00000000000000aa", "00000000000000bb"}},
		{"not ids skipped", []string{"hub-a,00000000000000AA,0000000000000000aa,<script>,00000000000000cc"}, []ID{"00000000000000cc"}},
		{"at most MaxIDs", []string{strings.Join(many, ",")}, func() []ID {
			var out []ID
			for _, s := range many[:MaxIDs] {
				out = append(out, ID(s))
			}
			return out
		}()},
		// Junk first uses up the budget: an id after it is not read.
		{"bytes bounded", []string{strings.Repeat("x", maxHeaderLen) + ",00000000000000aa"}, nil},
		{"bytes bounded across lines", []string{strings.Repeat(",", maxHeaderLen), "00000000000000aa"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Parse(tc.values); !slices.Equal(got, tc.want) {
				t.Errorf("Parse = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestChainHeader(t *testing.T) {
	c := New("ns/hub")
	own := string(c.Own())
	if got := c.HeaderValues(); !slices.Equal(got, []string{own}) {
		t.Fatalf("header of a hub without upstreams = %v, want its own id", got)
	}
	if c.Instance() != "ns/hub" || New("").Instance() == "" {
		t.Fatalf("Instance = %q", c.Instance())
	}

	b, d := IDOf("b"), IDOf("d")
	l1, l2 := c.Link(), c.Link()
	l1.Set([]ID{d, b})
	l2.Set([]ID{b, c.Own()}) // its own id from a link is not repeated
	sorted := []string{string(b), string(d)}
	slices.Sort(sorted)
	want := own + "," + strings.Join(sorted, ",")
	if got := c.HeaderValues(); !slices.Equal(got, []string{want}) {
		t.Fatalf("header = %v, want %q", got, want)
	}
	if got := Parse(c.HeaderValues()); !c.Loops(got) || got[0] != c.Own() {
		t.Fatalf("the hub's own header, parsed, %v: does not start with its id", got)
	}
	if c.Loops([]ID{b, d}) {
		t.Fatal("a chain without the hub's id loops")
	}

	l1.Close()
	l1.Set([]ID{d}) // an answer still in flight after the upstream stopped
	if got := c.HeaderValues(); !slices.Equal(got, []string{own + "," + string(b)}) {
		t.Fatalf("after a link closed: %v", got)
	}
	l2.Set(nil)
	if got := c.HeaderValues(); !slices.Equal(got, []string{own}) {
		t.Fatalf("after every link emptied: %v", got)
	}

	// More than MaxIDs hubs behind: the header keeps its bound, own id first.
	l3 := c.Link()
	var lots []ID
	for _, s := range ids(2 * MaxIDs) {
		lots = append(lots, ID(s))
	}
	l3.Set(lots)
	got := Parse(c.HeaderValues())
	if len(got) != MaxIDs || got[0] != c.Own() {
		t.Fatalf("bounded header: %d ids starting %v", len(got), got[:1])
	}
}

// BenchmarkHeaderValues is the cost the answer path pays.
func BenchmarkHeaderValues(b *testing.B) {
	c := New("ns/hub")
	c.Link().Set([]ID{IDOf("x"), IDOf("y")})
	for b.Loop() {
		_ = c.HeaderValues()
	}
}
