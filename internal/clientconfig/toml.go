package clientconfig

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Codex's config.toml is edited as text too: the hub's [mcp_servers.NAME]
// table (and its subtables) is replaced where it stands, or appended; the
// rest of the file, comments included, stays. A decoder then checks that
// nothing else changed.

func tomlString(s string) string { return string(encode(s, "", "")) }

func decodeTOML(b []byte) (map[string]any, error) {
	m := map[string]any{}
	if err := toml.Unmarshal(b, &m); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("not valid TOML: line %d, column %d: %s", row, col, de.Error())
		}
		return nil, fmt.Errorf("not valid TOML: %w", err)
	}
	return m, nil
}

var tableHeader = regexp.MustCompile(`^\s*\[`)

func mergeTOML(before []byte, name, table string) (string, error) {
	was, err := decodeTOML(before)
	if err != nil {
		return "", err
	}
	own := regexp.MustCompile(`^\s*\[\s*mcp_servers\s*\.\s*(?:` + regexp.QuoteMeta(name) + `|"` + regexp.QuoteMeta(name) + `"|'` + regexp.QuoteMeta(name) + `')\s*[\].]`)
	if strings.Contains(string(before), "\r\n") {
		table = strings.ReplaceAll(table, "\n", "\r\n")
	}
	var lines []string
	if len(before) > 0 {
		lines = strings.SplitAfter(string(before), "\n")
	}
	var out []string
	at := -1
	skipping := false
	for _, l := range lines {
		if tableHeader.MatchString(l) {
			skipping = own.MatchString(l)
			if skipping && at < 0 {
				at = len(out)
			}
		}
		if !skipping {
			out = append(out, l)
		}
	}
	var doc string
	if at >= 0 {
		doc = strings.Join(out[:at], "") + table
		if rest := strings.Join(out[at:], ""); rest != "" {
			doc += table[len(strings.TrimRight(table, "\r\n")):] + rest
		}
	} else {
		doc = strings.Join(out, "")
		eol := "\n"
		if strings.Contains(doc, "\r\n") {
			eol = "\r\n"
		}
		if doc != "" && !strings.HasSuffix(doc, "\n") {
			doc += eol
		}
		if strings.TrimSpace(doc) != "" {
			doc += eol
		}
		doc += table
	}
	is, err := decodeTOML([]byte(doc))
	if err != nil {
		return "", fmt.Errorf("the merged file would not be valid TOML (is mcp_servers.%s written another way?): refusing", name)
	}
	want, _ := decodeTOML([]byte(table))
	if !reflect.DeepEqual(cut(is, []string{"mcp_servers", name}), cut(want, []string{"mcp_servers", name})) {
		return "", errors.New("the merged entry does not read back as written: refusing")
	}
	cut(was, []string{"mcp_servers", name})
	if !reflect.DeepEqual(was, is) {
		return "", errors.New("merging would change more than the hub's entry: refusing")
	}
	return doc, nil
}
