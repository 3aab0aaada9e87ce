package secretscan

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkCompile is the cost of the first scan of a Scanner: parsing the
// embedded rules and compiling their regular expressions.
func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		if _, err := compile(defaultConfig); err != nil {
			b.Fatal(err)
		}
	}
}

// sourceLines returns n lines of code that look like a service's source:
// the words that wake the generic rules (key, token, secret, password,
// auth) on many lines, and two credentials.
func sourceLines(n int) string {
	templates := []string{
		"func handle%d(w http.ResponseWriter, r *http.Request) {",
		"\ttoken := r.Header.Get(\"Authorization\") // auth header %d",
		"\tif err := validateKey(ctx, token, %d); err != nil {",
		"\t\treturn fmt.Errorf(\"checking secret %d: %%w\", err)",
		"\tcfg.Password = os.Getenv(\"DB_PASSWORD_%d\")",
		"\tlog.Printf(\"request %d served in %%s\", time.Since(start))",
		"\tapiKeyName := \"X-Api-Key-%d\"",
		"}",
		"",
		"# python: session = requests.Session(); session.auth = (user, os.environ['PASS_%d'])",
	}
	var sb strings.Builder
	for i := range n {
		switch i {
		case n / 3:
			sb.WriteString("const awsKey = \"AKIAZ3MSJV5WKQ7TYRXB\"\n")
		case 2 * n / 3:
			sb.WriteString("// token: ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4\n")
		default:
			t := templates[i%len(templates)]
			if strings.Contains(t, "%d") {
				t = fmt.Sprintf(t, i)
			}
			sb.WriteString(t + "\n")
		}
	}
	return sb.String()
}

// BenchmarkScan1000Lines scans a 1,000-line source file with compiled rules.
func BenchmarkScan1000Lines(b *testing.B) {
	s := Default()
	text := sourceLines(1000)
	fs, err := s.Scan(context.Background(), text)
	if err != nil || len(fs) != 2 {
		b.Fatalf("findings %v, error %v; want the two credentials", found(fs), err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := s.Scan(context.Background(), text); err != nil {
			b.Fatal(err)
		}
	}
}

// addressList is ~100 KB of a user directory as a tool returns it: an
// e-mail address in every record, each an "@" that the URL-password rule
// looks at.
func addressList() string {
	var sb strings.Builder
	for i := 0; sb.Len() < 100_000; i++ {
		fmt.Fprintf(&sb, `{"id":%d,"name":"Olga Kowalska","email":"olga.kowalska%d@fabrikam.de","role":"member of the sync team since 2024"},`, i, i)
	}
	return sb.String()
}

// BenchmarkScanAddresses: a text with an e-mail address in every line
// (the "@" of each opens the URL-password rule's gate; its window ends at
// the quotes around the address, which no part of that rule can match,
// and holds no "://").
func BenchmarkScanAddresses(b *testing.B) {
	text := addressList()
	s := Hub()
	if _, err := s.Scan(context.Background(), text); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := s.Scan(context.Background(), text); err != nil {
			b.Fatal(err)
		}
	}
}
