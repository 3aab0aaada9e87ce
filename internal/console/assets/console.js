// mcp-hub console: reads /api/mcp/tools, /api/mcp/calls, /api/mcp/approvals,
// /api/mcp/connections, the event stream /api/events and /readyz, and sends
// the add/remove/approve requests, the decisions on held calls, the
// revocations of the caller's connections and the tool bench's runs
// (POST /api/mcp/tools/{name}/run);
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
        if (res.status === 401) needToken();
        return res;
      });
  }

  // needToken is the hub's 401: no token in this tab, or one it refuses.
  // The page says so, with the token form open once (not again on each
  // retry of the event stream), and the live pill says "token needed"
  // rather than "reconnecting…", which no wait would mend.
  let tokenState = ""; // "", "needed" or "refused"
  function needToken() {
    const first = tokenState === "";
    tokenState = token() ? "refused" : "needed";
    const st = $("#token-state");
    st.textContent = tokenState === "refused" ? "The hub refused the token this tab holds: enter another one." : "This hub needs a token.";
    st.hidden = false;
    if (first) askToken();
    sawAuth();
    setLive(false);
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

  // renderServers lists the servers; only a server in removable (one
  // registered through the API) has a Remove button: one declared in the
  // config file or MCP_SERVERS is changed where it is declared (the hub
  // answers 409), the hub's own tools are not a server.
  function renderServers(listing, removable) {
    const body = $("#servers tbody");
    body.replaceChildren();
    const servers = listing.servers || [];
    let up = 0;
    for (const s of servers) {
      if (s.status === "connected") up++;
      const remove = !removable.has(s.name) ? null : el("button", { class: "btn btn-small btn-danger", type: "button",
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

  // --- tool bench: the Tools card. Each tool's row is built once and
  // kept while its definition stays the same (with its open form and what
  // was typed in it); search and filters only toggle hidden, so a few
  // hundred tools filter at every key press. "Try it" runs a tool with
  // POST /api/mcp/tools/{name}/run as this tab's caller: the REST face,
  // with the pipeline, decision and audit line of a call on /mcp.

  const DESC_SHORT = 160; // characters of a description shown until "more"
  const benchRows = new Map(); // tool name -> its row (toolRow)
  const benchGroups = new Map(); // server name -> its group (toolGroup)
  const collapsedGroups = new Set(); // servers whose group is folded, across renders
  let fieldSeq = 0; // ids of the form fields

  function renderTools(listing) {
    const seen = new Set();
    const order = new Map(); // server -> its rows, in the listing's order
    for (const s of listing.servers || []) {
      for (const t of Array.isArray(s.tools) ? s.tools : []) {
        if (t.quarantined) continue;
        const server = t.server || s.name;
        const sig = JSON.stringify([server, t.title, t.description, t.inputSchema, t.annotations, t.readOnly, t.readOnlyReason]);
        let r = benchRows.get(t.name);
        if (!r || r.sig !== sig) {
          if (r) { r.tr.remove(); if (r.tryRow) r.tryRow.remove(); }
          r = toolRow(t, server, sig);
          benchRows.set(t.name, r);
        }
        seen.add(t.name);
        if (!order.has(server)) order.set(server, []);
        order.get(server).push(r);
      }
    }
    for (const [name, r] of benchRows) {
      if (seen.has(name)) continue;
      r.tr.remove();
      if (r.tryRow) r.tryRow.remove();
      benchRows.delete(name);
    }
    for (const [name, g] of benchGroups) if (!order.has(name)) { g.body.remove(); benchGroups.delete(name); }
    let prev = $("#tools thead");
    for (const [name, rows] of order) {
      const g = benchGroups.get(name) || toolGroup(name);
      g.rows = rows;
      const want = [g.head];
      for (const r of rows) { want.push(r.tr); if (r.open) want.push(r.tryRow); }
      // Moving a node takes the focus from it: only a group whose rows
      // changed is filled again.
      const kids = g.body.children;
      if (kids.length !== want.length || want.some((n, i) => kids[i] !== n)) g.body.replaceChildren(...want);
      if (prev.nextElementSibling !== g.body) prev.after(g.body);
      prev = g.body;
    }
    // The server filter's options change only with the servers: an open
    // select is not replaced under the pointer.
    const sel = $("#tool-server");
    const names = [...order.keys()];
    if ([...sel.options].slice(1).map((o) => o.value).join("\n") !== names.join("\n")) {
      const keep = sel.value;
      sel.replaceChildren(el("option", { value: "", text: "every server" }), ...names.map((n) => el("option", { value: n, text: n })));
      sel.value = order.has(keep) ? keep : "";
    }
    foldText();
    filterTools();
  }

  // toolGroup is a server's tbody: a heading row that folds it, with the
  // count of its tools the filters let through.
  function toolGroup(name) {
    const g = { name: name, rows: [] };
    g.count = el("span", { class: "muted tb-count" });
    g.toggle = el("button", { type: "button", class: "tb-toggle", "aria-expanded": "true", title: "fold or unfold the tools of " + name,
      onclick: () => foldGroup(g, !collapsedGroups.has(name)) }, el("span", { class: "tb-caret", "aria-hidden": "true" }), el("span", { class: "name", text: name }));
    g.head = el("tr", { class: "tb-head" }, el("th", { colspan: "5", scope: "rowgroup" }, g.toggle, " ", g.count));
    g.body = el("tbody", { class: "tb-group", "data-group": name });
    benchGroups.set(name, g);
    foldGroup(g, collapsedGroups.has(name));
    return g;
  }

  function foldGroup(g, fold) {
    if (fold) collapsedGroups.add(g.name); else collapsedGroups.delete(g.name);
    g.body.classList.toggle("tb-collapsed", fold);
    g.toggle.setAttribute("aria-expanded", fold ? "false" : "true");
    foldText();
  }

  // anyOpen: some group shows its tools, so the button folds them all.
  function anyOpen() { return [...benchGroups.values()].some((g) => !collapsedGroups.has(g.name)); }
  function foldText() { $("#tools-fold").textContent = anyOpen() || benchGroups.size === 0 ? "Fold all" : "Unfold all"; }

  function foldAll() {
    const fold = anyOpen();
    for (const g of benchGroups.values()) foldGroup(g, fold);
  }

  // shorten cuts text at a word near DESC_SHORT characters.
  function shorten(text) {
    if (text.length <= DESC_SHORT) return text;
    const cut = text.slice(0, DESC_SHORT);
    const sp = cut.lastIndexOf(" ");
    return (sp > DESC_SHORT / 2 ? cut.slice(0, sp) : cut) + "…";
  }

  function descView(desc) {
    if (!desc) return null;
    const box = el("div", { class: "tb-desc" });
    if (desc.length <= DESC_SHORT) { box.textContent = desc; return box; }
    const text = el("span", { text: shorten(desc) });
    const more = el("button", { type: "button", class: "tb-more", "aria-expanded": "false", text: "more" });
    more.addEventListener("click", () => {
      const open = more.getAttribute("aria-expanded") !== "true";
      text.textContent = open ? desc : shorten(desc);
      more.textContent = open ? "less" : "more";
      more.setAttribute("aria-expanded", open ? "true" : "false");
      box.classList.toggle("tb-desc-open", open);
    });
    box.append(text, " ", more);
    return box;
  }

  function toolRow(t, server, sig) {
    const a = t.annotations && typeof t.annotations === "object" ? t.annotations : {};
    const title = t.title || a.title || "";
    const r = { name: t.name, server: server, sig: sig, tool: t, open: false, tryRow: null, panel: null,
      hay: [t.name, title, t.description || "", server].join("\n").toLowerCase(),
      // Destructive: a write the server marks so. Its hint means nothing on
      // a tool it calls read-only (mcp-go sets both on every tool).
      readOnly: !!t.readOnly, destructive: !t.readOnly && a.readOnlyHint !== true && a.destructiveHint === true };
    r.tryBtn = el("button", { type: "button", class: "btn btn-small btn-ghost tb-try-btn", "aria-expanded": "false",
      "aria-label": "try " + t.name, text: "Try it", onclick: () => toggleTry(r) });
    const access = el("span", {}, t.readOnly ? el("span", { class: "badge b-ok", text: "read-only" }) : el("span", { class: "badge b-warn", text: "writes" }),
      r.destructive ? " " : null, r.destructive ? el("span", { class: "badge b-bad", text: "destructive", title: "the server marks it destructiveHint" }) : null);
    r.tr = el("tr", { "data-tool": t.name, "data-server": server },
      el("td", { "data-label": "Tool", class: "tb-tool" }, el("div", {},
        el("span", { class: "mono name", text: t.name }), title && title !== t.name ? el("span", { class: "tb-title muted", text: title }) : null),
        descView(t.description || "")),
      el("td", { "data-label": "Server" }, el("span", { text: server })),
      el("td", { "data-label": "Access" }, access),
      el("td", { "data-label": "Why" }, el("span", { class: "muted", text: t.readOnlyReason || "" })),
      el("td", { "data-label": "", class: "act" }, r.tryBtn));
    return r;
  }

  function toolMatches(r, terms, server, access) {
    if (server && r.server !== server) return false;
    if (access === "read" && !r.readOnly) return false;
    if (access === "write" && r.readOnly) return false;
    if (access === "destructive" && !r.destructive) return false;
    return terms.every((w) => r.hay.includes(w));
  }

  // filterTools shows the rows the search and filters let through: every
  // word of the search in the name, title, description or server.
  function filterTools() {
    const q = $("#tool-search").value.trim().toLowerCase();
    const terms = q ? q.split(/\s+/) : [];
    const server = $("#tool-server").value, access = $("#tool-access").value;
    let shown = 0, total = 0;
    for (const g of benchGroups.values()) {
      let n = 0;
      for (const r of g.rows) {
        const ok = toolMatches(r, terms, server, access);
        r.tr.hidden = !ok;
        if (r.tryRow) r.tryRow.hidden = !ok;
        if (ok) n++;
      }
      total += g.rows.length;
      shown += n;
      g.body.hidden = n === 0;
      g.count.textContent = n === g.rows.length ? n + (n === 1 ? " tool" : " tools") : n + " of " + g.rows.length;
    }
    const filtered = terms.length > 0 || server !== "" || access !== "";
    $("#tools-shown").textContent = filtered ? shown + " of " + total + " tools" : total + (total === 1 ? " tool" : " tools");
    $("#tools-empty").textContent = total === 0 ? "No tools in this view." : "No tool matches.";
    $("#tools-empty").hidden = shown > 0;
    $("#tools").hidden = shown === 0;
  }

  // Keys: "/" goes to the search, Escape empties it, Enter opens the first
  // match's form.
  function searchKeys(ev) {
    if (ev.key === "Escape") {
      ev.target.value = "";
      filterTools();
    } else if (ev.key === "Enter") {
      ev.preventDefault();
      for (const g of benchGroups.values()) {
        const r = g.rows.find((x) => !x.tr.hidden);
        if (!r) continue;
        if (collapsedGroups.has(g.name)) foldGroup(g, false);
        if (!r.open) toggleTry(r); else focusFirst(r);
        return;
      }
    }
  }

  function slashKey(ev) {
    if (ev.key !== "/" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const t = ev.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
    ev.preventDefault();
    $("#tool-search").focus();
  }

  function focusFirst(r) {
    const p = r.panel;
    (p.raw ? p.rawText : p.fields.querySelector("input, select, textarea") || p.run).focus();
  }

  function toggleTry(r) {
    r.open = !r.open;
    r.tryBtn.setAttribute("aria-expanded", r.open ? "true" : "false");
    r.tryBtn.textContent = r.open ? "Close" : "Try it";
    r.tryBtn.setAttribute("aria-label", (r.open ? "close the form of " : "try ") + r.name);
    if (!r.open) { if (r.tryRow) r.tryRow.remove(); return; }
    if (!r.tryRow) {
      r.panel = tryPanel(r);
      r.tryRow = el("tr", { class: "tb-try", "data-try": r.name }, el("td", { colspan: "5", "data-label": "" }, r.panel.node));
    }
    r.tryRow.hidden = r.tr.hidden;
    r.tr.after(r.tryRow);
    focusFirst(r);
  }

  // schemaType is a property's one JSON type: the first that is not null
  // of a list, "" when it names none.
  function schemaType(s) {
    const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
    return typeof t === "string" ? t : "";
  }

  const LONG_TEXT = /(body|content|code|text|message|patch|diff|prompt|script|markdown|description)$/i;

  // field is the input of one property of a tool's inputSchema: read
  // gives its value (undefined: not sent), write puts one in and says
  // whether the input can hold it.
  function field(name, s, required) {
    s = s && typeof s === "object" ? s : {};
    const type = schemaType(s);
    const id = "tb-f" + (++fieldSeq);
    const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
    let input, read, write, kind = type || "JSON";
    if (Array.isArray(s.enum) && s.enum.length > 0) {
      kind = "one of " + s.enum.length;
      input = el("select", { id: id, required: required });
      input.append(el("option", { value: "", text: required ? "choose…" : "(not sent)" }));
      s.enum.forEach((v, i) => input.append(el("option", { value: String(i), text: typeof v === "string" ? v : JSON.stringify(v) })));
      read = () => input.value === "" ? undefined : s.enum[Number(input.value)];
      write = (v) => {
        const i = v === undefined ? -1 : s.enum.findIndex((x) => same(x, v));
        input.value = i >= 0 ? String(i) : "";
        return v === undefined || i >= 0;
      };
    } else if (type === "boolean") {
      // A checkbox cannot say "not set": an optional one is sent once
      // touched, or when the schema gives a default.
      input = el("input", { type: "checkbox", id: id });
      let touched = false;
      input.addEventListener("change", () => { touched = true; });
      read = () => required || touched || s.default !== undefined ? input.checked : undefined;
      write = (v) => {
        if (v !== undefined && typeof v !== "boolean") return false;
        input.checked = v === true;
        touched = v !== undefined;
        return true;
      };
    } else if (type === "number" || type === "integer") {
      input = el("input", { type: "number", id: id, required: required, step: type === "integer" ? "1" : "any",
        min: typeof s.minimum === "number" ? s.minimum : null, max: typeof s.maximum === "number" ? s.maximum : null });
      read = () => input.value.trim() === "" ? undefined : Number(input.value);
      write = (v) => {
        if (v !== undefined && typeof v !== "number") return false;
        input.value = v === undefined ? "" : String(v);
        return true;
      };
    } else if (type === "string") {
      const long = !s.format && ((s.maxLength || 0) > 200 || LONG_TEXT.test(name));
      input = long ? el("textarea", { id: id, rows: "4", required: required })
        : el("input", { type: "text", id: id, required: required, autocomplete: "off", spellcheck: "false" });
      if (typeof s.minLength === "number") input.minLength = s.minLength;
      if (typeof s.maxLength === "number") input.maxLength = s.maxLength;
      if (s.format) input.placeholder = s.format;
      read = () => input.value === "" && !required ? undefined : input.value;
      write = (v) => {
        if (v !== undefined && typeof v !== "string") return false;
        input.value = v === undefined ? "" : v;
        return true;
      };
    } else {
      // Arrays, objects, unions, anything else: JSON as typed.
      input = el("textarea", { id: id, rows: "3", class: "mono", required: required, spellcheck: "false",
        placeholder: type === "array" ? "[ … ]  (JSON)" : type === "object" ? "{ … }  (JSON)" : "JSON" });
      read = () => {
        const v = input.value.trim();
        if (v === "") return undefined;
        try { return JSON.parse(v); } catch (e) { throw new Error(name + ": not JSON (" + e.message + ")"); }
      };
      write = (v) => { input.value = v === undefined ? "" : JSON.stringify(v, null, 2); return true; };
    }
    if (s.default !== undefined) write(s.default);
    const hint = s.description ? el("span", { class: "tb-hint", id: id + "-hint", text: s.description }) : null;
    if (hint) input.setAttribute("aria-describedby", hint.id);
    const head = el("label", { for: id, class: "tb-label" }, el("span", { class: "mono", text: name }),
      required ? el("span", { class: "tb-req", title: "required", text: " *" }) : null, " ", el("span", { class: "tb-type", text: kind }));
    const node = el("div", { class: type === "boolean" ? "tb-field tb-check" : "tb-field", "data-field": name }, head, input, hint);
    return { name: name, node: node, read: read, write: write };
  }

  function tryPanel(r) {
    const schema = r.tool.inputSchema && typeof r.tool.inputSchema === "object" ? r.tool.inputSchema : {};
    const props = schema.properties && typeof schema.properties === "object" ? schema.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    // Required fields first, each group in the schema's order.
    const names = Object.keys(props).sort((a, b) => Number(required.has(b)) - Number(required.has(a)));
    const fields = names.map((k) => field(k, props[k], required.has(k)));
    // A schema the fields cannot say (no properties but other members,
    // alternatives at the top) starts as raw JSON.
    const formless = fields.length === 0 && (schema.additionalProperties || schema.patternProperties || schema.anyOf || schema.oneOf || schema.allOf);
    const p = { raw: false, ctl: null };
    p.fields = el("div", { class: "tb-fields" }, ...fields.map((f) => f.node));
    if (fields.length === 0 && !formless) p.fields.append(el("p", { class: "muted tb-none", text: "This tool takes no arguments." }));
    p.rawText = el("textarea", { class: "tb-raw mono", rows: "8", spellcheck: "false", hidden: true, "aria-label": "arguments of " + r.name + " as JSON" });
    p.msg = el("span", { class: "msg" });
    p.run = el("button", { type: "submit", class: "btn btn-small tb-run", text: "Run" });
    p.cancel = el("button", { type: "button", class: "btn btn-small btn-ghost", text: "Cancel", hidden: true,
      onclick: () => { if (p.ctl) p.ctl.abort(); } });
    p.rawBtn = el("button", { type: "button", class: "btn btn-small btn-ghost tb-raw-btn", "aria-pressed": "false", text: "Raw JSON",
      onclick: () => setRaw(p, !p.raw) });
    p.level = el("select", { "aria-label": "autonomy level of the run" },
      el("option", { value: "", text: "my level" }), ...["manual", "restricted", "supervised", "full"].map((l) => el("option", { value: l, text: l })));
    p.collect = () => {
      const args = {};
      for (const f of fields) {
        const v = f.read();
        if (v !== undefined) args[f.name] = v;
      }
      return args;
    };
    p.fill = (args) => {
      const known = new Set(fields.map((f) => f.name));
      const extra = Object.keys(args).filter((k) => !known.has(k));
      if (extra.length) return "the form has no field for " + extra.join(", ");
      for (const f of fields) if (!f.write(args[f.name])) return f.name + ": the form cannot hold " + JSON.stringify(args[f.name]);
      return "";
    };
    p.out = el("div", { class: "tb-result", "aria-live": "polite", hidden: true });
    p.form = el("form", { class: "tb-form", "data-try": r.name, onsubmit: (ev) => { ev.preventDefault(); runTool(r, p); },
      onkeydown: (ev) => { if (ev.key === "Enter" && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); p.form.requestSubmit(); } } },
      p.fields, p.rawText,
      el("div", { class: "tb-actions" }, p.run, p.cancel, p.rawBtn,
        el("label", { class: "view" }, "as", p.level), p.msg));
    p.node = el("div", { class: "tb-panel" }, p.form, p.out);
    if (formless) setRaw(p, true);
    return p;
  }

  function tryMsg(p, text, cls) {
    p.msg.className = "msg" + (cls ? " " + cls : "");
    p.msg.textContent = text || "";
  }

  // setRaw moves the arguments between the fields and the raw JSON; a
  // value the fields cannot hold keeps the raw JSON.
  function setRaw(p, raw) {
    if (raw) {
      let args = {};
      try { args = p.collect(); } catch (e) { tryMsg(p, e.message, "bad"); }
      p.rawText.value = JSON.stringify(args, null, 2);
    } else {
      let args;
      try { args = JSON.parse(p.rawText.value.trim() || "{}"); } catch (e) { tryMsg(p, "Not JSON: " + e.message, "bad"); return; }
      if (!args || typeof args !== "object" || Array.isArray(args)) { tryMsg(p, "The arguments are one JSON object.", "bad"); return; }
      const why = p.fill(args);
      if (why) { tryMsg(p, "Kept as raw JSON: " + why + ".", "bad"); return; }
      tryMsg(p, "");
    }
    p.raw = raw;
    p.fields.hidden = raw;
    p.rawText.hidden = !raw;
    // Hidden fields are not checked by the form, nor sent.
    for (const f of p.fields.querySelectorAll("input, select, textarea")) f.disabled = raw;
    p.rawBtn.setAttribute("aria-pressed", raw ? "true" : "false");
    p.rawBtn.textContent = raw ? "Form" : "Raw JSON";
    if (p.node && p.node.isConnected) (raw ? p.rawText : p.fields.querySelector("input, select, textarea") || p.run).focus();
  }

  async function runTool(r, p) {
    if (p.ctl) return;
    let body;
    try { body = p.raw ? (p.rawText.value.trim() || "{}") : JSON.stringify(p.collect()); } catch (e) { tryMsg(p, e.message, "bad"); return; }
    const hdr = { "Content-Type": "application/json" };
    if (p.level.value) hdr["X-Autonomy-Level"] = p.level.value;
    p.ctl = new AbortController();
    p.run.disabled = true;
    p.cancel.hidden = false;
    tryMsg(p, "Running…");
    const t0 = performance.now();
    let res = null, text = "", failed = "";
    try {
      res = await api("/api/mcp/tools/" + encodeURIComponent(r.name) + "/run", { method: "POST", headers: hdr, body: body, signal: p.ctl.signal });
      text = await res.text();
    } catch (e) {
      failed = e.name === "AbortError" ? "Canceled here: the hub cancels the call." : "Cannot reach the hub: " + e.message;
    }
    const ms = performance.now() - t0;
    p.ctl = null;
    p.run.disabled = false;
    p.cancel.hidden = true;
    tryMsg(p, "");
    showResult(p.out, res ? res.status : 0, text, failed, ms, p.level.value);
  }

  // showResult shows what the run answered, as text: the status, the
  // time, then the result's parts and structured content, or the hub's
  // error with its reason.
  function showResult(out, status, text, failed, ms, level) {
    let j = null;
    try { j = JSON.parse(text, keepNumbers); } catch (e) { /* shown as text below */ }
    const result = j && typeof j === "object" && (Array.isArray(j.content) || j.structuredContent !== undefined);
    const firstText = result && Array.isArray(j.content) ? (j.content.find((c) => c && c.type === "text") || {}).text || "" : "";
    let verdict = "failed", cls = "b-bad";
    if (failed) verdict = "not run";
    else if (status === 200 && result && j.isError) { verdict = "tool error"; cls = "b-warn"; }
    else if (status === 200 && result) { verdict = "ok"; cls = "b-ok"; }
    else if (status === 429) { verdict = "rate limited"; cls = "b-warn"; }
    else verdict = { 401: "token needed", 403: "denied", 404: "unknown tool", 503: "unavailable" }[status] || verdict;
    out.hidden = false;
    out.setAttribute("data-status", String(status));
    out.setAttribute("data-verdict", verdict);
    out.replaceChildren(el("div", { class: "tb-res-head" },
      el("span", { class: "badge " + cls, text: verdict }),
      status ? el("span", { class: "mono", text: "HTTP " + status }) : null,
      el("span", { class: "muted tb-ms", text: ms.toFixed(0) + " ms" }),
      level ? el("span", { class: "muted", text: "as " + level }) : null));
    if (failed) { out.append(el("p", { class: "tb-why", text: failed })); return; }
    if (status === 401) { out.append(el("p", { class: "tb-why", text: "This hub needs a token: enter one above, then run again." })); return; }
    const denied = status === 403;
    if (denied) {
      const why = firstText || (j && typeof j.error === "string" ? j.error : "") || text;
      out.append(el("p", { class: "tb-why", text: "The hub refused the call before it reached the tool: " + why.replace(/^BLOCKED:\s*/, "") }));
    }
    if (result) {
      for (const c of Array.isArray(j.content) ? j.content : []) {
        if (denied && c && c.type === "text" && c.text === firstText) continue;
        out.append(partView(c));
      }
      if (j.structuredContent !== undefined) {
        out.append(el("div", { class: "tb-part-head muted", text: "structuredContent" }),
          el("pre", { class: "tb-pre tb-structured", tabindex: "0", text: JSON.stringify(j.structuredContent, null, 2) }));
      }
    } else if (j && typeof j === "object" && j.error !== undefined) {
      if (!denied) out.append(el("p", { class: "tb-why", text: typeof j.error === "string" ? j.error : JSON.stringify(j.error) }));
      const more = [j.code !== undefined ? "code " + j.code : null, j.retryAfterMs !== undefined ? "retry after " + num(j.retryAfterMs) + " ms" : null].filter(Boolean);
      if (more.length) out.append(el("div", { class: "muted mono", text: more.join(" · ") }));
      if (j.data !== undefined) out.append(el("pre", { class: "tb-pre", tabindex: "0", text: JSON.stringify(j.data, null, 2) }));
    } else if (!denied) {
      out.append(el("pre", { class: "tb-pre", tabindex: "0", text: text || "(empty answer)" }));
    }
  }

  function partView(c) {
    if (!c || typeof c !== "object") return el("pre", { class: "tb-pre", text: JSON.stringify(c) });
    if (c.type === "text") return el("pre", { class: "tb-pre tb-text", tabindex: "0", text: String(c.text) });
    if (c.type === "image" && /^image\/(png|jpeg|gif|webp)$/.test(c.mimeType || "") && typeof c.data === "string") {
      return el("img", { class: "tb-img", alt: "image from the tool (" + c.mimeType + ")", src: "data:" + c.mimeType + ";base64," + c.data });
    }
    if (c.type === "image" || c.type === "audio") {
      const size = typeof c.data === "string" ? Math.floor(c.data.length * 3 / 4) : 0;
      return el("div", { class: "muted tb-part-head", text: c.type + " " + (c.mimeType || "") + ", " + size.toLocaleString() + " bytes" });
    }
    if (c.type === "resource" && c.resource) {
      return el("div", {}, el("div", { class: "muted tb-part-head mono", text: "resource " + (c.resource.uri || "") }),
        el("pre", { class: "tb-pre", tabindex: "0", text: typeof c.resource.text === "string" ? c.resource.text : "(" + (c.resource.mimeType || "binary") + ")" }));
    }
    if (c.type === "resource_link") return el("div", { class: "muted tb-part-head mono", text: "link " + (c.name ? c.name + " " : "") + (c.uri || "") });
    return el("pre", { class: "tb-pre", tabindex: "0", text: JSON.stringify(c, null, 2) });
  }

  async function refresh() {
    try {
      const res = await api("/api/mcp/tools");
      if (!res.ok) throw new Error("GET /api/mcp/tools: " + res.status);
      const listing = await res.json();
      // /api/mcp/servers says which servers came through the API
      // (registered): only those can be removed here.
      const r3 = await api("/api/mcp/servers");
      const servers = r3.ok ? await r3.json() : {};
      const removable = new Set((servers.servers || []).filter((x) => x.registered && x.metadata).map((x) => x.metadata.name));
      renderServers(listing, removable);
      renderQuarantine(listing);
      renderVirtual(servers.virtualServers || []);
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
    if (on) { tokenState = ""; $("#token-state").hidden = true; }
    const needed = !on && tokenState !== "";
    p.textContent = on ? "live" : needed ? "token needed" : "reconnecting…";
    p.className = "pill " + (on ? "pill-on" : needed ? "pill-warn" : "pill-off");
    p.title = needed ? "the hub answers 401: enter a token" : "live updates";
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
    $("#tool-search").addEventListener("input", filterTools);
    $("#tool-search").addEventListener("keydown", searchKeys);
    $("#tool-server").addEventListener("change", filterTools);
    $("#tool-access").addEventListener("change", filterTools);
    $("#tools-fold").addEventListener("click", foldAll);
    document.addEventListener("keydown", slashKey);
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
