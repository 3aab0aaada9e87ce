// mcp-hub console: reads /api/mcp/tools, /api/mcp/calls, the event
// stream /api/events and /readyz, and sends the add/remove/approve requests;
// the Connect panel's snippets come from /console/connect.json. A token,
// when the hub needs one, lives in sessionStorage and goes in the
// Authorization header of every request (never a cookie).
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const TOKEN_KEY = "mcp-hub-token";
  const MAX_CALLS = 200;
  let calls = [];
  let refreshTimer = null;

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const t = token();
    if (t) h["Authorization"] = "Bearer " + t;
    return h;
  }

  function api(path, opts) {
    opts = opts || {};
    return fetch(path, Object.assign({}, opts, { headers: headers(opts.headers), cache: "no-store", credentials: "omit" }))
      .then((res) => {
        if (res.status === 401) { askToken(); sawAuth(); }
        return res;
      });
  }

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "class") e.className = v;
      else if (k === "text") e.textContent = v;
      else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
      else e.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  function notice(msg) {
    const n = $("#notice");
    n.textContent = msg || "";
    n.hidden = !msg;
  }

  // askToken shows the token prompt; focus moves only when it appears, not
  // on every retry of the event stream.
  function askToken() {
    const bar = $("#token-bar");
    if (!bar.hidden) return;
    bar.hidden = false;
    $("#token-input").focus();
  }

  function statusBadge(status) {
    const cls = { connected: "b-ok", connecting: "b-warn", error: "b-bad" }[status] || "b-idle";
    return el("span", { class: "badge " + cls, text: status || "unknown" });
  }

  // --- servers, tools, quarantine -------------------------------------

  function renderServers(listing) {
    const body = $("#servers tbody");
    body.replaceChildren();
    const servers = listing.servers || [];
    let up = 0;
    for (const s of servers) {
      if (s.status === "connected") up++;
      // The hub's own tools are not a server that can be removed.
      const remove = s.transport === "builtin" ? null : el("button", { class: "btn btn-small btn-danger", type: "button",
        "aria-label": "remove " + s.name, text: "Remove", onclick: () => removeServer(s.name) });
      const toolText = String(s.toolCount) + (s.quarantinedCount ? " (+" + s.quarantinedCount + " quarantined)" : "");
      body.append(el("tr", { "data-server": s.name, "data-status": s.status },
        el("td", { "data-label": "Name" }, el("span", {}, el("span", { class: "name", text: s.name }), el("span", { class: "url", text: s.url }))),
        el("td", { "data-label": "Status", class: "status" }, statusBadge(s.status)),
        el("td", { "data-label": "Tools", class: "tool-count num" }, el("span", { text: toolText })),
        el("td", { "data-label": "Transport" }, el("span", { text: [s.transport, s.source].filter(Boolean).join(" · ") })),
        el("td", { "data-label": "Error", class: s.error ? "err" : "err none" }, el("span", { text: s.error || "" })),
        el("td", { "data-label": "", class: remove ? "act" : "act none" }, remove)));
    }
    $("#servers-empty").hidden = servers.length > 0;
    $("#servers").hidden = servers.length === 0;
    $("#summary").textContent = servers.length ? up + " of " + servers.length + " connected · " + listing.totalTools + " tools" : "";
  }

  // Virtual servers: named endpoints publishing chosen servers and tools.
  function renderVirtual(list) {
    const body = $("#virtual tbody");
    body.replaceChildren();
    for (const v of list) {
      const what = [(v.servers || []).join(", "), (v.tools || []).join(", ")].filter(Boolean).join(" · ");
      body.append(el("tr", { "data-virtual": v.name },
        el("td", { "data-label": "Name" }, el("span", {}, el("span", { class: "name", text: v.name }), el("span", { class: "url", text: v.endpoint }))),
        el("td", { "data-label": "Publishes" }, el("span", { text: what })),
        el("td", { "data-label": "Tools", class: "num" }, el("span", { text: String(v.toolCount) })),
        el("td", { "data-label": "Source" }, el("span", { text: v.source }))));
    }
    $("#virtual-card").hidden = list.length === 0;
  }

  function renderQuarantine(listing) {
    const box = $("#quarantine");
    box.replaceChildren();
    let n = 0;
    for (const s of listing.servers || []) {
      for (const t of Array.isArray(s.tools) ? s.tools : []) {
        const screened = Array.isArray(t.screened) && t.screened.length > 0;
        if (!t.definitionChanged && !screened) continue;
        n++;
        const original = t.originalName || t.name;
        const msg = el("span", { class: "msg" });
        const approve = el("button", { class: "btn btn-small", type: "button", text: "Approve",
          onclick: () => approveTool(s.name, original, msg) });
        box.append(el("div", { class: "q", "data-tool": t.name },
          el("div", { class: "q-head" },
            el("span", {}, el("span", { class: "name", text: t.name }), " ", el("span", { class: "muted", text: "on " + s.name }), " ",
              t.quarantined ? el("span", { class: "badge b-bad", text: "quarantined" }) : el("span", { class: "badge b-warn", text: screened ? "screened (warn)" : "changed (warn)" }),
              screened ? " " : null, screened ? el("span", { class: "badge b-bad", text: "looks like a prompt injection" }) : null),
            el("span", {}, msg, " ", approve)),
          t.definitionChanged ? diffView(t.diff || "") : null,
          screened ? el("ul", {}, ...t.screened.map((h) => el("li", { class: "mono", text: h.rule + " in " + h.where + ": " + h.reason }))) : null));
      }
    }
    $("#quarantine-empty").hidden = n > 0;
    $("#quarantine-count").textContent = n ? String(n) : "";
  }

  function diffView(diff) {
    const pre = el("pre");
    for (const line of diff.split("\n")) {
      const cls = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : null;
      pre.append(el("span", { class: cls, text: line }), "\n");
    }
    return pre;
  }

  function renderTools(listing) {
    const body = $("#tools tbody");
    body.replaceChildren();
    let n = 0;
    for (const s of listing.servers || []) {
      for (const t of Array.isArray(s.tools) ? s.tools : []) {
        if (t.quarantined) continue;
        n++;
        body.append(el("tr", { "data-tool": t.name },
          el("td", { "data-label": "Tool" }, el("span", { class: "mono", text: t.name, title: t.description || "" })),
          el("td", { "data-label": "Server" }, el("span", { text: t.server || s.name })),
          el("td", { "data-label": "Access" }, t.readOnly ? el("span", { class: "badge b-ok", text: "read-only" }) : el("span", { class: "badge b-warn", text: "writes" })),
          el("td", { "data-label": "Why" }, el("span", { class: "muted", text: t.readOnlyReason || "" }))));
      }
    }
    $("#tools-empty").hidden = n > 0;
    $("#tools").hidden = n === 0;
  }

  async function refresh() {
    try {
      const res = await api("/api/mcp/tools");
      if (!res.ok) throw new Error("GET /api/mcp/tools: " + res.status);
      const listing = await res.json();
      renderServers(listing);
      renderQuarantine(listing);
      const r3 = await api("/api/mcp/servers");
      renderVirtual(r3.ok ? ((await r3.json()).virtualServers || []) : []);
      const view = $("#autonomy").value;
      if (view) {
        const r2 = await api("/api/mcp/tools?autonomy=" + encodeURIComponent(view));
        renderTools(r2.ok ? await r2.json() : { servers: [] });
      } else {
        renderTools(listing);
      }
      notice("");
    } catch (e) {
      notice("Cannot reach the hub: " + e.message);
    }
  }

  // Catalog events come in bursts (a server and its tools): one refresh.
  function refreshSoon() {
    clearTimeout(refreshTimer);
    refreshTimer = setTimeout(refresh, 150);
  }

  // --- calls -----------------------------------------------------------

  function renderCalls() {
    const body = $("#calls tbody");
    body.replaceChildren();
    for (let i = calls.length - 1; i >= 0; i--) {
      const c = calls[i];
      const dcls = { allowed: "b-ok", denied: "b-bad", limited: "b-warn" }[c.decision] || "b-idle";
      const ocls = c.outcome === "ok" ? "b-ok" : c.outcome === "tool_error" ? "b-warn" : "b-bad";
      body.append(el("tr", { class: "call", "data-tool": c.tool, "data-decision": c.decision, "data-guardrail": c.guardrail || null },
        el("td", { "data-label": "Time" }, el("span", { class: "mono", text: new Date(c.time).toLocaleTimeString() })),
        el("td", { "data-label": "Tool" }, el("span", { class: "mono", text: c.tool })),
        el("td", { "data-label": "Server" }, el("span", { text: c.server || "" })),
        el("td", { "data-label": "Caller" }, el("span", { text: c.caller + " · " + c.level })),
        el("td", { "data-label": "Decision", class: "decision" }, el("span", { class: "badge " + dcls, text: c.decision }),
          c.guardrail ? el("span", { class: "badge b-warn guardrail", title: "What the caller's guardrails did (rule ids, never the text)", text: "guardrail: " + c.guardrail }) : null),
        el("td", { "data-label": "Outcome" }, el("span", { class: "badge " + ocls, text: c.outcome })),
        el("td", { "data-label": "ms", class: "num" }, el("span", { text: c.decision === "allowed" ? c.durationMs.toFixed(1) : "—" }))));
    }
    $("#calls-empty").hidden = calls.length > 0;
    $("#calls").hidden = calls.length === 0;
  }

  function addCalls(list) {
    const seen = new Set(calls.map((c) => c.seq));
    for (const c of list) if (!seen.has(c.seq)) calls.push(c);
    calls.sort((a, b) => a.seq - b.seq);
    if (calls.length > MAX_CALLS) calls = calls.slice(calls.length - MAX_CALLS);
    renderCalls();
  }

  async function loadCalls() {
    const res = await api("/api/mcp/calls");
    if (res.ok) addCalls((await res.json()).calls || []);
  }

  // --- health: what /readyz says when it is more than "ok" (a source cut
  // off, the Kubernetes API unreachable: the hub serves its last catalog),
  // or why the hub is not ready. Nothing changes in the catalog then, so
  // no event says it: the console asks every HEALTH_MS.

  const HEALTH_MS = 10000;

  async function health() {
    const p = $("#health");
    try {
      const res = await fetch("/readyz", { cache: "no-store", credentials: "omit" });
      const text = (await res.text()).trim();
      const m = /^ok \((.*)\)$/.exec(text);
      p.textContent = res.ok ? (m ? m[1] : "") : "not ready: " + text;
    } catch (e) {
      p.textContent = "";
    }
    p.hidden = p.textContent === "";
    setTimeout(health, HEALTH_MS);
  }

  // --- event stream: fetch + ReadableStream, so the token goes in a header.

  function setLive(on) {
    const p = $("#live");
    p.textContent = on ? "live" : "reconnecting…";
    p.className = "pill " + (on ? "pill-on" : "pill-off");
  }

  async function stream() {
    let delay = 1000;
    for (;;) {
      try {
        const res = await api("/api/events", { headers: { Accept: "text/event-stream" } });
        if (res.ok && res.body) {
          setLive(true);
          delay = 1000;
          await loadCalls(); // what happened while the stream was down
          refreshSoon();
          await readEvents(res.body.getReader());
        }
      } catch (e) { /* reconnect below */ }
      setLive(false);
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 15000);
    }
  }

  async function readEvents(reader) {
    const dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += dec.decode(value, { stream: true });
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        let name = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (name === "catalog") refreshSoon();
        else if (name === "call" && data) addCalls([JSON.parse(data)]);
      }
    }
  }

  // --- writes ----------------------------------------------------------

  async function errorText(res) {
    try {
      const j = await res.json();
      return j.error && typeof j.error === "object" ? j.error.message : j.error || res.statusText;
    } catch (e) { return res.status + " " + res.statusText; }
  }

  async function addServer(ev) {
    ev.preventDefault();
    const form = ev.target;
    const msg = $("#add-msg");
    const body = {};
    for (const [k, v] of new FormData(form).entries()) if (String(v).trim() !== "") body[k] = String(v).trim();
    msg.className = "msg";
    msg.textContent = "Adding…";
    const res = await api("/api/mcp/server", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    if (res.ok) {
      msg.className = "msg ok";
      msg.textContent = "Added " + body.name + ".";
      form.reset();
      refreshSoon();
    } else {
      msg.className = "msg bad";
      msg.textContent = await errorText(res);
    }
  }

  async function removeServer(name) {
    if (!confirm("Remove server " + name + " from the hub?")) return;
    const res = await api("/api/mcp/server/" + encodeURIComponent(name), { method: "DELETE" });
    if (res.ok) refreshSoon();
    else notice("Remove " + name + ": " + (await errorText(res)));
  }

  async function approveTool(server, tool, msg) {
    msg.className = "msg";
    msg.textContent = "Approving…";
    const res = await api("/api/mcp/pins/approve", { method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ server: server, tool: tool }) });
    if (res.ok) { msg.className = "msg ok"; msg.textContent = "Approved."; refreshSoon(); }
    else { msg.className = "msg bad"; msg.textContent = await errorText(res); }
  }

  // --- connect: the hub in each MCP client's own file, built by the hub
  // (the same code as `mcp-hub connect CLIENT --print`) for the URL this
  // page came from. A token is the placeholder <token>, never the one in
  // this tab.

  let connectData = null;
  let connectClient = "claude-code";
  let connectAuthChosen = false;
  let authDetected = false;
  let authNeeded = false;

  function guessOS() {
    const p = (navigator.userAgentData && navigator.userAgentData.platform) || navigator.platform || "";
    return /mac/i.test(p) ? "darwin" : /win/i.test(p) ? "windows" : "linux";
  }

  // The hub publishes OAuth metadata when it is a resource server; a 401
  // or a token in this tab says it takes tokens.
  async function detectAuth() {
    for (const p of ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"]) {
      try {
        const res = await fetch(p, { cache: "no-store", credentials: "omit" });
        if (res.ok) return "oauth";
      } catch (e) { /* not an OAuth hub */ }
    }
    return token() || authNeeded ? "token" : "none";
  }

  function sawAuth() {
    authNeeded = true;
    const sel = $("#connect-auth");
    if (authDetected && !connectAuthChosen && sel.value === "none") { sel.value = "token"; loadConnect(); }
  }

  async function loadConnect() {
    const q = new URLSearchParams({ url: location.origin + "/mcp", auth: $("#connect-auth").value, os: $("#connect-os").value });
    try {
      const res = await fetch("/console/connect.json?" + q.toString(), { cache: "no-store", credentials: "omit" });
      if (!res.ok) throw new Error(await errorText(res));
      connectData = await res.json();
    } catch (e) {
      connectData = null;
      $("#connect-snippet").textContent = "Cannot build the snippets: " + e.message;
      return;
    }
    renderConnect();
  }

  function renderConnect() {
    const tabs = $("#connect-tabs");
    tabs.replaceChildren();
    const list = connectData.clients || [];
    const cur = list.find((c) => c.id === connectClient) || list[0];
    if (!cur) return;
    for (const c of list) {
      const on = c.id === cur.id;
      tabs.append(el("button", { type: "button", role: "tab", class: on ? "tab tab-on" : "tab", "aria-selected": on ? "true" : "false",
        "data-client": c.id, text: c.title, onclick: () => { connectClient = c.id; renderConnect(); } }));
    }
    $("#connect-cmd").textContent = cur.command;
    $("#connect-path").textContent = cur.path;
    $("#connect-snippet").textContent = cur.snippet;
    $("#connect-snippet").setAttribute("data-client", cur.id);
    $("#connect-note").textContent = cur.note || "";
    $("#connect-note").hidden = !cur.note;
    $("#connect-token").hidden = cur.snippet.indexOf("<token>") < 0;
    $("#connect-copy").textContent = "Copy";
  }

  // Copy: the Clipboard API where the page is a secure context (https,
  // localhost), else the selection and execCommand.
  async function copySnippet() {
    const pre = $("#connect-snippet");
    const btn = $("#connect-copy");
    let ok = false;
    try {
      if (navigator.clipboard && window.isSecureContext) {
        await navigator.clipboard.writeText(pre.textContent);
        ok = true;
      }
    } catch (e) { /* fall back below */ }
    if (!ok) {
      const range = document.createRange();
      range.selectNodeContents(pre);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
    }
    btn.textContent = ok ? "Copied" : "Press Ctrl+C";
  }

  // --- start -----------------------------------------------------------

  document.addEventListener("DOMContentLoaded", () => {
    $("#token-button").addEventListener("click", () => { $("#token-bar").hidden = !$("#token-bar").hidden; });
    $("#token-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, $("#token-input").value.trim());
      $("#token-input").value = "";
      $("#token-bar").hidden = true;
      location.reload();
    });
    $("#token-clear").addEventListener("click", () => { sessionStorage.removeItem(TOKEN_KEY); location.reload(); });
    $("#autonomy").addEventListener("change", refresh);
    $("#add-form").addEventListener("submit", addServer);
    $("#connect-os").value = guessOS();
    $("#connect-auth").addEventListener("change", () => { connectAuthChosen = true; loadConnect(); });
    $("#connect-os").addEventListener("change", loadConnect);
    $("#connect-copy").addEventListener("click", copySnippet);
    detectAuth().then((a) => {
      authDetected = true;
      if (!connectAuthChosen) $("#connect-auth").value = a;
      loadConnect();
    });
    renderCalls();
    refresh();
    stream();
    health();
  });
})();
