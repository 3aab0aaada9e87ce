package detect

import "strings"

// findEmail looks for an e-mail address around the '@' at text[at]:
// local@domain.tld with a dotted domain and an alphabetic top-level domain.
// It leaves out what only looks like one: URL user info
// (https://user@host), scp-style remotes (git@github.com:org/repo.git),
// package versions (pkg@1.2.3), @mentions and npm scopes (nothing before
// the '@'), image variants (icon@2x.png), and the domains reserved for
// documentation and tests (RFC 2606 and 6761).
func findEmail(text string, at int) (Finding, bool) {
	start := at
	for start > 0 && class[text[start-1]]&cLocal != 0 {
		start--
	}
	// The local part neither starts nor ends with a dot.
	for start < at && text[start] == '.' {
		start++
	}
	if start == at || text[at-1] == '.' || strings.Contains(text[start:at], "..") {
		return Finding{}, false
	}
	if start > 0 {
		switch text[start-1] {
		case '/', ':', '@':
			// https://user@host, user:pass@host; mailto:x@y is an address.
			if !strings.HasSuffix(text[:start], "mailto:") {
				return Finding{}, false
			}
		}
	}
	end := at + 1
	for end < len(text) && class[text[end]]&cHost != 0 {
		end++
	}
	// A sentence's full stop or a dash after the address is not its own.
	for end > at+1 && (text[end-1] == '.' || text[end-1] == '-') {
		end--
	}
	domain := text[at+1 : end]
	if !validDomain(domain) {
		return Finding{}, false
	}
	if end < len(text) {
		switch text[end] {
		case ':', '/':
			// git@github.com:org/repo, user@host/path: a remote, not an address.
			if end+1 < len(text) && isWordByte(text[end+1]) {
				return Finding{}, false
			}
		case '@', '_':
			return Finding{}, false
		}
	}
	if documentationDomain(strings.ToLower(domain)) {
		return Finding{}, false
	}
	return Finding{RuleEmail, start, end}, true
}

// validDomain: two or more labels of letters, digits and inner dashes, the
// last alphabetic and at least two long, and not a file extension.
func validDomain(d string) bool {
	if len(d) < 4 || len(d) > 253 {
		return false
	}
	labels := 0
	last := ""
	for rest := d; ; {
		label, after, more := strings.Cut(rest, ".")
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		labels++
		last = label
		if !more {
			break
		}
		rest = after
	}
	if labels < 2 || len(last) < 2 {
		return false
	}
	for i := 0; i < len(last); i++ {
		if class[last[i]]&(cUpper|cLower) == 0 {
			return strings.HasPrefix(strings.ToLower(last), "xn--")
		}
	}
	return !fileExtensions[strings.ToLower(last)]
}

// fileExtensions are endings that make "name@2x.png" or "lib@1.2.3.js" a
// file name; none is a top-level domain.
var fileExtensions = map[string]bool{
	"png": true, "jpg": true, "jpeg": true, "gif": true, "svg": true, "webp": true, "ico": true,
	"js": true, "mjs": true, "cjs": true, "ts": true, "tsx": true, "jsx": true, "css": true,
	"scss": true, "json": true, "yaml": true, "yml": true, "toml": true, "lock": true,
	"txt": true, "html": true, "htm": true, "xml": true, "csv": true, "log": true,
	"tgz": true, "gz": true, "zip": true, "wasm": true, "java": true, "kt": true, "rb": true,
}

// documentationDomain reports the domains reserved for documentation and
// testing: example.com, .org, .net and their subdomains, the .example,
// .test, .invalid and .localhost top-level domains, and localhost.
func documentationDomain(d string) bool {
	for _, base := range [...]string{"example.com", "example.org", "example.net"} {
		if d == base || strings.HasSuffix(d, "."+base) {
			return true
		}
	}
	for _, tld := range [...]string{".example", ".test", ".invalid", ".localhost"} {
		if strings.HasSuffix(d, tld) {
			return true
		}
	}
	return d == "localhost"
}
