package main

import (
	"fmt"
	"strings"
)

// provider is one SaaS or cloud credential: how its token is shaped and
// the variable it usually lives in. bare tokens carry a documented prefix
// and are recognisable alone; the others are random strings a reader (and
// a filter) knows only by the name they are assigned to.
type provider struct {
	name   string
	vars   []string // variable names, UPPER_SNAKE, as the provider's docs and SDKs use them
	tok    func(g *gen) string
	bare   bool
	source string
}

// catalog lists the credentials of the 100-odd most used SaaS and cloud
// providers (developer platforms, clouds, payments, messaging, AI,
// observability, CI, registries, secrets managers). Shapes are from the
// providers' documentation, GitHub's secret-scanning partner list and the
// format facts of gitleaks', Kingfisher's and Nosey Parker's rules.
func catalog() []provider {
	gl, kf, gh, docs := "gitleaks-formats", "kingfisher-formats", "github-partner-patterns", "provider-docs"
	fixed := func(parts ...func(g *gen) string) func(g *gen) string {
		return func(g *gen) string {
			var b strings.Builder
			for _, p := range parts {
				b.WriteString(p(g))
			}
			return b.String()
		}
	}
	lit := func(s string) func(g *gen) string { return func(*gen) string { return s } }
	rnd := func(alpha string, n int) func(g *gen) string { return func(g *gen) string { return g.s(alpha, n) } }
	rng := func(alpha string, lo, hi int) func(g *gen) string {
		return func(g *gen) string { return g.s(alpha, g.n(lo, hi)) }
	}
	oneOf := func(xs ...string) func(g *gen) string { return func(g *gen) string { return pick(g, xs) } }
	uuid := func(g *gen) string { return g.uuid() }
	return []provider{
		// Developer platforms and source hosting.
		{"GitHub classic PAT", []string{"GITHUB_TOKEN", "GH_TOKEN"}, fixed(lit("ghp_"), rnd(alnum, 36)), true, gh},
		{"GitHub OAuth token", []string{"GITHUB_OAUTH_TOKEN"}, fixed(lit("gho_"), rnd(alnum, 36)), true, gh},
		{"GitHub App installation token", []string{"GITHUB_APP_TOKEN"}, fixed(lit("ghs_"), rnd(alnum, 36)), true, gh},
		{"GitHub fine-grained PAT", []string{"GITHUB_PAT"}, fixed(lit("github_pat_11"), rnd(upAN, 20), lit("_"), rnd(alnum, 59)), true, gh},
		{"GitLab PAT", []string{"GITLAB_TOKEN", "CI_JOB_TOKEN_OVERRIDE"}, fixed(lit("glpat-"), rnd(b64url, 20)), true, gh},
		{"GitLab runner token", []string{"RUNNER_TOKEN"}, fixed(lit("glrt-"), rnd(b64url, 20)), true, gl},
		{"GitLab deploy token", []string{"GITLAB_DEPLOY_TOKEN"}, fixed(lit("gldt-"), rnd(b64url, 20)), true, gl},
		{"GitLab pipeline trigger token", []string{"TRIGGER_TOKEN"}, fixed(lit("glptt-"), rnd(hexLow, 40)), true, gl},
		{"Bitbucket app password", []string{"BITBUCKET_APP_PASSWORD"}, fixed(lit("ATBB"), rnd(alnum, 24), rnd(hexUp, 8)), true, gh},
		{"Atlassian API token", []string{"JIRA_API_TOKEN", "ATLASSIAN_API_TOKEN", "CONFLUENCE_API_TOKEN"}, fixed(lit("ATATT3xFfGF0"), rng(b64url, 170, 186), lit("="), rnd(hexUp, 8)), true, gh},
		{"Trello token", []string{"TRELLO_TOKEN"}, fixed(lit("ATTA"), rnd(hexLow, 64), rnd(hexUp, 8)), true, kf},
		{"Linear API key", []string{"LINEAR_API_KEY"}, fixed(lit("lin_api_"), rnd(alnum, 40)), true, gh},
		{"Notion integration token", []string{"NOTION_TOKEN", "NOTION_API_KEY"}, fixed(lit("ntn_"), rnd(digits, 11), rnd(alnum, 35)), true, gh},
		{"Notion legacy token", []string{"NOTION_SECRET"}, fixed(lit("secret_"), rnd(alnum, 43)), true, gl},
		{"Postman API key", []string{"POSTMAN_API_KEY"}, fixed(lit("PMAK-"), rnd(hexLow, 24), lit("-"), rnd(hexLow, 34)), true, gh},
		{"Figma PAT", []string{"FIGMA_TOKEN"}, fixed(lit("figd_"), rnd(b64url, 40)), true, kf},
		{"Asana PAT", []string{"ASANA_ACCESS_TOKEN"}, fixed(lit("2/"), rnd(digits, 16), lit("/"), rnd(digits, 16), lit(":"), rnd(hexLow, 32)), true, gh},
		{"Airtable PAT", []string{"AIRTABLE_API_KEY"}, fixed(lit("pat"), rnd(alnum, 14), lit("."), rnd(hexLow, 64)), true, gh},
		{"ClickUp API token", []string{"CLICKUP_API_TOKEN"}, fixed(lit("pk_"), rnd(digits, 8), lit("_"), rnd(upAN, 32)), false, kf},
		{"Monday.com API token", []string{"MONDAY_API_TOKEN"}, func(g *gen) string { return g.jwt(true) }, false, docs},
		{"HubSpot private app token", []string{"HUBSPOT_ACCESS_TOKEN"}, fixed(lit("pat-"), oneOf("na1", "eu1"), lit("-"), uuid), true, gh},
		{"Typeform PAT", []string{"TYPEFORM_TOKEN"}, fixed(lit("tfp_"), rnd(b64url, 44), lit("_"), rnd(alnum, 14)), true, gl},
		{"Zendesk API token", []string{"ZENDESK_API_TOKEN"}, rnd(alnum, 40), false, docs},
		{"Intercom access token", []string{"INTERCOM_ACCESS_TOKEN"}, fixed(lit("dG9rOj"), rnd(alnum, 54), lit("=")), false, kf},
		{"Sourcegraph access token", []string{"SRC_ACCESS_TOKEN"}, fixed(lit("sgp_"), rnd(hexLow, 16), lit("_"), rnd(hexLow, 40)), true, gl},
		{"Readme API key", []string{"README_API_KEY"}, fixed(lit("rdme_"), rnd(hexLow, 70)), true, gl},
		// Clouds.
		{"AWS access key id", []string{"AWS_ACCESS_KEY_ID"}, fixed(oneOf("AKIA", "ASIA"), rnd(b32, 16)), true, gh},
		{"AWS secret access key", []string{"AWS_SECRET_ACCESS_KEY"}, rnd(b64, 40), false, docs},
		{"AWS session token", []string{"AWS_SESSION_TOKEN"}, fixed(lit("IQoJb3JpZ2luX2VjE"), rnd(b64, 300), lit("=")), false, docs},
		{"Google API key", []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}, fixed(lit("AIza"), rnd(b64url, 35)), true, gh},
		{"Google OAuth client secret", []string{"GOOGLE_CLIENT_SECRET"}, fixed(lit("GOCSPX-"), rnd(b64url, 28)), true, gh},
		{"Google OAuth access token", []string{"GOOGLE_ACCESS_TOKEN"}, fixed(lit("ya29."), rnd(b64url, 160)), true, kf},
		{"Google OAuth refresh token", []string{"GOOGLE_REFRESH_TOKEN"}, fixed(lit("1//0"), rnd(alnum, 1), rnd(b64url, 98)), false, docs},
		{"Azure Entra client secret", []string{"AZURE_CLIENT_SECRET"}, fixed(rnd(alnum, 3), rnd(digits, 1), lit("Q~"), rnd(alnum+"_~.-", 34)), true, gh},
		{"Azure OpenAI key", []string{"AZURE_OPENAI_API_KEY"}, rnd(hexLow, 32), false, docs},
		{"Azure DevOps PAT", []string{"AZURE_DEVOPS_PAT", "AZURE_DEVOPS_EXT_PAT"}, fixed(rnd(alnum, 52), lit("JQQJ99BBACAAAAAAAAAAA"), lit("AZDO"), rnd(alnum, 4)), false, docs},
		{"Azure DevOps legacy PAT", []string{"SYSTEM_ACCESSTOKEN_PAT"}, rnd(lower+"234567", 52), false, docs},
		{"Azure Container Registry password", []string{"ACR_PASSWORD"}, fixed(rnd(alnum+"/+", 42), lit("+ACR"), rnd(alnum, 6)), false, docs},
		{"DigitalOcean PAT", []string{"DIGITALOCEAN_TOKEN"}, fixed(oneOf("dop_v1_", "doo_v1_"), rnd(hexLow, 64)), true, gh},
		{"Alibaba Cloud AccessKey secret", []string{"ALIBABA_CLOUD_ACCESS_KEY_SECRET"}, rnd(alnum, 30), false, docs},
		{"Alibaba Cloud AccessKey id", []string{"ALIBABA_CLOUD_ACCESS_KEY_ID"}, fixed(lit("LTAI"), rnd(alnum, 20)), true, gh},
		{"Tencent Cloud SecretKey", []string{"TENCENTCLOUD_SECRET_KEY"}, rnd(alnum, 32), false, docs},
		{"Yandex Cloud API key", []string{"YC_API_KEY"}, fixed(lit("AQVN"), rnd(b64url, 36)), true, gh},
		{"Scaleway secret key", []string{"SCW_SECRET_KEY"}, uuid, false, docs},
		{"Linode token", []string{"LINODE_TOKEN"}, rnd(hexLow, 64), false, docs},
		{"Vultr API key", []string{"VULTR_API_KEY"}, rnd(upAN, 36), false, docs},
		{"Hetzner Cloud token", []string{"HCLOUD_TOKEN"}, rnd(alnum, 64), false, docs},
		{"IBM Cloud API key", []string{"IBMCLOUD_API_KEY"}, rnd(b64url, 44), false, docs},
		{"Oracle OCI auth token", []string{"OCI_AUTH_TOKEN"}, rnd(alnum+"+-.:_", 20), false, docs},
		{"Cloudflare API token", []string{"CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"}, rnd(b64url, 40), false, docs},
		{"Cloudflare global API key", []string{"CLOUDFLARE_API_KEY"}, rnd(hexLow, 37), false, gl},
		{"Cloudflare tunnel token", []string{"TUNNEL_TOKEN"}, fixed(lit("eyJhIjoi"), rnd(alnum, 170), lit("In0=")), false, docs},
		{"Fastly API token", []string{"FASTLY_API_TOKEN"}, rnd(b64url, 32), false, gl},
		{"Akamai client secret", []string{"AKAMAI_CLIENT_SECRET"}, fixed(rnd(b64, 43), lit("=")), false, docs},
		{"Fly.io token", []string{"FLY_API_TOKEN"}, fixed(lit("fo1_"), rnd(b64url, 43)), true, gl},
		{"Render API key", []string{"RENDER_API_KEY"}, fixed(lit("rnd_"), rnd(alnum, 32)), true, docs},
		{"Railway token", []string{"RAILWAY_TOKEN"}, uuid, false, docs},
		{"Vercel token", []string{"VERCEL_TOKEN"}, rnd(alnum, 24), false, docs},
		{"Netlify PAT", []string{"NETLIFY_AUTH_TOKEN"}, fixed(lit("nfp_"), rnd(alnum, 36)), true, docs},
		{"Heroku API key", []string{"HEROKU_API_KEY"}, fixed(lit("HRKU-AA"), rnd(b64url, 58)), true, gh},
		{"Heroku legacy API key", []string{"HEROKU_API_TOKEN"}, uuid, false, docs},
		{"Supabase PAT", []string{"SUPABASE_ACCESS_TOKEN"}, fixed(lit("sbp_"), rnd(hexLow, 40)), true, gh},
		{"Supabase secret key", []string{"SUPABASE_SECRET_KEY"}, fixed(lit("sb_secret_"), rnd(b64url, 31)), true, docs},
		{"Supabase service role key", []string{"SUPABASE_SERVICE_ROLE_KEY"}, func(g *gen) string { return g.jwt(true) }, false, docs},
		{"PlanetScale password", []string{"PLANETSCALE_PASSWORD"}, fixed(lit("pscale_pw_"), rnd(b64url, 43)), true, gh},
		{"PlanetScale service token", []string{"PLANETSCALE_SERVICE_TOKEN"}, fixed(lit("pscale_tkn_"), rnd(b64url, 43)), true, gh},
		{"Neon API key", []string{"NEON_API_KEY"}, fixed(lit("napi_"), rnd(lowAN, 64)), true, docs},
		{"Upstash REST token", []string{"UPSTASH_REDIS_REST_TOKEN"}, fixed(lit("A"), rnd(b64url, 59), lit("=")), false, docs},
		{"MongoDB Atlas private key", []string{"MONGODB_ATLAS_PRIVATE_KEY"}, uuid, false, docs},
		{"Databricks token", []string{"DATABRICKS_TOKEN"}, fixed(lit("dapi"), rnd(hexLow, 32)), true, gh},
		{"Confluent API secret", []string{"CONFLUENT_CLOUD_API_SECRET"}, rnd(b64, 64), false, docs},
		// Payments and commerce.
		{"Stripe secret key", []string{"STRIPE_SECRET_KEY", "STRIPE_API_KEY"}, fixed(lit("sk_live_51"), rnd(alnum, 97)), true, gh},
		{"Stripe restricted key", []string{"STRIPE_RESTRICTED_KEY"}, fixed(lit("rk_live_51"), rnd(alnum, 97)), true, gh},
		{"Stripe webhook secret", []string{"STRIPE_WEBHOOK_SECRET"}, fixed(lit("whsec_"), rnd(alnum, 32)), true, docs},
		{"Square access token", []string{"SQUARE_ACCESS_TOKEN"}, fixed(lit("EAAA"), rnd(b64url, 60)), true, gh},
		{"Square OAuth secret", []string{"SQUARE_APPLICATION_SECRET"}, fixed(lit("sq0csp-"), rnd(b64url, 43)), true, gh},
		{"Braintree access token", []string{"BRAINTREE_ACCESS_TOKEN"}, fixed(lit("access_token$production$"), rnd(lowAN, 16), lit("$"), rnd(hexLow, 32)), true, gh},
		{"PayPal client secret", []string{"PAYPAL_CLIENT_SECRET"}, fixed(lit("E"), rnd(b64url, 79)), false, docs},
		{"Shopify access token", []string{"SHOPIFY_ACCESS_TOKEN"}, fixed(oneOf("shpat_", "shpca_", "shppa_"), rnd(hexLow, 32)), true, gh},
		{"Shopify shared secret", []string{"SHOPIFY_API_SECRET"}, fixed(lit("shpss_"), rnd(hexLow, 32)), true, gh},
		{"WooCommerce consumer secret", []string{"WOOCOMMERCE_CONSUMER_SECRET"}, fixed(lit("cs_"), rnd(hexLow, 40)), false, docs},
		{"Razorpay key secret", []string{"RAZORPAY_KEY_SECRET"}, rnd(alnum, 24), false, docs},
		{"Paystack secret key", []string{"PAYSTACK_SECRET_KEY"}, fixed(lit("sk_live_"), rnd(hexLow, 40)), true, kf},
		{"Flutterwave secret key", []string{"FLW_SECRET_KEY"}, fixed(lit("FLWSECK-"), rnd(hexLow, 32), lit("-X")), true, gl},
		{"Mollie API key", []string{"MOLLIE_API_KEY"}, fixed(lit("live_"), rnd(alnum, 30)), false, docs},
		{"GoCardless access token", []string{"GOCARDLESS_ACCESS_TOKEN"}, fixed(lit("live_"), rnd(b64url, 40)), true, gl},
		{"Plaid secret", []string{"PLAID_SECRET"}, rnd(hexLow, 30), false, docs},
		{"Plaid access token", []string{"PLAID_ACCESS_TOKEN"}, fixed(lit("access-production-"), uuid), true, gl},
		{"Shippo API token", []string{"SHIPPO_API_KEY"}, fixed(lit("shippo_live_"), rnd(hexLow, 40)), true, gl},
		{"EasyPost API key", []string{"EASYPOST_API_KEY"}, fixed(lit("EZAK"), rnd(alnum, 54)), true, gl},
		// Messaging, e-mail and social.
		{"Slack bot token", []string{"SLACK_BOT_TOKEN"}, fixed(lit("xoxb-"), rnd(digits, 12), lit("-"), rnd(digits, 13), lit("-"), rnd(alnum, 24)), true, gh},
		{"Slack user token", []string{"SLACK_USER_TOKEN"}, fixed(lit("xoxp-"), rnd(digits, 12), lit("-"), rnd(digits, 12), lit("-"), rnd(digits, 13), lit("-"), rnd(hexLow, 32)), true, gh},
		{"Slack workspace token", []string{"SLACK_TOKEN"}, fixed(lit("xoxa-2-"), rnd(digits, 12), lit("-"), rnd(digits, 12), lit("-"), rnd(digits, 13), lit("-"), rnd(hexLow, 64)), true, gh},
		{"Slack app-level token", []string{"SLACK_APP_TOKEN"}, fixed(lit("xapp-1-A"), rnd(upAN, 10), lit("-"), rnd(digits, 13), lit("-"), rnd(hexLow, 64)), true, gh},
		{"Slack webhook", []string{"SLACK_WEBHOOK_URL"}, fixed(lit("https://hooks.slack.com/services/T"), rnd(upAN, 10), lit("/B"), rnd(upAN, 10), lit("/"), rnd(alnum, 24)), true, gh},
		{"Discord bot token", []string{"DISCORD_BOT_TOKEN", "DISCORD_TOKEN"}, fixed(oneOf("MT", "OT", "MTE"), rnd(alnum, 23), lit("."), rnd(b64url, 6), lit("."), rnd(b64url, 38)), false, gh},
		{"Discord webhook", []string{"DISCORD_WEBHOOK_URL"}, fixed(lit("https://discord.com/api/webhooks/1"), rnd(digits, 18), lit("/"), rnd(b64url, 68)), true, gh},
		{"Telegram bot token", []string{"TELEGRAM_BOT_TOKEN"}, fixed(rnd(digits, 10), lit(":AA"), rnd(b64url, 33)), true, gl},
		{"Twilio API key secret", []string{"TWILIO_API_SECRET"}, rnd(alnum, 32), false, docs},
		{"Twilio auth token", []string{"TWILIO_AUTH_TOKEN"}, rnd(hexLow, 32), false, docs},
		{"Twilio API key sid", []string{"TWILIO_API_KEY"}, fixed(lit("SK"), rnd(hexLow, 32)), true, gh},
		{"SendGrid API key", []string{"SENDGRID_API_KEY"}, fixed(lit("SG."), rnd(b64url, 22), lit("."), rnd(b64url, 43)), true, gh},
		{"Mailgun API key", []string{"MAILGUN_API_KEY"}, fixed(rnd(hexLow, 32), lit("-"), rnd(hexLow, 8), lit("-"), rnd(hexLow, 8)), false, docs},
		{"Mailgun legacy key", []string{"MAILGUN_KEY"}, fixed(lit("key-"), rnd(hexLow, 32)), true, gl},
		{"Mailchimp API key", []string{"MAILCHIMP_API_KEY"}, fixed(rnd(hexLow, 32), lit("-us"), oneOf("6", "14", "21")), false, gl},
		{"Mandrill API key", []string{"MANDRILL_API_KEY"}, fixed(lit("md-"), rnd(b64url, 22)), true, docs},
		{"Brevo API key", []string{"BREVO_API_KEY"}, fixed(lit("xkeysib-"), rnd(hexLow, 64), lit("-"), rnd(alnum, 16)), true, gl},
		{"Postmark server token", []string{"POSTMARK_SERVER_TOKEN"}, uuid, false, docs},
		{"Resend API key", []string{"RESEND_API_KEY"}, fixed(lit("re_"), rnd(alnum, 8), lit("_"), rnd(alnum, 24)), false, docs},
		{"Klaviyo private key", []string{"KLAVIYO_PRIVATE_API_KEY"}, fixed(lit("pk_"), rnd(hexLow, 34)), false, docs},
		{"Facebook access token", []string{"FACEBOOK_ACCESS_TOKEN"}, fixed(oneOf("EAAG", "EAAB", "EAAM"), rnd(alnum, 160)), true, gl},
		{"Twitter bearer token", []string{"TWITTER_BEARER_TOKEN"}, fixed(lit("AAAAAAAAAAAAAAAAAAAAA"), rnd(alnum, 25), lit("%3D"), rnd(alnum, 50)), false, gl},
		{"Firebase Cloud Messaging server key", []string{"FCM_SERVER_KEY"}, fixed(lit("AAAA"), rnd(b64url, 7), lit(":APA91b"), rnd(b64url, 134)), true, gl},
		{"Dropbox access token", []string{"DROPBOX_ACCESS_TOKEN"}, fixed(lit("sl."), rnd(b64url, 136)), true, gl},
		{"Pusher app secret", []string{"PUSHER_APP_SECRET"}, rnd(hexLow, 20), false, docs},
		{"Ably API key", []string{"ABLY_API_KEY"}, fixed(rnd(alnum, 6), lit("."), rnd(alnum, 6), lit(":"), rnd(b64url, 43)), false, docs},
		// AI.
		{"OpenAI project key", []string{"OPENAI_API_KEY"}, fixed(lit("sk-proj-"), rnd(b64url, 74), lit("T3BlbkFJ"), rnd(b64url, 74)), true, gh},
		{"OpenAI service account key", []string{"OPENAI_API_KEY"}, fixed(lit("sk-svcacct-"), rnd(b64url, 58), lit("T3BlbkFJ"), rnd(b64url, 58)), true, gh},
		{"OpenAI legacy key", []string{"OPENAI_KEY"}, fixed(lit("sk-"), rnd(alnum, 20), lit("T3BlbkFJ"), rnd(alnum, 20)), true, gh},
		{"Anthropic API key", []string{"ANTHROPIC_API_KEY"}, fixed(lit("sk-ant-api03-"), rnd(b64url, 93), lit("AA")), true, gh},
		{"Anthropic admin key", []string{"ANTHROPIC_ADMIN_KEY"}, fixed(lit("sk-ant-admin01-"), rnd(b64url, 93), lit("AA")), true, gh},
		{"Hugging Face token", []string{"HF_TOKEN", "HUGGINGFACE_TOKEN"}, fixed(lit("hf_"), rnd(upper+lower, 34)), true, gh},
		{"Replicate token", []string{"REPLICATE_API_TOKEN"}, fixed(lit("r8_"), rnd(alnum, 37)), true, gh},
		{"Groq API key", []string{"GROQ_API_KEY"}, fixed(lit("gsk_"), rnd(alnum, 52)), true, gh},
		{"Perplexity API key", []string{"PERPLEXITY_API_KEY"}, fixed(lit("pplx-"), rnd(alnum, 48)), true, gl},
		{"xAI API key", []string{"XAI_API_KEY"}, fixed(lit("xai-"), rnd(alnum, 80)), true, kf},
		{"OpenRouter API key", []string{"OPENROUTER_API_KEY"}, fixed(lit("sk-or-v1-"), rnd(hexLow, 64)), true, docs},
		{"Mistral API key", []string{"MISTRAL_API_KEY"}, rnd(alnum, 32), false, docs},
		{"Cohere API key", []string{"COHERE_API_KEY", "CO_API_KEY"}, rnd(alnum, 40), false, gl},
		{"DeepSeek API key", []string{"DEEPSEEK_API_KEY"}, fixed(lit("sk-"), rnd(hexLow, 32)), false, docs},
		{"Together API key", []string{"TOGETHER_API_KEY"}, rnd(hexLow, 64), false, docs},
		{"Fireworks API key", []string{"FIREWORKS_API_KEY"}, fixed(lit("fw_"), rnd(alnum, 24)), false, docs},
		{"Cerebras API key", []string{"CEREBRAS_API_KEY"}, fixed(lit("csk-"), rnd(lowAN, 48)), true, docs},
		{"Pinecone API key", []string{"PINECONE_API_KEY"}, fixed(lit("pcsk_"), rnd(alnum, 6), lit("_"), rnd(alnum, 63)), true, gh},
		{"LangSmith API key", []string{"LANGSMITH_API_KEY", "LANGCHAIN_API_KEY"}, fixed(oneOf("lsv2_pt_", "lsv2_sk_"), rnd(hexLow, 32), lit("_"), rnd(hexLow, 10)), true, docs},
		{"Langfuse secret key", []string{"LANGFUSE_SECRET_KEY"}, fixed(lit("sk-lf-"), uuid), true, docs},
		{"Weights & Biases key", []string{"WANDB_API_KEY"}, rnd(hexLow, 40), false, docs},
		{"ElevenLabs API key", []string{"ELEVENLABS_API_KEY"}, fixed(lit("sk_"), rnd(hexLow, 48)), true, kf},
		{"AssemblyAI key", []string{"ASSEMBLYAI_API_KEY"}, rnd(hexLow, 32), false, docs},
		{"Deepgram key", []string{"DEEPGRAM_API_KEY"}, rnd(hexLow, 40), false, docs},
		{"Stability API key", []string{"STABILITY_API_KEY"}, fixed(lit("sk-"), rnd(alnum, 48)), false, docs},
		{"Voyage API key", []string{"VOYAGE_API_KEY"}, fixed(lit("pa-"), rnd(b64url, 43)), false, docs},
		{"Jina API key", []string{"JINA_API_KEY"}, fixed(lit("jina_"), rnd(alnum, 60)), true, docs},
		{"Tavily API key", []string{"TAVILY_API_KEY"}, fixed(lit("tvly-"), oneOf("", "dev-", "prod-"), rnd(alnum, 32)), true, docs},
		{"Firecrawl API key", []string{"FIRECRAWL_API_KEY"}, fixed(lit("fc-"), rnd(hexLow, 32)), true, docs},
		{"E2B API key", []string{"E2B_API_KEY"}, fixed(lit("e2b_"), rnd(hexLow, 40)), true, docs},
		// Observability.
		{"Datadog API key", []string{"DD_API_KEY", "DATADOG_API_KEY"}, rnd(hexLow, 32), false, gl},
		{"Datadog application key", []string{"DD_APP_KEY", "DATADOG_APP_KEY"}, rnd(hexLow, 40), false, gl},
		{"New Relic user key", []string{"NEW_RELIC_API_KEY"}, fixed(lit("NRAK-"), rnd(upAN, 27)), true, gh},
		{"New Relic license key", []string{"NEW_RELIC_LICENSE_KEY"}, fixed(rnd(hexLow, 36), lit("NRAL")), false, docs},
		{"Sentry user token", []string{"SENTRY_AUTH_TOKEN"}, fixed(lit("sntryu_"), rnd(hexLow, 64)), true, gh},
		{"Sentry org token", []string{"SENTRY_ORG_TOKEN"}, fixed(lit("sntrys_eyJpYXQiO"), rnd(b64, 150), lit("_"), rnd(b64, 43)), true, gh},
		{"Grafana service account token", []string{"GRAFANA_TOKEN"}, fixed(lit("glsa_"), rnd(alnum, 32), lit("_"), rnd(hexLow, 8)), true, gh},
		{"Grafana Cloud token", []string{"GRAFANA_CLOUD_TOKEN"}, fixed(lit("glc_eyJvIjoi"), rnd(b64, 110), lit("=")), true, gh},
		{"Dynatrace token", []string{"DT_API_TOKEN"}, fixed(lit("dt0c01."), rnd(upAN, 24), lit("."), rnd(upAN, 64)), true, gh},
		{"Honeycomb API key", []string{"HONEYCOMB_API_KEY"}, rnd(alnum, 22), false, docs},
		{"Splunk HEC token", []string{"SPLUNK_HEC_TOKEN"}, uuid, false, docs},
		{"PagerDuty API key", []string{"PAGERDUTY_TOKEN"}, fixed(lit("u+"), rnd(b64url, 18)), false, docs},
		{"LaunchDarkly SDK key", []string{"LAUNCHDARKLY_SDK_KEY"}, fixed(lit("sdk-"), uuid), true, gl},
		{"Segment write key", []string{"SEGMENT_WRITE_KEY"}, rnd(alnum, 32), false, docs},
		{"Mixpanel API secret", []string{"MIXPANEL_API_SECRET"}, rnd(hexLow, 32), false, docs},
		{"PostHog personal API key", []string{"POSTHOG_PERSONAL_API_KEY"}, fixed(lit("phx_"), rnd(alnum, 43)), true, kf},
		{"Algolia admin key", []string{"ALGOLIA_ADMIN_KEY", "ALGOLIA_API_KEY"}, rnd(hexLow, 32), false, gl},
		{"Elastic API key", []string{"ELASTIC_API_KEY"}, fixed(rnd(b64, 78), lit("==")), false, docs},
		// CI, registries, packages.
		{"npm token", []string{"NPM_TOKEN", "NODE_AUTH_TOKEN"}, fixed(lit("npm_"), rnd(alnum, 36)), true, gh},
		{"PyPI token", []string{"PYPI_API_TOKEN", "TWINE_PASSWORD"}, fixed(lit("pypi-AgEIcHlwaS5vcmcCJ"), rnd(b64url, 150)), true, gh},
		{"RubyGems API key", []string{"GEM_HOST_API_KEY"}, fixed(lit("rubygems_"), rnd(hexLow, 48)), true, gh},
		{"NuGet API key", []string{"NUGET_API_KEY"}, fixed(lit("oy2"), rnd(lowAN, 43)), true, gh},
		{"crates.io token", []string{"CARGO_REGISTRY_TOKEN"}, fixed(lit("cio"), rnd(alnum, 32)), true, gh},
		{"Docker Hub PAT", []string{"DOCKERHUB_TOKEN", "DOCKER_PASSWORD"}, fixed(lit("dckr_pat_"), rnd(b64url, 27)), true, gh},
		{"JFrog API key", []string{"ARTIFACTORY_API_KEY"}, fixed(lit("AKCp"), rnd(alnum, 69)), true, gh},
		{"JFrog reference token", []string{"JFROG_ACCESS_TOKEN"}, fixed(lit("cmVmdGtuOjAxOjE3"), rnd(alnum, 48)), true, gl},
		{"SonarQube token", []string{"SONAR_TOKEN"}, fixed(oneOf("squ_", "sqp_", "sqa_"), rnd(hexLow, 40)), true, kf},
		{"Snyk token", []string{"SNYK_TOKEN"}, uuid, false, gl},
		{"Codecov token", []string{"CODECOV_TOKEN"}, uuid, false, gl},
		{"CircleCI PAT", []string{"CIRCLE_TOKEN", "CIRCLECI_TOKEN"}, fixed(lit("CCIPAT_"), rnd(alnum, 22), lit("_"), rnd(hexLow, 40)), true, kf},
		{"Buildkite API token", []string{"BUILDKITE_API_TOKEN"}, fixed(lit("bkua_"), rnd(hexLow, 40)), true, kf},
		{"Buildkite agent token", []string{"BUILDKITE_AGENT_TOKEN"}, rnd(lowAN, 50), false, docs},
		{"Travis CI token", []string{"TRAVIS_API_TOKEN"}, rnd(b64url, 22), false, gl},
		{"Jenkins API token", []string{"JENKINS_API_TOKEN"}, fixed(lit("11"), rnd(hexLow, 32)), false, docs},
		{"Octopus API key", []string{"OCTOPUS_API_KEY"}, fixed(lit("API-"), rnd(upAN, 26)), true, gl},
		{"Harness PAT", []string{"HARNESS_API_KEY"}, fixed(lit("pat."), rnd(b64url, 22), lit("."), rnd(hexLow, 24), lit("."), rnd(alnum, 20)), true, gl},
		{"Pulumi access token", []string{"PULUMI_ACCESS_TOKEN"}, fixed(lit("pul-"), rnd(hexLow, 40)), true, gh},
		{"Terraform Cloud token", []string{"TF_TOKEN_app_terraform_io", "TFE_TOKEN"}, fixed(rnd(alnum, 14), lit(".atlasv1."), rnd(alnum, 67)), true, gh},
		{"Prefect API key", []string{"PREFECT_API_KEY"}, fixed(lit("pnu_"), rnd(alnum, 36)), true, gh},
		{"Quay robot token", []string{"QUAY_ROBOT_TOKEN"}, rnd(upAN, 64), false, docs},
		// Secrets managers, identity, networks.
		{"Vault token", []string{"VAULT_TOKEN"}, fixed(lit("hvs."), rnd(b64url, 24)), true, gl},
		{"Vault service token", []string{"VAULT_TOKEN"}, fixed(lit("hvs.CAESI"), rnd(b64url, 86)), true, gl},
		{"Doppler service token", []string{"DOPPLER_TOKEN"}, fixed(lit("dp.st."), oneOf("", "prd.", "dev.", "stg."), rnd(alnum, 43)), true, gh},
		{"Doppler personal token", []string{"DOPPLER_TOKEN"}, fixed(lit("dp.pt."), rnd(alnum, 43)), true, gh},
		{"Doppler service account token", []string{"DOPPLER_TOKEN"}, fixed(lit("dp.sa."), rnd(alnum, 43)), true, kf},
		{"1Password service account token", []string{"OP_SERVICE_ACCOUNT_TOKEN"}, fixed(lit("ops_eyJzaWduSW5BZGRyZXNzIjoi"), rnd(b64, 280), lit("=")), true, gh},
		{"Infisical service token", []string{"INFISICAL_TOKEN"}, fixed(lit("st."), rnd(hexLow, 24), lit("."), rnd(hexLow, 32), lit("."), rnd(hexLow, 32)), true, docs},
		{"Bitwarden access token", []string{"BWS_ACCESS_TOKEN"}, fixed(lit("0."), uuid, lit("."), rnd(alnum, 30), lit(":"), rnd(b64, 22), lit("==")), false, docs},
		{"Age secret key", []string{"SOPS_AGE_KEY"}, fixed(lit("AGE-SECRET-KEY-1"), rnd("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)), true, gl},
		{"Okta API token", []string{"OKTA_API_TOKEN"}, fixed(lit("00"), rnd(b64url, 40)), false, docs},
		{"Auth0 client secret", []string{"AUTH0_CLIENT_SECRET"}, rnd(b64url, 64), false, docs},
		{"Duo secret key", []string{"DUO_SECRET_KEY"}, rnd(alnum, 40), false, docs},
		{"Consul ACL token", []string{"CONSUL_HTTP_TOKEN"}, uuid, false, docs},
		{"Tailscale auth key", []string{"TS_AUTHKEY", "TAILSCALE_AUTHKEY"}, fixed(lit("tskey-auth-k"), rnd(alnum, 11), lit("CNTRL-"), rnd(alnum, 33)), true, gh},
		{"ngrok authtoken", []string{"NGROK_AUTHTOKEN"}, fixed(lit("2"), rnd(alnum, 26), lit("_"), rnd(alnum, 21)), false, docs},
		{"Mapbox secret token", []string{"MAPBOX_SECRET_TOKEN"}, fixed(lit("sk.eyJ1Ijoi"), rnd(alnum, 50), lit("."), rnd(b64url, 22)), true, gl},
		{"Contentful management token", []string{"CONTENTFUL_MANAGEMENT_TOKEN"}, fixed(lit("CFPAT-"), rnd(b64url, 43)), true, gh},
		{"Sanity token", []string{"SANITY_API_TOKEN"}, fixed(lit("sk"), rnd(alnum, 80)), false, docs},
		{"Ghost admin API key", []string{"GHOST_ADMIN_API_KEY"}, fixed(rnd(hexLow, 24), lit(":"), rnd(hexLow, 64)), false, docs},
		{"Frame.io token", []string{"FRAMEIO_TOKEN"}, fixed(lit("fio-u-"), rnd(b64url, 64)), true, gl},
	}
}

// jwt returns a JSON Web Token with a random payload: signed (HS256 or
// RS256) or unsigned (alg none, empty signature, RFC 7519 section 6).
func (g *gen) jwt(signed bool) string {
	headers := []string{"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9", "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6I", "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9", "eyJhbGciOiJFUzI1NiIsImtpZCI6I"}
	h := pick(g, headers)
	if strings.HasSuffix(h, "I") {
		h += g.s(alnum, 22) + "In0" // a key id: base64url of ASCII JSON rarely holds - or _
	}
	payload := "eyJ" + pick(g, []string{"zdWIiOi", "pc3MiOi", "hdWQiOi", "yb2xlIjoi", "leHAiOj"}) + g.s(b64url, g.n(60, 300))
	if !signed {
		return pick(g, []string{"eyJhbGciOiJub25lIn0", "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0", "eyJ0eXAiOiJKV1QiLCJhbGciOiJub25lIn0"}) + "." + payload + "."
	}
	sig := g.s(b64url, pick(g, []int{43, 86, 342}))
	return h + "." + payload + "." + sig
}

// providers writes each provider's credential in a few of the places it
// turns up: named layouts for all, standalone layouts for bare tokens.
func (g *gen) providers() {
	for _, p := range catalog() {
		named := namedLayouts()
		count := 3
		if p.bare {
			count = 2
		}
		for i := 0; i < count; i++ {
			tok := p.tok(g)
			name := pick(g, p.vars)
			l := named[g.r.IntN(len(named))]
			g.secret(category(p), p.source, l(g, name, tok), tok)
		}
		if p.bare {
			bare := bareLayouts()
			if strings.HasPrefix(p.tok(g), "https://") {
				bare = bare[:2] // a webhook URL is pasted, not sent as a header
			}
			for i := 0; i < 2; i++ {
				tok := p.tok(g)
				l := bare[g.r.IntN(len(bare))]
				g.secret(category(p), p.source, l(g, p.name, tok), tok)
			}
		}
	}
}

func category(p provider) string {
	if p.bare {
		return "provider-token"
	}
	return "provider-token-by-name"
}

// layout writes a credential tok under a variable name (UPPER_SNAKE) or,
// for standalone layouts, with the provider's name in prose.
type layout func(g *gen, name, tok string) string

func namedLayouts() []layout {
	return []layout{
		func(g *gen, name, tok string) string { return name + "=" + tok },
		func(g *gen, name, tok string) string { return "export " + name + "=\"" + tok + "\"" },
		func(g *gen, name, tok string) string {
			return "# " + pick(g, services) + " service\nNODE_ENV=production\nPORT=" + fmt.Sprint(g.n(3000, 9000)) + "\n" + name + "=" + tok + "\nLOG_LEVEL=info\n"
		},
		func(g *gen, name, tok string) string {
			return pick(g, services) + ":\n  enabled: true\n  " + snake(name) + ": " + tok + "\n  timeout: 30s\n"
		},
		func(g *gen, name, tok string) string {
			return "{\n  \"region\": \"" + pick(g, regions) + "\",\n  \"" + camel(name) + "\": \"" + tok + "\",\n  \"retries\": 3\n}"
		},
		func(g *gen, name, tok string) string {
			return "<appSettings>\n  <add key=\"Environment\" value=\"Production\" />\n  <add key=\"" + pascal(name) + "\" value=\"" + tok + "\" />\n</appSettings>"
		},
		func(g *gen, name, tok string) string {
			return "[" + pick(g, services) + "]\n" + snake(name) + " = \"" + tok + "\"\nendpoint = \"https://api.example.com\"\n"
		},
		func(g *gen, name, tok string) string {
			return "variable \"" + snake(name) + "\" {\n  type      = string\n  sensitive = true\n  default   = \"" + tok + "\"\n}"
		},
		func(g *gen, name, tok string) string {
			return "docker run -d --name " + pick(g, services) + " -e " + name + "=" + tok + " -p 8080:8080 ghcr.io/acme/" + pick(g, services) + ":1." + fmt.Sprint(g.n(0, 9))
		},
		func(g *gen, name, tok string) string {
			return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: " + pick(g, services) + "-env\ntype: Opaque\nstringData:\n  " + name + ": " + tok + "\n"
		},
		func(g *gen, name, tok string) string { return "os.environ[\"" + name + "\"] = \"" + tok + "\"" },
		func(g *gen, name, tok string) string { return dotted(name) + "=" + tok },
		func(g *gen, name, tok string) string {
			return g.timestamp() + " DEBUG config: loaded " + name + "=" + tok + " from environment"
		},
		func(g *gen, name, tok string) string {
			return "env:\n  - name: " + name + "\n    value: \"" + tok + "\"\n  - name: LOG_FORMAT\n    value: json"
		},
		func(g *gen, name, tok string) string { return "$env:" + name + " = '" + tok + "'" },
		func(g *gen, name, tok string) string { return "set -x " + name + " " + tok },
		func(g *gen, name, tok string) string {
			return "<" + pascal(name) + ">" + tok + "</" + pascal(name) + ">"
		},
		func(g *gen, name, tok string) string {
			return "heroku config:set " + name + "=" + tok + " -a acme-" + pick(g, services)
		},
		func(g *gen, name, tok string) string { return "  " + kebab(name) + ": '" + tok + "'" },
	}
}

func bareLayouts() []layout {
	return []layout{
		func(g *gen, name, tok string) string {
			return "Here is the " + name + " for the staging project: " + tok + " (rotate it after the demo)."
		},
		func(g *gen, name, tok string) string {
			return "I pasted " + tok + ", but the " + name + " was rejected."
		},
		func(g *gen, name, tok string) string {
			return "curl -s -H \"Authorization: Bearer " + tok + "\" https://api.example.com/v1/me"
		},
		func(g *gen, name, tok string) string {
			return "{\"level\":\"debug\",\"ts\":\"" + g.timestamp() + "\",\"msg\":\"outgoing request\",\"headers\":{\"authorization\":\"Bearer " + tok + "\"}}"
		},
		func(g *gen, name, tok string) string { return "The " + name + " is `" + tok + "`." },
		func(g *gen, name, tok string) string {
			return "client = Client(credential=\"" + tok + "\", timeout=30)"
		},
		func(g *gen, name, tok string) string {
			return "const client = new Client({ auth: '" + tok + "', retries: 2 });"
		},
		func(g *gen, name, tok string) string { return "<Credential>" + tok + "</Credential>" },
		func(g *gen, name, tok string) string {
			return "| " + name + " | " + tok + " | active |"
		},
		func(g *gen, name, tok string) string {
			return "found in commit 3f9c2d1: config/settings.py line 12: " + tok
		},
		func(g *gen, name, tok string) string { return tok },
		func(g *gen, name, tok string) string {
			return "[" + tok + "]"
		},
	}
}
