package secretscan

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// TestHubRulesCompile: Hub holds gitleaks' rules, in their order, then
// every [[rules]] entry of hub.toml; each of the hub's rules can fire on
// text and has keywords.
func TestHubRulesCompile(t *testing.T) {
	hub, err := Hub().rules()
	if err != nil {
		t.Fatal(err)
	}
	def, err := Default().rules()
	if err != nil {
		t.Fatal(err)
	}
	entries := strings.Count(hubConfig, "\n[[rules]]\n")
	if len(hub.rules) != len(def.rules)+entries {
		t.Fatalf("Hub has %d rules, want gitleaks' %d and hub.toml's %d", len(hub.rules), len(def.rules), entries)
	}
	for i, r := range def.rules {
		if hub.rules[i].id != r.id {
			t.Fatalf("rule %d is %q, gitleaks' is %q", i, hub.rules[i].id, r.id)
		}
	}
	for _, r := range hub.rules[len(def.rules):] {
		if r.inert || r.re == nil || len(r.keywords) == 0 {
			t.Errorf("hub rule %q: inert %v, %d keywords", r.id, r.inert, len(r.keywords))
		}
	}
	t.Logf("%d hub rules on top of gitleaks' %d", entries, len(def.rules))
}

// ungated are the hub's rules whose regex gives no gate (the keyword sits
// inside a group that starts with a character class): their keywords are
// rare, so the rule runs only on the lines around them.
var ungated = []string{"telegram-bot-token-any-context", "firebase-cloud-messaging-key", "openai-api-key-any-context"}

// TestHubRulesAreWindowed: every rule of the hub runs only on the lines
// around its keywords (the guardrails scan every result of a guarded
// caller), and all but a few rare-keyword ones are gated, so that a
// keyword in prose ("rotate the token") costs one anchored match.
func TestHubRulesAreWindowed(t *testing.T) {
	hub, _ := Hub().rules()
	def, _ := Default().rules()
	for _, r := range hub.rules[len(def.rules):] {
		if !r.window.windowed {
			t.Errorf("hub rule %q runs over the whole text: every match must hold a keyword and span few lines", r.id)
		}
		if r.gate == nil && !slices.Contains(ungated, r.id) {
			t.Errorf("hub rule %q has no gate", r.id)
		}
	}
}

// TestScanHubRules: what the hub's rules find, and the look-alikes their
// allowlists are for. (The values are made up.)
func TestScanHubRules(t *testing.T) {
	s := Hub()
	cases := []scanCase{
		{"URL userinfo password", "DATABASE_URL=postgres://app:Zq8r%21Lw9xT2@db.internal:5432/orders\n",
			[]string{"url-password@1:29=Zq8r%21Lw9xT2"}},
		{"URL password placeholder", "postgres://user:${PGPASSWORD}@db/app mongodb+srv://<username>:<password>@c0.ab1cd.mongodb.net/\n", []string{}},
		{"URL without a password", "ssh://git@gitlab.com:2222/acme/app.git https://medium.com/@acme/post\n", []string{}},
		{"ADO.NET password", "Server=tcp:db,1433;Database=app;User ID=sa;Password=Marigold2024!;Encrypt=True;",
			[]string{"generic-password@1:53=Marigold2024!"}},
		{"web.config appSettings", `<add key="TwilioAuthToken" value="5a06c068b6304b9ee971adebeec73518" />`,
			[]string{"generic-secret@1:35=5a06c068b6304b9ee971adebeec73518"}},
		{"key under a credential's name", "DD_API_KEY=f76b8a5e4fad98619dd538f93c471af6\n",
			[]string{"generic-api-key@1:12=f76b8a5e4fad98619dd538f93c471af6", "generic-key@1:12=f76b8a5e4fad98619dd538f93c471af6"}},
		{"names that are no credentials", "token_type: Bearer\nmax_tokens: 1024\npassword_file: /run/secrets/db\nnextPageToken: CAUQAA8xYz2\nprimary_key: id\n", []string{}},
		{"references and placeholders", "password: ${DB_PASSWORD}\napi_key: <your-api-key>\ntoken: \"{{ .Values.token }}\"\nsecret = os.environ[\"SECRET\"]\npassword: changeme\n", []string{}},
		{"code, not a value", "password = r.FormValue(\"password\")\ntoken := tok.AccessToken\nauth: tokenExchange\n", []string{}},
		{"docker login", "docker login -u ci -p Lotus2235* ghcr.io\n",
			[]string{"registry-login-password@1:23=Lotus2235*"}},
		{"redis.conf", "requirepass v3ry-l0ng-Pa55\n",
			[]string{"server-config-password@1:13=v3ry-l0ng-Pa55"}},
		{"Go MySQL DSN", "app:Pw0rd-xyz@tcp(db:3306)/orders",
			[]string{"dsn-password@1:5=Pw0rd-xyz"}},
		{"bearer token before a comma", "Authorization: Bearer Qh9HOi0BWXMgLRbK9X9Pz2Js, then",
			[]string{"authorization-header@1:23=Qh9HOi0BWXMgLRbK9X9Pz2Js", "bearer-token@1:23=Qh9HOi0BWXMgLRbK9X9Pz2Js"}},
		{"a Slack token, whole", "token xoxa-2-123456789012-123456789012-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9\n",
			[]string{"slack-legacy-workspace-token@1:7=xoxa-2-123456789012", "slack-token@1:7=xoxa-2-123456789012-123456789012-1234567890123-0a1b2c3d4e5f60718293a4b5c6d7e8f9"}},
		{"a provider token in XML", "<Key>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</Key>",
			[]string{"groq-api-key@1:6=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"}},
		{"an unsigned JWT", "token eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJvd25lciJ9.",
			[]string{"jwt@1:7=eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJvd25lciJ9.", "json-web-token@1:7=eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZG1pbiIsInJvbGUiOiJvd25lciJ9."}},
		{"a JWT before a comma", "jwt=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk, next",
			[]string{"json-web-token@1:5=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk"}},
		{"publishable keys are public", "STRIPE_PUBLISHABLE_KEY=pk_live_51Hc9xYzAbCdEfGh\nNEXT_PUBLIC_MAPBOX_TOKEN=pk.eyJ1IjoiYWNtZSIsImEiOiJja3h5In0.q8Zr3kLw9Xv2Tb7Nc4Hy\n", []string{}},
		{"a secret path in a vault", "token: vault:secret/data/ci#token\n", []string{}},
	}
	runScanCases(t, s, cases)
}

// TestExtendOnlyTheDefaults: [extend] adds to gitleaks' rules, which the
// package embeds; a path or URL to extend is refused, and disabledRules
// must name default rules.
func TestExtendOnlyTheDefaults(t *testing.T) {
	const rule = "[[rules]]\nid = \"mine\"\nregex = '''mine_[0-9]{8}'''\nkeywords = [\"mine_\"]\n"
	for _, tc := range []struct{ name, config, want string }{
		{"a path", "[extend]\npath = \"other.toml\"\n" + rule, "useDefault"},
		{"no default", "[extend]\nuseDefault = false\n" + rule, "useDefault"},
		{"an unknown disabled rule", "[extend]\nuseDefault = true\ndisabledRules = [\"nope\"]\n" + rule, `"nope"`},
		{"a default rule again", "[extend]\nuseDefault = true\n[[rules]]\nid = \"jwt\"\nregex = '''x'''\nkeywords = [\"x\"]\n", "defined twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.config).Scan(context.Background(), "x")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	s := New("[extend]\nuseDefault = true\ndisabledRules = [\"aws-access-token\"]\n" + rule)
	runScanCases(t, s, []scanCase{
		{"own rule and the defaults", "mine_12345678 ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4 AKIAZ3MSJV5WKQ7TYRXB",
			[]string{"github-pat@1:15=ghp_Yq4mX2Vb9Lk8Rt7Wn3Zp6Hs1Dj5Fc0Ga2Ee4", "mine@1:1=mine_12345678"}},
	})
}
