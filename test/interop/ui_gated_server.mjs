// An MCP Apps server, built on the Apps SDK (@modelcontextprotocol/ext-apps)
// and the TypeScript SDK's McpServer, that shows its UI only to a client
// that declares the MCP Apps extension (io.modelcontextprotocol/ui) with
// the app MIME type, as the Apps SDK tells servers to (getUiCapability
// once initialized); any other client gets a text-only tool instead. The
// console tests run it over stdio behind the hub, whose declaration to its
// upstreams decides which the server offers.
//
// McpServer takes no new kind of handler once connected, so both tools and
// the UI resource are registered first, and the ones this client may not
// use are disabled (not listed) until it has said what it takes.
import { McpServer } from "@modelcontextprotocol/server";
import { StdioServerTransport } from "@modelcontextprotocol/server/stdio";
import {
  RESOURCE_MIME_TYPE,
  getUiCapability,
  registerAppResource,
  registerAppTool,
} from "@modelcontextprotocol/ext-apps/server";

const uri = "ui://gated/view.html";
const html = `<!doctype html><html><body><p id="gated">gated view</p></body></html>`;

const server = new McpServer({ name: "gated", version: "1.0.0" });
const view = registerAppResource(server, "gated view", uri, {}, async () => ({
  contents: [{ uri, mimeType: RESOURCE_MIME_TYPE, text: html }],
}));
const app = registerAppTool(
  server,
  "show-view",
  { description: "Show the gated view", _meta: { ui: { resourceUri: uri } } },
  async () => ({ content: [{ type: "text", text: "view shown" }] }),
);
const text = server.registerTool("show-view-as-text", { description: "Describe the gated view in text" }, async () => ({
  content: [{ type: "text", text: "text fallback" }],
}));
view.disable();
app.disable();

server.server.oninitialized = () => {
  const ui = getUiCapability(server.server.getClientCapabilities());
  if (ui?.mimeTypes?.includes(RESOURCE_MIME_TYPE)) {
    view.enable();
    app.enable();
    text.disable();
  }
};
await server.connect(new StdioServerTransport());
