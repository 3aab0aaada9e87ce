// mcp-hub console: reads /api/mcp/tools, /api/mcp/calls, /api/mcp/approvals,
// /api/mcp/connections, the event stream /api/events and /readyz, and sends
// the add/remove/approve requests, the decisions on held calls and the
// revocations of the caller's connections;
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
      // The guardrail text: what the caller's filters found (rule ids,
      // never the text), and who decided a call held for approval.
      const held = /^approval |; approval /.test(c.guardrail || "");
      body.append(el("tr", { class: "call", "data-tool": c.tool, "data-decision": c.decision, "data-guardrail": c.guardrail || null },
        el("td", { "data-label": "Time" }, el("span", { class: "mono", text: new Date(c.time).toLocaleTimeString() })),
        el("td", { "data-label": "Tool" }, el("span", { class: "mono", text: c.tool })),
        el("td", { "data-label": "Server" }, el("span", { text: c.server || "" })),
        el("td", { "data-label": "Caller" }, el("span", { text: c.caller + " · " + c.level })),
        el("td", { "data-label": "Decision", class: "decision" }, el("span", { class: "badge " + dcls, text: c.decision }),
          c.guardrail ? el("span", { class: "badge b-warn guardrail", text: "guardrail: " + c.guardrail,
            title: held ? "What the caller's guardrails did, and who decided the approval" : "What the caller's guardrails did (rule ids, never the text)" }) : null),
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

  // --- approvals: write calls held until a person decides (guardrails
  // humanApprovalRequired). The list is read again on every "approvals"
  // event and every APPROVALS_MS while the page is shown (another
  // replica's held calls wake no stream of this one). A box, once shown,
  // stays as it is between reads (a reason being typed keeps its text and
  // focus): new calls are added, gone ones removed. A decision sends back
  // the digest of the arguments shown, so what is approved is what was
  // seen. The webhook links to /console/#approval=ID: that box is shown.

  const APPROVALS_MS = 10000;
  const ARGS_SHOWN = 20000; // characters of arguments shown until "Show all"
  const DONE_KEPT_MS = 60000; // a box decided here stays this long, with its result
  const boxes = new Map(); // approval id -> its box (approvalBox)
  let approvalsAsked = 0, approvalsShown = 0; // order of the reads: a late answer is dropped
  let approvalsTimer = null;
  let focusApproval = approvalFromHash();
  let focusMsg = false; // the panel's message says focusApproval was not found

  function approvalFromHash() {
    const m = /^#approval=([A-Za-z0-9_.-]{1,128})$/.exec(location.hash);
    return m ? m[1] : null;
  }

  // A number of the listing as a number, whether or not it came as raw
  // JSON (keepNumbers).
  function num(v) {
    return v && typeof v === "object" && "rawJSON" in v ? Number(v.rawJSON) : Number(v);
  }

  // keepNumbers parses numbers a double cannot hold as they were written
  // (JSON.rawJSON, where the browser has it), so the arguments an approver
  // reads say 9007199254740993 when the call holds 9007199254740993.
  function keepNumbers(key, value, ctx) {
    if (typeof value === "number" && ctx && typeof ctx.source === "string" && typeof JSON.rawJSON === "function" &&
        String(value) !== ctx.source) return JSON.rawJSON(ctx.source);
    return value;
  }

  function dur(sec) {
    sec = Math.max(0, Math.floor(sec));
    const two = (n) => String(n).padStart(2, "0");
    if (sec < 60) return sec + "s";
    if (sec < 3600) return Math.floor(sec / 60) + "m " + two(sec % 60) + "s";
    return Math.floor(sec / 3600) + "h " + two(Math.floor(sec % 3600 / 60)) + "m";
  }

  function approvalsSoon() {
    clearTimeout(approvalsTimer);
    approvalsTimer = setTimeout(loadApprovals, 100);
  }

  async function loadApprovals() {
    const n = ++approvalsAsked;
    let listing;
    try {
      const res = await api("/api/mcp/approvals");
      if (res.status === 404) { $("#approvals-card").hidden = true; return; } // a hub that holds no calls
      if (res.status === 401) return; // the token prompt is up
      if (!res.ok) throw new Error(await errorText(res));
      listing = JSON.parse(await res.text(), keepNumbers);
    } catch (e) {
      if (n >= approvalsShown) { panelMsg("Cannot read the held calls: " + e.message, "bad"); focusMsg = false; }
      return;
    }
    if (n < approvalsShown) return;
    approvalsShown = n;
    if (!focusMsg) panelMsg("");
    $("#approvals-card").hidden = false;
    renderApprovals(listing);
  }

  function panelMsg(text, cls) {
    const m = $("#approvals-msg");
    m.className = "msg" + (cls ? " " + cls : "");
    m.textContent = text || "";
    m.hidden = !text;
  }

  function renderApprovals(listing) {
    const list = Array.isArray(listing.approvals) ? listing.approvals : [];
    const approver = listing.approver === true;
    const timeout = num(listing.timeoutSeconds) || 0;
    const box = $("#approvals");
    const now = Date.now();
    const waiting = new Set(list.map((p) => p.id));
    for (const [id, b] of boxes) {
      if (waiting.has(id) && b.approver === approver) continue;
      if (b.done && now - b.doneAt < DONE_KEPT_MS) continue;
      // Gone (decided elsewhere, expired, canceled), or the caller's right
      // to decide changed: a box of the right kind is made below.
      b.node.remove();
      boxes.delete(id);
    }
    // New boxes go before the next box already shown: the list is oldest
    // first, the boxes shown keep that order, and none of them moves.
    let next = null;
    for (let i = list.length - 1; i >= 0; i--) {
      const p = list[i];
      let b = boxes.get(p.id);
      if (!b) {
        b = approvalBox(p, approver, timeout);
        boxes.set(p.id, b);
        box.insertBefore(b.node, next && next.isConnected ? next : null);
      }
      if (!b.done) { b.age = num(p.ageSeconds) || 0; b.fetched = now; timeText(b, now); }
      next = b.node;
    }
    const n = list.length;
    const count = $("#approvals-count");
    count.textContent = String(n);
    count.hidden = n === 0;
    const pill = $("#approvals-pill");
    pill.textContent = n === 1 ? "1 call awaits approval" : n + " calls await approval";
    pill.hidden = n === 0;
    document.title = (n ? "(" + n + ") " : "") + "mcp-hub console";
    $("#approvals-empty").hidden = box.childElementCount > 0;
    const who = $("#approvals-who");
    const names = [...new Set(list.map((p) => p.approvers).filter(Boolean))].join("; ");
    who.textContent = !approver && n ? "Read-only: only " + (names || "an approver") + " may approve or deny these calls." : "";
    who.hidden = who.textContent === "";
    if (focusApproval) showFocus();
  }

  // showFocus shows the box of the approval the page's hash names
  // (#approval=ID), once the list that should hold it has been read.
  function showFocus() {
    const id = focusApproval;
    focusApproval = null;
    for (const b of boxes.values()) b.node.classList.remove("ap-focus");
    const b = boxes.get(id);
    if (b) {
      // Highlighted, not focused: a key pressed by chance decides nothing.
      b.node.classList.add("ap-focus");
      b.node.scrollIntoView({ block: "center" });
      if (focusMsg) { panelMsg(""); focusMsg = false; }
    } else {
      panelMsg("Approval " + id + " does not wait here: it was decided, expired or canceled, or is not one this token may see.", "bad");
      focusMsg = true;
      $("#approvals-card").scrollIntoView({ block: "start" });
    }
  }

  // argsView is the call's arguments, pretty-printed, at most ARGS_SHOWN
  // characters until asked for all.
  function argsView(p) {
    if (p.arguments === undefined || p.arguments === null) return el("div", { class: "muted ap-args", text: "no arguments" });
    let text;
    try { text = JSON.stringify(p.arguments, null, 2); } catch (e) { text = String(p.arguments); }
    const pre = el("pre", { class: "ap-args", tabindex: "0", "aria-label": "arguments of " + p.tool });
    if (text.length <= ARGS_SHOWN) {
      pre.textContent = text;
      return pre;
    }
    pre.textContent = text.slice(0, ARGS_SHOWN) + "\n…";
    const cut = el("div", { class: "ap-cut muted" });
    const all = el("button", { class: "btn btn-small btn-ghost", type: "button", text: "Show all",
      onclick: () => { pre.textContent = text; cut.remove(); } });
    cut.append(el("span", { text: "Shown: the first " + ARGS_SHOWN.toLocaleString() + " of " + text.length.toLocaleString() +
      " characters. An approval approves all of them." }), all);
    return el("div", {}, pre, cut);
  }

  function approvalBox(p, approver, timeout) {
    const created = Date.parse(p.created), expires = Date.parse(p.expires);
    const b = { p: p, approver: approver, done: false, doneAt: 0, age: 0, fetched: Date.now(),
      life: isFinite(created) && isFinite(expires) ? (expires - created) / 1000 : timeout };
    b.time = el("span", { class: "ap-time muted" });
    b.msg = el("span", { class: "msg" });
    b.verdict = el("span", {});
    const who = ["asked by " + p.caller, p.agent ? "agent " + p.agent : null, p.level ? "level " + p.level : null].filter(Boolean).join(" · ");
    const act = el("div", { class: "ap-act" });
    if (approver && p.own) {
      // No one decides their own call: another approver does.
      act.append(el("span", { class: "muted ap-own", text: "Your own call: another approver decides it." }));
    } else if (approver) {
      b.approve = el("button", { class: "btn btn-small", type: "button", text: "Approve", "data-decide": "approve",
        onclick: () => decide(b, "approve") });
      b.reason = el("input", { type: "text", maxlength: "1000", autocomplete: "off", placeholder: "why deny? (the caller reads it)",
        "aria-label": "reason for denying " + p.tool });
      b.deny = el("button", { class: "btn btn-small btn-danger", type: "submit", text: "Deny", "data-decide": "deny" });
      b.form = el("form", { class: "deny", onsubmit: (ev) => { ev.preventDefault(); decide(b, "deny"); } }, b.reason, b.deny);
      act.append(b.approve, b.form);
    }
    act.append(b.msg);
    b.node = el("div", { class: "ap", "data-approval": p.id, "data-tool": p.tool },
      el("div", { class: "ap-head" },
        el("span", {}, el("span", { class: "name mono", text: p.tool }), " ", el("span", { class: "muted", text: "on " + p.server }), " ", b.verdict),
        b.time),
      el("div", { class: "ap-who muted", text: who }),
      argsView(p),
      el("div", { class: "ap-digest muted mono", title: "the SHA-256 of the arguments: a decision names it, so it applies to these arguments only",
        text: "approval " + p.id + " · arguments sha256 " + p.argumentsSha256 }),
      act);
    return b;
  }

  function timeText(b, now) {
    const age = b.age + (now - b.fetched) / 1000;
    const left = b.life - age;
    b.time.textContent = "waiting " + dur(age) + " · " + (left > 0 ? dur(left) + " left" : "expired");
    b.time.classList.toggle("soon", left < 60);
    if (left <= 0) setBusy(b, true);
  }

  function tickApprovals() {
    const now = Date.now();
    for (const b of boxes.values()) if (!b.done) timeText(b, now);
  }

  function setBusy(b, busy) {
    for (const x of [b.approve, b.deny, b.reason]) if (x) x.disabled = busy;
  }

  function say(b, text, cls) {
    b.msg.className = "msg" + (cls ? " " + cls : "");
    b.msg.textContent = text;
  }

  // finish marks b decided (here, or found decided or gone when deciding):
  // its buttons go, its result stays for DONE_KEPT_MS.
  function finish(b, verdict, cls) {
    b.done = true;
    b.doneAt = Date.now();
    b.node.classList.add("ap-done");
    b.node.setAttribute("data-verdict", verdict);
    b.verdict.replaceChildren(el("span", { class: "badge " + cls, text: verdict }));
    b.time.textContent = "";
    if (b.form) b.form.remove();
    if (b.approve) b.approve.remove();
  }

  async function decide(b, decision) {
    if (b.done) return;
    const body = { decision: decision, argumentsSha256: b.p.argumentsSha256 };
    if (decision === "deny") {
      const reason = b.reason.value.trim();
      if (!reason) {
        say(b, "Say why it is denied: the caller reads the reason.", "bad");
        b.reason.focus();
        return;
      }
      body.reason = reason;
    }
    setBusy(b, true);
    say(b, decision === "approve" ? "Approving…" : "Denying…", "");
    let res;
    try {
      res = await api("/api/mcp/approvals/" + encodeURIComponent(b.p.id), { method: "POST",
        headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    } catch (e) {
      say(b, "Cannot reach the hub: " + e.message, "bad");
      setBusy(b, false);
      return;
    }
    if (res.ok) {
      let d = {};
      try { d = await res.json(); } catch (e) { /* the status says enough */ }
      const verdict = d.verdict || (decision === "approve" ? "approved" : "denied");
      const by = d.by ? " by " + d.by : "";
      finish(b, verdict, verdict === "approved" ? "b-ok" : "b-bad");
      say(b, verdict === "approved" ? "Approved" + by + ": the call runs now." : "Denied" + by + ": " + (d.reason || body.reason || "no reason given."),
        verdict === "approved" ? "ok" : "");
    } else {
      const text = await errorText(res);
      if (res.status === 404 || res.status === 410 || (res.status === 409 && !/not the ones shown/.test(text))) {
        // Decided by someone else meanwhile, expired, or gone: nothing to decide.
        finish(b, res.status === 410 ? "expired" : "gone", "b-idle");
      } else if (res.status !== 403) {
        setBusy(b, false); // 403 (its own call, not an approver) stays refused
      }
      say(b, text, "bad");
    }
    approvalsSoon();
  }

  // --- my connections: the caller's own grants at servers reached as
  // each caller's own account (servers[].userOAuth), never a token. Read
  // at start, when the page is shown again (a sign-in happens in another
  // tab) and after a revocation; the times shown are redrawn every
  // CONNECTIONS_TICK_MS. A hub that keeps no grants answers 404: the panel
  // stays hidden.

  const CONNECTIONS_TICK_MS = 15000;
  let connectionsAsked = 0; // a late answer is dropped
  let connectionsReadFailed = false; // the panel's message says a read failed
  let connectionTimes = []; // [cell, time, kind] of the rows shown

  // roughly is ms in its largest whole unit: 45s, 4m, 5h, 3d.
  function roughly(ms) {
    const s = Math.max(0, Math.floor(ms / 1000));
    if (s >= 172800) return Math.floor(s / 86400) + "d";
    if (s >= 3600) return Math.floor(s / 3600) + "h";
    if (s >= 60) return Math.floor(s / 60) + "m";
    return s + "s";
  }

  function connectionTime(t, kind, now) {
    if (!isFinite(t)) return kind === "expires" ? "unknown" : "—";
    if (kind === "ago") return roughly(now - t) + " ago";
    return t <= now ? "expired" : "in " + roughly(t - now);
  }

  function tickConnections() {
    const now = Date.now();
    for (const [cell, t, kind] of connectionTimes) {
      cell.textContent = connectionTime(t, kind, now);
      if (kind === "expires") cell.className = "badge " + (isFinite(t) && t <= now ? "b-bad" : "b-idle");
    }
  }

  function connectionsMsg(text, cls) {
    const m = $("#connections-msg");
    m.className = "msg" + (cls ? " " + cls : "");
    m.textContent = text || "";
    m.hidden = !text;
  }

  async function loadConnections() {
    const n = ++connectionsAsked;
    let listing;
    try {
      const res = await api("/api/mcp/connections");
      if (n !== connectionsAsked) return;
      if (res.status === 404) { $("#connections-card").hidden = true; return; } // a hub that keeps no user grants
      if (res.status === 401) return; // the token prompt is up
      if (!res.ok) throw new Error(await errorText(res));
      listing = await res.json();
    } catch (e) {
      if (n !== connectionsAsked) return;
      $("#connections-card").hidden = false;
      connectionsMsg("Cannot read your connections: " + e.message, "bad");
      connectionsReadFailed = true;
      return;
    }
    if (n !== connectionsAsked) return;
    if (connectionsReadFailed) { connectionsMsg(""); connectionsReadFailed = false; }
    $("#connections-card").hidden = false;
    renderConnections(listing);
  }

  function renderConnections(listing) {
    const list = Array.isArray(listing.connections) ? listing.connections : [];
    const body = $("#connections tbody");
    body.replaceChildren();
    connectionTimes = [];
    for (const c of list) {
      const connected = Date.parse(c.connectedAt), expires = Date.parse(c.accessExpiresAt);
      const connectedCell = el("span", { title: isFinite(connected) ? new Date(connected).toLocaleString() : null });
      const expiresCell = el("span", { class: "badge b-idle", title: isFinite(expires) ? new Date(expires).toLocaleString() : "the authorization server did not say" });
      connectionTimes.push([connectedCell, connected, "ago"], [expiresCell, expires, "expires"]);
      const revoke = el("button", { class: "btn btn-small btn-danger", type: "button", text: "Revoke", "data-revoke": c.server,
        "aria-label": "revoke your connection to " + c.server, onclick: () => revokeConnection(c.server, revoke) });
      body.append(el("tr", { "data-connection": c.server },
        el("td", { "data-label": "Server" }, el("span", {}, el("span", { class: "name", text: c.server }), el("span", { class: "url", text: c.issuer || "" }))),
        el("td", { "data-label": "Subject" }, el("span", { text: c.subject || "—" })),
        el("td", { "data-label": "Scopes" }, el("span", { class: "mono", text: (Array.isArray(c.scopes) ? c.scopes : []).join(" ") || "—" })),
        el("td", { "data-label": "Connected" }, connectedCell),
        el("td", { "data-label": "Access expires" }, expiresCell),
        el("td", { "data-label": "Refreshable" }, c.refreshable ? el("span", { class: "badge b-ok", text: "yes", title: "it outlives its access token" })
          : el("span", { class: "badge b-idle", text: "no", title: "you sign in again when its access token expires" })),
        el("td", { "data-label": "", class: "act" }, revoke)));
    }
    tickConnections();
    $("#connections-empty").hidden = list.length > 0;
    $("#connections").hidden = list.length === 0;
  }

  async function revokeConnection(server, btn) {
    if (!confirm("Revoke your connection to " + server + "? Your next call to it asks you to sign in again.")) return;
    btn.disabled = true;
    connectionsReadFailed = false;
    connectionsMsg("Revoking your connection to " + server + "…", "");
    let res;
    try {
      res = await api("/api/mcp/connections/" + encodeURIComponent(server), { method: "DELETE" });
    } catch (e) {
      connectionsMsg("Cannot reach the hub: " + e.message, "bad");
      btn.disabled = false;
      return;
    }
    if (res.ok) {
      let d = {};
      try { d = await res.json(); } catch (e) { /* the status says enough */ }
      if (d.revokedAtServer) connectionsMsg("Revoked your connection to " + server + ", at its authorization server too.", "ok");
      else connectionsMsg("Revoked your connection to " + server + " here." + (d.note ? " Note: " + d.note : ""), "");
    } else {
      connectionsMsg("Revoke " + server + ": " + (await errorText(res)), "bad"); // 404: gone already, the list drops it
      btn.disabled = false;
    }
    loadConnections();
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
          approvalsSoon();
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
        else if (name === "approvals") approvalsSoon();
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
    window.addEventListener("hashchange", () => {
      focusApproval = approvalFromHash();
      if (focusApproval && approvalsShown > 0) showFocus();
    });
    document.addEventListener("visibilitychange", () => {
      if (document.visibilityState === "visible") { approvalsSoon(); loadConnections(); }
    });
    setInterval(() => { if (document.visibilityState === "visible") loadApprovals(); }, APPROVALS_MS);
    setInterval(tickApprovals, 1000);
    setInterval(tickConnections, CONNECTIONS_TICK_MS);
    if (focusApproval) $("#approvals-card").scrollIntoView({ block: "start" });
    renderCalls();
    refresh();
    loadApprovals();
    loadConnections();
    stream();
    health();
  });
})();
