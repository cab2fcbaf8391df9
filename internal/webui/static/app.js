// inferrail web UI: polls this node's admin endpoints once a second and
// renders them. Plain JavaScript, no dependencies, no build step.
"use strict";

const $ = (id) => document.getElementById(id);
const WINDOW = 300; // points shown in the charts: 5 minutes at 1 s
const MAX_DECISIONS = 50;

let info = null;
let lastSeq = 0;
let busy = false;

async function getJSON(path, opts) {
  const r = await fetch(path, Object.assign({ cache: "no-store" }, opts || {}));
  const text = await r.text();
  let body = null;
  try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
  if (!r.ok) {
    const msg = body && body.error && body.error.message ? body.error.message : r.status + " " + r.statusText;
    throw new Error(msg);
  }
  return body;
}

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const k of kids) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : String(k));
  }
  return e;
}

const td = (v, cls) => el("td", cls ? { class: cls } : null, v === null || v === undefined ? "–" : v);
const badge = (s) => el("span", { class: "badge " + String(s || "").toLowerCase() }, s || "?");
const num = (v, digits) => (v === null || v === undefined || Number.isNaN(v)) ? "–" : Number(v).toFixed(digits || 0);

function bar(ratio) {
  if (ratio === null || ratio === undefined) return "–";
  const pct = Math.max(0, Math.min(1, ratio)) * 100;
  const b = el("span", { class: "bar" }, el("i", { style: "width:" + pct.toFixed(1) + "%" }));
  return el("span", null, b, pct.toFixed(0) + "%");
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 1) return (seconds * 1000).toFixed(0) + " ms";
  if (seconds < 120) return seconds.toFixed(1) + " s";
  return (seconds / 60).toFixed(1) + " min";
}

function blocksOf(summary) {
  if (!summary || !summary.blocks) return null;
  let n = 0;
  for (const v of Object.values(summary.blocks)) n += v;
  return n;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

// renderFleet shows the replicas: a balancer's own list (health, its own
// counts) joined with the gossip state (load, summaries); a sidecar's gossip
// view of the sidecars.
function renderFleet(replicas, state, members, own) {
  const byName = new Map();
  for (const m of (state && state.members) || []) byName.set(m.name, m);
  const metaOf = new Map();
  for (const m of (members && members.members) || []) metaOf.set(m.name, m.meta || {});
  const rows = [];
  if (replicas) {
    for (const r of replicas) {
      const g = byName.get(r.name);
      const l = r.load;
      rows.push(el("tr", { "data-replica": r.name },
        td(r.name + (r.static ? " (static)" : "")), el("td", null, badge(r.health)), td((r.models || []).join(", ")),
        td(l ? l.in_flight : r.in_flight, "num"), td(l ? l.running : null, "num"), td(l ? l.waiting : null, "num"),
        el("td", null, bar(l ? l.kv_cache_usage : null)), td(g ? blocksOf(g.summary) : null, "num"),
        td(age(r.summary_age_seconds), "num")));
    }
  } else {
    for (const m of (state && state.members) || []) {
      if (m.role !== "sidecar") continue;
      const l = m.load;
      const meta = metaOf.get(m.name) || {};
      const summaryAge = m.summary && m.summary.age_ms !== undefined && m.summary.age_ms > 0 ? m.summary.age_ms / 1000 : null;
      rows.push(el("tr", { "data-replica": m.name },
        td(m.name + (m.name === state.self ? " (this node)" : "")), el("td", null, badge(m.status)), td((meta.models || []).join(", ")),
        td(l ? l.in_flight : null, "num"), td(l ? l.running : null, "num"), td(l ? l.waiting : null, "num"),
        el("td", null, bar(l ? l.kv_cache_usage : null)), td(m.name === state.self && own ? blocksOf(own) : blocksOf(m.summary), "num"),
        td(m.name === state.self ? "own" : age(summaryAge), "num")));
    }
  }
  if (rows.length === 0) rows.push(el("tr", null, el("td", { colspan: "9", class: "muted" }, "no replica known yet")));
  fill($("fleet").tBodies[0], rows);
  $("fleet-note").textContent = rows.length + (rows.length === 1 ? " replica" : " replicas");
}

function renderMembers(members) {
  const rows = [];
  for (const m of (members && members.members) || []) {
    const meta = m.meta || {};
    rows.push(el("tr", null, td(m.name + (m.self ? " (this node)" : "")), td(m.role), el("td", null, badge(m.status)),
      td(m.status_since ? new Date(m.status_since).toLocaleTimeString() : null), td(m.addr),
      td(meta.engine || null), td((meta.models || []).join(", ") || null), td(meta.version || null)));
  }
  if (rows.length === 0) rows.push(el("tr", null, el("td", { colspan: "8", class: "muted" }, info && info.gossip ? "no member yet" : "gossip is off on this node")));
  fill($("members").tBodies[0], rows);
}

// chart draws lines (arrays of numbers or nulls, one per point) into svg,
// scaled to [0, ymax], with a few grid lines labelled by fmt.
function chart(svg, lines, ymax, fmt) {
  const W = 600, top = 8, bottom = 150;
  const parts = [];
  for (const f of [0, 0.5, 1]) {
    const y = bottom - f * (bottom - top);
    parts.push('<line class="grid" x1="0" x2="' + W + '" y1="' + y + '" y2="' + y + '"/>');
    parts.push('<text class="axis" x="4" y="' + (y - 2) + '">' + fmt(f * ymax) + "</text>");
  }
  parts.push('<text class="axis" x="' + (W - 4) + '" y="' + (bottom + 9) + '" text-anchor="end">now</text>');
  parts.push('<text class="axis" x="' + (W / 2) + '" y="' + (bottom + 9) + '" text-anchor="middle">' + (WINDOW / 120) + ' min ago</text>');
  for (const [cls, values] of lines) {
    let d = "";
    let pen = false;
    const n = values.length;
    values.forEach((v, i) => {
      if (v === null || v === undefined || Number.isNaN(v)) { pen = false; return; }
      const x = W - (n - 1 - i) * (W / (WINDOW - 1));
      const y = bottom - Math.min(v / ymax, 1) * (bottom - top);
      d += (pen ? "L" : "M") + x.toFixed(1) + " " + y.toFixed(1);
      pen = true;
    });
    if (d) parts.push('<path class="' + cls + '" d="' + d + '"/>');
  }
  svg.innerHTML = parts.join("");
  svg.setAttribute("data-points", String(lines.length ? lines[0][1].length : 0));
}

function lastOf(values) {
  for (let i = values.length - 1; i >= 0; i--) if (values[i] !== null && values[i] !== undefined) return values[i];
  return null;
}

function renderSeries(series) {
  const pts = ((series && series.points) || []).slice(-WINDOW);
  const hit = pts.map((p) => p.hit_ratio);
  chart($("hit-chart"), [["l1", hit]], 1, (v) => (v * 100).toFixed(0) + "%");
  const h = lastOf(hit);
  $("hit-now").textContent = h === null ? "no prompt tokens yet" : "last " + (h * 100).toFixed(1) + "%";
  const rps = pts.map((p) => p.requests_per_second);
  let rmax = 1;
  for (const v of rps) if (v > rmax) rmax = v;
  if (info.role !== "balancer") {
    // A sidecar measures no TTFT: the chart shows the requests it proxied.
    chart($("ttft-chart"), [["l1", rps]], rmax * 1.1, (v) => short(v) + "/s");
    const r = lastOf(rps);
    $("rps").textContent = r === null ? "–" : "last " + short(r) + " requests/s";
    return;
  }
  const p50 = pts.map((p) => p.ttft_p50_ms), p95 = pts.map((p) => p.ttft_p95_ms);
  let ymax = 1;
  for (const v of p95.concat(p50)) if (v !== null && v !== undefined && v > ymax) ymax = v;
  ymax *= 1.1;
  chart($("ttft-chart"), [["l1", p50], ["l2", p95], ["l3", rps.map((v) => v / rmax * ymax)]], ymax, (v) => short(v) + " ms");
  const a = lastOf(p50), b = lastOf(p95);
  $("ttft-p50").textContent = a === null ? "–" : short(a) + " ms";
  $("ttft-p95").textContent = b === null ? "–" : short(b) + " ms";
  $("rps").textContent = "requests/s (dashed, up to " + short(rmax) + ")";
}

// short formats v with fewer decimals as it grows.
function short(v) {
  if (v === 0) return "0";
  return v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function candidatesCell(d) {
  const parts = [];
  for (const c of d.candidates || []) {
    const txt = c.id + " " + (c.predicted_cached_tokens === undefined ? "–" : c.predicted_cached_tokens) +
      (c.score === undefined ? "" : " / " + Number(c.score).toPrecision(3));
    parts.push(c.id === d.winner ? el("b", null, txt) : txt);
    parts.push("  ");
  }
  return el("td", { class: "cands" }, ...parts);
}

function renderDecisions(resp) {
  if (resp.last < lastSeq) lastSeq = 0; // the balancer restarted
  const tbody = $("decisions").tBodies[0];
  if (tbody.querySelector("td.muted")) tbody.replaceChildren();
  for (const d of resp.decisions || []) {
    if (d.seq <= lastSeq) continue;
    lastSeq = d.seq;
    const tr = el("tr", { class: "fresh", "data-seq": String(d.seq) },
      td(d.seq, "num"), td(new Date(d.time).toLocaleTimeString()), td(d.request_id.slice(0, 12)), td(d.model), td(d.policy),
      td(d.attempt, "num"), el("td", null, el("b", null, d.winner)), td(d.reason), td(d.prompt_tokens, "num"),
      td(d.predicted_cached_tokens, "num"), td(d.estimated_ttft_ms === undefined ? null : num(d.estimated_ttft_ms, 1), "num"),
      candidatesCell(d));
    tbody.insertBefore(tr, tbody.firstChild);
  }
  while (tbody.rows.length > MAX_DECISIONS) tbody.deleteRow(tbody.rows.length - 1);
  if (tbody.rows.length === 0) tbody.append(el("tr", null, el("td", { colspan: "12", class: "muted" }, "no decision yet: send a request to this balancer")));
  $("decisions").setAttribute("data-last", String(lastSeq));
  $("decisions-note").textContent = "newest first; " + resp.last + " recorded since start";
}

function renderExplain(ex) {
  const out = $("explain-out");
  const line = el("p", { class: "summary-line" },
    "pick ", el("b", { id: "explain-pick" }, ex.pick), " · reason ", el("b", null, ex.reason), " · ",
    ex.unpredicted ? "not tokenized (" + ex.unpredicted + ")" : el("span", null, el("b", null, ex.prompt_tokens), " tokens, ", el("b", null, ex.blocks.length), " blocks of " + ex.block_size),
    " · predicted cached ", el("b", null, ex.predicted_cached_tokens), " tokens",
    ex.estimated_ttft_ms === undefined ? "" : el("span", null, " · estimated TTFT ", el("b", null, num(ex.estimated_ttft_ms, 1) + " ms")),
    " · policy " + ex.policy);
  const head = el("tr", null, ...["replica", "state", "in flight", "pending", "prefill tok", "KV usage", "cached tok", "queue ms", "TTFT ms", "score"].map((h) => el("th", null, h)));
  const rows = (ex.candidates || []).map((c) => el("tr", { class: c.id === ex.pick ? "pick" : "" },
    td(c.id), el("td", null, badge(c.state)), td(c.in_flight, "num"), td(c.pending, "num"), td(c.prefill_tokens, "num"),
    el("td", null, bar(c.kv_usage === undefined ? null : c.kv_usage)), td(c.predicted_cached_tokens, "num"),
    td(c.queue_wait_ms === undefined ? null : num(c.queue_wait_ms, 1), "num"),
    td(c.estimated_ttft_ms === undefined ? null : num(c.estimated_ttft_ms, 1), "num"),
    td(c.score === undefined ? null : Number(c.score).toPrecision(4), "num")));
  const table = el("table", { id: "explain-table" }, el("thead", null, head), el("tbody", null, ...rows));
  out.replaceChildren(line, table);
}

async function explain(ev) {
  ev.preventDefault();
  $("explain-error").textContent = "";
  const route = $("explain-route").value;
  try {
    const ex = await getJSON("/v1/explain" + (route ? "?route=" + encodeURIComponent(route) : ""), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: $("explain-body").value,
    });
    renderExplain(ex);
  } catch (e) {
    $("explain-error").textContent = e.message;
  }
}

function defaultBody(model) {
  return JSON.stringify({ model: model || "model", messages: [{ role: "system", content: "You are a helpful assistant." }, { role: "user", content: "Which replica would serve this request, and why?" }], max_tokens: 32 }, null, 2);
}

async function tick() {
  if (busy) return;
  busy = true;
  const balancer = info.role === "balancer";
  const jobs = {
    members: info.gossip ? getJSON("/v1/gossip/members") : Promise.resolve(null),
    state: info.gossip ? getJSON("/v1/gossip/state") : Promise.resolve(null),
    replicas: balancer ? getJSON("/v1/replicas") : Promise.resolve(null),
    summary: balancer ? Promise.resolve(null) : getJSON("/v1/summary"),
    series: getJSON("/debug/series"),
    decisions: balancer ? getJSON("/debug/decisions?limit=" + MAX_DECISIONS + "&after=" + lastSeq) : Promise.resolve(null),
  };
  const names = Object.keys(jobs);
  const results = await Promise.allSettled(names.map((n) => jobs[n]));
  const got = {};
  const errors = [];
  results.forEach((r, i) => {
    if (r.status === "fulfilled") got[names[i]] = r.value; else errors.push(names[i] + ": " + r.reason.message);
  });
  try {
    if (!errors.some((e) => e.startsWith("replicas") || e.startsWith("state"))) renderFleet(got.replicas, got.state, got.members, got.summary);
    if (got.members !== undefined) renderMembers(got.members);
    if (got.series) renderSeries(got.series);
    if (got.decisions) renderDecisions(got.decisions);
    if (balancer && got.replicas && !$("explain-body").value) {
      const model = got.replicas.length && got.replicas[0].models ? got.replicas[0].models[0] : "";
      $("explain-body").value = defaultBody(model);
    }
  } finally {
    busy = false;
  }
  const st = $("status");
  st.className = "status" + (errors.length ? " bad" : "");
  st.textContent = errors.length ? errors.join("; ") : "updated " + new Date().toLocaleTimeString();
}

async function start() {
  try {
    info = await getJSON("/ui/info");
  } catch (e) {
    $("status").textContent = "cannot read /ui/info: " + e.message;
    $("status").className = "status bad";
    return;
  }
  $("node").textContent = info.role + " " + info.name + " · " + info.version;
  document.title = "inferrail · " + info.role + " " + info.name;
  if (info.role === "balancer") {
    $("hit-note").textContent = "predicted cached / prompt tokens at this balancer, per second";
    $("ttft-note").textContent = "measured at this balancer, per second";
    $("explain-form").addEventListener("submit", explain);
  } else {
    $("decisions-card").hidden = true;
    $("explain-card").hidden = true;
    $("hit-note").textContent = "as the engine reports it (prefix cache hits / queries), per second";
    $("ttft-title").textContent = "Requests proxied";
    $("ttft-note").textContent = "per second; balancers measure the time to first token";
    $("ttft-legend").replaceChildren(el("span", { class: "swatch s1" }), el("span", { id: "rps" }, "–"));
  }
  await tick();
  setInterval(tick, 1000);
}

start();
