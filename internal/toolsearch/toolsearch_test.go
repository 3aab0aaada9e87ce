package toolsearch

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// catalog1000 is a realistic 1,000-tool catalog: ten made-up services, each
// with verbs x entities named like real MCP servers name them, plus a few
// tools in other naming styles (camelCase, kebab-case).
func catalog1000() []Doc {
	services := []string{"acme_tracker", "northwind_crm", "globex_billing", "initech_docs", "umbrella_monitoring",
		"stark_deploy", "wayne_storage", "hooli_chat", "soylent_inventory", "vandelay_shipping"}
	entities := []string{"issue", "project", "milestone", "repository", "branch", "pull_request", "deployment", "incident",
		"alert", "dashboard", "customer", "invoice", "order", "product", "shipment", "document", "page", "channel",
		"message", "user", "team", "bucket", "volume", "snapshot", "cluster"}
	verbs := map[string]string{
		"get": "Get one %s by its ID. Returns every field.", "list": "List %ss, newest first, 100 per page.",
		"create": "Create a %s. A title is required.", "update": "Update fields of a %s.",
		"delete": "Delete a %s permanently. This cannot be undone.", "search": "Full-text search over %ss.",
		"close": "Close a %s.", "assign": "Assign a %s to a user or team.",
	}
	verbNames := []string{"get", "list", "create", "update", "delete", "search", "close", "assign"}
	docs := []Doc{
		{"getFileContents", "Read the contents of a file or directory in a repository at a ref."},
		{"run-sql-query", "Run a read-only SQL query against the analytics warehouse and return rows as JSON."},
		{"send_slack_message", "Post a message to a Slack channel as the bot user."},
		{"get_weather_forecast", "Weather forecast for a city for the next seven days."},
	}
	for _, ent := range entities {
		for _, svc := range services {
			human := strings.ReplaceAll(svc, "_", " ")
			for _, v := range verbNames {
				if len(docs) == 1000 {
					return docs
				}
				e := strings.ReplaceAll(ent, "_", " ")
				docs = append(docs, Doc{Name: svc + "_" + v + "_" + ent, Description: fmt.Sprintf(verbs[v], e) + " In " + human + "."})
			}
		}
	}
	return docs
}

func TestSearchRanksTheObviousToolFirst(t *testing.T) {
	docs := catalog1000()
	if len(docs) != 1000 {
		t.Fatalf("catalog has %d tools, want 1000", len(docs))
	}
	ix := New(docs)
	tests := []struct {
		query string
		want  string // name of the first hit, or its suffix when it starts with *
	}{
		{"create a pull request", "*_create_pull_request"},
		{"create a pull request in stark deploy", "stark_deploy_create_pull_request"},
		{"read a file from the repo", "getFileContents"},
		{"file contents", "getFileContents"},
		{"SQL query", "run-sql-query"},
		{"post a message to slack", "send_slack_message"},
		{"weather", "get_weather_forecast"},
		{"delete invoices globex billing", "globex_billing_delete_invoice"},
		{"list open issues", "*_list_issue"},
		{"assign incident to a team umbrella monitoring", "umbrella_monitoring_assign_incident"},
		{"hooliChat searchDeployments", "hooli_chat_search_deployment"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := ix.Search(tt.query, 5, nil)
			if len(hits) == 0 {
				t.Fatal("no hits")
			}
			got := docs[hits[0].Doc].Name
			ok := got == tt.want
			if suffix, found := strings.CutPrefix(tt.want, "*"); found {
				ok = strings.HasSuffix(got, suffix)
			}
			if !ok {
				var names []string
				for _, h := range hits {
					names = append(names, fmt.Sprintf("%s(%.2f)", docs[h.Doc].Name, h.Score))
				}
				t.Errorf("first hit %s, want %s; hits %v", got, tt.want, names)
			}
		})
	}
}

func TestSearchKeepsOnlyWhatKeepAccepts(t *testing.T) {
	docs := catalog1000()
	ix := New(docs)
	readOnly := func(d int) bool {
		n := docs[d].Name
		return !strings.Contains(n, "_create_") && !strings.Contains(n, "_delete_") && !strings.Contains(n, "_update_")
	}
	for _, q := range []string{"create a pull request", "delete invoice", "update customer"} {
		for _, h := range ix.Search(q, 50, readOnly) {
			if !readOnly(h.Doc) {
				t.Errorf("%q: hit %s that keep refused", q, docs[h.Doc].Name)
			}
		}
	}
}

func TestSearchLimitAndNoMatch(t *testing.T) {
	ix := New(catalog1000())
	tests := []struct {
		query string
		limit int
		want  int
	}{
		{"issue", 10, 10},
		{"issue", 3, 3},
		{"issue", 0, 0},
		{"xylophone quartz", 10, 0},
		{"", 10, 0},
		{"the a of", 10, 0}, // stop words only
	}
	for _, tt := range tests {
		if got := len(ix.Search(tt.query, tt.limit, nil)); got != tt.want {
			t.Errorf("Search(%q, %d): %d hits, want %d", tt.query, tt.limit, got, tt.want)
		}
	}
	if hits := New(nil).Search("issue", 10, nil); hits != nil {
		t.Errorf("empty index: %v", hits)
	}
}

func TestTerms(t *testing.T) {
	tests := []struct{ in, want string }{
		{"create_pull_request", "create pull request"},
		{"createPullRequest", "create pull request"},
		{"run-sql-query", "run sql query"},
		{"HTTPServerStatus", "http server status"},
		{"get_s3Bucket2Files", "get s3 bucket2 file"},
		{"List the repositories, issues and boxes", "list repository issue box"},
		{"status class", "status class"},
	}
	for _, tt := range tests {
		if got := strings.Join(Terms(tt.in), " "); got != tt.want {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSearchIsDeterministic(t *testing.T) {
	ix := New(catalog1000())
	first := ix.Search("list", 20, nil)
	for range 5 {
		if got := ix.Search("list", 20, nil); !slices.Equal(got, first) {
			t.Fatalf("order changed: %v vs %v", got, first)
		}
	}
}

// BenchmarkNew is the index build on each catalog change (1,000 tools).
func BenchmarkNew(b *testing.B) {
	docs := catalog1000()
	for b.Loop() {
		New(docs)
	}
}

// BenchmarkSearch is one find_tools ranking over 1,000 tools.
func BenchmarkSearch(b *testing.B) {
	ix := New(catalog1000())
	for b.Loop() {
		ix.Search("create a pull request", 10, nil)
	}
}
