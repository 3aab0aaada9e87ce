// mcp-hub console, the Activity card: charts of GET /api/mcp/stats (what
// the hub counted in memory over the last hour or day, for every call and
// per server) drawn as inline SVG, no library: one line per series, the
// hub's and each server's, read again every 10 s while the page is shown,
// and drawn again at the card's width when the window is resized (phones).
// It reads the token where console.js keeps it (sessionStorage) and sends
// it the same way; a caller that is not an admin gets 403 and no card.
"use strict";

(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const TOKEN_KEY = "mcp-hub-token"; // console.js's
  const REFRESH_MS = 10000;
  const HEIGHT = 150;
  // SPARSE is how few values (not 0) a line has for each to get a dot.
  const SPARSE = 12;
  const PAD = { top: 10, right: 10, bottom: 20, left: 40 };
  // The hub's series is dark; servers take the palette in name order.
  const HUB_COLOR = "#1c2330";
  const PALETTE = ["#2f5bea", "#e8590c", "#0ca678", "#ae3ec9", "#f59f00", "#1098ad", "#d6336c", "#5c940d", "#7048e8", "#868e96"];
  // Each chart: its key, its title, and the lines of one series (a
  // dashed second line where two measures share a chart).
  const CHARTS = [
    { key: "calls", title: (step) => "Calls per " + step, lines: (s) => [{ values: s.calls }] },
    { key: "errors", title: () => "Errors (solid) · refused (dashed)", lines: (s) => [{ values: s.errors }, { values: s.refused, dash: true }] },
    { key: "latency", title: () => "Latency, ms: p95 (solid) · p50 (dashed)", lines: (s) => [{ values: s.p95Ms }, { values: s.p50Ms, dash: true }] },
    { key: "events", title: () => "Guardrail (solid) · approval (dashed) events", lines: (s) => [{ values: s.guardrail }, { values: s.approvals, dash: true }] },
  ];
  const $ = (sel) => document.querySelector(sel);
  let report = null;
  let resizeTimer = null;

  function headers() {
    const t = sessionStorage.getItem(TOKEN_KEY) || "";
    return t ? { Authorization: "Bearer " + t } : {};
  }

  function svg(tag, attrs, ...children) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "text") e.textContent = v;
      else e.setAttribute(k, String(v));
    }
    for (const c of children) if (c) e.append(c);
    return e;
  }

  function say(text) {
    const m = $("#activity-msg");
    m.textContent = text || "";
    m.hidden = !text;
  }

  async function load() {
    const win = $("#activity-window").value;
    let res;
    try {
      res = await fetch("/api/mcp/stats?window=" + encodeURIComponent(win), { headers: headers(), cache: "no-store", credentials: "omit" });
    } catch (e) {
      say("Activity unavailable: " + e.message);
      return;
    }
    // 403: not an admin (the counts are of every caller's calls); 404: a
    // hub without them.
    if (res.status === 403 || res.status === 404) { $("#activity-card").hidden = true; return; }
    if (res.status === 401) { say("A token is needed to show the activity."); return; }
    if (!res.ok) { say("Activity unavailable: HTTP " + res.status); return; }
    const r = await res.json();
    // An answer for the window before a switch, come late: not shown.
    if (r.window !== $("#activity-window").value) return;
    report = r;
    $("#activity-card").hidden = false;
    render();
  }

  // series lists the hub's series first, then each server's, with their
  // colours and labels.
  function series(r) {
    const out = [{ name: "", label: "all calls", color: HUB_COLOR, data: r.hub, hub: true }];
    (r.servers || []).forEach((s, i) => out.push({ name: s.name, label: s.name, color: PALETTE[i % PALETTE.length], data: s }));
    return out;
  }

  function stepName() {
    return report.stepSeconds === 60 ? "minute" : Math.round(report.stepSeconds / 60) + " min";
  }

  function sum(values) { return (values || []).reduce((a, v) => a + (v || 0), 0); }

  function render() {
    if (!report) return;
    const all = series(report);
    const step = stepName();
    const span = report.window === "24h" ? "the last 24 h" : "the last hour";
    const calls = sum(report.hub.calls);
    $("#activity-sum").textContent = calls + " calls · " + sum(report.hub.errors) + " errors · " + sum(report.hub.refused) + " refused in " + span;
    say(calls === 0 ? "No calls in " + span + "." : "");

    const legend = $("#activity-legend");
    legend.replaceChildren();
    for (const s of all) {
      const key = document.createElement("span");
      key.className = "key";
      key.dataset.series = s.hub ? "*" : s.name;
      key.append(svg("svg", { width: 16, height: 8, "aria-hidden": "true" }, svg("line", { x1: 0, y1: 4, x2: 16, y2: 4, stroke: s.color, "stroke-width": 3 })),
        document.createTextNode(s.label));
      legend.append(key);
    }

    const box = $("#activity-charts");
    const figs = CHARTS.map((c) => {
      const fig = document.createElement("figure");
      fig.className = "chart";
      const cap = document.createElement("figcaption");
      cap.textContent = c.title(step);
      fig.append(cap);
      return fig;
    });
    box.replaceChildren(...figs);
    // Laid out first, captions only, so each chart takes the width the
    // grid gives its cell.
    CHARTS.forEach((c, i) => figs[i].append(chart(c, all, Math.max(200, Math.floor(figs[i].clientWidth) || 300))));
  }

  // niceMax rounds v up to 1, 2 or 5 times a power of ten.
  function niceMax(v) {
    if (!(v > 0)) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }

  function label(v) {
    return v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(v >= 10 ? 0 : 1);
  }

  function clock(t) {
    return new Date(t).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
  }

  // chart draws one chart of every series, width px wide.
  function chart(c, all, width) {
    const n = report.buckets.length;
    let max = 0;
    for (const s of all) for (const l of c.lines(s.data)) for (const v of l.values || []) if (v !== null && v > max) max = v;
    max = niceMax(max);
    const w = width - PAD.left - PAD.right;
    const h = HEIGHT - PAD.top - PAD.bottom;
    const x = (i) => PAD.left + (n > 1 ? (i * w) / (n - 1) : w / 2);
    const y = (v) => PAD.top + h - (v / max) * h;
    const root = svg("svg", { width: width, height: HEIGHT, viewBox: "0 0 " + width + " " + HEIGHT, role: "img",
      "data-chart": c.key, "aria-label": c.title(stepName()) });
    const axis = svg("g", { class: "axis" });
    for (const v of [0, max / 2, max]) {
      axis.append(svg("line", { x1: PAD.left, x2: PAD.left + w, y1: y(v), y2: y(v), stroke: "#e4e7ec", "stroke-width": 1 }),
        svg("text", { x: PAD.left - 6, y: y(v) + 4, "text-anchor": "end", text: label(v) }));
    }
    axis.append(svg("text", { x: PAD.left, y: HEIGHT - 4, "text-anchor": "start", text: clock(report.buckets[0]) }),
      svg("text", { x: PAD.left + w, y: HEIGHT - 4, "text-anchor": "end", text: clock(report.buckets[n - 1]) }));
    root.append(axis);
    // The hub's first, its counts shaded, the servers' lines over it.
    for (const s of all) {
      const g = svg("g", { class: "series", "data-series": s.hub ? "*" : s.name, "data-hub": s.hub ? "true" : null },
        svg("title", { text: s.label + ", highest: " + c.lines(s.data).map((l) => label(l.values.reduce((m, v) => (v !== null && v > m ? v : m), 0))).join(" / ") }));
      for (const l of c.lines(s.data)) {
        const attrs = { fill: "none", stroke: s.color, "stroke-width": s.hub ? 2.25 : 1.75, "stroke-linejoin": "round", "stroke-dasharray": l.dash ? "4 3" : null };
        const values = l.values || [];
        // A dot on each value that is not 0 when they are few: one busy
        // minute in a quiet hour is then more than a hair on the axis.
        const dots = values.filter((v) => v).length <= SPARSE;
        const marks = [];
        let d = "";
        let run = 0;
        values.forEach((v, i) => {
          if (v === null || v === undefined) { run = 0; return; }
          const alone = (i === 0 || values[i - 1] === null) && (i === n - 1 || values[i + 1] === null);
          if (alone || (dots && v)) marks.push(svg("circle", { cx: x(i), cy: y(v), r: s.hub ? 3 : 2.5, fill: s.color }));
          if (alone) return;
          d += (run === 0 ? "M" : "L") + x(i).toFixed(1) + " " + y(v).toFixed(1);
          run++;
        });
        if (s.hub && !l.dash && d && values.every((v) => v !== null)) {
          g.append(svg("path", { d: d + "L" + x(n - 1).toFixed(1) + " " + y(0) + "L" + x(0).toFixed(1) + " " + y(0) + "Z",
            fill: s.color, "fill-opacity": 0.08, stroke: "none" }));
        }
        if (d) g.append(svg("path", Object.assign({ d: d }, attrs)));
        g.append(...marks);
      }
      root.append(g);
    }
    return root;
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("#activity-window").addEventListener("change", load);
    window.addEventListener("resize", () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(render, 150);
    });
    document.addEventListener("visibilitychange", () => { if (document.visibilityState === "visible") load(); });
    setInterval(() => { if (document.visibilityState === "visible") load(); }, REFRESH_MS);
    load();
  });
})();
