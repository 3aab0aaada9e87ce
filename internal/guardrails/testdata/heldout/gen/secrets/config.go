package main

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// passwordKeys and secretKeys are the names credentials are stored under
// in configuration (framework docs, compose files, charts).
var (
	passwordKeys = []string{"password", "PASSWORD", "db_password", "DB_PASSWORD", "dbPassword", "POSTGRES_PASSWORD",
		"MYSQL_ROOT_PASSWORD", "MYSQL_PASSWORD", "passwd", "pwd", "pass", "admin_password", "adminPassword", "root_password",
		"smtp_password", "SMTP_PASS", "mail.password", "REDIS_PASSWORD", "redis_password", "RABBITMQ_DEFAULT_PASS",
		"ldap_bind_password", "bindPassword", "keystore.password", "keyStorePassword", "truststore_password", "passphrase",
		"ssh_passphrase", "ELASTIC_PASSWORD", "MONGO_INITDB_ROOT_PASSWORD", "registry_password", "REGISTRY_PASSWORD",
		"proxy_password", "ftp_pass", "sa_password", "MSSQL_SA_PASSWORD", "ansible_become_password", "vnc_password"}
	secretKeys = []string{"secret", "client_secret", "clientSecret", "CLIENT_SECRET", "app_secret", "jwt_secret", "JWT_SECRET",
		"session_secret", "SESSION_SECRET", "secret_key", "SECRET_KEY", "SECRET_KEY_BASE", "webhook_secret", "signing_secret",
		"signingKey", "encryption_key", "ENCRYPTION_KEY", "master_key", "api_key", "apiKey", "API_KEY", "apikey", "api-key",
		"access_key", "accessKey", "secret_access_key", "secretAccessKey", "access_token", "accessToken", "refresh_token",
		"refreshToken", "auth_token", "authToken", "bearer_token", "private_token", "token", "TOKEN", "service_key",
		"consumer_secret", "app_key", "hmac_key", "credentials", "auth", "license_key", "admin_token", "bot_token",
		"deploy_key_token", "subscription_key", "sas_token", "cookie_secret", "NEXTAUTH_SECRET", "AUTH_SECRET", "APP_KEY"}
)

// secretValue returns a random value shaped as what lives under a secret
// key: hex, base64, alphanumerics, Laravel's base64: key.
func (g *gen) secretValue() string {
	switch g.r.IntN(6) {
	case 0:
		return g.s(hexLow, pick(g, []int{32, 40, 64}))
	case 1:
		return g.b64pad(pick(g, []int{32, 43, 44, 64}))
	case 2:
		return g.s(alnum, g.n(20, 48))
	case 3:
		return g.s(b64url, g.n(24, 64))
	case 4:
		return "base64:" + g.s(b64, 43) + "="
	}
	return g.s(alnum+"-_.", g.n(16, 40))
}

// configValues writes credentials under secret-like keys in every config
// format: .env, YAML, JSON, XML (web.config appSettings, Maven, Spring,
// NuGet, Tomcat), TOML, INI, HCL, Java properties, PHP, Python, Ruby, Go,
// JavaScript, SQL and server configs.
func (g *gen) configValues() {
	src := "config-formats"
	for range 150 {
		var key, val string
		if g.r.IntN(2) == 0 {
			key, val = pick(g, passwordKeys), g.password(true)
		} else {
			key, val = pick(g, secretKeys), g.secretValue()
		}
		text := g.configLayout(key, val)
		g.secret("config-value", src, text, val)
	}
	for range 20 {
		pw := g.password(false)
		pw = strings.NewReplacer("\"", "", "'", "", "\\", "", "<", "", ">", "", "&", "").Replace(pw)
		key := pick(g, passwordKeys)
		text := pick(g, []string{
			key + ": \"" + pw + "\"",
			"\"" + key + "\": \"" + pw + "\",",
			key + " = \"" + pw + "\"",
			key + "='" + pw + "'",
		})
		g.secret("config-value", src, text, pw)
	}
	g.configDocuments()
}

// configLayout writes key and val in one of the formats.
func (g *gen) configLayout(key, val string) string {
	svc := pick(g, services)
	switch g.r.IntN(22) {
	case 0:
		return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key)) + "=" + val
	case 1:
		return "# " + svc + "\nAPP_ENV=production\n" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key)) + "=\"" + val + "\"\n"
	case 2:
		return svc + ":\n  host: " + g.host("") + "\n  " + key + ": " + val + "\n"
	case 3:
		return svc + ":\n  " + key + ": \"" + val + "\"\n  port: 5432\n"
	case 4:
		return "{\"host\": \"" + g.host("") + "\", \"" + key + "\": \"" + val + "\", \"port\": 5432}"
	case 5:
		return "{\n  \"" + svc + "\": {\n    \"" + key + "\": \"" + val + "\"\n  }\n}"
	case 6:
		return "<add key=\"" + pascal(strings.NewReplacer(".", "_", "-", "_").Replace(strings.ToUpper(key))) + "\" value=\"" + val + "\" />"
	case 7:
		return "<" + key + ">" + val + "</" + key + ">"
	case 8:
		return "[" + svc + "]\n" + key + " = \"" + val + "\"\n"
	case 9:
		return "[" + svc + "]\nhost = " + g.host("") + "\n" + key + " = " + val + "\n"
	case 10:
		return "resource \"" + svc + "_config\" \"main\" {\n  name = \"" + svc + "\"\n  " + strings.NewReplacer(".", "_", "-", "_").Replace(key) + " = \"" + val + "\"\n}"
	case 11:
		return svc + "." + key + "=" + val
	case 12:
		return "define('" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key)) + "', '" + val + "');"
	case 13:
		return strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key)) + " = \"" + val + "\""
	case 14:
		return "    '" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key)) + "': '" + val + "',"
	case 15:
		return "config." + strings.NewReplacer(".", "_", "-", "_").Replace(key) + " = \"" + val + "\""
	case 16:
		return "  " + camel(strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))) + ": '" + val + "',"
	case 17:
		return "\t" + pascal(strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(key))) + ": \"" + val + "\","
	case 18:
		return "  :" + strings.NewReplacer(".", "_", "-", "_").Replace(key) + " => \"" + val + "\","
	case 19:
		return "<property name=\"" + key + "\" value=\"" + val + "\"/>"
	case 20:
		return "<entry key=\"" + svc + "." + key + "\">" + val + "</entry>"
	}
	return "set " + key + " " + val
}

// configDocuments writes whole config files in which a credential sits
// among ordinary settings.
func (g *gen) configDocuments() {
	src := "config-formats"
	add := func(text string, secrets ...string) { g.secret("config-document", src, text, secrets...) }
	each := func(n int, value func() string, text func(v string) string) {
		g.each("config-document", src, n, value, text)
	}
	each(5, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("<settings>\n  <servers>\n    <server>\n      <id>%s-releases</id>\n      <username>deploy</username>\n      <password>%s</password>\n    </server>\n  </servers>\n</settings>", pick(g, services), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("<packageSourceCredentials>\n  <acme>\n    <add key=\"Username\" value=\"build\" />\n    <add key=\"ClearTextPassword\" value=\"%s\" />\n  </acme>\n</packageSourceCredentials>", pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("<tomcat-users>\n  <role rolename=\"manager-gui\"/>\n  <user username=\"%s\" password=\"%s\" roles=\"manager-gui,admin-gui\"/>\n</tomcat-users>", pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("<Resource name=\"jdbc/%s\" auth=\"Container\" type=\"javax.sql.DataSource\"\n          username=\"%s\" password=\"%s\"\n          driverClassName=\"org.postgresql.Driver\" url=\"jdbc:postgresql://%s:5432/%s\"/>", pick(g, dbNames), pick(g, dbUsers), pw, g.host(""), pick(g, dbNames))
	})
	each(4, func() string { return g.secretValue() }, func(v string) string {
		return fmt.Sprintf("<configuration>\n  <appSettings>\n    <add key=\"webpages:Version\" value=\"3.0.0.0\" />\n    <add key=\"%s\" value=\"%s\" />\n    <add key=\"ClientValidationEnabled\" value=\"true\" />\n  </appSettings>\n</configuration>", pick(g, []string{"StripeSecretKey", "SendGridApiKey", "ApiSecret", "TwilioAuthToken", "JwtSigningKey", "StorageAccessKey", "PaymentGatewayPassword"}), v)
	})
	each(3, func() string { return g.secretValue() }, func(v string) string {
		return fmt.Sprintf("<setting name=\"%s\" serializeAs=\"String\">\n  <value>%s</value>\n</setting>", pick(g, []string{"ApiSecret", "ServicePassword", "AccessToken"}), v)
	})
	each(5, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("spring:\n  datasource:\n    url: jdbc:postgresql://%s:5432/%s\n    username: %s\n    password: %s\n  jpa:\n    hibernate:\n      ddl-auto: validate\n", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("production:\n  adapter: postgresql\n  host: %s\n  database: %s\n  username: %s\n  password: %s\n", g.host("rds"), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(5, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_USER: %s\n      POSTGRES_PASSWORD: %s\n      POSTGRES_DB: %s\n", pick(g, dbUsers), pw, pick(g, dbNames))
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("DATABASES = {\n    'default': {\n        'ENGINE': 'django.db.backends.postgresql',\n        'NAME': '%s',\n        'USER': '%s',\n        'PASSWORD': '%s',\n        'HOST': '%s',\n    }\n}", pick(g, dbNames), pick(g, dbUsers), pw, g.host(""))
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp_%s' );\ndefine( 'DB_PASSWORD', '%s' );\ndefine( 'DB_HOST', 'localhost' );", pick(g, services), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("[client]\nuser=%s\npassword=%s\nhost=%s\n", pick(g, dbUsers), pw, g.host(""))
	})
	for range 4 {
		id, sec := "AKIA"+g.s(b32, 16), g.s(b64, 40)
		add(fmt.Sprintf("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\nregion = %s\n", id, sec, pick(g, regions)), id, sec)
	}
	each(3, func() string { return "pypi-AgEIcHlwaS5vcmcCJ" + g.s(b64url, 150) }, func(tok string) string {
		return fmt.Sprintf("[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = %s\n", tok)
	})
	each(3, func() string { return "npm_" + g.s(alnum, 36) }, func(tok string) string {
		return fmt.Sprintf("registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=%s\nalways-auth=true\n", tok)
	})
	each(3, func() string {
		return base64.StdEncoding.EncodeToString([]byte(pick(g, dbUsers) + ":" + g.password(true)))
	}, func(auth string) string {
		return fmt.Sprintf("@acme:registry=https://npm.corp.example.com/\n//npm.corp.example.com/:_auth=%s\n", auth)
	})
	for range 3 {
		id, pw := "AKIA"+g.s(b32, 16), g.password(true)
		add(fmt.Sprintf("[access_key]\naccess_key = %s\nsecret_key = %s\nhost_base = s3.amazonaws.com\n", id, pw), id, pw)
	}
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("resource \"aws_db_instance\" \"%s\" {\n  engine            = \"postgres\"\n  instance_class    = \"db.t4g.medium\"\n  username          = \"%s\"\n  password          = \"%s\"\n  allocated_storage = 50\n}", pick(g, services), pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("db_username = \"%s\"\ndb_password = \"%s\"\nenvironment = \"production\"\n", pick(g, dbUsers), pw)
	})
	each(3, func() string { return "cio" + g.s(alnum, 32) }, func(tok string) string { return fmt.Sprintf("[registry]\ntoken = \"%s\"\n", tok) })
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("bind 0.0.0.0\nport 6379\nrequirepass %s\nmaxmemory 2gb\n", pw)
	})
	each(2, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("replicaof redis-primary.internal 6379\nmasterauth %s\n", pw)
	})
	each(4, func() string { return strings.ReplaceAll(g.password(true), "'", "") }, func(pw string) string {
		return fmt.Sprintf("CREATE USER %s WITH PASSWORD '%s';\nGRANT CONNECT ON DATABASE %s TO %s;", pick(g, dbUsers), pw, pick(g, dbNames), pick(g, dbUsers))
	})
	each(3, func() string { return strings.ReplaceAll(g.password(true), "'", "") }, func(pw string) string {
		return fmt.Sprintf("ALTER USER '%s'@'%%' IDENTIFIED BY '%s';", pick(g, dbUsers), pw)
	})
	each(2, func() string { return strings.ReplaceAll(g.password(true), "'", "") }, func(pw string) string {
		return fmt.Sprintf("CREATE LOGIN %s WITH PASSWORD = '%s';", pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("transporter = nodemailer.createTransport({\n  host: 'smtp.example.com',\n  port: 587,\n  auth: { user: 'alerts', pass: '%s' },\n});", pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("resp = requests.get(url, auth=(\"%s\", \"%s\"), timeout=10)", pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("es = Elasticsearch(\"https://%s:9200\", basic_auth=(\"elastic\", \"%s\"))", g.host(""), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("all:\n  vars:\n    ansible_user: deploy\n    ansible_become_password: %s\n", pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("uri ldap://%s/\nbase dc=example,dc=com\nbinddn cn=nslcd,dc=example,dc=com\nbindpw %s\n", g.host(""), pw)
	})
	each(3, func() string { return g.secretValue() }, func(tok string) string { return fmt.Sprintf("auth:\n  type: bearer\n  token: %s\n", tok) })
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("mail.smtp.host=smtp.example.com\nmail.smtp.port=587\nmail.smtp.user=notifications\nmail.smtp.password=%s\n", pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("grafana:\n  adminUser: admin\n  adminPassword: %s\n  persistence:\n    enabled: true\n", pw)
	})
	each(3, func() string { return g.secretValue() }, func(v string) string {
		return fmt.Sprintf("[auth.generic_oauth]\nenabled = true\nclient_id = %s\nclient_secret = %s\nscopes = openid email profile\n", g.uuid(), v)
	})
}
