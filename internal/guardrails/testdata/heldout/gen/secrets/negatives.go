package main

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// negatives writes hard negatives: strings that look like credentials
// (random, long, base64, under secret-like names) and are not: hashes,
// identifiers, encoded public data, placeholders, references to where a
// secret is kept, documented example keys, public keys.
func (g *gen) negatives() {
	g.hashes()
	g.identifiers()
	g.encodedData()
	g.publicKeys()
	g.placeholders()
	g.references()
	g.connectionsWithoutPasswords()
	g.ordinaryURLs()
	g.nonSecretSettings()
	g.proseAndCode()
}

func (g *gen) hashes() {
	src := "negative-formats"
	add := func(text string) { g.negative("hash", src, text) }
	files := []string{"app-linux-amd64.tar.gz", "release.zip", "checksums.txt", "go1.26.8.linux-amd64.tar.gz", "model.safetensors", "index.js"}
	for range 12 {
		add(fmt.Sprintf("%s  %s", g.s(hexLow, 64), pick(g, files)))
	}
	for range 8 {
		add(fmt.Sprintf("%s  %s\n%s  %s", g.s(hexLow, 128), pick(g, files), g.s(hexLow, 128), pick(g, files)))
	}
	for range 8 {
		add(fmt.Sprintf("MD5 (%s) = %s", pick(g, files), g.s(hexLow, 32)))
	}
	for range 8 {
		add(fmt.Sprintf("%s  %s", g.s(hexLow, 40), pick(g, files)))
	}
	for range 12 {
		sha := g.s(hexLow, 40)
		add(fmt.Sprintf("commit %s\nAuthor: build-bot <noreply>\nDate:   Mon Mar 2 11:04:51 2026 +0000\n\n    %s: %s", sha, pick(g, []string{"fix", "feat", "chore"}), pick(g, []string{"rotate token cache", "bump dependencies", "handle password reset redirect", "retry on 429", "refresh api key list view"})))
	}
	for range 8 {
		var b strings.Builder
		for range g.n(3, 6) {
			fmt.Fprintf(&b, "%s %s\n", g.s(hexLow, 7), pick(g, []string{"Merge pull request #412 from acme/token-refresh", "Add secret scanning to CI", "Fix password field autocomplete", "Update API key docs", "Rename auth middleware"}))
		}
		add(b.String())
	}
	for range 10 {
		add(fmt.Sprintf("ghcr.io/acme/%s@sha256:%s", pick(g, services), g.s(hexLow, 64)))
	}
	for range 6 {
		add(fmt.Sprintf("{\"sha\": \"%s\", \"node_id\": \"C_kwDO%s\", \"tree\": {\"sha\": \"%s\"}}", g.s(hexLow, 40), g.s(b64url, 20), g.s(hexLow, 40)))
	}
	for range 6 {
		add(fmt.Sprintf("ETag: \"%s\"\nCache-Control: max-age=300", g.s(hexLow, 32)))
	}
	for range 6 {
		add(fmt.Sprintf("\"checksum\": \"sha256:%s\",\n\"size\": %d", g.s(hexLow, 64), g.n(1000, 9999999)))
	}
	for range 6 {
		add(fmt.Sprintf("Digest: sha256:%s\nStatus: Downloaded newer image for %s:latest", g.s(hexLow, 64), pick(g, services)))
	}
	for range 6 {
		add(fmt.Sprintf("transactionHash: 0x%s\nblockNumber: %d\nfrom: 0x%s", g.s(hexLow, 64), g.n(19000000, 21000000), g.s(hexLow, 40)))
	}
	for range 6 {
		add(fmt.Sprintf("$ ssh-keygen -lf ~/.ssh/id_ed25519.pub\n256 SHA256:%s ci-runner (ED25519)", g.s(b64, 43)))
	}
	for range 4 {
		add(fmt.Sprintf("password_hash: $2b$12$%s", g.s(alnum+"./", 53)))
	}
	for range 4 {
		add(fmt.Sprintf("{\"key_fingerprint\": \"%s\", \"key_id\": \"%s\"}", strings.ToUpper(g.s(hexLow, 40)), strings.ToUpper(g.s(hexLow, 16))))
	}
}

func (g *gen) identifiers() {
	src := "negative-formats"
	add := func(cat, text string) { g.negative(cat, src, text) }
	ulid := func() string { return "01" + g.s("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 24) }
	for range 12 {
		add("uuid", fmt.Sprintf("{\"id\": \"%s\", \"tenant_id\": \"%s\", \"created_at\": \"%s\"}", g.uuid(), g.uuid(), g.timestamp()))
	}
	for range 8 {
		add("uuid", fmt.Sprintf("%s INFO request_id=%s trace_id=%s span_id=%s status=200", g.timestamp(), g.uuid(), g.s(hexLow, 32), g.s(hexLow, 16)))
	}
	for range 8 {
		add("uuid", fmt.Sprintf("AZURE_CLIENT_ID=%s\nAZURE_TENANT_ID=%s\nAZURE_SUBSCRIPTION_ID=%s", g.uuid(), g.uuid(), g.uuid()))
	}
	for range 8 {
		add("ulid", fmt.Sprintf("{\"event_id\": \"%s\", \"order_id\": \"%s\"}", ulid(), ulid()))
	}
	for range 6 {
		add("uuid", fmt.Sprintf("x-request-id: %s\nx-correlation-id: %s", g.uuid(), ulid()))
	}
	stripe := []string{"cus_", "ch_3", "pi_3", "sub_1", "in_1", "prod_", "price_1", "evt_1", "acct_1", "seti_1", "pm_1", "txn_3", "re_3", "cs_live_a1"}
	for range 20 {
		p := pick(g, stripe)
		add("api-object-id", fmt.Sprintf("{\"id\": \"%s%s\", \"object\": \"%s\", \"customer\": \"cus_%s\", \"livemode\": true}", p, g.s(alnum, 24), strings.TrimRight(strings.Split(p, "_")[0], "0123456789"), g.s(alnum, 14)))
	}
	for range 8 {
		add("api-object-id", fmt.Sprintf("STRIPE_PUBLISHABLE_KEY=pk_live_51%s", g.s(alnum, 97)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("NEXT_PUBLIC_MAPBOX_TOKEN=pk.eyJ1Ijoi%s.%s", g.s(alnum, 50), g.s(b64url, 22)))
	}
	for range 8 {
		add("api-object-id", fmt.Sprintf("{\"id\": \"chatcmpl-%s\", \"object\": \"chat.completion\", \"model\": \"gpt-4o-2024-08-06\", \"system_fingerprint\": \"fp_%s\"}", g.s(alnum, 29), g.s(hexLow, 10)))
	}
	for range 8 {
		add("api-object-id", fmt.Sprintf("{\"id\": \"msg_01%s\", \"type\": \"message\", \"content\": [{\"type\": \"tool_use\", \"id\": \"toolu_01%s\", \"name\": \"search\"}]}", g.s(alnum, 22), g.s(alnum, 22)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("{\"ok\": true, \"channel\": \"C%s\", \"ts\": \"1712345678.%06d\", \"message\": {\"user\": \"U%s\", \"team\": \"T%s\", \"bot_id\": \"B%s\"}}", g.s(upAN, 10), g.n(0, 999999), g.s(upAN, 10), g.s(upAN, 10), g.s(upAN, 10)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("TWILIO_ACCOUNT_SID=AC%s\nTWILIO_MESSAGING_SERVICE_SID=MG%s", g.s(hexLow, 32), g.s(hexLow, 32)))
	}
	for range 8 {
		add("api-object-id", fmt.Sprintf("arn:aws:iam::%s:role/%s-deploy\ni-0%s sg-0%s vpc-0%s ami-0%s", g.s(digits, 12), pick(g, services), g.s(hexLow, 16), g.s(hexLow, 16), g.s(hexLow, 16), g.s(hexLow, 16)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("{\"node_id\": \"I_kwDO%s\", \"html_url\": \"https://github.com/acme/%s/issues/%d\"}", g.s(b64url, 16), pick(g, services), g.n(1, 9999)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("https://www.youtube.com/watch?v=%s and https://youtu.be/%s", g.s(b64url, 11), g.s(b64url, 11)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("{\"id\": \"%s\", \"url\": \"https://www.notion.so/acme/Runbook-%s\"}", g.uuid(), g.s(hexLow, 32)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("NAME                                READY   STATUS    RESTARTS   AGE\n%s-%s-%s   1/1     Running   0          3d4h\n%s-%s-%s   1/1     Running   2          3d4h", pick(g, services), g.s(lowAN, 10), g.s(lowAN, 5), pick(g, services), g.s(lowAN, 9), g.s(lowAN, 5)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("CONTAINER ID   IMAGE                   STATUS\n%s   acme/%s:1.%d.%d   Up 2 hours", g.s(hexLow, 12), pick(g, services), g.n(0, 9), g.n(0, 30)))
	}
	for range 6 {
		add("api-object-id", fmt.Sprintf("ipfs://bafybei%s and 0x%s", g.s("abcdefghijklmnopqrstuvwxyz234567", 52), g.s(hexLow, 40)))
	}
	for range 8 {
		add("build-id", fmt.Sprintf("GITHUB_RUN_ID=%d\nGITHUB_RUN_NUMBER=%d\nGITHUB_SHA=%s\nGITHUB_REF=refs/heads/main", g.n(1000000000, 9999999999), g.n(1, 9999), g.s(hexLow, 40)))
	}
	for range 8 {
		add("build-id", fmt.Sprintf("Build #%d (%s) finished: SUCCESS\nartifact: %s-%s-%s.tar.gz", g.n(100, 9999), g.uuid(), pick(g, services), g.timestamp()[:10], g.s(hexLow, 7)))
	}
	for range 6 {
		add("build-id", fmt.Sprintf("CI_JOB_ID=%d CI_PIPELINE_ID=%d CI_COMMIT_SHORT_SHA=%s CI_JOB_TOKEN=[MASKED]", g.n(1000000, 9999999), g.n(100000, 999999), g.s(hexLow, 8)))
	}
	for range 6 {
		add("build-id", fmt.Sprintf("Successfully built %s\nSuccessfully tagged acme/%s:%s", g.s(hexLow, 12), pick(g, services), g.s(hexLow, 7)))
	}
	for range 6 {
		add("build-id", fmt.Sprintf("operation: operations/acat.p2-%s-%s", g.s(digits, 12), g.uuid()))
	}
}

func (g *gen) encodedData() {
	src := "negative-formats"
	add := func(cat, text string) { g.negative(cat, src, text) }
	png := func(n int) string { return "iVBORw0KGgoAAAANSUhEUgAA" + g.s(b64, n) + "AAAAAElFTkSuQmCC" }
	for range 10 {
		add("base64-image", fmt.Sprintf("![chart](data:image/png;base64,%s)", png(g.n(200, 600))))
	}
	for range 8 {
		add("base64-image", fmt.Sprintf("<img alt=\"logo\" src=\"data:image/png;base64,%s\" />", png(g.n(100, 400))))
	}
	for range 6 {
		add("base64-image", fmt.Sprintf(".icon { background: url(data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciIHZpZXdCb3g9IjAgMCAyNCAyNCI+%s) }", g.b64pad(g.n(80, 300))))
	}
	for range 6 {
		add("base64-image", fmt.Sprintf("{\"type\": \"image\", \"mimeType\": \"image/jpeg\", \"uri\": \"data:image/jpeg;base64,/9j/4AAQSkZJRgABAQ%s\"}", g.b64pad(g.n(200, 500))))
	}
	for range 12 {
		add("integrity", fmt.Sprintf("\"node_modules/%s\": {\n  \"version\": \"%d.%d.%d\",\n  \"resolved\": \"https://registry.npmjs.org/%s/-/%s-%d.%d.%d.tgz\",\n  \"integrity\": \"sha512-%s==\"\n}", pick(g, words), g.n(0, 9), g.n(0, 20), g.n(0, 20), pick(g, words), pick(g, words), g.n(0, 9), g.n(0, 20), g.n(0, 20), g.s(b64, 86)))
	}
	for range 8 {
		add("integrity", fmt.Sprintf("%s@^%d.%d.0:\n  version \"%d.%d.3\"\n  resolved \"https://registry.yarnpkg.com/%s/-/%s.tgz#%s\"\n  integrity sha512-%s==", pick(g, words), g.n(1, 9), g.n(0, 9), g.n(1, 9), g.n(0, 9), pick(g, words), pick(g, words), g.s(hexLow, 40), g.s(b64, 86)))
	}
	for range 8 {
		add("integrity", fmt.Sprintf("<script src=\"https://cdn.example.com/lib.min.js\" integrity=\"sha384-%s\" crossorigin=\"anonymous\"></script>", g.s(b64, 64)))
	}
	for range 8 {
		add("integrity", fmt.Sprintf("github.com/%s/%s v1.%d.%d h1:%s=\ngithub.com/%s/%s v1.%d.%d/go.mod h1:%s=", pick(g, words), pick(g, words), g.n(0, 9), g.n(0, 9), g.s(b64, 43), pick(g, words), pick(g, words), g.n(0, 9), g.n(0, 9), g.s(b64, 43)))
	}
	for range 6 {
		add("integrity", fmt.Sprintf("[[package]]\nname = \"%s\"\nversion = \"0.%d.%d\"\nsource = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"%s\"", pick(g, words), g.n(1, 20), g.n(0, 9), g.s(hexLow, 64)))
	}
	texts := []string{"# Deploy guide\n\nRun make deploy after the tests pass.\n", "hello world\n", "{\"feature_flags\": {\"new_checkout\": true}}\n", "apiVersion: v1\nkind: ConfigMap\n", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.\n"}
	for range 12 {
		t := pick(g, texts) + strings.Repeat(pick(g, texts), g.n(0, 3))
		add("base64-text", fmt.Sprintf("{\"name\": \"README.md\", \"encoding\": \"base64\", \"content\": \"%s\"}", base64.StdEncoding.EncodeToString([]byte(t))))
	}
	for range 8 {
		add("base64-text", fmt.Sprintf("$ echo %s | base64 -d\n%s", base64.StdEncoding.EncodeToString([]byte(pick(g, texts))), "(decoded)"))
	}
	for range 8 {
		cert := "-----BEGIN CERTIFICATE-----\nMIIC" + g.s(b64, 60) + "\n-----END CERTIFICATE-----\n"
		add("base64-text", fmt.Sprintf("apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: %s\n    server: https://10.0.0.1:6443\n  name: kind-dev", base64.StdEncoding.EncodeToString([]byte(cert))))
	}
	for range 6 {
		add("base64-text", fmt.Sprintf("{\"nextPageToken\": \"%s\", \"items\": []}", base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("{\"offset\":%d,\"sort\":\"created_at\"}", g.n(10, 9999))))))
	}
	for range 6 {
		add("base64-text", fmt.Sprintf("Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n\n%s", base64.StdEncoding.EncodeToString([]byte(strings.Repeat(pick(g, texts), 3)))))
	}
}

func (g *gen) publicKeys() {
	src := "negative-formats"
	add := func(text string) { g.negative("public-key", src, text) }
	for range 10 {
		add(fmt.Sprintf("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ%s %s@%s", g.s(b64, 500), pick(g, dbUsers), pick(g, services)))
	}
	for range 10 {
		add(fmt.Sprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s %s", g.s(b64, 43), pick(g, []string{"deploy key", "ci-runner", "laptop"})))
	}
	for range 6 {
		add(fmt.Sprintf("%s ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB%s=", pick(g, []string{"github.com", "gitlab.com", "10.0.4.12"}), g.s(b64, 107)))
	}
	body := func(lines int) string {
		var b strings.Builder
		for range lines {
			b.WriteString(g.s(b64, 64) + "\n")
		}
		return b.String()
	}
	for range 8 {
		add("-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + g.s(b64, 20) + "\n" + body(5) + "-----END PUBLIC KEY-----")
	}
	for range 10 {
		add("-----BEGIN CERTIFICATE-----\nMII" + g.s(b64, 61) + "\n" + body(g.n(6, 14)) + "-----END CERTIFICATE-----")
	}
	for range 4 {
		add("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBF" + g.s(b64, 58) + "\n" + body(6) + "=" + g.s(b64, 4) + "\n-----END PGP PUBLIC KEY BLOCK-----")
	}
	for range 6 {
		add(fmt.Sprintf("{\"keys\": [{\"kty\": \"RSA\", \"kid\": \"%s\", \"use\": \"sig\", \"alg\": \"RS256\", \"n\": \"%s\", \"e\": \"AQAB\"}]}", g.s(b64url, 43), g.s(b64url, 342)))
	}
	for range 6 {
		add(fmt.Sprintf("public_key: \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%s\"", g.s(b64, 43)))
	}
	for range 6 {
		add(fmt.Sprintf("# public key: age1%s\nrecipients:\n  - age1%s", g.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58), g.s("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)))
	}
	for range 4 {
		add(fmt.Sprintf("<X509Certificate>MII%s</X509Certificate>", g.s(b64, 600)))
	}
}

func (g *gen) placeholders() {
	src := "negative-formats"
	add := func(text string) { g.negative("placeholder", src, text) }
	vals := []string{"${DB_PASSWORD}", "<your-token>", "changeme", "xxxx", "****", "YOUR_API_KEY", "{{ .Values.db.password }}",
		"%DB_PASSWORD%", "REPLACE_ME", "<password>", "your-secret-here", "********", "xxxxxxxxxxxxxxxxxxxxxxxx", "<REDACTED>", "[REDACTED]",
		"***", "", "null", "~", "<insert token>", "$API_TOKEN", "{{ secrets.NPM_TOKEN }}", "${{ secrets.DEPLOY_KEY }}", "TODO", "dummy",
		"your_client_secret", "<%= ENV['DB_PASSWORD'] %>", "$(DB_PASSWORD)", "@@db_password@@", "${env:API_KEY}", "{api_key}",
		"sk_live_...", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "AKIAXXXXXXXXXXXXXXXX", "********************", "<secret>", "[hidden]", "not-set"}
	keys := []string{"password", "DB_PASSWORD", "api_key", "apiKey", "client_secret", "token", "SECRET_KEY", "access_token", "auth_token", "GITHUB_TOKEN"}
	for range 60 {
		k, v := pick(g, keys), pick(g, vals)
		add(pick(g, []string{
			k + "=" + v,
			k + ": \"" + v + "\"",
			"\"" + k + "\": \"" + v + "\"",
			"<add key=\"" + pascal(strings.ToUpper(k)) + "\" value=\"" + v + "\" />",
			k + " = \"" + v + "\"",
			"export " + strings.ToUpper(k) + "=\"" + v + "\"",
		}))
	}
	for range 12 {
		add(pick(g, []string{
			"curl -H \"Authorization: Bearer <token>\" https://api.example.com/v1/me",
			"curl -H \"Authorization: Bearer $TOKEN\" https://api.example.com/v1/me",
			"Authorization: Bearer ${ACCESS_TOKEN}",
			"docker login -u $REGISTRY_USER -p $REGISTRY_PASSWORD registry.example.com",
			"echo \"$CR_PAT\" | docker login ghcr.io -u USERNAME --password-stdin",
			"mongodb+srv://<username>:<password>@cluster0.ab1cd.mongodb.net/?retryWrites=true&w=majority",
			"postgres://user:${PGPASSWORD}@db.internal:5432/app",
			"DATABASE_URL=postgresql://USER:PASSWORD@HOST:PORT/DATABASE",
			"redis://:${REDIS_PASSWORD}@redis:6379/0",
			"amqp://{{ .Values.rabbitmq.user }}:{{ .Values.rabbitmq.password }}@rabbitmq:5672/",
			"mysql://root:<password>@localhost:3306/app",
			"Server=tcp:myserver.database.windows.net,1433;Database=mydb;User ID=<username>;Password=<password>;Encrypt=true;",
			"jdbc:postgresql://localhost:5432/app?user=app&password=${DB_PASS}",
			"mysql -u root -p app < dump.sql",
			"Set the STRIPE_SECRET_KEY variable to your live key (it starts with sk_live_).",
			"export OPENAI_API_KEY=\"sk-...\"",
			"password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  " + g.s(digits+"abcdef", 64),
			"DB_PASSWORD=\nDB_USER=app\nDB_HOST=localhost",
		}))
	}
	for range 8 {
		add(fmt.Sprintf("# AWS docs example\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = %s", pick(g, regions)))
	}
	for range 4 {
		add("AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;")
		add("UseDevelopmentStorage=true")
	}
}

func (g *gen) references() {
	src := "negative-formats"
	add := func(cat, text string) { g.negative(cat, src, text) }
	for range 10 {
		add("env-reference", pick(g, []string{
			"password = os.environ[\"DB_PASSWORD\"]",
			"const key = process.env.STRIPE_SECRET_KEY;",
			"token := os.Getenv(\"GITHUB_TOKEN\")",
			"api_key = ENV.fetch(\"API_KEY\")",
			"String password = System.getenv(\"DB_PASS\");",
			"var secret = Environment.GetEnvironmentVariable(\"ClientSecret\");",
			"password: \"{{ vault_db_password }}\"",
			"password = var.db_password",
			"token = data.vault_generic_secret.app.data[\"token\"]",
			"client_secret: !Ref OAuthClientSecret",
			"DB_PASSWORD=$(vault kv get -field=password secret/prod/db)",
			"password_file: /run/secrets/db_password",
			"POSTGRES_PASSWORD_FILE=/run/secrets/postgres_password",
			"SECRET_KEY = get_secret(\"django-secret-key\")",
			"aws secretsmanager get-secret-value --secret-id prod/db/password --query SecretString",
			"apiKey: ${file(./secrets.json):apiKey}",
			"password: ${ssm:/prod/db/password}",
			"token: '{{resolve:secretsmanager:prod/api:SecretString:token}}'",
			"with: { token: ${{ secrets.CODECOV_TOKEN }} }",
			"api_key = keyring.get_password(\"acme\", \"api\")",
		}))
	}
	for range 12 {
		svc := pick(g, services)
		add("k8s-secret-ref", fmt.Sprintf("env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n        name: %s-db\n        key: password\n  - name: API_TOKEN\n    valueFrom:\n      secretKeyRef:\n        name: %s-api\n        key: token\n", svc, svc))
	}
	for range 6 {
		add("k8s-secret-ref", fmt.Sprintf("envFrom:\n  - secretRef:\n      name: %s-env\nimagePullSecrets:\n  - name: regcred\nvolumes:\n  - name: tls\n    secret:\n      secretName: %s-tls", pick(g, services), pick(g, services)))
	}
	for range 8 {
		add("k8s-secret-ref", fmt.Sprintf("$ kubectl get secrets -n prod\nNAME                  TYPE                             DATA   AGE\n%s-db        Opaque                           2      41d\n%s-api-token    Opaque                           1      12d\nregcred               kubernetes.io/dockerconfigjson   1      90d", pick(g, services), pick(g, services)))
	}
	for range 8 {
		add("k8s-secret-ref", fmt.Sprintf("$ kubectl describe secret %s-db\nName:         %s-db\nNamespace:    prod\nType:  Opaque\n\nData\n====\npassword:  %d bytes\nusername:  %d bytes", pick(g, services), pick(g, services), g.n(12, 40), g.n(3, 12)))
	}
	for range 6 {
		add("k8s-secret-ref", fmt.Sprintf("apiVersion: external-secrets.io/v1beta1\nkind: ExternalSecret\nmetadata:\n  name: %s\nspec:\n  secretStoreRef:\n    name: vault\n  data:\n    - secretKey: password\n      remoteRef:\n        key: prod/%s/db\n        property: password", pick(g, services), pick(g, services)))
	}
}

func (g *gen) connectionsWithoutPasswords() {
	src := "connection-string-docs"
	add := func(text string) { g.negative("connection-no-password", src, text) }
	for range 40 {
		u := pick(g, dbUsers)
		add(pick(g, []string{
			"postgres://" + u + "@" + g.host("") + ":5432/" + pick(g, dbNames) + "?sslmode=require",
			"DATABASE_URL=postgresql://" + g.host("internal") + ":5432/" + pick(g, dbNames),
			"mongodb://mongo-0.db.internal:27017,mongo-1.db.internal:27017/?replicaSet=rs0",
			"redis://" + g.host("") + ":6379/" + fmt.Sprint(g.n(0, 15)),
			"amqp://" + g.host("internal") + ":5672/%2F",
			"mysql://" + u + "@localhost:3306/" + pick(g, dbNames),
			"https://" + u + "@bitbucket.org/acme/" + pick(g, services) + ".git",
			"ssh://git@gitlab.com:2222/acme/" + pick(g, services) + ".git",
			"git@github.com:acme/" + pick(g, services) + ".git",
			"sftp://deploy@files.example.com:22/upload",
			"smtp://smtp.example.com:587",
			"ldap://ldap.example.com:389/dc=example,dc=com",
			"HTTPS_PROXY=http://proxy.corp.example.com:3128",
			"clickhouse://default@" + g.host("") + ":9000/" + pick(g, dbNames),
			"snowflake://" + u + "@acme-prod/ANALYTICS?authenticator=externalbrowser",
			"Server=tcp:" + g.host("azure-sql") + ",1433;Database=" + pick(g, dbNames) + ";Authentication=Active Directory Default;Encrypt=True;",
			"Data Source=" + g.host("") + ";Initial Catalog=" + pick(g, dbNames) + ";Integrated Security=True;",
			"Server=" + g.host("") + ";Database=" + pick(g, dbNames) + ";Trusted_Connection=True;",
			"jdbc:postgresql://" + g.host("") + ":5432/" + pick(g, dbNames) + "?user=" + u + "&ssl=true&sslmode=verify-full",
			"jdbc:mysql://" + g.host("") + ":3306/" + pick(g, dbNames) + "?useSSL=true&serverTimezone=UTC",
			"host=" + g.host("") + " port=5432 dbname=" + pick(g, dbNames) + " user=" + u + " sslmode=require",
			"kafka-0.kafka-headless.prod.svc.cluster.local:9092",
			"https://es-01.example.com:9200/_cluster/health?pretty",
			"neo4j+s://" + g.s(hexLow, 8) + ".databases.neo4j.io",
			"nats://nats.messaging.svc:4222",
			"docker pull registry.example.com:5000/acme/" + pick(g, services) + "@sha256:" + g.s(hexLow, 64),
			"oci://ghcr.io/acme/charts/" + pick(g, services) + ":1.4.2",
			"https://" + g.host("") + ":8443/api/v1/namespaces/default/pods",
			"psql -h " + g.host("") + " -U " + u + " -d " + pick(g, dbNames) + " -W",
			"Endpoint=https://" + pick(g, services) + ".azconfig.io;Id=<id>;Secret=<secret>",
		}))
	}
}

func (g *gen) ordinaryURLs() {
	src := "negative-formats"
	add := func(text string) { g.negative("url-params", src, text) }
	for range 40 {
		add(pick(g, []string{
			fmt.Sprintf("https://api.github.com/repos/acme/%s/issues?state=open&per_page=100&page=%d", pick(g, services), g.n(1, 9)),
			fmt.Sprintf("https://www.example.com/pricing?utm_source=newsletter&utm_medium=email&utm_campaign=%s", g.s(lowAN, 10)),
			fmt.Sprintf("https://accounts.google.com/o/oauth2/v2/auth?client_id=%s-%s.apps.googleusercontent.com&redirect_uri=https%%3A%%2F%%2Fapp.example.com%%2Fcallback&response_type=code&scope=openid%%20email&state=%s&code_challenge=%s&code_challenge_method=S256", g.s(digits, 12), g.s(lowAN, 32), g.s(b64url, 32), g.s(b64url, 43)),
			fmt.Sprintf("https://support.example.com/search?q=password+reset&lang=en&page=%d", g.n(1, 5)),
			fmt.Sprintf("https://docs.example.com/api/authentication#api-key-%d", g.n(1, 9)),
			fmt.Sprintf("https://login.example.com/reset?token_type=email&expires=%d", g.n(1700000000, 1800000000)),
			fmt.Sprintf("https://grafana.example.com/d/%s/service-overview?orgId=1&from=now-6h&to=now&var-service=%s", g.s(b64url, 9), pick(g, services)),
			fmt.Sprintf("https://console.aws.amazon.com/cloudwatch/home?region=%s#logsV2:log-groups/log-group/$252Faws$252Flambda$252F%s", pick(g, regions), pick(g, services)),
			fmt.Sprintf("https://app.example.com/invite?ref=%s&plan=team", g.s(alnum, 10)),
			fmt.Sprintf("https://storage.googleapis.com/acme-public/%s/%s.png?generation=%d", g.timestamp()[:10], g.s(hexLow, 16), g.n(1000000000000000, 9999999999999999)),
			fmt.Sprintf("https://www.google.com/maps/search/?api=1&query=%s", pick(g, words)),
			fmt.Sprintf("https://medium.com/@%s/how-we-rotate-secrets-%s", pick(g, words), g.s(hexLow, 12)),
		}))
	}
}

func (g *gen) nonSecretSettings() {
	src := "config-formats"
	add := func(text string) { g.negative("non-secret-setting", src, text) }
	for range 70 {
		add(pick(g, []string{
			"token_type: Bearer\nexpires_in: 3600",
			fmt.Sprintf("{\"model\": \"claude-sonnet-4\", \"max_tokens\": %d, \"usage\": {\"input_tokens\": %d, \"output_tokens\": %d}}", g.n(256, 8192), g.n(10, 90000), g.n(10, 8000)),
			fmt.Sprintf("password_min_length: %d\npassword_require_symbols: true\npassword_expiry_days: %d", g.n(8, 16), g.n(30, 365)),
			"secret_name: prod-db-credentials\nsecretName: " + pick(g, services) + "-tls",
			"api_version: \"2024-10-21\"\napiVersion: apps/v1",
			"selector:\n  matchExpressions:\n    - key: app.kubernetes.io/name\n      operator: In\n      values: [" + pick(g, services) + "]",
			"\"primary_key\": \"id\", \"foreign_key\": \"customer_id\"",
			"auth:\n  type: oauth2\n  token_endpoint: https://login.example.com/oauth2/token\n  auth_method: client_secret_post",
			"public_key_path: ~/.ssh/id_ed25519.pub\nprivate_key_path: ~/.ssh/id_ed25519",
			"password_reset_url: https://app.example.com/account/reset",
			"\"tokenizer\": \"cl100k_base\", \"token_limit\": 128000",
			fmt.Sprintf("key_id: alias/%s-kms\nkms_key_arn: arn:aws:kms:%s:%s:key/%s", pick(g, services), pick(g, regions), g.s(digits, 12), g.uuid()),
			"passwordless: true\nsecret: false\nauth: required",
			"api_key_header: X-API-Key\ntoken_header: Authorization",
			"- uses: actions/cache@v4\n  with:\n    path: ~/.npm\n    key: ${{ runner.os }}-node-${{ hashFiles('**/package-lock.json') }}",
			fmt.Sprintf("{\"next_page_token\": \"%s\", \"results\": []}", g.s(b64url, 24)),
			fmt.Sprintf("{\"nextToken\": \"%s\", \"Items\": []}", g.s(b64, 60)),
			fmt.Sprintf("{\"continuationToken\": \"%s\", \"hasMore\": true}", g.s(b64url, 40)),
			fmt.Sprintf("csrf_token: %s", g.s(b64url, 43)),
			fmt.Sprintf("<input type=\"hidden\" name=\"authenticity_token\" value=\"%s\" />", g.s(b64, 86)+"=="),
			fmt.Sprintf("{\"cursor\": \"%s\", \"has_more\": true}", g.s(b64url, 32)),
			"keyboard_layout: us\nhotkey: ctrl+shift+p",
			fmt.Sprintf("{\"idempotency_key\": \"%s\", \"amount\": %d}", g.uuid(), g.n(100, 99999)),
			fmt.Sprintf("cache_key: \"user:%d:profile\"\npartition_key: tenant_id\nsort_key: created_at", g.n(1, 99999)),
			"password: \"\"  # set via DB_PASSWORD\nusername: app",
			fmt.Sprintf("s3_key: uploads/%s/%s.csv\nobject_key: exports/%s.parquet", g.timestamp()[:10], g.s(hexLow, 16), g.s(hexLow, 16)),
			fmt.Sprintf("\"client_id\": \"%s\"\n\"redirect_uri\": \"https://app.example.com/callback\"", g.uuid()),
			fmt.Sprintf("AWS_ACCESS_KEY_ID is rotated every %d days; the secret is kept in Secrets Manager.", g.n(30, 90)),
			fmt.Sprintf("{\"token_id\": \"tok_%s\", \"token_name\": \"ci-deploy\", \"token_expires_at\": \"%s\", \"scopes\": [\"read\"]}", g.s(alnum, 12), g.timestamp()),
			fmt.Sprintf("{\"keyId\": \"%s\", \"keyName\": \"signing-2026\", \"keyType\": \"RSA\", \"keySize\": 2048}", g.uuid()),
			"secrets:\n  - name: DB_PASSWORD\n    from: vault\n  - name: API_KEY\n    from: vault",
			fmt.Sprintf("{\"state\": \"%s\", \"nonce\": \"%s\"}", g.s(b64url, 32), g.s(b64url, 16)),
			"Access-Control-Allow-Headers: Authorization, X-API-Key, Content-Type",
			fmt.Sprintf("WWW-Authenticate: Bearer realm=\"api\", error=\"invalid_token\", error_description=\"The access token expired\""),
			fmt.Sprintf("\"secret_version\": %d, \"secret_arn\": \"arn:aws:secretsmanager:%s:%s:secret:prod/db-%s\"", g.n(1, 40), pick(g, regions), g.s(digits, 12), g.s(alnum, 6)),
		}))
	}
}

func (g *gen) proseAndCode() {
	src := "negative-formats"
	add := func(cat, text string) { g.negative(cat, src, text) }
	for range 40 {
		add("prose", pick(g, []string{
			"Rotate the deploy token after the incident; the password policy now requires 14 characters.",
			"Set the API key in the dashboard under Settings → Integrations, then restart the worker.",
			"The access token expired at 10:42 UTC, so the sync job retried with the refresh token.",
			"Never paste secrets into issues: use the vault and reference them by name.",
			"We moved the signing key to KMS; the old key was revoked on Tuesday.",
			"If authentication fails with 401, check that the token has the repo scope.",
			"Password changed successfully. You will be signed out of other sessions.",
			"fix(auth): don't log the bearer token when the upstream returns 403",
			"The secret scanner flagged a test fixture; it was a false positive and is allowlisted now.",
			"Use `--password-stdin` rather than `-p` so the password stays out of the shell history.",
			"Tokens are scoped per project and expire after 90 days unless renewed.",
			"Your API key was regenerated. Update it in every client that uses it.",
			"The key rotation runbook lives in docs/runbooks/rotate-keys.md.",
			"Passing the credentials file path via GOOGLE_APPLICATION_CREDENTIALS is preferred.",
			"Error: invalid_client (the client secret is wrong or expired)",
			"401 Unauthorized: token is missing or malformed",
			"WARN auth: password for user app will expire in 7 days",
			"session expired; please log in again to get a new token",
		}))
	}
	for range 40 {
		add("code", pick(g, []string{
			"def get_password(self):\n    return self._password",
			"if token is None:\n    raise AuthError(\"missing token\")",
			"secret := os.Getenv(\"SECRET\")\nif secret == \"\" {\n\tlog.Fatal(\"SECRET is not set\")\n}",
			"password := r.FormValue(\"password\")\nhash, err := bcrypt.GenerateFromPassword([]byte(password), 12)",
			"const tokenHeader = \"X-Auth-Token\"",
			"headers = {\"Authorization\": f\"Bearer {token}\"}",
			"client = OpenAI(api_key=os.environ[\"OPENAI_API_KEY\"])",
			"apiKey: process.env.API_KEY ?? '',",
			"func (c *Client) SetToken(token string) { c.token = token }",
			"$password = $_POST['password'];",
			"@Value(\"${spring.datasource.password}\")\nprivate String password;",
			"var token = await credential.GetTokenAsync(new TokenRequestContext(scopes));",
			"let key = std::env::var(\"API_KEY\").expect(\"API_KEY\");",
			"password_input = getpass.getpass(\"Password: \")",
			"if (!req.headers.authorization?.startsWith('Bearer ')) return res.sendStatus(401);",
			"private static final String SECRET_HEADER = \"X-Webhook-Secret\";",
			"expect(screen.getByLabelText('Password')).toBeInTheDocument();",
			"CREATE TABLE api_keys (id uuid PRIMARY KEY, key_hash bytea NOT NULL, created_at timestamptz);",
		}))
	}
	for range 25 {
		add("log-line", pick(g, []string{
			fmt.Sprintf("%s INFO  auth: user %s logged in (mfa=true) session=%s", g.timestamp(), pick(g, dbUsers), g.uuid()),
			fmt.Sprintf("%s WARN  token refresh failed for client %s, retrying in %ds", g.timestamp(), g.uuid(), g.n(1, 60)),
			fmt.Sprintf("level=info msg=\"token refreshed\" expires_in=3600 token_id=%s", g.s(hexLow, 12)),
			fmt.Sprintf("%s DEBUG secret %s/%s-db synced (version %d)", g.timestamp(), "prod", pick(g, services), g.n(1, 40)),
			fmt.Sprintf("%s ERROR password authentication failed for user \"%s\"", g.timestamp(), pick(g, dbUsers)),
			fmt.Sprintf("%s INFO api key %s...%s used from %s", g.timestamp(), g.s(alnum, 4), g.s(alnum, 4), pick(g, regions)),
			fmt.Sprintf("%s INFO GET /api/v1/tokens?page=%d 200 %dms", g.timestamp(), g.n(1, 9), g.n(1, 900)),
			fmt.Sprintf("%s INFO  [%s] credentials loaded from /var/run/secrets/eks.amazonaws.com/serviceaccount/token", g.timestamp(), pick(g, services)),
		}))
	}
}
