// client.mjs drives mcp-hub with the official MCP TypeScript SDK client, so
// the interop tests check the hub against real third-party client code.
//
//   node client.mjs <http|sse|ws> <url> OP...
//
// OP is one of
//
//   list                      tools/list (all pages)
//   call <tool> <json-args>   tools/call
//   call-progress <tool> <json-args>
//                             tools/call with a progress token; prints
//                             {"progress":N} on stdout for every
//                             notifications/progress it gets
//   until-gone <tool>         list, print {"ready":true} on stdout, then wait
//                             for notifications/tools/list_changed and list
//                             again until <tool> is no longer listed
//   call-elicit <tool> <json-args>
//                             tools/call from a client that declares both
//                             elicitation modes (form and url); every
//                             elicitation/create it gets is answered
//                             "accept" after a short wait (so that calls of
//                             several clients overlap) and listed in the
//                             entry's "elicitations"
//   wait-complete <id>        print {"waiting":<id>} on stdout, then wait for
//                             notifications/elicitation/complete of
//                             elicitation <id>; the entry is {"completes":
//                             [every elicitationId completed so far]}
//
// After every OP has run, one JSON line goes to stdout:
//
//   {"server":{"name":..,"version":..},"results":[<one entry per OP>]}
//
// where a list entry is {"tools":["name",...]}, an until-gone entry is
// {"tools":[...last list...],"notifications":N}, and a call entry is the
// CallToolResult as the SDK returned it (call-progress adds
// "progressNotifications":N, call-elicit "elicitations":[params...]), or
// {"error":{"code","message","data"}} when the hub answered with a JSON-RPC
// error. Any other failure (connect,
// transport, timeout) prints the error on stderr and exits 1. The ws mode needs the global
// WebSocket, i.e. Node >= 22 or `node --experimental-websocket`.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { WebSocketClientTransport } from "@modelcontextprotocol/sdk/client/websocket.js";
import {
  ElicitationCompleteNotificationSchema,
  ElicitRequestSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

function usage(msg) {
  process.stderr.write(`client.mjs: ${msg}\nusage: node client.mjs <http|sse|ws> <url> (list | call <tool> <json-args> | call-progress <tool> <json-args> | call-elicit <tool> <json-args> | wait-complete <id> | until-gone <tool>)...\n`);
  process.exit(2);
}

function parseOps(argv) {
  const ops = [];
  for (let i = 0; i < argv.length; ) {
    switch (argv[i]) {
      case "list":
        ops.push({ op: "list" });
        i += 1;
        break;
      case "call":
      case "call-elicit":
      case "call-progress": {
        if (i + 2 >= argv.length) usage(`${argv[i]} needs <tool> <json-args>`);
        let args;
        try {
          args = JSON.parse(argv[i + 2]);
        } catch (e) {
          usage(`call ${argv[i + 1]}: arguments are not JSON: ${e.message}`);
        }
        ops.push({ op: argv[i], name: argv[i + 1], args });
        i += 3;
        break;
      }
      case "wait-complete":
        if (i + 1 >= argv.length) usage("wait-complete needs <id>");
        ops.push({ op: "wait-complete", id: argv[i + 1] });
        i += 2;
        break;
      case "until-gone":
        if (i + 1 >= argv.length) usage("until-gone needs <tool>");
        ops.push({ op: "until-gone", name: argv[i + 1] });
        i += 2;
        break;
      default:
        usage(`unknown op ${JSON.stringify(argv[i])}`);
    }
  }
  if (ops.length === 0) usage("no op given");
  return ops;
}

function transportFor(kind, url) {
  const u = new URL(url);
  switch (kind) {
    case "http":
      return new StreamableHTTPClientTransport(u);
    case "sse":
      return new SSEClientTransport(u);
    case "ws":
      if (typeof globalThis.WebSocket !== "function") {
        usage("ws needs a global WebSocket: run node with --experimental-websocket (Node 20) or use Node >= 22");
      }
      return new WebSocketClientTransport(u);
    default:
      usage(`unknown transport ${JSON.stringify(kind)}`);
  }
}

async function main() {
  const [kind, url, ...rest] = process.argv.slice(2);
  if (!kind || !url) usage("missing transport or url");
  const ops = parseOps(rest);
  const elicits = ops.some((op) => op.op === "call-elicit" || op.op === "wait-complete");
  const client = new Client(
    { name: "mcp-hub-interop", version: "1.0.0" },
    elicits ? { capabilities: { elicitation: { form: {}, url: {} } } } : undefined,
  );
  const timeout = 30_000;

  // elicitation/create: recorded for the call in flight, then accepted.
  let elicited = [];
  // notifications/elicitation/complete: the ids, and the waiters for more.
  const completes = [];
  let completeWaiters = [];
  if (elicits) {
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
      completes.push(n.params.elicitationId);
      for (const w of completeWaiters.splice(0)) w();
    });
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      elicited.push(req.params);
      await new Promise((resolve) => setTimeout(resolve, 500));
      return { action: "accept" };
    });
  }

  // list_changed notifications: a counter and the waiters for the next one.
  let changes = 0;
  let waiters = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    changes++;
    for (const w of waiters.splice(0)) w();
  });
  const nextChange = (seen) =>
    changes > seen
      ? Promise.resolve()
      : new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no notifications/tools/list_changed within ${timeout} ms`)), timeout);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
  const listAll = async () => {
    const names = [];
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout });
      for (const t of page.tools) names.push(t.name);
      cursor = page.nextCursor;
    } while (cursor);
    return names;
  };

  await client.connect(transportFor(kind, url), { timeout });
  const results = [];
  try {
    for (const op of ops) {
      if (op.op === "list") {
        results.push({ tools: await listAll() });
      } else if (op.op === "wait-complete") {
        process.stdout.write(JSON.stringify({ waiting: op.id }) + "\n");
        const deadline = Date.now() + timeout;
        while (!completes.includes(op.id)) {
          if (Date.now() > deadline) throw new Error(`no notifications/elicitation/complete of ${op.id} within ${timeout} ms (got ${JSON.stringify(completes)})`);
          await new Promise((resolve) => {
            const timer = setTimeout(resolve, 1000);
            completeWaiters.push(() => {
              clearTimeout(timer);
              resolve();
            });
          });
        }
        results.push({ completes: [...completes] });
      } else if (op.op === "until-gone") {
        const first = changes;
        let ready = false;
        for (;;) {
          const seen = changes;
          const names = await listAll();
          if (!names.includes(op.name)) {
            results.push({ tools: names, notifications: changes - first });
            break;
          }
          if (!ready) {
            process.stdout.write(JSON.stringify({ ready: true }) + "\n");
            ready = true;
          }
          await nextChange(seen);
        }
      } else {
        try {
          if (op.op === "call-progress") {
            let n = 0;
            const onprogress = (p) => {
              n++;
              process.stdout.write(JSON.stringify({ progress: p.progress }) + "\n");
            };
            const res = await client.callTool({ name: op.name, arguments: op.args }, undefined, { timeout, onprogress });
            results.push({ ...res, progressNotifications: n });
          } else if (op.op === "call-elicit") {
            elicited = [];
            const res = await client.callTool({ name: op.name, arguments: op.args }, undefined, { timeout });
            results.push({ ...res, elicitations: elicited });
          } else {
            results.push(await client.callTool({ name: op.name, arguments: op.args }, undefined, { timeout }));
          }
        } catch (err) {
          // A JSON-RPC error answer (unknown tool, ...) is a result the test
          // asserts on; a broken transport still ends the run below.
          if (typeof err?.code !== "number") throw err;
          results.push({ error: { code: err.code, message: err.message, data: err.data } });
        }
      }
    }
  } finally {
    await client.close().catch(() => {});
  }
  process.stdout.write(JSON.stringify({ server: client.getServerVersion() ?? null, results }) + "\n");
}

main().then(
  () => process.exit(0),
  (err) => {
    process.stderr.write(`client.mjs: ${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
