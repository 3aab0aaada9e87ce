package main

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// commandLines writes credentials on command lines, as shell histories,
// CI logs and READMEs show them (the tools' --help and manuals).
func (g *gen) commandLines() {
	src := "cli-docs"
	each := func(n int, value func() string, text func(v string) string) {
		g.each("command-line", src, n, value, text)
	}
	each(5, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("docker login -u %s -p %s %s", pick(g, dbUsers), pw, pick(g, []string{"registry.example.com", "ghcr.io", "acmecr.azurecr.io", "quay.io"}))
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("docker login --username %s --password '%s' registry.gitlab.com", pick(g, dbUsers), pw)
	})
	each(3, func() string { return "eyJwYXlsb2FkIjoi" + g.s(b64, 400) + "==" }, func(pw string) string {
		return fmt.Sprintf("+ docker login --username AWS --password %s %s.dkr.ecr.%s.amazonaws.com", pw, g.s(digits, 12), pick(g, regions))
	})
	each(4, func() string { return g.s(alnum, g.n(10, 20)) }, func(pw string) string {
		return fmt.Sprintf("mysql -h %s -u %s -p%s %s < dump.sql", g.host(""), pick(g, dbUsers), pw, pick(g, dbNames))
	})
	each(3, func() string { return g.s(alnum, g.n(10, 20)) }, func(pw string) string {
		return fmt.Sprintf("mysqldump -u root -p%s --single-transaction %s > backup.sql", pw, pick(g, dbNames))
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("PGPASSWORD=%s psql -h %s -U %s -d %s", pw, g.host(""), pick(g, dbUsers), pick(g, dbNames))
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("redis-cli -h %s -p 6379 -a %s --no-auth-warning INFO", g.host(""), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("sshpass -p '%s' ssh -o StrictHostKeyChecking=no deploy@%s", pw, g.host(""))
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("ldapsearch -x -H ldap://%s -D \"cn=admin,dc=example,dc=org\" -w %s -b \"dc=example,dc=org\"", g.host(""), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("sqlcmd -S %s -U sa -P '%s' -Q \"SELECT @@VERSION\"", g.host("azure-sql"), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("mongosh \"mongodb://%s:27017/%s\" --username %s --password %s", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("helm repo add acme https://charts.example.com --username %s --password %s", pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.s(alnum, 3) + g.s(digits, 1) + "Q~" + g.s(alnum+"_~.-", 34) }, func(sec string) string {
		return fmt.Sprintf("az login --service-principal -u %s -p %s --tenant %s", g.uuid(), sec, g.uuid())
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("curl -u %s:%s https://jenkins.example.com/job/%s/build", pick(g, dbUsers), pw, pick(g, services))
	})
	each(3, func() string { return g.secretValue() }, func(tok string) string {
		return fmt.Sprintf("vault login -method=userpass username=%s password=%s", pick(g, dbUsers), tok)
	})
	each(3, func() string { return g.s(b64url, 40) }, func(tok string) string {
		return fmt.Sprintf("./deploy.sh --env production --api-token %s --region %s", tok, pick(g, regions))
	})
	each(3, func() string { return g.s(alnum, 32) }, func(tok string) string { return fmt.Sprintf("$ wrangler secret put API_KEY <<< \"%s\"", tok) })
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("kubectl create secret generic db-credentials --from-literal=username=%s --from-literal=password=%s -n prod", pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("kubectl create secret docker-registry regcred --docker-server=ghcr.io --docker-username=%s --docker-password=%s", pick(g, dbUsers), pw)
	})
	each(3, func() string { return "ghp_" + g.s(alnum, 36) }, func(tok string) string { return fmt.Sprintf("echo %s | gh auth login --with-token", tok) })
	each(3, func() string { return g.secretValue() }, func(tok string) string {
		return fmt.Sprintf("gcloud secrets versions add %s-key --data-file=- <<< '%s'", pick(g, services), tok)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("wget --user=%s --password=%s https://files.example.com/releases/app.tar.gz", pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:%s", pw)
	})
}

// headers writes credentials in HTTP headers: requests logged, copied as
// curl, dumped by proxies.
func (g *gen) headers() {
	src := "http-auth-docs"
	each := func(n int, value func() string, text func(v string) string) {
		g.each("http-header", src, n, value, text)
	}
	each(6, func() string { return g.s(b64url, g.n(32, 64)) }, func(tok string) string {
		return fmt.Sprintf("GET /v2/orders HTTP/1.1\nHost: api.example.com\nAuthorization: Bearer %s\nAccept: application/json\n", tok)
	})
	each(4, func() string { return g.s(alnum, g.n(32, 48)) }, func(tok string) string {
		return fmt.Sprintf("curl -X POST https://api.example.com/v1/jobs -H 'Authorization: Bearer %s' -d @job.json", tok)
	})
	each(5, func() string {
		return base64.StdEncoding.EncodeToString([]byte(pick(g, dbUsers) + ":" + g.password(true)))
	}, func(cred string) string { return fmt.Sprintf("Authorization: Basic %s", cred) })
	each(3, func() string {
		return base64.StdEncoding.EncodeToString([]byte(pick(g, dbUsers) + ":" + g.password(true)))
	}, func(cred string) string {
		return fmt.Sprintf("> GET /api/health HTTP/1.1\n> Host: internal.example.com\n> Proxy-Authorization: Basic %s\n> User-Agent: curl/8.5.0\n", cred)
	})
	each(4, func() string { return g.s(hexLow, 32) }, func(tok string) string {
		return fmt.Sprintf("curl https://api.example.com/v3/search -H \"X-API-Key: %s\"", tok)
	})
	each(3, func() string { return g.s(hexLow, 32) }, func(tok string) string { return fmt.Sprintf("Ocp-Apim-Subscription-Key: %s", tok) })
	each(3, func() string { return "glpat-" + g.s(b64url, 20) }, func(tok string) string {
		return fmt.Sprintf("curl --header \"PRIVATE-TOKEN: %s\" \"https://gitlab.example.com/api/v4/projects\"", tok)
	})
	each(3, func() string { return "00" + g.s(b64url, 40) }, func(tok string) string { return fmt.Sprintf("Authorization: SSWS %s", tok) })
	each(3, func() string { return "hvs." + g.s(b64url, 24) }, func(tok string) string {
		return fmt.Sprintf("curl -H \"X-Vault-Token: %s\" https://vault.example.com:8200/v1/secret/data/app", tok)
	})
	each(3, func() string { return g.uuid() }, func(tok string) string { return fmt.Sprintf("X-Postmark-Server-Token: %s", tok) })
	each(3, func() string { return g.uuid() }, func(tok string) string {
		return fmt.Sprintf("curl -k https://splunk.example.com:8088/services/collector -H \"Authorization: Splunk %s\" -d '{\"event\": \"deploy\"}'", tok)
	})
	each(3, func() string {
		return base64.StdEncoding.EncodeToString([]byte(g.s(alnum, 20) + ":" + g.s(b64url, 22)))
	}, func(tok string) string { return fmt.Sprintf("Authorization: ApiKey %s", tok) })
	each(3, func() string { return "ghs_" + g.s(alnum, 36) }, func(tok string) string {
		return fmt.Sprintf("{\"method\":\"GET\",\"url\":\"https://api.github.com/repos/acme/app\",\"headers\":{\"Accept\":\"application/vnd.github+json\",\"Authorization\":\"token %s\"}}", tok)
	})
	each(3, func() string { return g.s(b64url, 43) }, func(tok string) string {
		return fmt.Sprintf("Cookie: _ga=GA1.2.%s.%s; session=%s; theme=dark", g.s(digits, 9), g.s(digits, 10), tok)
	})
	each(3, func() string { return g.s(alnum, 40) }, func(tok string) string {
		return fmt.Sprintf("https://api.example.com/v1/export?format=csv&api_key=%s&limit=500", tok)
	})
	each(3, func() string { return g.s(b64url, 48) }, func(tok string) string { return fmt.Sprintf("GET /oauth/userinfo?access_token=%s HTTP/1.1", tok) })
}

// toolOutputs writes what tools print that holds credentials: kubectl
// secrets (base64 and decoded), docker's config.json, CI logs, log lines,
// env dumps, kubeconfigs.
func (g *gen) toolOutputs() {
	src := "tool-outputs"
	add := func(text string, secrets ...string) { g.secret("tool-output", src, text, secrets...) }
	each := func(n int, value func() string, text func(v string) string) {
		g.each("tool-output", src, n, value, text)
	}
	enc := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	for range 8 {
		pw := g.password(true)
		b := enc(pw)
		add(fmt.Sprintf("apiVersion: v1\ndata:\n  password: %s\n  username: %s\nkind: Secret\nmetadata:\n  creationTimestamp: \"2026-02-11T09:14:03Z\"\n  name: %s-db\n  namespace: prod\n  resourceVersion: \"%d\"\n  uid: %s\ntype: Opaque\n", b, enc(pick(g, dbUsers)), pick(g, services), g.n(100000, 999999), g.uuid()), b)
	}
	for range 5 {
		tok := g.secretValue()
		b := enc(tok)
		key := pick(g, []string{"api-key", "token", "client-secret", "API_TOKEN", "webhook-secret"})
		add(fmt.Sprintf("apiVersion: v1\ndata:\n  %s: %s\nkind: Secret\nmetadata:\n  name: %s-credentials\n  namespace: default\ntype: Opaque\n", key, b, pick(g, services)), b)
	}
	each(6, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("$ kubectl get secret %s-db -o json | jq '.data | map_values(@base64d)'\n{\n  \"password\": \"%s\",\n  \"username\": \"%s\"\n}", pick(g, services), pw, pick(g, dbUsers))
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("$ kubectl get secret %s -o go-template='{{range $k,$v := .data}}{{$k}}={{$v|base64decode}}{{\"\\n\"}}{{end}}'\nDB_HOST=%s\nDB_PASSWORD=%s\nDB_USER=%s\n", pick(g, services), g.host("internal"), pw, pick(g, dbUsers))
	})
	for range 4 {
		pw := g.urlPassword()
		u := "postgres://" + pick(g, dbUsers) + ":" + pw + "@" + g.host("internal") + ":5432/" + pick(g, dbNames)
		add(fmt.Sprintf("$ kubectl view-secret %s-env DATABASE_URL\n%s\n", pick(g, services), u), pw)
	}
	each(6, func() string { return enc(pick(g, dbUsers) + ":" + g.password(true)) }, func(auth string) string {
		return fmt.Sprintf("{\n\t\"auths\": {\n\t\t\"%s\": {\n\t\t\t\"auth\": \"%s\"\n\t\t}\n\t},\n\t\"credsStore\": \"\"\n}", pick(g, []string{"https://index.docker.io/v1/", "ghcr.io", "registry.gitlab.com", "acmecr.azurecr.io"}), auth)
	})
	each(3, func() string {
		return enc(fmt.Sprintf("{\"auths\":{\"ghcr.io\":{\"username\":\"ci\",\"password\":\"%s\",\"auth\":\"%s\"}}}", "ghp_"+g.s(alnum, 36), enc("ci:x")))
	}, func(cfg string) string {
		return fmt.Sprintf("apiVersion: v1\ndata:\n  .dockerconfigjson: %s\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\n", cfg)
	})
	for range 6 {
		tok := pick(g, []string{"ghp_" + g.s(alnum, 36), "npm_" + g.s(alnum, 36), g.s(alnum, 32)})
		name := pick(g, []string{"NPM_TOKEN", "DEPLOY_TOKEN", "API_TOKEN", "SLACK_TOKEN", "REGISTRY_TOKEN"})
		add(fmt.Sprintf("2026-03-02T11:04:51.3388242Z ##[group]Run ./scripts/publish.sh\n2026-03-02T11:04:51.3389137Z ./scripts/publish.sh\n2026-03-02T11:04:51.3421750Z shell: /usr/bin/bash -e {0}\n2026-03-02T11:04:51.3422211Z env:\n2026-03-02T11:04:51.3422684Z   %s: %s\n2026-03-02T11:04:51.3423010Z ##[endgroup]\n", name, tok), tok)
	}
	each(5, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("$ ./gradlew publish\n> Task :publish\n+ echo \"mavenUser=deploy\" >> gradle.properties\n+ echo \"mavenPassword=%s\" >> gradle.properties\nBUILD SUCCESSFUL in 41s", pw)
	})
	each(5, func() string { return g.s(alnum, 40) }, func(tok string) string {
		return fmt.Sprintf("[Pipeline] sh\n+ curl -sf -X POST -H 'X-Auth-Token: %s' https://deploy.example.com/hooks/%s\n[Pipeline] }\n[Pipeline] // stage", tok, pick(g, services))
	})
	each(8, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("%s WARN  [%s] retrying login user=%s password=%s attempt=%d", g.timestamp(), pick(g, services), pick(g, dbUsers), pw, g.n(1, 5))
	})
	each(6, func() string { return g.s(b64url, g.n(32, 48)) }, func(tok string) string {
		return fmt.Sprintf("{\"time\":\"%s\",\"level\":\"DEBUG\",\"msg\":\"token exchange\",\"client_id\":\"%s\",\"access_token\":\"%s\",\"expires_in\":3600}", g.timestamp(), g.uuid(), tok)
	})
	for range 5 {
		id, sec := "AKIA"+g.s(b32, 16), g.s(b64, 40)
		add(fmt.Sprintf("$ env | sort\nAWS_ACCESS_KEY_ID=%s\nAWS_DEFAULT_REGION=%s\nAWS_SECRET_ACCESS_KEY=%s\nHOME=/home/runner\nHOSTNAME=runner-7f9c\nPATH=/usr/local/bin:/usr/bin:/bin\nPWD=/home/runner/work\n", id, pick(g, regions), sec), id, sec)
	}
	each(4, func() string { return g.jwt(true) }, func(tok string) string {
		return fmt.Sprintf("apiVersion: v1\nclusters:\n- cluster:\n    server: https://%s.gr7.%s.eks.amazonaws.com\n  name: prod\nusers:\n- name: ci\n  user:\n    token: %s\n", strings.ToUpper(g.s(hexLow, 32)), pick(g, regions), tok)
	})
	each(3, func() string {
		return enc("-----BEGIN RSA PRIVATE KEY-----\n" + g.s(b64, 64) + "\n-----END RSA PRIVATE KEY-----\n")
	}, func(key string) string {
		return fmt.Sprintf("users:\n- name: admin\n  user:\n    client-certificate-data: %s\n    client-key-data: %s\n", enc("-----BEGIN CERTIFICATE-----\nMIIC"+g.s(b64, 60)+"\n-----END CERTIFICATE-----\n"), key)
	})
	for range 4 {
		tok := g.jwt(true)
		rt := "0.A" + g.s(alnum, 3) + "A" + g.s(b64url, g.n(700, 1100))
		add(fmt.Sprintf("{\"token_type\":\"Bearer\",\"scope\":\"https://graph.microsoft.com/.default offline_access\",\"expires_in\":4798,\"ext_expires_in\":4798,\"access_token\":\"%s\",\"refresh_token\":\"%s\"}", tok, rt), tok, rt)
	}
	each(4, func() string {
		return "1.A" + g.s(alnum, 3) + "A" + g.s(b64url, g.n(500, 900)) + "." + g.s(b64url, g.n(100, 300))
	}, func(rt string) string { return fmt.Sprintf("\"refresh_token\": \"%s\",", rt) })
	for range 3 {
		tok := "ya29." + g.s(b64url, 160)
		rt := "1//0" + g.s(alnum, 1) + g.s(b64url, 98)
		add(fmt.Sprintf("{\n  \"access_token\": \"%s\",\n  \"expires_in\": 3599,\n  \"refresh_token\": \"%s\",\n  \"scope\": \"https://www.googleapis.com/auth/drive.readonly\",\n  \"token_type\": \"Bearer\"\n}", tok, rt), tok, rt)
	}
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("npm ERR! 401 Unauthorized - GET https://npm.corp.example.com/@acme%%2fui - authentication failed for user ci with password %s", pw)
	})
	each(3, func() string { return g.s(b64, 86) + "==" }, func(key string) string {
		return fmt.Sprintf("$ az storage account keys list -g rg-%s -n %sstore -o table\nKeyName    Permissions    Value\n---------  -------------  ----------------------------------------------------------------------------------------\nkey1       FULL           %s", pick(g, services), pick(g, services), key)
	})
	for range 3 {
		id, sec := "AKIA"+g.s(b32, 16), g.s(b64, 40)
		add(fmt.Sprintf("$ aws iam create-access-key --user-name ci\n{\n    \"AccessKey\": {\n        \"UserName\": \"ci\",\n        \"AccessKeyId\": \"%s\",\n        \"Status\": \"Active\",\n        \"SecretAccessKey\": \"%s\",\n        \"CreateDate\": \"2026-03-01T12:00:00+00:00\"\n    }\n}", id, sec), id, sec)
	}
	each(3, func() string { return "hvs." + g.s(b64url, 24) }, func(tok string) string {
		return fmt.Sprintf("$ vault token create -policy=deploy\nKey                  Value\n---                  -----\ntoken                %s\ntoken_accessor       %s\ntoken_duration       768h\ntoken_renewable      true\ntoken_policies       [\"default\" \"deploy\"]", tok, g.s(alnum, 24))
	})
}

// tokensAndKeys writes JWTs (signed and unsigned) and PEM private keys.
func (g *gen) tokensAndKeys() {
	for range 14 {
		tok := g.jwt(true)
		text := pick(g, []string{
			"Authorization: Bearer " + tok,
			"id_token=" + tok + "&state=af0ifjsldkj",
			"{\"token\": \"" + tok + "\", \"user\": \"" + pick(g, dbUsers) + "\"}",
			"The service account token is " + tok + ", expiring tomorrow.",
			tok,
			"session cookie: jwt=" + tok + "; Path=/; HttpOnly",
		})
		g.secret("jwt", "jwt-rfc7519", text, tok)
	}
	for range 14 {
		tok := g.jwt(false)
		text := pick(g, []string{
			"Authorization: Bearer " + tok,
			"{\"token\": \"" + tok + "\", \"alg\": \"none\"}",
			"curl -H 'Authorization: Bearer " + tok + "' https://api.example.com/admin",
			"unsigned token accepted: " + tok,
			tok,
			"X-Auth: " + tok + "\nAccept: */*",
		})
		g.secret("jwt-unsigned", "jwt-rfc7519", text, tok)
	}
	kinds := []string{"RSA PRIVATE KEY", "PRIVATE KEY", "EC PRIVATE KEY", "OPENSSH PRIVATE KEY", "ENCRYPTED PRIVATE KEY", "DSA PRIVATE KEY", "PGP PRIVATE KEY BLOCK"}
	for _, k := range kinds {
		for range 3 {
			var body strings.Builder
			lines := g.n(3, 12)
			for i := range lines {
				n := 64
				if i == lines-1 {
					n = g.n(8, 60)
				}
				body.WriteString(g.s(b64, n))
				body.WriteString("\n")
			}
			pem := "-----BEGIN " + k + "-----\n" + body.String() + "-----END " + k + "-----"
			text := pick(g, []string{
				pem,
				"$ cat ~/.ssh/id_" + pick(g, []string{"rsa", "ed25519", "ecdsa"}) + "\n" + pem + "\n",
				"tls.key: |\n  " + strings.ReplaceAll(pem, "\n", "\n  ") + "\n",
			})
			if strings.HasPrefix(text, "tls.key") {
				pem = strings.ReplaceAll(pem, "\n", "\n  ")
			}
			g.secret("private-key", "pem-rfc7468", text, pem)
		}
	}
	for range 4 {
		var body strings.Builder
		for range 6 {
			body.WriteString(g.s(b64, 64))
			body.WriteString("\\n")
		}
		pem := "-----BEGIN PRIVATE KEY-----\\n" + body.String() + "-----END PRIVATE KEY-----"
		text := fmt.Sprintf("{\n  \"type\": \"service_account\",\n  \"project_id\": \"acme-%s\",\n  \"private_key_id\": \"%s\",\n  \"private_key\": \"%s\\n\",\n  \"client_id\": \"%s\",\n  \"token_uri\": \"https://oauth2.googleapis.com/token\"\n}", pick(g, services), g.s(hexLow, 40), pem, g.s(digits, 21))
		g.secret("private-key", "pem-rfc7468", text, pem)
	}
}
