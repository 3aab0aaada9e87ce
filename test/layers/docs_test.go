package layers

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// maxReadmeLines bounds the README: a guide for the first hour (issue 36),
// whose reference sections live in docs/.
const maxReadmeLines = 400

// pendingPages are pages linked before the branch that writes them is
// merged (none now): until then a link to one may point at nothing. A page
// still listed once it exists fails the test, so the list cannot outlive
// its reason.
func pendingPages() []string {
	return nil
}

// docLink is one link of a Markdown page: its target as written and the
// line it is on.
type docLink struct {
	target string
	line   int
}

// mdLink is a Markdown link or image, [text](target) or [text](target "title");
// htmlLink an HTML src or href attribute.
var (
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	htmlLink = regexp.MustCompile(`\b(?:src|href)="([^"]+)"`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	heading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	scheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// proseLines calls f with each line of md outside fenced code blocks, and
// its number (from 1).
func proseLines(md []byte, f func(n int, line string)) {
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	fence := ""
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence != "":
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
		default:
			f(n, line)
		}
	}
}

// slug is GitHub's anchor of a heading's text: lower case, letters, digits,
// spaces, hyphens and underscores kept (spaces become hyphens), the rest
// dropped.
func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// docHeading is a heading of a page: its level, text and anchor.
type docHeading struct {
	level  int
	text   string
	anchor string
}

// headings are md's headings in order, with GitHub's anchors (a repeated
// anchor gets -1, -2, ...).
func headings(md []byte) []docHeading {
	var out []docHeading
	seen := map[string]int{}
	proseLines(md, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := slug(m[2])
		if k := seen[a]; k > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, k)
		} else {
			seen[a] = 1
		}
		out = append(out, docHeading{level: len(m[1]), text: m[2], anchor: a})
	})
	return out
}

// links are md's links outside code: Markdown links and images, and HTML
// src and href attributes.
func links(md []byte) []docLink {
	var out []docLink
	proseLines(md, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "``")
		for _, re := range []*regexp.Regexp{mdLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, docLink{target: m[1], line: n})
			}
		}
	})
	return out
}

// brokenLinks are the relative links of page (a path under root) that
// point at no file, or at no heading of a Markdown page; pending names the
// pages (paths under root) that may be missing.
func brokenLinks(root, page string, pending []string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		return nil, err
	}
	var found []string
	for _, l := range links(text) {
		if scheme.MatchString(l.target) {
			continue // http:, https:, mailto:: not ours to check
		}
		path, frag, _ := strings.Cut(l.target, "#")
		target := page
		if path != "" {
			target = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), path)))
		}
		dest, err := os.ReadFile(filepath.Join(root, target))
		switch {
		case err != nil && os.IsNotExist(err) && slices.Contains(pending, target):
			continue
		case err != nil && os.IsNotExist(err):
			found = append(found, fmt.Sprintf("%s line %d: %s points at %s, which does not exist", page, l.line, l.target, target))
			continue
		case err != nil && !strings.Contains(err.Error(), "is a directory"):
			return nil, err
		}
		if frag == "" || !strings.HasSuffix(target, ".md") {
			continue
		}
		if !slices.ContainsFunc(headings(dest), func(h docHeading) bool { return h.anchor == frag }) {
			found = append(found, fmt.Sprintf("%s line %d: %s: %s has no heading with the anchor #%s", page, l.line, l.target, target, frag))
		}
	}
	return found, nil
}

// readmeProblems are the ways readme fails to be a guide: longer than
// maxReadmeLines, no table of contents (a "Contents" heading whose list
// links the page's own headings), a contents entry that points at no
// heading, or a second-level heading missing from the contents.
func readmeProblems(readme []byte) []string {
	var found []string
	if n := bytes.Count(readme, []byte("\n")); n > maxReadmeLines {
		found = append(found, fmt.Sprintf("README.md has %d lines, more than %d: move reference sections to docs/", n, maxReadmeLines))
	}
	hs := headings(readme)
	anchors := map[string]bool{}
	for _, h := range hs {
		anchors[h.anchor] = true
	}
	var toc []string
	in := false
	proseLines(readme, func(_ int, line string) {
		if m := heading.FindStringSubmatch(line); m != nil {
			in = strings.EqualFold(m[2], "Contents") || strings.EqualFold(m[2], "Table of contents")
			return
		}
		if !in {
			return
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			toc = append(toc, m[1])
		}
	})
	if len(toc) == 0 {
		return append(found, `README.md has no table of contents: a "## Contents" heading with a list of links to its sections`)
	}
	for _, t := range toc {
		if !strings.HasPrefix(t, "#") || !anchors[t[1:]] {
			found = append(found, fmt.Sprintf("README.md's contents link %s, which is no heading of the README", t))
		}
	}
	for _, h := range hs {
		if h.level == 2 && !strings.EqualFold(h.text, "Contents") && !strings.EqualFold(h.text, "Table of contents") &&
			!slices.Contains(toc, "#"+h.anchor) {
			found = append(found, fmt.Sprintf("README.md's contents leave out its section %q (#%s)", h.text, h.anchor))
		}
	}
	return found
}

// TestReadmeIsAGuide: the README is short, with a table of contents whose
// links reach its own sections and list every one of them.
func TestReadmeIsAGuide(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range readmeProblems(readme) {
		t.Error(p)
	}
}

// TestDocLinksResolve: every relative link of README.md and docs/*.md
// points at a file that exists, and an anchor into a Markdown page at one of
// its headings; only pendingPages may be missing, and only while they are.
func TestDocLinksResolve(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md found")
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, filepath.ToSlash(strings.TrimPrefix(d, root+string(filepath.Separator))))
	}
	checked := 0
	for _, page := range pages {
		found, err := brokenLinks(root, page, pendingPages())
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			t.Error(f)
		}
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		checked += len(links(text))
	}
	if checked == 0 {
		t.Fatal("no link found in README.md and docs/*.md: the reader reads nothing")
	}
	for _, p := range pendingPages() {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s exists now: take it off pendingPages, so a link to it is checked like any other", p)
		}
	}
}

// TestLinkChecker: the checkers themselves find what they are for (they
// would pass anything if they read nothing).
func TestLinkChecker(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/a.md", "# A\n\n## Tool search for large catalogs (`find_tools`)\n\n## Repeat\n\n## Repeat\n\n[up](../README.md#guide) [b](b.md)\n")
	write("docs/pic.png", "png")
	write("README.md", "# R\n\n## Guide\n\n"+
		"[ok](docs/a.md#tool-search-for-large-catalogs-find_tools) [ok2](docs/a.md#repeat-1) ![pic](docs/pic.png)\n"+
		"<img src=\"docs/pic.png\"> [web](https://example.com/x.md) [self](#guide) [dir](docs/)\n"+
		"[gone](docs/gone.md) [pending](docs/later.md) [bad anchor](docs/a.md#nope) [self bad](#nope)\n"+
		"`[in code](docs/code.md)`\n```\n[in a block](docs/block.md)\n```\n")
	for _, tc := range []struct {
		page string
		want []string
	}{
		{"README.md", []string{
			"README.md line 7: docs/gone.md points at docs/gone.md, which does not exist",
			"README.md line 7: docs/a.md#nope: docs/a.md has no heading with the anchor #nope",
			"README.md line 7: #nope: README.md has no heading with the anchor #nope",
		}},
		{"docs/a.md", []string{"docs/a.md line 9: b.md points at docs/b.md, which does not exist"}},
	} {
		t.Run(tc.page, func(t *testing.T) {
			got, err := brokenLinks(root, tc.page, []string{"docs/later.md"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}

	long := strings.Repeat("text\n", maxReadmeLines)
	for _, tc := range []struct {
		name, readme string
		want         []string
	}{
		{"a guide", "# R\n\n## Contents\n\n- [Install](#install)\n- [Run it](#run-it)\n\n## Install\n\n## Run it\n\n### Details\n", nil},
		{"too long", "# R\n\n## Contents\n\n- [Install](#install)\n\n## Install\n" + long,
			[]string{fmt.Sprintf("README.md has %d lines, more than %d: move reference sections to docs/", maxReadmeLines+7, maxReadmeLines)}},
		{"no contents", "# R\n\n## Install\n",
			[]string{`README.md has no table of contents: a "## Contents" heading with a list of links to its sections`}},
		{"a dead entry and a section left out", "# R\n\n## Contents\n\n- [Install](#instal)\n\n## Install\n\n## Run\n",
			[]string{"README.md's contents link #instal, which is no heading of the README",
				`README.md's contents leave out its section "Install" (#install)`,
				`README.md's contents leave out its section "Run" (#run)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readmeProblems([]byte(tc.readme)); !slices.Equal(got, tc.want) {
				t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
