package resultcap

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// issue is one issue of a GitHub issues page, as a tool returns it.
type issue struct {
	URL       string   `json:"url"`
	Number    int      `json:"number"`
	Title     string   `json:"title"`
	User      string   `json:"user"`
	Labels    []string `json:"labels"`
	State     string   `json:"state"`
	Comments  int      `json:"comments"`
	CreatedAt string   `json:"created_at"`
	Body      string   `json:"body"`
}

// issuesText is a page of issues as a tool returns it: JSON as text, full
// of quotes and line breaks that are escaped again in the result, of
// chars characters (the last body is padded to make it so).
func issuesText(chars, from int) string {
	var page []issue
	text := "[]"
	for n := from; ; n++ {
		page = append(page, issue{
			URL:    fmt.Sprintf("https://api.github.com/repos/purko-io/mcp-hub/issues/%d", n),
			Number: n,
			Title:  fmt.Sprintf("Résultat coupé: \"tools/call\" answer #%d loses its tail", n),
			User:   "olga-" + fmt.Sprint(n%17),
			Labels: []string{"bug", "area/pipeline", "needs-triage"},
			State:  "open", Comments: n % 9, CreatedAt: "2025-03-14T09:26:53Z",
			Body: "### What happened\n\nCalling `search_issues` with `{\"q\": \"is:open\"}` returns 😀 a page that is cut.\n\n" +
				"```json\n{\"total_count\": 1234, \"incomplete_results\": false}\n```\n\n### Expected\n\nThe whole page, or a notice that says it was cut, so the model can ask for a narrower " +
				"query or a smaller page instead of reading a stump as if it were the whole answer. It happens with every " +
				"backend we tried, over stdio and over HTTP, with and without the cache.\n",
		})
		next := marshalIssues(page)
		if utf8.RuneCountInString(next) > chars {
			page = page[:len(page)-1]
			break
		}
		text = next
	}
	pad := chars - utf8.RuneCountInString(text)
	page[len(page)-1].Body += strings.Repeat("More detail. ", pad/13+1)[:pad]
	return marshalIssues(page)
}

func marshalIssues(page []issue) string {
	b, err := json.Marshal(page)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// benchResult is a tools/call result of parts text parts that hold about
// 100,150 characters in all.
func benchResult(b *testing.B, parts int) json.RawMessage {
	b.Helper()
	var content []map[string]string
	for i := range parts {
		content = append(content, map[string]string{"type": "text", "text": issuesText(100150/parts, i*1000)})
	}
	raw, err := json.Marshal(map[string]any{"content": content, "isError": false})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

func BenchmarkApply(b *testing.B) {
	one, twenty := benchResult(b, 1), benchResult(b, 20)
	for _, bc := range []struct {
		name  string
		raw   json.RawMessage
		limit int
	}{
		{"cut", one, 100000},
		{"under the cap", one, len(one) + 1},
		{"read, not cut", one, 100000 + 2000}, // more bytes than limit, fewer characters
		{"20 parts cut", twenty, 100000},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.raw)))
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := Apply(bc.raw, bc.limit, hint); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
