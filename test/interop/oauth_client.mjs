// An IDE client's first connection to a remote hub with MCP authorization,
// done by the official TypeScript SDK's own OAuth code: the 401, protected
// resource metadata, authorization server discovery, dynamic client
// registration, authorization code with PKCE, the token exchange, then
// tools/list and one tools/call with the access token.
//
//   node oauth_client.mjs HUB_MCP_URL REDIRECT_URI TOOL ARGS_JSON
//
// The browser is the Go test: this prints {"authorize": URL}, the test
// follows it through the authorization server's login and consent and
// writes the code it was redirected with as one line on stdin. The last
// line on stdout is the outcome, as JSON.
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';

const [hubURL, redirectURI, tool, argsJSON] = process.argv.slice(2);
const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');

// The provider keeps what a real IDE would store between runs.
const store = {};
const provider = {
  get redirectUrl() { return redirectURI; },
  get clientMetadata() {
    return {
      client_name: 'mcp-hub interop (TypeScript SDK)',
      // Hydra answers a registration without these with client_uri "" and
      // contacts null, which the SDK's schema refuses.
      client_uri: 'https://github.com/purko-io/mcp-hub',
      contacts: ['ops@example.test'],
      redirect_uris: [redirectURI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  },
  state() { return randomBytes(16).toString('hex'); },
  clientInformation() { return store.client; },
  saveClientInformation(info) { store.client = info; },
  tokens() { return store.tokens; },
  saveTokens(tokens) { store.tokens = tokens; },
  redirectToAuthorization(url) { store.authorize = url.toString(); },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
};

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

try {
  const first = new StreamableHTTPClientTransport(new URL(hubURL), { authProvider: provider });
  const probe = new Client({ name: 'oauth-interop', version: '1' });
  try {
    await probe.connect(first);
    throw new Error('the hub let an unauthenticated client in');
  } catch (e) {
    if (!(e instanceof UnauthorizedError)) throw e;
  }
  if (!store.authorize) throw new Error('the SDK did not start an authorization');
  out({ authorize: store.authorize, client_id: store.client?.client_id });
  const { value: code } = await lines.next();
  await first.finishAuth(code.trim());

  const client = new Client({ name: 'oauth-interop', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(hubURL), { authProvider: provider }));
  const { tools } = await client.listTools();
  const result = await client.callTool({ name: tool, arguments: JSON.parse(argsJSON) });
  await client.close();
  out({
    tools: tools.map((t) => t.name),
    result,
    client_id: store.client?.client_id,
    access_token: store.tokens?.access_token,
  });
  process.exit(0);
} catch (e) {
  out({ error: String(e?.stack ?? e) });
  process.exit(1);
}
