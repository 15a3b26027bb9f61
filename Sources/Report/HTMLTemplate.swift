/// The self-contained HTML page of `gattlab timeline --format html`: CSS and JavaScript inline,
/// no network. The renderer replaces the two placeholders.
enum HTMLTemplate {
    static let titlePlaceholder = "__GATTLAB_TITLE__"
    static let dataPlaceholder = "__GATTLAB_TIMELINE_JSON__"
    static let page: String = #"""
<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'">
<meta name="color-scheme" content="light dark">
<title>__GATTLAB_TITLE__</title>
<style>
:root { --bg:#f4f6f9; --panel:#fff; --fg:#1c2330; --muted:#5d6878; --line:#d8dde5; --grid:#e9edf2; --band:#f0f3f8;
  --ok:#1e8e4e; --bad:#d23f3f; --warn:#c98306; --info:#2f74d0; --unknown:#7f8997; --accent:#2f6fdb;
  --link:#93b3e3; --link-enc:#2f5fae; --hl:#fff1b8; --sel:#e8772e;
  --mono: ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", "Liberation Mono", monospace;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
@media (prefers-color-scheme: dark) {
  :root { --bg:#12151a; --panel:#1b1f26; --fg:#e2e6ed; --muted:#9aa4b2; --line:#2f3642; --grid:#242a33; --band:#20252d;
    --ok:#3fbf70; --bad:#f06262; --warn:#e8a534; --info:#5c9cf0; --unknown:#8d96a3; --accent:#5c9cf0;
    --link:#3d5a88; --link-enc:#6e9ee8; --hl:#4d4113; --sel:#f39a4f; }
}
* { box-sizing: border-box; } body { margin: 0; background: var(--bg); color: var(--fg); } main { max-width: 1600px; margin: 0 auto; padding: 18px 22px 40px; }
h1 { font-size: 20px; margin: 0 0 6px; font-weight: 650; } h1 .brand { color: var(--accent); } h2 { font-size: 15px; margin: 0 0 10px; font-weight: 650; } h3 { font-size: 15px; margin: 0; font-weight: 650; overflow-wrap: anywhere; }
code, .mono { font-family: var(--mono); font-size: 12.5px; }
.meta { display: flex; flex-wrap: wrap; gap: 4px 22px; color: var(--muted); margin: 0; }
.meta dt { display: inline; } .meta dd { display: inline; margin: 0 0 0 4px; color: var(--fg); overflow-wrap: anywhere; }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; margin-top: 16px; }
.banner { border-left: 4px solid var(--warn); background: var(--panel); padding: 8px 12px; margin-top: 12px; } .banner.error { border-color: var(--bad); }
.noscript { border-left: 4px solid var(--warn); padding: 8px 12px; background: #fff6dd; color: #222; }
#device-cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(330px, 1fr)); gap: 12px; margin-top: 16px; }
.device-card { background: var(--panel); border: 1px solid var(--line); border-left: 5px solid var(--unknown); border-radius: 8px; padding: 12px 14px; }
.device-card.outcome-succeeded { border-left-color: var(--ok); } .device-card.outcome-failed { border-left-color: var(--bad); }
.device-card.outcome-interrupted, .device-card.outcome-incomplete { border-left-color: var(--warn); }
.card-head { display: flex; justify-content: space-between; gap: 8px; align-items: baseline; } .addr { color: var(--muted); }
.outcome { font-size: 11.5px; font-weight: 700; text-transform: uppercase; letter-spacing: .04em; padding: 1px 8px; border-radius: 10px; color: #fff; background: var(--unknown); white-space: nowrap; }
.outcome-succeeded .outcome { background: var(--ok); } .outcome-failed .outcome { background: var(--bad); }
.outcome-interrupted .outcome, .outcome-incomplete .outcome { background: var(--warn); }
.summary { margin: 8px 0; overflow-wrap: anywhere; }
.chips { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: center; color: var(--muted); font-size: 12.5px; }
.chip { border: 1px solid var(--line); border-radius: 4px; padding: 0 6px; font-family: var(--mono); font-size: 12px; color: var(--fg); }
.badge { display: inline-block; font-size: 11px; font-weight: 700; letter-spacing: .04em; padding: 0 6px; border-radius: 4px; color: #fff; text-transform: uppercase; }
.sev-error .badge, .badge.sev-error { background: var(--bad); } .sev-warning .badge, .badge.sev-warning { background: var(--warn); } .sev-info .badge, .badge.sev-info { background: var(--info); }
#no-devices { color: var(--muted); font-style: italic; margin: 4px 0 10px; } #timeline { width: 100%; overflow-x: auto; }
#timeline-svg { display: block; font-family: system-ui, -apple-system, "Segoe UI", Roboto, Arial, sans-serif; font-size: 11px; user-select: none; } #timeline-svg text { fill: var(--fg); }
#timeline-svg .tick text, #timeline-svg .lane-label, #timeline-svg .muted { fill: var(--muted); }
#timeline-svg .grid { stroke: var(--grid); } #timeline-svg .axis-line, #timeline-svg .lane-sep { stroke: var(--line); }
#timeline-svg .group-band { fill: var(--band); } #timeline-svg .group-title { font-weight: 650; font-size: 12px; }
#timeline-svg .conn-bar { fill: var(--link); } #timeline-svg .conn-enc { fill: var(--link-enc); }
#timeline-svg .bar-label { fill: #fff; paint-order: stroke; stroke: rgba(0,0,0,.35); stroke-width: 2px; pointer-events: none; }
#timeline-svg .bar-label.dark { fill: var(--fg); stroke: none; } #timeline-svg .brush { fill: var(--accent); fill-opacity: .15; stroke: var(--accent); } #timeline-svg .conn-open-end { fill: var(--link-enc); }
#timeline-svg .disc-marker { stroke: var(--muted); stroke-width: 2; } #timeline-svg .disc-marker.bad { stroke: var(--bad); } #timeline-svg text.disc-label.bad { fill: var(--bad); font-weight: 600; }
#timeline-svg .phase { stroke: rgba(0,0,0,.15); } #timeline-svg .phase-failed { stroke: var(--bad); stroke-width: 2.5; }
#timeline-svg .phase-interrupted { stroke: var(--warn); stroke-width: 2.5; stroke-dasharray: 5 3; } #timeline-svg .phase-open { fill-opacity: .75; stroke: var(--muted); stroke-dasharray: 3 3; }
#timeline-svg .mk { stroke: var(--panel); stroke-width: 1.5; cursor: pointer; } #timeline-svg .mk-tick { stroke-width: 2; cursor: pointer; }
#timeline-svg .lane-scan { fill: #1f9aa8; stroke: #1f9aa8; } #timeline-svg .lane-provisioning { fill: #8a5cc7; stroke: #8a5cc7; }
#timeline-svg .lane-other { fill: var(--accent); stroke: var(--accent); } #timeline-svg .mk.kind-error { fill: var(--bad); }
#timeline-svg .guide { stroke: var(--grid); stroke-dasharray: 2 3; } #timeline-svg .progress-area { fill: var(--accent); fill-opacity: .12; }
#timeline-svg .progress-line { fill: none; stroke: var(--accent); stroke-width: 2; stroke-linejoin: round; }
#timeline-svg .progress-point { fill: var(--panel); stroke: var(--accent); stroke-width: 2; } #timeline-svg text.progress-last { font-weight: 650; fill: var(--accent); }
#timeline-svg .fmark { stroke: var(--panel); stroke-width: 1; cursor: pointer; }
#timeline-svg .fmark-error { fill: var(--bad); } #timeline-svg .fmark-warning { fill: var(--warn); } #timeline-svg .fmark-info { fill: var(--info); } #timeline-svg .fmark.selected { stroke: var(--fg); stroke-width: 2; }
#timeline-svg .hover-line { stroke: var(--muted); stroke-dasharray: 3 3; pointer-events: none; }
#timeline-svg .hover-bg { fill: var(--fg); } #timeline-svg text.hover-text { fill: var(--panel); font-weight: 600; } #timeline-svg .sel-line { stroke: var(--sel); stroke-width: 1.5; pointer-events: none; }
#timeline-legend { display: flex; flex-wrap: wrap; gap: 4px 16px; margin-top: 10px; color: var(--muted); font-size: 12px; }
#timeline-legend span.sw { display: inline-block; width: 14px; height: 10px; border-radius: 2px; margin-right: 5px; vertical-align: -1px; }
#findings-list { list-style: none; margin: 0; padding: 0; }
.finding { border: 1px solid var(--line); border-left: 4px solid var(--info); border-radius: 6px; padding: 8px 12px; margin-bottom: 8px; cursor: pointer; }
.finding.sev-error { border-left-color: var(--bad); } .finding.sev-warning { border-left-color: var(--warn); }
.finding:hover, .finding:focus { background: var(--band); outline: none; } .finding.selected { background: var(--hl); }
.finding-head { display: flex; flex-wrap: wrap; gap: 4px 10px; align-items: baseline; } .finding-meta { color: var(--muted); font-size: 12.5px; }
.finding p { margin: 4px 0 0; overflow-wrap: anywhere; } .finding .advice-label { font-weight: 650; }
.empty { color: var(--muted); font-style: italic; margin: 0; }
.toolbar { display: flex; flex-wrap: wrap; gap: 8px 14px; align-items: center; margin-bottom: 8px; }
#event-filter { font: inherit; padding: 5px 9px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); min-width: 300px; }
#event-count, #selection-note, .hint, #zoom-range { color: var(--muted); font-size: 12.5px; }
button { font: inherit; font-size: 12.5px; padding: 2px 10px; border: 1px solid var(--line); border-radius: 5px; background: var(--band); color: var(--fg); cursor: pointer; }
.table-wrap { max-height: 70vh; overflow: auto; border: 1px solid var(--line); border-radius: 6px; position: relative; }
#event-table { border-collapse: collapse; width: 100%; font-size: 13px; }
#event-table th { position: sticky; top: 0; background: var(--band); text-align: left; font-weight: 650; padding: 5px 8px; border-bottom: 1px solid var(--line); z-index: 1; }
#event-table td { padding: 3px 8px; border-bottom: 1px solid var(--grid); vertical-align: top; }
#event-table td.t { text-align: right; font-family: var(--mono); font-size: 12px; white-space: nowrap; }
#event-table td.k, #event-table td.f { font-family: var(--mono); font-size: 12px; white-space: nowrap; } #event-table td.s { overflow-wrap: anywhere; }
#event-table tr.problem td.t { box-shadow: inset 3px 0 var(--warn); } #event-table tbody tr { cursor: pointer; } #event-table tbody tr:hover { background: var(--band); } #event-table tr.hl, #event-table tr.hl:hover { background: var(--hl); }
.lane-chip { font-size: 11.5px; padding: 0 6px; border-radius: 8px; border: 1px solid var(--line); white-space: nowrap; }
footer { margin-top: 18px; color: var(--muted); font-size: 12px; }
</style>
</head>
<body>
<main>
<header>
<h1><span class="brand">GATTLab</span> timeline</h1>
<dl class="meta" id="capture-meta"></dl>
</header>
<noscript><p class="noscript">This report needs JavaScript to draw the timeline. The raw timeline JSON is in the page source (script element "timeline-data").</p></noscript>
<div id="report-messages"></div>
<section id="device-cards" aria-label="Devices"></section>
<section class="panel" id="timeline-panel"><h2>Timeline</h2>
<div class="toolbar"><span class="hint">Drag across the timeline to zoom in, double-click to zoom out; hover a mark for details, click it to find its events.</span>
<span id="zoom-range"></span><button id="zoom-reset" type="button" hidden>Show whole capture</button></div><div id="timeline"></div><div id="timeline-legend"></div></section>
<section class="panel" id="findings-panel"><h2>Findings</h2><ol id="findings-list"></ol></section>
<section class="panel" id="events-panel"><h2>Events</h2>
<div class="toolbar"><input id="event-filter" type="search" placeholder="Filter events (text in any column)" aria-label="Filter events">
<span id="event-count"></span><span id="selection-note"></span><button id="clear-selection" type="button" hidden>Clear highlight</button></div>
<div class="table-wrap" id="event-table-wrap"><table id="event-table"><thead><tr><th>Time (s)</th><th>Device</th><th>Lane</th><th>Kind</th><th>Summary</th><th>Frames</th></tr></thead><tbody></tbody></table></div>
</section>
<footer id="report-footer"></footer>
</main>
<script type="application/json" id="timeline-data">__GATTLAB_TIMELINE_JSON__</script>
<script>
(function () {
  "use strict";
  const SVGNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function sv(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function tip(node, text) { node.appendChild(sv("title", {}, text)); return node; }
  const num = (v) => (typeof v === "number" && isFinite(v) ? v : null);
  const str = (v) => (v === undefined || v === null ? "" : String(v));
  const arr = (v) => (Array.isArray(v) ? v : []);
  const objs = (v) => arr(v).filter((o) => o && typeof o === "object" && !Array.isArray(o));
  const fmtT = (t) => (num(t) === null ? "–" : t.toFixed(3));
  const fmtDur = (s) => (num(s) === null ? "–" : s < 60 ? s.toFixed(1) + " s" : Math.floor(s / 60) + " min " + (s % 60).toFixed(1) + " s");
  function fmtFrames(fr) {
    const f = arr(fr).filter((n) => num(n) !== null);
    const runs = [];
    for (const n of f) { const last = runs[runs.length - 1]; if (last && n === last[1] + 1) last[1] = n; else runs.push([n, n]); }
    const parts = runs.slice(0, 6).map((r) => (r[0] === r[1] ? String(r[0]) : r[0] + "–" + r[1]));
    if (runs.length > 6) parts.push("… (" + f.length + " frames)");
    return parts.join(", ");
  }
  const showMessage = (text, isError) => $("report-messages").appendChild(el("div", "banner" + (isError ? " error" : ""), text));

  let data;
  try { data = JSON.parse($("timeline-data").textContent); } catch (e) {
    showMessage("The timeline data in this report could not be read (" + e.message + ").", true);
    data = {};
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) data = {};
  const info = data.gattlab && typeof data.gattlab === "object" ? data.gattlab : {};
  if (info.schema !== undefined && info.schema !== 1) showMessage("This page was written for timeline schema 1; the data says schema " + str(info.schema) + ". Some parts may be missing.");
  const capture = data.capture && typeof data.capture === "object" ? data.capture : {};
  const devices = objs(data.devices), connections = objs(data.connections), phases = objs(data.phases);
  const progress = objs(data.progress), events = objs(data.events), findings = objs(data.findings);
  const devById = new Map(devices.map((d) => [d.id, d]));
  const evIndex = new Map(events.map((e, i) => [e, i]));
  const SEVERITIES = ["error", "warning", "info"];
  const sevOf = (f) => (SEVERITIES.includes(f.severity) ? f.severity : "info");
  const OUTCOMES = ["succeeded", "failed", "interrupted", "incomplete", "unknown"];
  const outcomeOf = (d) => (OUTCOMES.includes(d.outcome) ? d.outcome : "unknown");
  const nameOf = (d) => str(d.name) || str(d.address) || "device " + str(d.id);
  const devLabel = (id) => (devById.has(id) ? nameOf(devById.get(id)) : id === null || id === undefined ? "" : "device " + str(id));

  // Latest time anything happens, so open-ended bars and late events stay on the axis.
  let tMax = num(capture.duration) || 0;
  for (const o of [].concat(devices, connections, phases, progress, events, findings)) {
    for (const k of ["end", "time", "start"]) if (num(o[k]) !== null && o[k] > tMax) tMax = o[k];
  }
  if (tMax <= 0) tMax = 1;

  // ---- header
  const meta = $("capture-meta");
  function metaItem(label, value, mono) {
    if (value) meta.append(el("dt", "", label), el("dd", mono ? "mono" : "", value));
  }
  const startText = str(capture.start).replace(/^(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d(?:\.\d+)?)Z$/, "$1 $2 UTC");
  metaItem("Capture", str(capture.path), true);
  metaItem("Format", str(capture.format));
  metaItem("Records", num(capture.records) === null ? "" : capture.records.toLocaleString("en-US"));
  metaItem("Started", startText);
  metaItem("Duration", num(capture.duration) === null ? "" : fmtDur(capture.duration));
  metaItem("Devices", String(devices.length));
  if (num(capture.droppedEvents) > 0) showMessage("This timeline leaves out " + capture.droppedEvents + " events (over the event limit): the lanes and the event table are incomplete.");
  $("report-footer").textContent = "Generated by GATTLab" + (info.version ? " " + str(info.version) : "") + " · timeline schema " + (str(info.schema) || "?") + " · times are seconds from the start of the capture.";

  // ---- device cards
  const cards = $("device-cards");
  if (devices.length === 0) cards.appendChild(el("p", "", "No devices found in this capture")).id = "no-devices";
  for (const d of devices) {
    const card = el("article", "device-card outcome-" + outcomeOf(d));
    card.setAttribute("data-device", str(d.id));
    const head = el("div", "card-head"), names = el("div");
    names.appendChild(el("h3", "", nameOf(d)));
    if (d.name && d.address) names.appendChild(el("div", "addr mono", d.address));
    head.append(names, el("span", "outcome", outcomeOf(d)));
    card.append(head, el("p", "summary", str(d.summary) || "No summary."));
    const chips = el("div", "chips");
    for (const p of arr(d.protocols)) chips.appendChild(el("span", "chip", p));
    const s = num(d.start), e = num(d.end);
    if (s !== null && e !== null) chips.appendChild(el("span", "", fmtT(s) + "–" + fmtT(e) + " s (" + fmtDur(e - s) + ")"));
    chips.appendChild(el("span", "", arr(d.connections).length + " connection" + (arr(d.connections).length === 1 ? "" : "s")));
    const mine = findings.filter((f) => f.device === d.id);
    if (mine.length === 0) chips.appendChild(el("span", "", "no findings"));
    for (const sev of SEVERITIES) {
      const n = mine.filter((f) => sevOf(f) === sev).length;
      if (n) chips.appendChild(el("span", "badge sev-" + sev, n + " " + sev + (n === 1 || sev === "info" ? "" : "s")));
    }
    card.appendChild(chips);
    const adv = d.advertising && typeof d.advertising === "object" ? d.advertising : null;
    if (adv) card.appendChild(advertisingBlock(adv));
    cards.appendChild(card);
  }

  // Advertising: one line of facts and the RSSI over time as a small inline SVG (mean line, min–max band).
  function advertisingBlock(a) {
    const box = el("div", "advertising");
    const r = a.rssi && typeof a.rssi === "object" ? a.rssi : {};
    const facts = [num(a.reports) + " advertisements", fmtT(num(a.firstSeen)) + "–" + fmtT(num(a.lastSeen)) + " s",
      a.connectable ? "connectable" : "not connectable"];
    if (num(r.median) !== null) facts.push("RSSI " + r.min + " / " + r.median + " / " + r.max + " dBm");
    if (arr(a.names).length) facts.push(arr(a.names).map(str).join(", "));
    if (arr(a.services).length) facts.push("services " + arr(a.services).map(str).join(", "));
    if (arr(a.protocols).length) facts.push("looks like " + arr(a.protocols).map(str).join(", "));
    box.appendChild(el("p", "summary", "Advertising: " + facts.join(" · ")));
    for (const n of objs(a.announcements)) box.appendChild(el("p", "summary", "announced (" + str(n.protocol) + ") at " + fmtT(num(n.time)) + " s: " + str(n.summary)));
    const pts = objs(r.series).filter((p) => num(p.time) !== null && num(p.mean) !== null);
    if (pts.length > 1) {
      const W = 240, H = 40, lo = Math.min(-100, ...pts.map((p) => num(p.min) ?? p.mean)), hi = Math.max(-30, ...pts.map((p) => num(p.max) ?? p.mean));
      const t0 = pts[0].time, t1 = Math.max(pts[pts.length - 1].time, t0 + 1e-6);
      const x = (t) => ((t - t0) / (t1 - t0)) * (W - 2) + 1, y = (v) => H - 1 - ((v - lo) / (hi - lo)) * (H - 2);
      const svg = sv("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, class: "rssi-spark", role: "img" });
      const band = pts.map((p) => x(p.time).toFixed(1) + "," + y(num(p.max) ?? p.mean).toFixed(1))
        .concat(pts.slice().reverse().map((p) => x(p.time).toFixed(1) + "," + y(num(p.min) ?? p.mean).toFixed(1)));
      svg.appendChild(sv("polygon", { points: band.join(" "), fill: "#2f62c9", "fill-opacity": 0.15, stroke: "none" }));
      svg.appendChild(sv("polyline", { points: pts.map((p) => x(p.time).toFixed(1) + "," + y(p.mean).toFixed(1)).join(" "), fill: "none", stroke: "#2f62c9", "stroke-width": 1.5 }));
      tip(svg, "RSSI over time (dBm), " + fmtT(t0) + "–" + fmtT(t1) + " s, " + lo + " to " + hi + " dBm");
      box.appendChild(svg);
    }
    return box;
  }

  // ---- colours and text measurement
  const PHASE_COLORS = new Map(Object.entries({
    "credentials": "#7d5bb5", "url": "#5a6fc4", "wifi-join": "#16877f", "http-connect": "#2f7fb8", "download": "#2f62c9",
    "verification": "#9a6a14", "success": "#1e8e4e", "error": "#c93838", "idle": "#6f7886", "reboot": "#b8612a",
    "pending-verify": "#8f7a1a", "scan": "#1f8fa0", "provisioning": "#7a4fb8", "session": "#52617a", "join": "#138a6e" }));
  const phaseColor = (name) => PHASE_COLORS.get(str(name)) || "#7a838f"; // neutral for unknown phases
  const ctx = document.createElement("canvas").getContext("2d");
  function measure(text, px, bold) {
    if (!ctx) return String(text).length * px * 0.6;
    ctx.font = (bold ? "600 " : "") + px + "px system-ui, -apple-system, 'Segoe UI', Roboto, Arial, sans-serif";
    return ctx.measureText(String(text)).width;
  }
  function fit(text, width, px) {
    text = String(text);
    if (measure(text, px) <= width) return text;
    let lo = 0, hi = text.length;
    while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (measure(text.slice(0, mid) + "…", px) <= width) lo = mid; else hi = mid - 1; }
    return lo > 0 ? text.slice(0, lo) + "…" : "";
  }

  // ---- lanes
  const GUTTER = 160, RIGHT = 28, AXIS = 30;
  function buildRows() {
    const rows = [];
    const orphan = findings.filter((f) => !devById.has(f.device));
    if (orphan.length) {
      rows.push({ type: "group", title: "Capture", sub: "findings not tied to one device" });
      rows.push({ type: "findings", label: "findings", items: orphan });
    }
    for (const d of devices) {
      rows.push({ type: "group", device: d });
      const conns = connections.filter((c) => c.device === d.id);
      if (conns.length) rows.push({ type: "link", label: "link", items: conns });
      const ph = phases.filter((p) => p.device === d.id && num(p.start) !== null);
      if (ph.length) rows.push({ type: "phases", label: arr(d.protocols).some((p) => /ota/.test(str(p))) ? "ota" : "phases", items: ph });
      const evs = events.filter((e) => e.device === d.id && num(e.time) !== null);
      const lanes = [];
      for (const e of evs) {
        const lane = str(e.lane) || "other";
        if ((lane === "link" && conns.length) || (lane === "ota" && ph.length)) continue;
        if (!lanes.includes(lane)) lanes.push(lane);
      }
      const order = (l) => (l === "scan" ? 0 : l === "provisioning" ? 1 : 2);
      lanes.sort((a, b) => order(a) - order(b) || (a < b ? -1 : a > b ? 1 : 0));
      for (const lane of lanes) rows.push({ type: "markers", label: lane, items: evs.filter((e) => (str(e.lane) || "other") === lane) });
      const pr = progress.filter((p) => p.device === d.id && num(p.time) !== null && num(p.percent) !== null);
      if (pr.length) rows.push({ type: "progress", label: "download %", items: pr.sort((a, b) => a.time - b.time) });
      const fs = findings.filter((f) => f.device === d.id);
      if (fs.length) rows.push({ type: "findings", label: "findings", items: fs });
    }
    return rows;
  }
  const ROWS = buildRows();
  let selTimes = [], selFinding = -1, view = [0, tMax];
  function setView(v) {
    const whole = (view = v)[0] <= 0 && v[1] >= tMax;
    $("zoom-reset").hidden = whole;
    $("zoom-range").textContent = whole ? "" : "Showing " + fmtT(v[0]) + "–" + fmtT(v[1]) + " s";
    drawTimeline();
  }
  $("zoom-reset").addEventListener("click", () => setView([0, tMax]));

  function drawTimeline() {
    const host = $("timeline"), W = Math.max(720, host.clientWidth || 1000);
    const x0 = GUTTER, x1 = W - RIGHT, plotW = x1 - x0;
    const span = view[1] - view[0], X = (t) => x0 + ((t - view[0]) / span) * plotW;
    const Xc = (t) => Math.min(Math.max(X(t), x0 - 2), x1 + 2), inView = (t) => t >= view[0] && t <= view[1];
    const svg = sv("svg", { id: "timeline-svg", width: W, role: "img", "aria-label": "Timeline of the capture" });
    const clipRect = sv("rect", { x: x0 - 1, y: 0, width: plotW + 12, height: 1 }), clip = sv("clipPath", { id: "plot-clip" }), defs = sv("defs");
    clip.appendChild(clipRect); defs.appendChild(clip);
    const gGrid = sv("g", { class: "grid-layer" }), gBody = sv("g", { class: "lanes" }), gPlot = sv("g", { class: "plot", "clip-path": "url(#plot-clip)" });
    svg.append(defs, gGrid, gBody, gPlot);
    let y = AXIS;
    // Greedy label placement in up to `rows` text lines per lane; labels that cannot fit are dropped (the tooltip stays).
    function labeller(rows) {
      const ends = new Array(rows).fill(-Infinity);
      return function (x, text, px) {
        const w = measure(text, px || 11);
        const left = Math.min(Math.max(x - w / 2, x0), x1 - w);
        for (let r = 0; r < rows; r++) if (left >= ends[r] + 6) { ends[r] = left + w; return { x: left, row: r }; }
        return null;
      };
    }
    function laneLabel(text, ly) { gBody.appendChild(sv("text", { class: "lane-label", x: 14, y: ly }, text)); }
    function sep(yy) { gBody.appendChild(sv("line", { class: "lane-sep", x1: x0, x2: x1, y1: yy, y2: yy })); }
    function pickEvents(idx) { return () => selectEvents(idx, true); }

    for (const row of ROWS) {
      if (row.type === "group") {
        const h = 26, d = row.device;
        gBody.appendChild(sv("rect", { class: "group-band", x: 0, y: y, width: W, height: h }));
        gBody.appendChild(sv("text", { class: "group-title", x: 8, y: y + 17 }, fit(d ? nameOf(d) : row.title, GUTTER - 14, 12)));
        const sub = d ? [str(d.address), outcomeOf(d), str(d.summary)].filter((s) => s).join(" · ") : row.sub;
        gBody.appendChild(sv("text", { class: "muted", x: x0 + 4, y: y + 17 }, fit(sub, plotW - 8, 11)));
        y += h;
      } else if (row.type === "link") {
        const h = 36, by = y + 9, bh = 18;
        laneLabel(row.label, y + 22);
        const conns = row.items.filter((c) => num(c.start) !== null).sort((a, b) => a.start - b.start);
        conns.forEach((c, i) => {
          const open = num(c.end) === null, end = open ? tMax : c.end;
          if (end < view[0] || c.start > view[1]) return;
          const cx0 = Xc(c.start), cx1 = Math.max(Xc(end), cx0 + 2), lx = Math.max(cx0, x0) + 5;
          const g = sv("g", { class: "conn" + (open ? " conn-open" : ""), "data-connection": str(c.id) });
          g.appendChild(sv("rect", { class: "conn-bar", x: cx0, y: by, width: cx1 - cx0, height: bh, rx: 3 }));
          const enc = num(c.encryptedAt);
          if (enc !== null && enc < end) g.appendChild(sv("rect", { class: "conn-enc", x: Xc(enc), y: by, width: Math.max(cx1 - Xc(enc), 1), height: bh, rx: 3 }));
          if (open && inView(end)) g.appendChild(sv("path", { class: "conn-open-end", d: `M${cx1} ${by - 3} L${cx1 + 8} ${by + bh / 2} L${cx1} ${by + bh + 3} Z` }));
          const mtu = num(c.mtu) !== null ? "MTU " + c.mtu : "";
          const label = [str(c.handle), mtu, open ? "open at end" : ""].filter((s) => s).join(" · ");
          // Dark text on the plain part of the bar, white on the encrypted part; never across both.
          const ex = enc !== null && enc < end ? Math.max(Xc(enc), x0) + 5 : Infinity, right = Math.min(cx1, x1);
          for (const cand of [label, mtu]) {
            const w = measure(cand, 11) + 5;
            const at = lx + w <= Math.min(ex - 5, right) ? lx : ex + w <= right ? ex : null;
            if (cand && at !== null) { g.appendChild(sv("text", { class: "bar-label" + (at === lx && ex > lx ? " dark" : ""), x: at, y: by + 13 }, cand)); break; }
          }
          const dc = c.disconnect && typeof c.disconnect === "object" ? c.disconnect : null;
          const code = dc && num(dc.code) !== null ? "0x" + dc.code.toString(16).padStart(2, "0") : "";
          const lines = ["Connection " + str(c.handle) + " (" + devLabel(c.device) + ")",
            fmtT(c.start) + " s – " + (open ? "end of capture (still connected)" : fmtT(end) + " s") + ", " + fmtDur(end - c.start),
            (mtu || "MTU not exchanged") + ", " + (enc !== null ? "encrypted at " + fmtT(enc) + " s" : c.encrypted ? "encrypted" : "not encrypted") + (c.paired ? ", paired" : "")];
          if (c.alreadyConnected === true) lines.push("Already connected when the capture started");
          if (dc) lines.push("Disconnect: " + str(dc.name) + (code ? " (" + code + ")" : "") + (dc.meaning ? ": " + str(dc.meaning) : ""));
          tip(g, lines.join("\n"));
          if (!open && dc && inView(end)) {
            const bad = !(dc.code === 0x13 || dc.code === 0x16);
            g.appendChild(sv("line", { class: "disc-marker" + (bad ? " bad" : ""), x1: cx1, x2: cx1, y1: by - 5, y2: by + bh + 5 }));
            const room = (i + 1 < conns.length ? Math.min(Xc(conns[i + 1].start), x1) : x1) - cx1 - 10;
            const full = str(dc.name) + (code ? " (" + code + ")" : "");
            const text = measure(full, 11) <= room ? full : measure(code, 11) <= room ? code : "";
            if (text) g.appendChild(sv("text", { class: "disc-label" + (bad ? " bad" : ""), x: cx1 + 6, y: by + 13 }, text));
          }
          gPlot.appendChild(g);
        });
        y += h; sep(y);
      } else if (row.type === "phases") {
        const items = row.items.slice().sort((a, b) => a.start - b.start), ends = [], rowOf = [];
        for (const p of items) {
          let r = ends.findIndex((e) => p.start >= e - 1e-6);
          if (r < 0) { r = ends.length; ends.push(0); }
          ends[r] = Math.max(num(p.end) === null ? tMax : p.end, p.start);
          rowOf.push(r);
        }
        const rh = 22, h = ends.length * rh + 10;
        laneLabel(row.label, y + 20);
        items.forEach((p, i) => {
          const open = num(p.end) === null, end = open ? tMax : p.end;
          if (end < view[0] || p.start > view[1]) return;
          const px0 = Xc(p.start), px1 = Math.max(Xc(end), px0 + 3), py = y + 5 + rowOf[i] * rh, lx = Math.max(px0, x0) + 5;
          const outcome = ["ok", "failed", "interrupted", "open"].includes(p.outcome) ? p.outcome : "unknown";
          const g = sv("g", { class: "phase-group", "data-phase": str(p.name) });
          g.appendChild(sv("rect", { class: "phase phase-" + outcome, x: px0, y: py, width: px1 - px0, height: rh - 4, rx: 3, fill: phaseColor(p.name) }));
          const name = str(p.name) || "phase", detail = str(p.detail);
          for (const cand of [detail ? name + " · " + detail : name, name]) {
            if (measure(cand, 11) + 10 <= Math.min(px1, x1) - lx + 5) { g.appendChild(sv("text", { class: "bar-label", x: lx, y: py + 13 }, cand)); break; }
          }
          tip(g, name + " (" + outcome + ")\n" + fmtT(p.start) + " s – " + (open ? "end of capture" : fmtT(end) + " s") + ", " + fmtDur(num(p.duration) !== null ? p.duration : end - p.start) + (detail ? "\n" + detail : ""));
          gPlot.appendChild(g);
        });
        y += h; sep(y);
      } else if (row.type === "markers") {
        const h = 46, my = y + 12, place = labeller(2);
        const cls = row.label === "scan" || row.label === "provisioning" ? "lane-" + row.label : "lane-other";
        laneLabel(row.label, y + 16);
        const evs = row.items.filter((e) => inView(e.time)).sort((a, b) => a.time - b.time);
        const drawLabel = (x, text) => {
          const spot = text ? place(x, text) : null;
          if (spot) gBody.appendChild(sv("text", { class: "mk-label", x: spot.x, y: y + 30 + spot.row * 12 }, text));
        };
        for (let i = 0; i < evs.length; i++) {
          const e = evs[i];
          if (e.kind === "scan.result") {
            let j = i;
            while (j + 1 < evs.length && evs[j + 1].kind === "scan.result" && X(evs[j + 1].time) - X(evs[j].time) < 30) j++;
            const group = evs.slice(i, j + 1), g = sv("g", { class: "scan-results" });
            for (const r of group) g.appendChild(sv("line", { class: "mk-tick " + cls, "data-event": evIndex.get(r), x1: X(r.time), x2: X(r.time), y1: my - 6, y2: my + 6 }));
            const n = group.reduce((m, r) => Math.max(m, r.fields && num(r.fields.count) !== null ? r.fields.count : 0), group.length);
            tip(g, n + " network" + (n === 1 ? "" : "s") + " at " + fmtT(group[0].time) + "–" + fmtT(group[group.length - 1].time) + " s\n" + group.slice(0, 25).map((r) => str(r.summary)).join("\n"));
            g.addEventListener("click", pickEvents(group.map((r) => evIndex.get(r))));
            gBody.appendChild(g);
            drawLabel((X(group[0].time) + X(group[group.length - 1].time)) / 2, n + " network" + (n === 1 ? "" : "s"));
            i = j;
            continue;
          }
          const kind = str(e.kind), f = e.fields && typeof e.fields === "object" ? e.fields : {};
          const tail = kind.replace(/^[^.]*\./, ""), value = typeof f.state === "string" ? f.state : f.status;
          const short = /^(state|status)$/.test(tail) && typeof value === "string" ? value : tail.replace(/_/g, " ");
          const mk = sv("circle", { class: "mk " + cls + (/error|fail/.test(kind) ? " kind-error" : ""), "data-event": evIndex.get(e), cx: X(e.time), cy: my, r: 4.5 });
          tip(mk, fmtT(e.time) + " s  " + kind + "\n" + str(e.summary));
          mk.addEventListener("click", pickEvents([evIndex.get(e)]));
          gBody.appendChild(mk);
          drawLabel(X(e.time), fit(short, 150, 11));
        }
        y += h; sep(y);
      } else if (row.type === "progress") {
        const h = 100, top = y + 12, bot = y + h - 12;
        const Y = (p) => bot - (Math.min(Math.max(p, 0), 100) / 100) * (bot - top);
        laneLabel(row.label, y + 16);
        for (const p of [0, 50, 100]) {
          gBody.appendChild(sv("line", { class: "guide", x1: x0, x2: x1, y1: Y(p), y2: Y(p) }));
          gBody.appendChild(sv("text", { class: "muted", x: x0 - 6, y: Y(p) + 4, "text-anchor": "end" }, p + " %"));
        }
        const pts = row.items.map((p) => [X(p.time), Y(p.percent)]);
        const line = pts.map((p) => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ");
        const g = sv("g", { class: "progress", "data-device": str(row.items[0].device) });
        g.appendChild(sv("polygon", { class: "progress-area", points: line + ` ${pts[pts.length - 1][0].toFixed(1)},${bot} ${pts[0][0].toFixed(1)},${bot}` }));
        g.appendChild(sv("polyline", { class: "progress-line", points: line }));
        row.items.forEach((p, i) => tip(g.appendChild(sv("circle", { class: "progress-point", cx: pts[i][0], cy: pts[i][1], r: 3 })),
          fmtT(p.time) + " s: " + p.percent + " %" + (num(p.kb) !== null ? " (" + p.kb + " KB)" : "")));
        const last = row.items[row.items.length - 1], lp = pts[pts.length - 1], lt = last.percent + " %";
        const right = lp[0] + 8 + measure(lt, 11, true) <= x1;
        if (inView(last.time)) g.appendChild(sv("text", { class: "progress-last", x: right ? lp[0] + 8 : lp[0] - 8, y: Math.max(lp[1] - 6, top + 4), "text-anchor": right ? "start" : "end" }, lt));
        gPlot.appendChild(g);
        y += h; sep(y);
      } else if (row.type === "findings") {
        const h = 30, ty = y + 7;
        laneLabel(row.label, y + 19);
        for (const f of row.items) {
          if (num(f.time) === null || !inView(f.time)) continue;
          const fx = X(f.time), idx = findings.indexOf(f), sev = sevOf(f);
          const m = sv("path", { class: "fmark fmark-" + sev + (idx === selFinding ? " selected" : ""), "data-finding": idx, d: `M${fx} ${ty} L${fx + 8} ${ty + 15} L${fx - 8} ${ty + 15} Z` });
          tip(m, sev.toUpperCase() + " " + str(f.id) + " at " + fmtT(f.time) + " s\n" + str(f.title) + (f.evidence ? "\n" + str(f.evidence) : ""));
          m.addEventListener("click", () => selectFinding(idx, true));
          gBody.appendChild(m);
        }
        y += h; sep(y);
      }
    }
    const H = y + 8;
    svg.setAttribute("height", H);
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    clipRect.setAttribute("height", H);
    // Axis: steps of 1, 2 or 5 times a power of ten, about every 90 px.
    const raw = span / Math.max(1, plotW / 90), p10 = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 5, 10].map((m) => m * p10).find((s) => s >= raw);
    const dec = Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
    gGrid.appendChild(sv("line", { class: "axis-line", x1: x0, x2: x1, y1: AXIS - 1, y2: AXIS - 1 }));
    let lastRight = -Infinity;
    for (let i = Math.ceil(view[0] / step - 1e-6); i * step <= view[1] + step * 1e-6; i++) {
      const t = i * step, tx = X(t), tg = sv("g", { class: "tick" }), text = t.toFixed(dec) + " s", w = measure(text, 11);
      const left = Math.min(Math.max(tx - w / 2, x0), x1 - w);
      tg.appendChild(sv("line", { class: "grid", x1: tx, x2: tx, y1: AXIS - 5, y2: H - 8 }));
      if (left >= lastRight + 6) { tg.appendChild(sv("text", { x: left, y: AXIS - 10 }, text)); lastRight = left + w; }
      gGrid.appendChild(tg);
    }
    gGrid.appendChild(sv("text", { class: "lane-label", x: 8, y: AXIS - 10 }, "time since capture start"));
    const gSel = sv("g", { id: "selection-layer", "clip-path": "url(#plot-clip)" });
    const brush = sv("rect", { class: "brush", y: AXIS, height: H - AXIS - 8, visibility: "hidden" });
    svg.append(gSel, brush);
    // Hover read-out of the time under the pointer.
    const hl = sv("line", { class: "hover-line", y1: AXIS, y2: H - 8, visibility: "hidden" });
    const hb = sv("rect", { class: "hover-bg", y: 4, height: 18, rx: 3, visibility: "hidden" });
    const ht = sv("text", { class: "hover-text", y: 17, visibility: "hidden", "text-anchor": "middle" });
    svg.appendChild(hl); svg.appendChild(hb); svg.appendChild(ht);
    // Drag across the plot to zoom into that span; double-click (or the button) shows the whole capture.
    const T = (px) => view[0] + ((px - x0) / plotW) * span, mouseX = (ev) => ev.clientX - svg.getBoundingClientRect().left;
    let drag = null;
    svg.addEventListener("mousedown", (ev) => { const mx = mouseX(ev); if (ev.button === 0 && mx >= x0 && mx <= x1) drag = { a: mx, b: mx }; });
    svg.addEventListener("mouseup", () => {
      const d = drag; drag = null; brush.setAttribute("visibility", "hidden");
      if (!d || Math.abs(d.b - d.a) < 6) return;
      const a = T(Math.min(d.a, d.b)), b = T(Math.max(d.a, d.b));
      setView([a, Math.max(b, a + 0.002)]);
    });
    svg.addEventListener("dblclick", () => setView([0, tMax]));
    svg.addEventListener("mousemove", (ev) => {
      const mx = mouseX(ev);
      if (drag) {
        drag.b = Math.min(Math.max(mx, x0), x1);
        brush.setAttribute("x", Math.min(drag.a, drag.b)); brush.setAttribute("width", Math.abs(drag.b - drag.a)); brush.setAttribute("visibility", "visible");
      }
      const show = mx >= x0 && mx <= x1 ? "visible" : "hidden";
      for (const n of [hl, hb, ht]) n.setAttribute("visibility", show);
      if (show === "hidden") return;
      const label = T(mx).toFixed(3) + " s", w = measure(label, 11, true) + 10;
      hl.setAttribute("x1", mx); hl.setAttribute("x2", mx);
      hb.setAttribute("x", mx - w / 2); hb.setAttribute("width", w);
      ht.setAttribute("x", mx); ht.textContent = label;
    });
    svg.addEventListener("mouseleave", () => { drag = null; for (const n of [hl, hb, ht, brush]) n.setAttribute("visibility", "hidden"); });
    host.replaceChildren(svg);
    svg.drawSelection = () => {
      gSel.replaceChildren();
      for (const t of selTimes) if (num(t) !== null) gSel.appendChild(sv("line", { class: "sel-line", x1: X(t), x2: X(t), y1: AXIS, y2: H - 8 }));
    };
    svg.drawSelection();
    if (devices.length === 0 && !host.querySelector("#timeline-empty")) {
      const p = el("p", "empty", "Nothing to draw: the capture has no devices.");
      p.id = "timeline-empty";
      host.appendChild(p);
    }
  }

  function drawLegend() {
    const lg = $("timeline-legend");
    const item = (color, text) => { const s = el("span"); const sw = el("span", "sw"); sw.style.background = color; s.appendChild(sw); s.appendChild(document.createTextNode(text)); lg.appendChild(s); };
    const css = getComputedStyle(document.documentElement), v = (n) => css.getPropertyValue(n).trim();
    if (connections.length) { item(v("--link"), "connected"); item(v("--link-enc"), "encrypted"); }
    const seen = [];
    for (const p of phases) if (!seen.includes(str(p.name))) seen.push(str(p.name));
    for (const n of seen) item(phaseColor(n), n || "phase");
    if (findings.length) for (const s of SEVERITIES) item(v(s === "error" ? "--bad" : s === "warning" ? "--warn" : "--info"), s);
    if (phases.some((p) => p.outcome === "interrupted" || p.outcome === "failed")) lg.appendChild(el("span", "", "dashed/red outline: phase interrupted/failed"));
  }

  // ---- findings list
  const flist = $("findings-list");
  if (findings.length === 0) flist.appendChild(el("li", "empty", "No findings."));
  findings.forEach((f, i) => {
    const li = el("li", "finding sev-" + sevOf(f));
    li.setAttribute("data-finding", i); li.tabIndex = 0; li.setAttribute("role", "button");
    const head = el("div", "finding-head");
    head.appendChild(el("span", "badge", sevOf(f)));
    head.appendChild(el("code", "finding-id", str(f.id)));
    head.appendChild(el("strong", "finding-title", str(f.title)));
    li.appendChild(head);
    const bits = [];
    if (num(f.time) !== null) bits.push("at " + fmtT(f.time) + " s");
    if (devById.has(f.device)) bits.push(devLabel(f.device));
    if (arr(f.frames).length) bits.push("frames " + fmtFrames(f.frames));
    li.appendChild(el("div", "finding-meta", bits.join(" · ")));
    if (f.evidence) li.appendChild(el("p", "evidence", f.evidence));
    if (f.advice) { const p = el("p", "advice"); p.appendChild(el("span", "advice-label", "Advice: ")); p.appendChild(document.createTextNode(str(f.advice))); li.appendChild(p); }
    li.addEventListener("click", () => selectFinding(i, false));
    li.addEventListener("keydown", (ev) => { if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); selectFinding(i, false); } });
    flist.appendChild(li);
  });

  // ---- event table
  const tbody = $("event-table").tBodies[0], rows = [], rowText = [];
  const frag = document.createDocumentFragment();
  events.forEach((e, i) => {
    const tr = el("tr");
    tr.setAttribute("data-index", i);
    tr.setAttribute("data-frames", arr(e.frames).filter((n) => num(n) !== null).join(" "));
    if (arr(e.problems).length) { tr.className = "problem"; tr.setAttribute("data-problems", arr(e.problems).map(str).join(" ")); }
    const cells = [[fmtT(num(e.time)), "t"], [devLabel(e.device), "d"], [str(e.lane), "l"], [str(e.kind), "k"], [str(e.summary), "s"], [fmtFrames(e.frames), "f"]];
    for (const [text, cls] of cells) {
      const td = el("td", cls);
      if (cls === "l" && text) td.appendChild(el("span", "lane-chip", text)); else td.textContent = text;
      tr.appendChild(td);
    }
    if (e.fields && typeof e.fields === "object" && Object.keys(e.fields).length) {
      let j = ""; try { j = JSON.stringify(e.fields); } catch (x) { j = ""; }
      if (j) tr.title = j.length > 1500 ? j.slice(0, 1500) + "…" : j;
    }
    tr.addEventListener("click", () => selectEvents([i], false));
    rows.push(tr);
    rowText.push((cells.map((c) => c[0]).join(" ") + " " + arr(e.frames).join(" ") + " " + arr(e.problems).join(" ")).toLowerCase());
    frag.appendChild(tr);
  });
  if (events.length === 0) { const tr = el("tr"); const td = el("td", "empty", "No events."); td.colSpan = 6; tr.appendChild(td); frag.appendChild(tr); }
  tbody.appendChild(frag);
  const filter = $("event-filter"), count = $("event-count");
  function applyFilter() {
    const q = filter.value.trim().toLowerCase();
    let shown = 0;
    rows.forEach((tr, i) => { const ok = !q || rowText[i].includes(q); tr.hidden = !ok; if (ok) shown++; });
    count.textContent = q ? shown + " of " + rows.length + " events" : rows.length + " event" + (rows.length === 1 ? "" : "s");
  }
  filter.addEventListener("input", applyFilter);
  applyFilter();

  // ---- selection: a finding highlights the events that share its frames; a marker or row highlights itself.
  const note = $("selection-note"), clearBtn = $("clear-selection"), wrap = $("event-table-wrap");
  function highlight(indices, text, scroll) {
    const set = new Set(indices);
    rows.forEach((tr, i) => tr.classList.toggle("hl", set.has(i)));
    note.textContent = text; clearBtn.hidden = !text;
    selTimes = indices.map((i) => events[i].time);
    for (const li of flist.children) li.classList.toggle("selected", li.getAttribute("data-finding") === String(selFinding));
    for (const m of document.querySelectorAll("#timeline-svg .fmark")) m.classList.toggle("selected", m.getAttribute("data-finding") === String(selFinding));
    const svg = $("timeline-svg");
    if (svg && svg.drawSelection) svg.drawSelection();
    const first = rows[indices[0]];
    if (scroll && first && !first.hidden) wrap.scrollTop = Math.max(0, first.offsetTop - wrap.clientHeight / 3);
  }
  function selectEvents(indices, scroll) {
    selFinding = -1;
    highlight(indices.filter((i) => i !== undefined), indices.length === 1 ? "1 event selected" : indices.length + " events selected", scroll);
  }
  function selectFinding(i, fromTimeline) {
    const f = findings[i];
    selFinding = i;
    const frames = new Set(arr(f.frames));
    const hits = [];
    events.forEach((e, j) => { if (arr(e.frames).some((n) => frames.has(n)) || (f.id && arr(e.problems).includes(f.id))) hits.push(j); });
    highlight(hits, "Finding " + str(f.id) + ": " + (hits.length === 0 ? "no events in its frames" : hits.length + " event" + (hits.length === 1 ? "" : "s") + " in its frames or flagged by it"), true);
    if (num(f.time) !== null && !selTimes.includes(f.time)) { selTimes.push(f.time); $("timeline-svg").drawSelection(); }
    if (fromTimeline) { const li = flist.children[i]; if (li) li.scrollIntoView({ block: "nearest" }); }
  }
  clearBtn.addEventListener("click", () => { selFinding = -1; highlight([], "", false); });

  // A link can open a zoomed view: report.html#t=4-12 (seconds).
  const zoom = /(?:^#|&)t=([\d.]+)-([\d.]+)/.exec(location.hash);
  if (zoom && +zoom[2] > +zoom[1]) setView([+zoom[1], +zoom[2]]); else drawTimeline();
  drawLegend();
  let resizeTimer = 0;
  window.addEventListener("resize", () => { clearTimeout(resizeTimer); resizeTimer = setTimeout(drawTimeline, 150); });
})();
</script>
</body>
</html>
"""#
}
