package normalize

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/purko-io/mcp-hub/internal/guardrails/detect"
)

// hidden is a personal datum the detectors find in plain text, and the
// ways of writing it that the readings undo (one of each kind).
const hidden = "olga@fabrikam.de"

var hiddenForms = []string{
	hidden,
	strings.Map(func(r rune) rune { return r - 0x21 + 0xff01 }, hidden), // fullwidth
	"o\u200bl\u2060g\u00ada@fab\ufeffrikam.de",                          // invisible characters
	"%6F%6C%67%61%40fabrikam.de",                                        // percent
	`\u006f\u006c\u0067\u0061@fabrikam.de`,                              // \u escapes
	"&#111;&#x6c;ga&#64;fabrikam.de",                                    // HTML references
	"оlgа@fаbrikаm.de",                                                  // Cyrillic look-alikes
	base64.StdEncoding.EncodeToString([]byte(hidden)),
	base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(hidden)))),
	hex.EncodeToString([]byte(hidden)),
}

// maxGrowth bounds the bytes of all the readings of a string against the
// string's: NFKC may write a character as many (U+FDFA, three bytes, is
// 33), and a decoded run is read again, a layer deeper.
const maxGrowth = 64

// FuzzNormalize reads arbitrary strings (Views) and checks, whatever they
// are:
//   - nothing panics;
//   - exactly one reading is the string itself (Verbatim, S equal to it):
//     the first, or the last when the first reading undoes escapes or
//     folds characters;
//   - every byte of every reading maps (Span) into the string, to a
//     non-empty range that never goes backwards along the reading; for a
//     valid UTF-8 string, to whole characters of it;
//   - a valid UTF-8 string's readings are valid UTF-8, but for the runs a
//     base64 or hex run decodes to (text with up to a tenth not UTF-8);
//   - all readings together are at most maxGrowth times the string (plus a
//     little for the empty string);
//   - the same string read again by the same Reader reads the same (its
//     buffers keep nothing from one string to the next);
//   - hidden, written in any of hiddenForms with a space on either side of
//     arbitrary text, is in plain text in one of the readings, and the PII
//     detector finds it there as an e-mail address.
//
// The readings are not idempotent, by design: an escape is decoded twice
// and base64 of base64 is read, so a reading may have readings of its own.
func FuzzNormalize(f *testing.F) {
	b64 := base64.StdEncoding.EncodeToString
	for _, s := range []string{
		"", "plain words", `a \u0067\u0068p_x`, `\ud83d\ude00!`, `\ud83dx`, `\u{67}hp`, `\U00000067\x68p`, "%2567h", "%u0067h",
		"jos%C3%A9@x", "%DB_PASSWORD%", "&#103;&#x68;p&amp;&lt;", "gh\u200bp_\u2060x", "g\x00h\x1bp", "ｇｈｐ＿x", "𝐠𝐡𝐩",
		"АКІА о", "ae\u0301b", "ﬁle", "\ufdfa\ufdfa\ufdfa", "x " + b64([]byte("olga@fabrikam.de!")) + " y",
		b64([]byte(b64([]byte(b64([]byte("olga@fabrikam.de")))))), "0x" + hex.EncodeToString([]byte("olga@fabrikam.de")),
		"token: g h p _ a b c d e f ok", "a\nb\nc\nd\ne\nf\ng\nh", "\xff\xfe%FF\\xff&#xD800;&#0;%u0000",
		strings.Repeat(`\u00`, 64), strings.Repeat("a ", 64), `\x80`, `%5Cx80`,
	} {
		f.Add(s, uint8(0), "", "")
	}
	f.Add("", uint8(1), "key=", "!")
	f.Add("", uint8(7), "/api/", "%")
	f.Add("", uint8(8), "\\", "&#")
	f.Add("", uint8(2), "a b c d e f g", "h i j k")
	var r Reader
	pii := detect.NewPII()
	f.Fuzz(func(t *testing.T, s string, form uint8, before, after string) {
		if len(s)+len(before)+len(after) > 1<<12 {
			return // long strings cost time, not cases (TestViewsLinear)
		}
		views := checkViews(t, &r, s)
		again := r.Views(s, nil)
		if len(again) != len(views) {
			t.Fatalf("%q read again: %d readings, were %d", s, len(again), len(views))
		}
		for i := range views {
			if again[i].S != views[i].S {
				t.Fatalf("%q read again: reading %d %q, was %q", s, i, again[i].S, views[i].S)
			}
		}

		// hidden in arbitrary text.
		embedded := before + " " + hiddenForms[int(form)%len(hiddenForms)] + " " + after
		if !utf8.ValidString(embedded) {
			return
		}
		for _, v := range checkViews(t, &r, embedded) {
			i := strings.Index(v.S, hidden)
			if i < 0 {
				continue
			}
			for _, fd := range pii.Find(v.S, nil) {
				if fd.Rule == detect.RuleEmail && fd.Start <= i && i+len(hidden) <= fd.End {
					return
				}
			}
		}
		t.Fatalf("%q: no reading where the e-mail address is found", embedded)
	})
}

// checkViews reads s and checks its readings (see FuzzNormalize).
func checkViews(t *testing.T, r *Reader, s string) []Text {
	t.Helper()
	views := r.Views(s, nil)
	if len(views) == 0 {
		t.Fatalf("%q: no reading", s)
	}
	verbatim, total := 0, 0
	for i, v := range views {
		total += len(v.S)
		if v.Verbatim() {
			verbatim++
			if v.S != s {
				t.Fatalf("%q: reading %d %q is Verbatim", s, i, v.S)
			}
		}
	}
	switch {
	case verbatim != 1:
		t.Fatalf("%q: %d readings are the string itself, want 1", s, verbatim)
	case !views[0].Verbatim() && !views[len(views)-1].Verbatim():
		t.Fatalf("%q: the string itself is neither the first nor the last of its %d readings", s, len(views))
	case total > maxGrowth*len(s)+64:
		t.Fatalf("%q (%d bytes): %d readings of %d bytes in all", s, len(s), len(views), total)
	}
	// A \xNN escape decodes to its byte, as in Python's and C's strings
	// ("\xc3\xa9" spells é in two), and escapes are decoded twice
	// ("%5Cx80" is "\x80" once), so "\x80" reads as a byte that is no
	// UTF-8: only input with no escape at all must read as UTF-8.
	valid := utf8.ValidString(s) && !strings.ContainsAny(s, `\%&`)
	for k, v := range views {
		if valid && k == 0 && !utf8.ValidString(v.S) {
			t.Fatalf("%q: its first reading %q is not UTF-8", s, v.S)
		}
		if v.Verbatim() {
			continue
		}
		lastFrom := -1
		for i := 0; i < len(v.S); {
			_, size := utf8.DecodeRuneInString(v.S[i:])
			from, to := v.Span(i, i+size)
			if from < 0 || to > len(s) || from >= to {
				t.Fatalf("%q, reading %q: bytes [%d, %d) map to [%d, %d)", s, v.S, i, i+size, from, to)
			}
			if valid && (!utf8.RuneStart(s[from]) || to < len(s) && !utf8.RuneStart(s[to])) {
				t.Fatalf("%q, reading %q: bytes [%d, %d) map to [%d, %d), not whole characters", s, v.S, i, i+size, from, to)
			}
			if from < lastFrom {
				t.Fatalf("%q, reading %q: byte %d maps to %d, before %d", s, v.S, i, from, lastFrom)
			}
			lastFrom = from
			i += size
		}
	}
	return views
}
