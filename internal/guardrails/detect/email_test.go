package detect

import "testing"

// TestEmailOrNot: what reads as an address is one; a login of a remote
// command, a remote's path or URL user info is not.
func TestEmailOrNot(t *testing.T) {
	p := NewPII()
	for _, tc := range []struct {
		text string
		want string // the address found; "" for none
	}{
		{"write to olga@fabrikam.de today", "olga@fabrikam.de"},
		{"mailto:olga@fabrikam.de", "olga@fabrikam.de"},
		{"josé.pérez@correo.es", "josé.pérez@correo.es"},
		{"ssh -o StrictHostKeyChecking=no deploy@gateway-db.internal", ""},
		{"/usr/bin/scp build.tar ops@files.fabrikam.de:/srv/", ""},
		{"rsync -az ./site web@www.fabrikam.de", ""},
		{"ran ssh earlier\nmail olga@fabrikam.de", "olga@fabrikam.de"}, // only its own line
		{"git clone git@github.com:org/repo.git", ""},
		{"https://user@registry.fabrikam.de/v2/", ""},
	} {
		found := p.Find(tc.text, nil)
		got := ""
		for _, f := range found {
			if f.Rule == RuleEmail {
				got = tc.text[f.Start:f.End]
			}
		}
		if got != tc.want {
			t.Errorf("%q: address %q, want %q", tc.text, got, tc.want)
		}
	}
}
