package detect

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// findEmail looks for an e-mail address around the '@' at text[at]:
// local@domain.tld with a dotted domain and an alphabetic top-level domain.
// Local parts and domains may be written in any script (RFC 6531 and 6532,
// IDNA: josé.pérez@correo.es, 用户@例子.中国) or in the ASCII form of an
// IDN (xn--). It leaves out what only looks like one: URL user info
// (https://user@host), scp-style remotes (git@github.com:org/repo.git,
// deploy@host:/srv), package versions (pkg@1.2.3), @mentions and npm
// scopes (nothing before the '@'), image variants (icon@2x.png), and the
// domains reserved for documentation and tests (RFC 2606 and 6761).
func findEmail(text string, at int) (Finding, bool) {
	start := at
	for start > 0 {
		if c := text[start-1]; c < utf8.RuneSelf {
			if class[c]&cLocal == 0 {
				break
			}
			start--
			continue
		}
		r, size := utf8.DecodeLastRuneInString(text[:start])
		if !isAddressRune(r) {
			break
		}
		start -= size
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
	for end < len(text) {
		if c := text[end]; c < utf8.RuneSelf {
			if class[c]&cHost == 0 {
				break
			}
			end++
			continue
		}
		r, size := utf8.DecodeRuneInString(text[end:])
		if !isAddressRune(r) {
			break
		}
		end += size
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
			// git@github.com:org/repo, deploy@host:/srv, user@host/path: a
			// remote, not an address.
			if end+1 < len(text) && (isWordByte(text[end+1]) || text[end+1] == '/' || text[end+1] == '~') {
				return Finding{}, false
			}
		case '@', '_':
			return Finding{}, false
		}
	}
	if documentationDomain(strings.ToLower(domain)) || placeholderAddress(text[start:at], domain) || remoteLogin(text, start) {
		return Finding{}, false
	}
	return Finding{RuleEmail, start, end}, true
}

// remoteLogin reports whether the candidate at text[start:] follows a
// remote login command on its line (ssh -o X=no deploy@gateway). Any such
// word before it on the line counts: an address in prose that names ssh
// before it on the same line is missed, a login is never taken for one.
func remoteLogin(text string, start int) bool {
	line := text[strings.LastIndexByte(text[:start], '\n')+1 : start]
	if len(line) > 512 {
		line = line[len(line)-512:]
	}
	for _, f := range strings.Fields(line) {
		// The commands that log in to a host as user@host, by name or path.
		switch f[strings.LastIndexByte(f, '/')+1:] {
		case "ssh", "scp", "sftp", "rsync", "mosh", "ssh-copy-id", "autossh":
			return true
		}
	}
	return false
}

// placeholderAddress reports the addresses documentation and forms write
// for "your address here": a placeholder domain (the undelegated .tld,
// domain.com, yourcompany.com, the German and French "example") or a
// placeholder name (firstname.lastname, john.doe, max.mustermann).
func placeholderAddress(local, domain string) bool {
	domain = strings.ToLower(domain)
	if strings.HasSuffix(domain, ".tld") {
		return true
	}
	switch domain {
	case "domain.com", "yourdomain.com", "mydomain.com", "yourcompany.com", "mycompany.com", "company.com",
		"beispiel.de", "exemple.fr", "ejemplo.com", "esempio.it":
		return true
	}
	switch strings.ToLower(local) {
	case "firstname.lastname", "first.last", "your.name", "yourname", "name.surname", "john.doe", "jane.doe",
		"max.mustermann", "erika.mustermann", "vorname.nachname", "prenom.nom", "nombre.apellido":
		return true
	}
	return false
}

// isAddressRune: a non-ASCII character of an address's local part or
// domain (RFC 6531, IDNA): a letter, mark or digit of any script.
func isAddressRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsMark(r) || unicode.IsDigit(r)
}

// validDomain: two or more labels of letters, digits and inner dashes, the
// last of letters (any script's) and at least two long, or an IDN's ASCII
// form (xn--), and not a file extension.
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
	if labels < 2 || utf8.RuneCountInString(last) < 2 {
		return false
	}
	for _, r := range last {
		if r < utf8.RuneSelf && class[byte(r)]&(cUpper|cLower) == 0 || r >= utf8.RuneSelf && !unicode.IsLetter(r) && !unicode.IsMark(r) {
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
