package main

import (
	"fmt"
	"strings"
)

// urlScheme is one URL form of a connection string: scheme, default port,
// the host kind and what follows the authority.
type urlScheme struct {
	scheme, port, host string
	tail               func(g *gen) string
	user               func(g *gen) string
}

// connectionStrings writes passwords in connection strings and URLs of
// every common database and protocol (URI userinfo, RFC 3986 3.2.1, as the
// drivers' documentation writes it) and in their key=value forms (ADO.NET,
// ODBC, JDBC, libpq, Kafka's JAAS, Azure's connection strings), alone and
// in the places they are found: .env files, YAML, code, log lines, errors.
func (g *gen) connectionStrings() {
	src := "connection-string-docs"
	db := func(g *gen) string { return "/" + pick(g, dbNames) }
	none := func(*gen) string { return "" }
	user := func(g *gen) string { return pick(g, dbUsers) }
	schemes := []urlScheme{
		{"postgres", "5432", "", func(g *gen) string {
			return db(g) + pick(g, []string{"", "?sslmode=require", "?sslmode=verify-full&application_name=" + pick(g, services)})
		}, user},
		{"postgresql", "5432", "rds", func(g *gen) string { return db(g) + "?sslmode=require" }, user},
		{"postgresql+psycopg2", "5432", "", db, user},
		{"postgresql+asyncpg", "5432", "internal", db, user},
		{"mysql", "3306", "", func(g *gen) string { return db(g) + pick(g, []string{"", "?charset=utf8mb4", "?ssl-mode=REQUIRED"}) }, user},
		{"mysql+pymysql", "3306", "rds", db, user},
		{"mariadb", "3306", "", db, user},
		{"mongodb", "27017", "", func(g *gen) string {
			return pick(g, []string{"/" + pick(g, dbNames) + "?authSource=admin", "/?replicaSet=rs0&authSource=admin", "/" + pick(g, dbNames)})
		}, user},
		{"mongodb+srv", "", "atlas", func(g *gen) string {
			return "/" + pick(g, []string{"", pick(g, dbNames)}) + "?retryWrites=true&w=majority&appName=Cluster0"
		}, user},
		{"redis", "6379", "", func(g *gen) string { return pick(g, []string{"/0", "/1", ""}) }, func(g *gen) string { return pick(g, []string{"", "default"}) }},
		{"rediss", "6380", "", func(g *gen) string { return pick(g, []string{"/0", ""}) }, func(g *gen) string { return pick(g, []string{"", "default"}) }},
		{"amqp", "5672", "", func(g *gen) string { return pick(g, []string{"/", "/%2F", "/" + pick(g, services)}) }, user},
		{"amqps", "5671", "", func(g *gen) string { return "/" + pick(g, services) }, user},
		{"sqlserver", "1433", "azure-sql", func(g *gen) string { return "?database=" + pick(g, dbNames) + "&encrypt=true" }, user},
		{"mssql+pyodbc", "1433", "azure-sql", func(g *gen) string { return db(g) + "?driver=ODBC+Driver+18+for+SQL+Server" }, user},
		{"oracle", "1521", "", func(g *gen) string { return "/ORCLPDB1" }, user},
		{"oracle+oracledb", "1521", "", func(g *gen) string { return "/?service_name=FREEPDB1" }, user},
		{"ftp", "21", "", func(g *gen) string { return "/pub/exports/" }, user},
		{"ftps", "990", "", func(g *gen) string { return "/incoming" }, user},
		{"sftp", "22", "", func(g *gen) string { return "/upload/" + pick(g, services) }, user},
		{"smtp", "587", "", none, func(g *gen) string { return pick(g, []string{"apikey", "postmaster", "notifications"}) }},
		{"smtps", "465", "", none, func(g *gen) string { return pick(g, []string{"alerts", "no-reply", "AKIA" + g.s(b32, 16)}) }},
		{"ldap", "389", "", func(g *gen) string { return "/dc=example,dc=com" }, func(g *gen) string { return "svc_ldap" }},
		{"ldaps", "636", "", func(g *gen) string { return "/ou=people,dc=example,dc=org" }, func(g *gen) string { return "binduser" }},
		{"http", "3128", "", none, func(g *gen) string { return pick(g, []string{"proxyuser", "svc-proxy", "jdoe"}) }},
		{"https", "8080", "", none, func(g *gen) string { return pick(g, []string{"proxyuser", "build"}) }},
		{"socks5", "1080", "", none, func(g *gen) string { return "tunnel" }},
		{"https", "9200", "", func(g *gen) string { return "/" + pick(g, []string{"logs-*/_search", "_cluster/health", ""}) }, func(g *gen) string { return "elastic" }},
		{"clickhouse", "9000", "", db, func(g *gen) string { return pick(g, []string{"default", "analyst"}) }},
		{"clickhouse+http", "8123", "", db, func(g *gen) string { return "default" }},
		{"snowflake", "", "", func(g *gen) string { return "@" }, user},
		{"cassandra", "9042", "", func(g *gen) string { return "/" + pick(g, dbNames) }, user},
		{"neo4j+s", "", "", none, func(g *gen) string { return "neo4j" }},
		{"bolt", "7687", "", none, func(g *gen) string { return "neo4j" }},
		{"http", "5984", "", func(g *gen) string { return "/_all_dbs" }, func(g *gen) string { return "admin" }},
		{"nats", "4222", "", none, user},
		{"mqtt", "1883", "", none, func(g *gen) string { return pick(g, []string{"sensor-gw", "device01"}) }},
		{"mqtts", "8883", "", none, func(g *gen) string { return "telemetry" }},
		{"influxdb", "8086", "", db, user},
		{"rtsp", "554", "", func(g *gen) string { return "/Streaming/Channels/101" }, func(g *gen) string { return "admin" }},
		{"imaps", "993", "", func(g *gen) string { return "/INBOX" }, func(g *gen) string { return "support" }},
		{"jdbc:mysql", "3306", "", db, user},
		{"postgresql", "26257", "", func(g *gen) string { return "/defaultdb?sslmode=verify-full" }, user},
	}
	wrap := connWrappers()
	for _, sc := range schemes {
		for range 3 {
			pw := g.urlPassword()
			host := g.host(sc.host)
			switch sc.scheme {
			case "mongodb":
				host = fmt.Sprintf("mongo-0.%[1]s:27017,mongo-1.%[1]s:27017,mongo-2.%[1]s", pick(g, []string{"db.internal", "prod.example.net"}))
			case "snowflake":
				host = strings.ToLower(g.s(upper, 7)) + "-" + strings.ToLower(g.s(upper, 7))
			case "neo4j+s":
				host = g.s(hexLow, 8) + ".databases.neo4j.io"
			case "http":
				if sc.port == "3128" {
					host = "proxy.corp.example.com"
				}
			}
			authority := host
			if sc.port != "" && sc.scheme != "mongodb" {
				authority += ":" + sc.port
			}
			tail := sc.tail(g)
			if sc.scheme == "snowflake" {
				tail = "/" + strings.ToUpper(pick(g, dbNames)) + "/PUBLIC?warehouse=COMPUTE_WH&role=ANALYST"
			}
			usr := sc.user(g)
			u := sc.scheme + "://" + usr + ":" + pw + "@" + authority + tail
			w := wrap[g.r.IntN(len(wrap))]
			if strings.HasPrefix(usr, "AKIA") { // SES SMTP: the user is an access key id
				g.secret("connection-string", src, w(g, sc.scheme, u), usr, pw)
				continue
			}
			g.secret("connection-string", src, w(g, sc.scheme, u), pw)
		}
	}
	// Userinfo in places other than a database URL: proxies in the
	// environment, git remotes, package indexes.
	for range 6 {
		pw := g.urlPassword()
		g.secret("connection-string", src, pick(g, []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY"})+"=http://"+pick(g, dbUsers)+":"+pw+"@proxy.corp.example.com:"+pick(g, []string{"3128", "8080", "8888"}), pw)
	}
	for range 6 {
		tok := "ghp_" + g.s(alnum, 36)
		g.secret("connection-string", src, "git clone https://"+pick(g, []string{"x-access-token", "oauth2", "ci-bot"})+":"+tok+"@github.com/acme/"+pick(g, services)+".git", tok)
	}
	for range 4 {
		pw := g.urlPassword()
		g.secret("connection-string", src, "[global]\nindex-url = https://"+pick(g, dbUsers)+":"+pw+"@pypi.corp.example.com/simple\n", pw)
	}
	for range 4 {
		secret := g.s(b64url, 27)
		g.secret("connection-string", src, "CLOUDINARY_URL=cloudinary://"+g.s(digits, 15)+":"+secret+"@"+pick(g, services)+"-media", secret)
	}
	for range 4 {
		pw := g.urlPassword()
		g.secret("connection-string", src, "remote: https://deploy:"+pw+"@dev.azure.com/acme/"+pick(g, services)+"/_git/"+pick(g, services), pw)
	}
	g.connectionParams()
}

// connWrappers put a connection string where one is found.
func connWrappers() []func(g *gen, scheme, u string) string {
	return []func(g *gen, scheme, u string) string{
		func(g *gen, scheme, u string) string { return u },
		func(g *gen, scheme, u string) string { return "DATABASE_URL=" + u },
		func(g *gen, scheme, u string) string { return "DATABASE_URL=\"" + u + "\"\nREDIS_TTL=300\n" },
		func(g *gen, scheme, u string) string {
			return g.timestamp() + " INFO  [" + pick(g, services) + "] connecting to " + u + " (attempt " + fmt.Sprint(g.n(1, 5)) + "/5)"
		},
		func(g *gen, scheme, u string) string {
			return "Error: failed to connect to `" + u + "`: connection refused\n    at Pool.connect (node_modules/pg-pool/index.js:45:11)"
		},
		func(g *gen, scheme, u string) string {
			return "engine = create_engine(\"" + u + "\", pool_pre_ping=True)"
		},
		func(g *gen, scheme, u string) string {
			return "services:\n  " + pick(g, services) + ":\n    environment:\n      - DATABASE_URL=" + u + "\n      - PORT=8080\n"
		},
		func(g *gen, scheme, u string) string { return "spring.datasource.url=" + u },
		func(g *gen, scheme, u string) string {
			return "{\"name\": \"" + pick(g, services) + "\", \"dsn\": \"" + u + "\"}"
		},
		func(g *gen, scheme, u string) string { return "production:\n  url: " + u + "\n  pool: 10\n" },
		func(g *gen, scheme, u string) string { return "$ psql \"" + u + "\" -c 'select 1'" },
		func(g *gen, scheme, u string) string {
			return "level=error ts=" + g.timestamp() + " caller=store.go:88 msg=\"open store\" url=" + u + " err=\"i/o timeout\""
		},
		func(g *gen, scheme, u string) string { return "client = MongoClient('" + u + "')" },
		func(g *gen, scheme, u string) string { return "- name: BROKER_URL\n  value: '" + u + "'" },
		func(g *gen, scheme, u string) string { return "  url = \"" + u + "\"" },
	}
}

// connectionParams writes passwords in key=value connection strings.
func (g *gen) connectionParams() {
	src := "connection-string-docs"
	add := func(text, pw string) { g.secret("connection-params", src, text, pw) }
	each := func(n int, value func() string, text func(v string) string) {
		g.each("connection-params", src, n, value, text)
	}
	each(5, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("Server=tcp:%s,1433;Initial Catalog=%s;Persist Security Info=False;User ID=%s;Password=%s;MultipleActiveResultSets=False;Encrypt=True;TrustServerCertificate=False;Connection Timeout=30;", g.host("azure-sql"), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("Data Source=%s;Initial Catalog=%s;User Id=%s;Password=%s;", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("Server=%s;Database=%s;Uid=%s;Pwd=%s;", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("Host=%s;Port=5432;Database=%s;Username=%s;Password=%s;SSL Mode=Require", g.host("rds"), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	for range 4 {
		pw := g.password(false)
		pw = strings.NewReplacer("}", "", "{", "").Replace(pw)
		add(fmt.Sprintf("Driver={ODBC Driver 18 for SQL Server};Server=tcp:%s,1433;Database=%s;Uid=%s;Pwd={%s};Encrypt=yes;", g.host("azure-sql"), pick(g, dbNames), pick(g, dbUsers), pw), pw)
	}
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("<connectionStrings>\n  <add name=\"DefaultConnection\" connectionString=\"Data Source=%s;Initial Catalog=%s;User ID=%s;Password=%s\" providerName=\"System.Data.SqlClient\" />\n</connectionStrings>", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("{\n  \"ConnectionStrings\": {\n    \"Default\": \"Server=%s;Database=%s;User Id=%s;Password=%s;TrustServerCertificate=True\"\n  },\n  \"Logging\": { \"LogLevel\": { \"Default\": \"Information\" } }\n}", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	jdbc := []string{
		"jdbc:postgresql://%s:5432/%s?user=%s&password=%s&ssl=true",
		"jdbc:mysql://%s:3306/%s?user=%s&password=%s&useSSL=true",
		"jdbc:mariadb://%s:3306/%s?user=%s&password=%s",
		"jdbc:clickhouse://%s:8123/%s?user=%s&password=%s",
		"jdbc:redshift://%s:5439/%s?user=%s&password=%s",
	}
	for _, f := range jdbc {
		for range 3 {
			pw := g.urlPassword()
			add(fmt.Sprintf(f, g.host(""), pick(g, dbNames), pick(g, dbUsers), pw), pw)
		}
	}
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("jdbc:sqlserver://%s:1433;databaseName=%s;user=%s;password=%s;encrypt=true;", g.host("azure-sql"), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("jdbc:db2://%s:50000/%s:user=%s;password=%s;", g.host(""), strings.ToUpper(pick(g, dbNames)), pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.urlPassword() }, func(pw string) string {
		return fmt.Sprintf("jdbc:snowflake://%s.snowflakecomputing.com/?user=%s&password=%s&warehouse=COMPUTE_WH&db=%s", strings.ToLower(g.s(upper, 7)), pick(g, dbUsers), pw, strings.ToUpper(pick(g, dbNames)))
	})
	each(4, func() string { return g.s(alnum, g.n(10, 20)) }, func(pw string) string {
		return fmt.Sprintf(pick(g, []string{"jdbc:oracle:thin:%s/%s@%s:1521/ORCLPDB1", "jdbc:oracle:thin:%s/%s@//%s:1521/FREEPDB1"}), pick(g, dbUsers), pw, g.host(""))
	})
	each(3, func() string { return g.s(alnum, g.n(10, 20)) }, func(pw string) string {
		return fmt.Sprintf("$ sqlplus %s/%s@//%s:1521/ORCLPDB1", pick(g, dbUsers), pw, g.host(""))
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("host=%s port=5432 dbname=%s user=%s password=%s sslmode=require", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.s(alnum+"-_.!~", g.n(12, 24)) }, func(pw string) string {
		return fmt.Sprintf("dsn := \"%s:%s@tcp(%s:3306)/%s?parseTime=true&loc=UTC\"", pick(g, dbUsers), pw, g.host(""), pick(g, dbNames))
	})
	each(4, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("bootstrap.servers=%s:9092\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"%s\" password=\"%s\";", pick(g, []string{"pkc-" + g.s(lowAN, 5) + ".us-east-1.aws.confluent.cloud", "kafka-0.internal"}), g.s(upAN, 16), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username='%s' password='%s';", pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("bootstrap.servers: %s:9093\nsasl.mechanisms: SCRAM-SHA-512\nsasl.username: %s\nsasl.password: %s\n", g.host(""), pick(g, dbUsers), pw)
	})
	each(4, func() string { return g.s(b64, 86) + "==" }, func(key string) string {
		return fmt.Sprintf("DefaultEndpointsProtocol=https;AccountName=%s%s;AccountKey=%s;EndpointSuffix=core.windows.net", pick(g, services), g.s(lowAN, 6), key)
	})
	each(4, func() string { return g.s(b64, 43) + "=" }, func(key string) string {
		return fmt.Sprintf("Endpoint=sb://%s-ns.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=%s", pick(g, services), key)
	})
	each(3, func() string { return g.s(b64, 43) + "=" }, func(key string) string {
		return fmt.Sprintf("Endpoint=sb://%s-events.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=%s;EntityPath=%s", pick(g, services), key, pick(g, services))
	})
	each(3, func() string { return g.s(b64, 86) + "==" }, func(key string) string {
		return fmt.Sprintf("AccountEndpoint=https://%s-cosmos.documents.azure.com:443/;AccountKey=%s;", pick(g, services), key)
	})
	each(3, func() string { return g.s(alnum, 43) + "=" }, func(key string) string {
		return fmt.Sprintf("%s.redis.cache.windows.net:6380,password=%s,ssl=True,abortConnect=False", pick(g, services), key)
	})
	each(2, func() string { return g.s(b64, 43) + "=" }, func(key string) string {
		return fmt.Sprintf("Endpoint=https://%s.service.signalr.net;AccessKey=%s;Version=1.0;", pick(g, services), key)
	})
	each(2, func() string { return g.s(b64, 43) + "=" }, func(key string) string {
		return fmt.Sprintf("Endpoint=https://%s.azconfig.io;Id=%s;Secret=%s", pick(g, services), g.s(alnum, 4)+"-l0-s0:"+g.s(alnum, 20), key)
	})
	each(4, func() string { return g.s(alnum, 40) + "%2B" + g.s(alnum, 2) + "%3D" }, func(sig string) string {
		return fmt.Sprintf("https://%sstore.blob.core.windows.net/exports/report.csv?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T23:59:59Z&st=2026-01-01T00:00:00Z&spr=https&sig=%s", pick(g, services), sig)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("auth_provider = PlainTextAuthProvider(username='%s', password='%s')\ncluster = Cluster(['%s'], auth_provider=auth_provider)", pick(g, dbUsers), pw, g.host(""))
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("conn = snowflake.connector.connect(user='%s', password='%s', account='%s-%s', warehouse='COMPUTE_WH')", pick(g, dbUsers), pw, strings.ToLower(g.s(upper, 7)), strings.ToLower(g.s(upper, 7)))
	})
	each(3, func() string { return g.password(true) }, func(pw string) string {
		return fmt.Sprintf("conn = psycopg2.connect(host=\"%s\", dbname=\"%s\", user=\"%s\", password=\"%s\")", g.host(""), pick(g, dbNames), pick(g, dbUsers), pw)
	})
	each(3, func() string { return g.password(true) }, func(pw string) string { return fmt.Sprintf("NEO4J_AUTH=neo4j/%s", pw) })
}
