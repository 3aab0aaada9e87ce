package detect

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// realisticStrings returns the string values of a ~100 KB tool result: a
// list of issues with comments (prose with a few words such as "token" and
// "key"), CI log lines, a file listing, and two findings of each filter.
// The second result is the document as JSON.
func realisticStrings(clean bool) ([]string, []byte) {
	type comment struct {
		Author    string `json:"author"`
		Body      string `json:"body"`
		CreatedAt string `json:"created_at"`
	}
	type issue struct {
		Number   int       `json:"number"`
		Title    string    `json:"title"`
		State    string    `json:"state"`
		Labels   []string  `json:"labels"`
		Body     string    `json:"body"`
		Comments []comment `json:"comments"`
		Log      string    `json:"log"`
		Files    string    `json:"files"`
		SHA      string    `json:"sha"`
	}
	prose := []string{
		"The sync job fails after the upgrade to v2.3.1; the worker restarts every few minutes.",
		"I can reproduce it on main with the default configuration and an empty cache directory.",
		"Looks like the retry budget is exhausted before the upstream answers, see the log below.",
		"We should rotate the deploy token after this, and move the signing key to the vault.",
		"Closing as a duplicate of the pagination bug; the fix lands in the next release.",
		"Thanks for the detailed report, this helps a lot. Could you attach the full trace?",
	}
	var issues []issue
	size := 0
	for i := 0; size < 100_000; i++ {
		var log strings.Builder
		for j := range 6 {
			fmt.Fprintf(&log, "2026-12-02T15:%02d:%02d.%03dZ INFO worker=%d GET /api/v1/items?page=%d status=200 dur=%dms bytes=%d\n", j, i%60, i*7%1000, i%8, j, 10+j, 1024*(i+j))
		}
		var files strings.Builder
		for j := range 5 {
			fmt.Fprintf(&files, "-rw-r--r-- 1 ci ci %7d Dec  2 15:%02d src/pkg%d/file_%d.go\n", 1000+i*j, j, i%9, j)
		}
		is := issue{
			Number: 4000 + i, Title: fmt.Sprintf("Sync fails after upgrade (%d)", i), State: "open",
			Labels: []string{"bug", "area/sync"}, Body: prose[i%len(prose)] + " " + prose[(i+1)%len(prose)],
			Log: log.String(), Files: files.String(), SHA: fmt.Sprintf("%040x", i*7919),
		}
		for j := range 3 {
			is.Comments = append(is.Comments, comment{Author: fmt.Sprintf("dev%d", j), Body: prose[(i+j)%len(prose)], CreatedAt: "2026-12-02T10:00:00Z"})
		}
		if !clean && i == 3 {
			is.Comments[0].Body += " Customer olga.kowalska@fabrikam.de called from +49 30 901820 about it."
			is.Log += "DEBUG env GITHUB_TOKEN=ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4\n"
		}
		if !clean && i == 11 {
			is.Body += " Card on file 4539 1488 0343 6467, contact priya@globex.com."
			is.Log += "boto: using AKIAZ3MSJV5WKQ7TYRXB\n"
		}
		b, _ := json.Marshal(is)
		size += len(b)
		issues = append(issues, is)
	}
	raw, _ := json.Marshal(issues)
	var strs []string
	for _, is := range issues {
		strs = append(strs, is.Title, is.State, is.Body, is.Log, is.Files, is.SHA)
		strs = append(strs, is.Labels...)
		for _, c := range is.Comments {
			strs = append(strs, c.Author, c.Body, c.CreatedAt)
		}
	}
	return strs, raw
}

func total(strs []string) int64 {
	n := 0
	for _, s := range strs {
		n += len(s)
	}
	return int64(n)
}

// worstCase is source code with a secret keyword on every line.
func worstCase(n int) string {
	var sb strings.Builder
	for i := range n {
		fmt.Fprintf(&sb, "\ttoken%d := auth.Key(ctx, secret, password[%d]) // api key %d\n", i, i, i)
	}
	return sb.String()
}

func BenchmarkPIIMaybeClean(b *testing.B) {
	_, raw := realisticStrings(true)
	p := NewPII()
	b.ReportMetric(float64(boolInt(p.Maybe(raw))), "maybe")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		p.Maybe(raw)
	}
}

func BenchmarkSecretsMaybeClean(b *testing.B) {
	_, raw := realisticStrings(true)
	s := NewSecrets()
	b.ReportMetric(float64(boolInt(s.Maybe(raw))), "maybe")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		s.Maybe(raw)
	}
}

// BenchmarkMaybeNoKeywords: Maybe of both filters on 100 KB that holds no
// keyword, '@' or long number (numbers, hashes, paths): the case Maybe
// exists for.
func BenchmarkMaybeNoKeywords(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, `{"path": "src/pkg%d/file_%d.go", "size": %d, "sha": "%040x", "mode": "0644"},`, i%9, i, 1000+i, i*7919)
	}
	raw := []byte("[" + strings.TrimSuffix(sb.String(), ",") + "]")
	p, s := NewPII(), NewSecrets()
	b.ReportMetric(float64(boolInt(p.Maybe(raw)))+2*float64(boolInt(s.Maybe(raw))), "maybe")
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		p.Maybe(raw)
		s.Maybe(raw)
	}
}

func BenchmarkPIIFind(b *testing.B) {
	strs, _ := realisticStrings(false)
	p := NewPII()
	var out []Finding
	n := 0
	for _, s := range strs {
		n += len(p.Find(s, out[:0]))
	}
	b.ReportMetric(float64(n), "findings")
	b.SetBytes(total(strs))
	for b.Loop() {
		for _, s := range strs {
			out = p.Find(s, out[:0])
		}
	}
}

func BenchmarkSecretsFind(b *testing.B) {
	strs, _ := realisticStrings(false)
	s := NewSecrets()
	ctx := context.Background()
	n := 0
	for _, t := range strs {
		fs, _ := s.Find(ctx, t, nil)
		n += len(fs)
	}
	b.ReportMetric(float64(n), "findings")
	b.SetBytes(total(strs))
	var out []Finding
	for b.Loop() {
		for _, t := range strs {
			out, _ = s.Find(ctx, t, out[:0])
		}
	}
}

func BenchmarkSecretsFindWorstCase(b *testing.B) {
	text := worstCase(1500)
	s := NewSecrets()
	ctx := context.Background()
	s.Find(ctx, text, nil)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		s.Find(ctx, text, nil)
	}
}

func BenchmarkPIIFindWorstCase(b *testing.B) {
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, "row %d: 2026-12-02 12:%02d:%02d 10.0.%d.%d 555-01%02d v1.%d.%d user%d@host\n", i, i%60, i%60, i%256, i%200, i%100, i%10, i%7, i)
	}
	text := sb.String()
	p := NewPII()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		p.Find(text, nil)
	}
}

func boolInt(v bool) int {
	if v {
		return 1
	}
	return 0
}

// TestMaybeSkipsPlainData: on a document of paths, sizes and hashes both
// Maybe are false, and on one with findings both are true.
func TestMaybeSkipsPlainData(t *testing.T) {
	var sb strings.Builder
	for i := 0; sb.Len() < 20_000; i++ {
		fmt.Fprintf(&sb, `{"path": "src/pkg%d/file_%d.go", "size": %d, "sha": "%040x", "mode": "0644"},`, i%9, i, 1000+i, i*7919)
	}
	raw := []byte("[" + strings.TrimSuffix(sb.String(), ",") + "]")
	if NewPII().Maybe(raw) || NewSecrets().Maybe(raw) {
		t.Error("Maybe true on plain data")
	}
	_, raw = realisticStrings(false)
	if !NewPII().Maybe(raw) || !NewSecrets().Maybe(raw) {
		t.Error("Maybe false on a document with findings")
	}
}
