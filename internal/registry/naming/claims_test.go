package naming

import (
	"context"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/purko-io/mcp-hub/internal/config"
	"github.com/purko-io/mcp-hub/internal/pinning"
)

// TestReplicasConverge: two replicas share one claim store and start with
// different servers up. Whichever claims first, the other adopts its
// claims, and once both see both servers they publish the same names.
func TestReplicasConverge(t *testing.T) {
	naming := config.Naming{Prefix: config.PrefixOnConflict, Separator: "__"}
	aEcho, bEcho := Key{"a", "echo"}, Key{"b", "echo"}
	for _, first := range []string{"a", "b"} {
		t.Run(first+" first", func(t *testing.T) {
			store := pinning.NewMemoryClaims()
			replica := func() *Claims {
				return NewClaims(store, naming, zerolog.Nop())
			}
			r1, r2 := replica(), replica() // r1 sees a up, r2 sees b up
			ctx := context.Background()
			servers := []string{"a", "b"}
			var n1, n2 map[Key]string
			if first == "a" {
				n1, _ = r1.Names(ctx, []Key{aEcho}, servers, nil, true, true)
				n2, _ = r2.Names(ctx, []Key{bEcho}, servers, nil, true, true)
			} else {
				n2, _ = r2.Names(ctx, []Key{bEcho}, servers, nil, true, true)
				n1, _ = r1.Names(ctx, []Key{aEcho}, servers, nil, true, true)
			}
			if n1[aEcho] == n2[bEcho] {
				t.Fatalf("a's and b's echo both published as %q", n1[aEcho])
			}
			both := []Key{aEcho, bEcho}
			all1, _ := r1.Names(ctx, both, servers, nil, true, true)
			all2, _ := r2.Names(ctx, both, servers, nil, true, true)
			if fmt.Sprint(all1) != fmt.Sprint(all2) || all1[aEcho] != n1[aEcho] || all2[bEcho] != n2[bEcho] {
				t.Fatalf("replicas disagree or renamed: r1 %v, r2 %v (first %v / %v)", all1, all2, n1, n2)
			}
			if winner := map[string]Key{"a": aEcho, "b": bEcho}[first]; all1[winner] != "echo" {
				t.Errorf("the first claimer's tool is %q, want echo", all1[winner])
			}
		})
	}
}
