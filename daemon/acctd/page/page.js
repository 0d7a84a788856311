/* page.js - acctd's page (docs/page.md): the cgroup tree now, one cgroup's
 * history, the usage table, removed cgroups and acctd's health, from the
 * varlink API's documents at /api/*.
 *
 * Rules this file keeps:
 * - Names are data: every text from acctd goes into the document through
 *   textContent or a data-* property, never innerHTML (a cgroup may be named
 *   "<img src=x onerror=alert(1)>"). The Content-Security-Policy would stop
 *   an inline handler anyway; this keeps the markup from forming at all.
 * - Cheap for acctd: one request at a time (the server gives a client two
 *   slots, page-request.h); the live view polls at most once a second, and
 *   not while the tab is hidden; the history is asked again only as often as
 *   its steps can change.
 * - Gaps are gaps: a step without data (covered_us 0) ends a line, is shaded,
 *   and is never joined across or filled in.
 */
"use strict";

const $ = (sel) => document.querySelector(sel);

/* ---- formatting ------------------------------------------------------------ */

function fmtBytes(n) {
	if (n === undefined || n === null) return "–";
	const units = ["B", "K", "M", "G", "T", "P"];
	let i = 0, v = Math.abs(n);
	while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
	const text = i > 0 || (v < 10 && v !== Math.round(v)) ? v.toFixed(1) : String(Math.round(v));
	return (n < 0 ? "-" : "") + text + units[i];
}
const fmtRate = (n) => (n === undefined || n === null ? "–" : fmtBytes(n) + "/s");

function fmtDuration(us) {
	if (us === undefined || us === null) return "–";
	const s = us / 1e6;
	if (s < 1) return (us / 1000).toFixed(0) + "ms";
	if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + "s";
	if (s < 3600) return Math.floor(s / 60) + "min " + Math.round(s % 60) + "s";
	if (s < 86400) return Math.floor(s / 3600) + "h " + Math.round((s % 3600) / 60) + "min";
	return Math.floor(s / 86400) + "d " + Math.round((s % 86400) / 3600) + "h";
}
const fmtAge = (us) => (us === undefined || us === null ? "" : "age " + fmtDuration(us));

function fmtTime(us, span) {
	const d = new Date(us / 1000);
	const pad = (x) => String(x).padStart(2, "0");
	const hm = pad(d.getHours()) + ":" + pad(d.getMinutes());
	if (span <= 3600e6) return hm + ":" + pad(d.getSeconds());
	if (span <= 86400e6) return hm;
	return d.getFullYear() + "-" + pad(d.getMonth() + 1) + "-" + pad(d.getDate()) + " " + hm;
}

/* A cgroup path as text people read (docs/api.md, name-escape.h's text
 * mode): the characters a renderer obeys instead of showing (C0 and C1
 * controls, DEL, the bidi controls) as \xHH, one per UTF-8 byte, so that
 * /evil\u202ecod.exe does not show as /evilexe.doc. textContent keeps
 * markup out; this keeps the name's look its own. */
const OBEYED = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
const utf8 = new TextEncoder();
function shown(path) {
	return String(path).replace(OBEYED, (ch) =>
		Array.from(utf8.encode(ch), (b) => "\\x" + b.toString(16).padStart(2, "0")).join(""));
}

function el(tag, cls, text) {
	const e = document.createElement(tag);
	if (cls) e.className = cls;
	if (text !== undefined && text !== null) e.textContent = String(text);
	return e;
}

/* A cell with a value and, smaller, its bound and age. */
function valueCell(main, sub, sortValue, cls) {
	const td = el("td", cls, main);
	if (sub) td.appendChild(el("span", "sub", sub));
	if (sortValue !== undefined && sortValue !== null) td.dataset.v = String(sortValue);
	return td;
}

/* ---- the API: one request at a time ----------------------------------------- */

const queue = [];
let inFlight = false;

/* /api/NAME with params; resolves to the reply's parameters, rejects with
 * the API's error. A 503 or 429 (a slot or budget of this client's) is
 * retried after its Retry-After, a few times. */
function api(name, params) {
	return new Promise((resolve, reject) => {
		queue.push({ name, params: params || {}, resolve, reject, tries: 0 });
		pump();
	});
}

async function pump() {
	if (inFlight || queue.length === 0) return;
	inFlight = true;
	const job = queue.shift();
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(job.params))
		if (v !== undefined && v !== null) q.set(k, String(v));
	let retry = 0;
	try {
		const r = await fetch("/api/" + job.name + (q.toString() ? "?" + q : ""), { cache: "no-store" });
		const text = await r.text();
		if ((r.status === 503 || r.status === 429) && job.tries < 5) {
			retry = 1000 * (parseInt(r.headers.get("Retry-After") || "1", 10) || 1);
		} else {
			let doc = null;
			try { doc = JSON.parse(text); } catch (e) { /* a text/plain refusal */ }
			if (r.ok && doc && doc.parameters) job.resolve(doc.parameters);
			else job.reject(new Error(doc && doc.error ? doc.error + " " + JSON.stringify(doc.parameters || {})
				: r.status + " " + text.trim()));
		}
	} catch (e) {
		job.reject(e);
	}
	if (retry) {
		job.tries++;
		setTimeout(() => { queue.unshift(job); inFlight = false; pump(); }, retry);
		return;
	}
	inFlight = false;
	pump();
}

/* ---- state ------------------------------------------------------------------ */

const state = {
	cgroups: [],        /* List's rows, in the API's (tree) order */
	sort: "path",
	filter: "",
	selected: null,     /* the cgroup whose history is shown */
	window: 600,        /* the history's window, seconds */
	until: null,        /* a fixed end of the window (seconds since the epoch) from the URL, or live */
	status: null,
	timer: null,
	historyAt: 0,       /* when the history was last asked (ms) */
};

/* ---- the tree --------------------------------------------------------------- */

const depthOf = (p) => (p === "/" ? 0 : p.split("/").length - 1);
const leafOf = (p) => (p === "/" ? "/" : p.slice(p.lastIndexOf("/") + 1));
const psiMax = (c) => {
	const p = c.psi_some_avg10 || {};
	return Math.max(p.cpu || 0, p.memory || 0, p.io || 0);
};
const sortKeys = {
	memory: (c) => (c.memory ? c.memory.value : -1),
	cpu: (c) => (c.cpu_rate ? c.cpu_rate.value : -1),
	io: (c) => (c.io_read_bytes_rate || 0) + (c.io_write_bytes_rate || 0),
	psi: psiMax,
	tasks: (c) => (c.tasks ? c.tasks.value : -1),
};

function treeRow(c, treeOrder) {
	const tr = el("tr", c.state === "dead" ? "dead" : "");
	tr.dataset.path = c.path;
	if (c.path === state.selected) tr.classList.add("selected");
	const name = treeOrder ? "  ".repeat(depthOf(c.path)) + leafOf(c.path) : c.path;
	const first = el("td", "name", shown(name));
	first.title = shown(c.path);
	tr.appendChild(first);

	const m = c.memory;
	tr.appendChild(m ? valueCell(fmtBytes(m.value), "±" + fmtBytes(m.bound || 0) + " " + fmtAge(m.age_us), m.value, "mem")
		: valueCell("–", null, null, "mem"));
	const cpu = c.cpu_rate;
	tr.appendChild(cpu ? valueCell(cpu.value.toFixed(2), fmtAge(cpu.age_us), cpu.value, "cpu")
		: valueCell("–", null, null, "cpu"));
	const io = c.io_read_bytes || c.io_write_bytes;
	const ioBound = (c.io_read_bytes && c.io_read_bytes.bound || 0) + (c.io_write_bytes && c.io_write_bytes.bound || 0);
	tr.appendChild(valueCell(fmtRate(c.io_read_bytes_rate) + " / " + fmtRate(c.io_write_bytes_rate),
		io ? (ioBound ? "±" + fmtBytes(ioBound) + " " : "") + fmtAge(io.age_us) : null, sortKeys.io(c), "io"));
	const p = c.psi_some_avg10;
	tr.appendChild(p ? valueCell("cpu " + (p.cpu || 0).toFixed(1) + "% mem " + (p.memory || 0).toFixed(1) +
		"% io " + (p.io || 0).toFixed(1) + "%", null, psiMax(c), "psi") : valueCell("–", null, null, "psi"));
	const t = c.tasks;
	tr.appendChild(t ? valueCell(String(t.value), (t.bound ? "±" + t.bound + " " : "") + fmtAge(t.age_us), t.value, "tasks")
		: valueCell("–", null, null, "tasks"));
	return tr;
}

function renderTree() {
	const f = state.filter.toLowerCase();
	let rows = state.cgroups.filter((c) => !f || c.path.toLowerCase().includes(f));
	const treeOrder = state.sort === "path";
	if (!treeOrder) {
		const k = sortKeys[state.sort];
		rows = rows.slice().sort((a, b) => k(b) - k(a) || (a.path < b.path ? -1 : 1));
	}
	const frag = document.createDocumentFragment();
	for (const c of rows) frag.appendChild(treeRow(c, treeOrder));
	$("#tree tbody").replaceChildren(frag);
	$("#tree-count").textContent = rows.length + " of " + state.cgroups.length + " cgroups";
	for (const th of document.querySelectorAll("#tree th"))
		th.classList.toggle("sorted", th.dataset.sort === state.sort);
}

/* ---- health ----------------------------------------------------------------- */

function renderHealth(s) {
	const dl = el("dl");
	const add = (k, v, cls) => {
		dl.appendChild(el("dt", null, k));
		dl.appendChild(el("dd", cls, v));
	};
	add("status", s.status);
	add("version", s.version + ", up " + fmtDuration(s.uptime_us));
	add("cgroups", s.cgroups_live + " live, " + s.cgroups_dead + " removed kept as tombstones (" + s.cgroup_mode +
		" at " + s.cgroup_root + ")");
	const pass = (p, every) => p ? p.cgroups + " cgroups in " + fmtDuration(p.wall_us) + ", " +
		(p.cpu_seconds * 1000).toFixed(1) + " ms of CPU, " + p.cgroups_failed + " failed (every " + fmtDuration(every) + ")" : "–";
	add("fast pass", pass(s.last_fast_pass, s.fast_interval_us));
	add("slow pass", pass(s.last_slow_pass, s.slow_interval_us));
	for (const c of s.collectors || [])
		add("collector " + c.hierarchy, c.collector + (c.reason ? ": " + c.reason : ""));
	const h = s.history;
	if (h) {
		const bad = h.state !== "recording";
		add("history", h.state + (h.enabled ? "" : " (off)") + ", " + fmtBytes(h.file_bytes) + " in " + h.path +
			", every " + fmtDuration(h.interval_us) +
			(h.last_recording_age_us !== undefined ? ", last " + fmtDuration(h.last_recording_age_us) + " ago" : "") +
			(h.last_error ? "; last error: " + h.last_error : "") + (h.warning ? "; " + h.warning : ""), bad ? "bad" : "");
	} else {
		add("history", "not recorded");
	}
	const r = s.reconciliation;
	if (r) {
		const v = Object.entries(r.violations || {}).filter(([, n]) => n > 0);
		const total = Object.values(r.violations_total || {}).reduce((a, b) => a + b, 0);
		add("reconciliation", r.passes + " passes, " + r.checked_parents + " parents checked, " +
			(v.length ? v.map(([k, n]) => k + " " + n).join(", ") : "no violations now") + ", " + total + " in all" +
			(r.last_violation ? "; last: " + r.last_violation : ""), v.length ? "warn" : "");
	}
	add("reloads", s.reloads + " (" + s.reload_failures + " failed)" + (s.reload_result ? ": " + s.reload_result : ""));
	$("#health").replaceChildren(dl);
	const sum = $("#summary");
	sum.textContent = s.status;
	sum.className = h && h.state !== "recording" && h.enabled ? "warn" : "";
}

/* ---- the live loop ------------------------------------------------------------ */

async function tick() {
	state.timer = null;
	if (!$("#live").checked || document.hidden) return;
	try {
		const list = await api("list");
		state.cgroups = list.cgroups || [];
		renderTree();
		state.status = (await api("status")).status;
		renderHealth(state.status);
		$("#updated").textContent = "updated " + new Date().toLocaleTimeString();
		$("#updated").className = "";
		document.body.dataset.ticks = String(Number(document.body.dataset.ticks || 0) + 1);
		if (state.selected && state.until === null && Date.now() - state.historyAt > historyRefreshMs())
			loadHistory();
	} catch (e) {
		$("#updated").textContent = "update failed: " + e.message;
		$("#updated").className = "bad";
	}
	schedule();
}

function schedule() {
	if (state.timer !== null) clearTimeout(state.timer);
	state.timer = null;
	if (!$("#live").checked || document.hidden) return;
	const ms = Math.max(1000, Number($("#interval").value) || 2000);
	state.timer = setTimeout(tick, ms);
}

/* The history changes once per recording: ask again after a tenth of the
 * window, at least every 10 s, at most every 10 min. */
const historyRefreshMs = () => Math.min(600e3, Math.max(10e3, state.window * 100));

/* ---- plots ------------------------------------------------------------------- */

const SVGNS = "http://www.w3.org/2000/svg";
function svgEl(tag, attrs, cls) {
	const e = document.createElementNS(SVGNS, tag);
	for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
	if (cls) e.setAttribute("class", cls);
	return e;
}

function niceMax(v) {
	if (!(v > 0)) return 1;
	const p = Math.pow(10, Math.floor(Math.log10(v)));
	for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
	return 10 * p;
}

/* One plot: series = [{name, get(step) -> number|undefined}], drawn over
 * doc's window; a line per run of steps with data, a shaded band per run
 * without. peak: {value, label} drawn as a dashed line, or null. */
function plot(quantity, title, doc, series, fmt, peak) {
	const W = 860, H = 190, L = 70, R = 14, T = 22, B = 28;
	const since = doc.since_us, until = doc.until_us, step = doc.step_us, span = until - since;
	const steps = doc.steps || [];
	let max = 0;
	for (const s of series) for (const st of steps) {
		const v = st.covered_us > 0 ? s.get(st) : undefined;
		if (v !== undefined && v > max) max = v;
	}
	if (peak && peak.value > max) max = peak.value;
	max = niceMax(max);
	const x = (t) => L + ((t - since) / span) * (W - L - R);
	const y = (v) => T + (1 - v / max) * (H - T - B);

	const svg = svgEl("svg", { width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img" });
	svg.dataset.quantity = quantity;
	svg.dataset.since_us = String(since);
	svg.dataset.until_us = String(until);
	svg.dataset.step_us = String(step);
	svg.appendChild(svgEl("text", { x: L, y: 14 }, "title")).textContent = title;

	/* gaps first, under everything: runs of steps without data */
	for (let i = 0; i < steps.length;) {
		if (steps[i].covered_us > 0) { i++; continue; }
		let j = i;
		while (j < steps.length && steps[j].covered_us === 0) j++;
		const from = steps[i].t_us, to = Math.min(until, j < steps.length ? steps[j].t_us : until);
		const g = svgEl("rect", { x: x(from), y: T, width: Math.max(1, x(to) - x(from)), height: H - T - B }, "gap");
		g.dataset.from_us = String(from);
		g.dataset.to_us = String(to);
		g.appendChild(svgEl("title")).textContent = "no data " + fmtTime(from, span) + " – " + fmtTime(to, span);
		svg.appendChild(g);
		i = j;
	}
	/* axes and grid */
	for (const f of [0, 0.5, 1]) {
		svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f) }, f === 0 ? "axis" : "grid"));
		svg.appendChild(svgEl("text", { x: L - 6, y: y(max * f) + 4, "text-anchor": "end" })).textContent = fmt(max * f);
	}
	svg.appendChild(svgEl("line", { x1: L, x2: L, y1: T, y2: H - B }, "axis"));
	for (let k = 0; k <= 4; k++) {
		const t = since + (span * k) / 4;
		svg.appendChild(svgEl("text", { x: x(t), y: H - 8, "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle" }))
			.textContent = fmtTime(t, span);
	}
	/* lines: a path per run of steps with a value, points at each step's
	 * middle (its value is the step's) */
	series.forEach((s, si) => {
		let run = [];
		const flush = () => {
			if (run.length > 1) {
				const p = svgEl("path", { d: run.map((q, k) => (k ? "L" : "M") + q.x.toFixed(1) + " " + q.y.toFixed(1)).join(" ") },
					"line s" + si + (s.dashed ? " dashed" : ""));
				p.dataset.series = s.name;
				p.dataset.from_us = String(run[0].t);
				p.dataset.to_us = String(run[run.length - 1].t);
				svg.appendChild(p);
			}
			run = [];
		};
		for (const st of steps) {
			const v = st.covered_us > 0 ? s.get(st) : undefined;
			if (v === undefined || v === null || !isFinite(v)) { flush(); continue; }
			const mid = st.t_us + step / 2;
			const q = { x: x(Math.min(mid, until)), y: y(v), t: st.t_us };
			run.push(q);
			const c = svgEl("circle", { cx: q.x.toFixed(1), cy: q.y.toFixed(1), r: s.dashed ? 1.5 : 2 },
				"pt s" + si + (st.cpu_clipped && quantity === "cpu" ? " clipped" : ""));
			c.dataset.series = s.name;
			c.dataset.t_us = String(st.t_us);
			c.dataset.v = String(v);
			c.appendChild(svgEl("title")).textContent = s.name + " " + fmt(v) + " at " + fmtTime(st.t_us, span) +
				(st.covered_us < step ? " (data for " + fmtDuration(st.covered_us) + " of the step)" : "");
			svg.appendChild(c);
		}
		flush();
	});
	if (peak) {
		svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y(peak.value), y2: y(peak.value) }, "peak"));
		svg.appendChild(svgEl("text", { x: W - R - 4, y: y(peak.value) - 4, "text-anchor": "end" })).textContent = peak.label;
	}
	/* legend */
	let lx = W - R - series.reduce((a, s) => a + 20 + 7 * s.name.length, 0);
	series.forEach((s, si) => {
		svg.appendChild(svgEl("rect", { x: lx, y: 6, width: 10, height: 10 }, "s" + si));
		svg.appendChild(svgEl("text", { x: lx + 14, y: 15 })).textContent = s.name;
		lx += 20 + 7 * s.name.length;
	});
	return svg;
}

function renderHistory(doc) {
	const steps = doc.steps || [];
	const covered = steps.filter((s) => s.covered_us > 0);
	let peak = null;
	for (const s of covered)
		if (s.memory_max_bytes !== undefined && (peak === null || s.memory_max_bytes > peak)) peak = s.memory_max_bytes;
	const gaps = steps.length - covered.length;
	const plots = [
		plot("memory", "Memory (mean and most of each step)", doc, [
			{ name: "mean", get: (s) => s.memory_mean_bytes },
			{ name: "max", get: (s) => s.memory_max_bytes, dashed: true },
		], fmtBytes, peak === null ? null : { value: peak, label: "peak " + fmtBytes(peak) }),
		plot("cpu", "CPU (cores)", doc, [{ name: "cores", get: (s) => s.cpu_cores }], (v) => v.toFixed(2), null),
		plot("io", "I/O (bytes per second)", doc, [
			{ name: "read", get: (s) => s.io_read_bytes_per_s },
			{ name: "written", get: (s) => s.io_write_bytes_per_s },
		], fmtRate, null),
	];
	$("#plots").replaceChildren(...plots);
	$("#history-note").textContent = steps.length + " steps of " + fmtDuration(doc.step_us) + ", " +
		fmtTime(doc.since_us, doc.until_us - doc.since_us) + " to " + fmtTime(doc.until_us, doc.until_us - doc.since_us) +
		(gaps ? "; " + gaps + " without data (acctd was not recording, or the cgroup did not exist): shaded, never joined" : "") +
		(steps.some((s) => s.cpu_clipped) ? "; red points: CPU cut to the host's CPUs" : "");
	document.body.dataset.historyLoads = String(Number(document.body.dataset.historyLoads || 0) + 1);
}

async function loadHistory() {
	const cg = state.selected;
	if (!cg) return;
	state.historyAt = Date.now();
	$("#history-section").hidden = false;
	$("#history-cgroup").textContent = shown(cg);
	for (const b of document.querySelectorAll("#history-windows button"))
		b.classList.toggle("active", Number(b.dataset.window) === state.window);
	const params = { cgroup: cg };
	if (state.until !== null) {
		params.since_us = Math.round((state.until - state.window) * 1e6);
		params.until_us = Math.round(state.until * 1e6);
	} else {
		params.since_us = -state.window * 1e6;
	}
	try {
		const doc = await api("history", params);
		if (cg === state.selected) renderHistory(doc);
	} catch (e) {
		$("#history-note").textContent = "No history: " + e.message;
		$("#plots").replaceChildren();
	}
	try {
		const now = await api("get", { cgroup: cg });
		if (cg === state.selected) renderNow(now.cgroup);
	} catch (e) {
		/* removed since: its record is in the history and the removed table */
		$("#now tbody").replaceChildren();
	}
}

/* A value's unit from its name (docs/acctd.md): bytes, microseconds, or a count. */
function fmtByName(name) {
	if (/^(memory|swap)(\.|$)/.test(name) && !/events|under_oom/.test(name)) return fmtBytes;
	if (/_bytes$/.test(name)) return fmtBytes;
	if (/^cpu\.(usage|user|system|throttled)$/.test(name)) return fmtDuration;
	return (v) => String(v);
}

function renderNow(cg) {
	const frag = document.createDocumentFragment();
	for (const [name, v] of Object.entries(cg.values || {})) {
		if (!v) continue; /* never read, or no limit set */
		/* a limit of -1 is none set (docs/acctd.md) */
		const fmt = v.value < 0 && /\.(max|high|low|min)$/.test(name) ? () => "none" : fmtByName(name);
		const tr = el("tr");
		tr.dataset.name = name;
		tr.appendChild(el("td", "name", name));
		tr.appendChild(valueCell(fmt(v.value), null, v.value));
		tr.appendChild(valueCell(v.bound ? fmt(v.bound) : "0"));
		tr.appendChild(valueCell(v.kernel_bound ? fmt(v.kernel_bound) : ""));
		tr.appendChild(valueCell(fmtDuration(v.age_us)));
		frag.appendChild(tr);
	}
	$("#now tbody").replaceChildren(frag);
}

function select(path) {
	state.selected = path;
	for (const tr of document.querySelectorAll("#tree tbody tr"))
		tr.classList.toggle("selected", tr.dataset.path === path);
	loadHistory();
}

/* ---- usage and removed cgroups ---------------------------------------------------- */

const usageKeys = {
	cpu: (u) => (u.cpu_usec ? u.cpu_usec.value : -1),
	memory: (u) => (u.memory_avg_bytes !== undefined ? u.memory_avg_bytes : -1),
	io: (u) => (u.io_read_bytes ? u.io_read_bytes.value : 0) + (u.io_write_bytes ? u.io_write_bytes.value : 0),
};

function total(t, fmt) {
	if (!t) return ["–", null];
	return [fmt(t.value), t.bound ? "±" + fmt(t.bound) : null];
}

async function loadUsage() {
	const win = Number($("#usage-window").value);
	const top = Math.max(1, Number($("#usage-top").value) || 10);
	const level = Math.max(0, Number($("#usage-level").value) || 0);
	const by = $("#usage-by").value;
	try {
		const params = { since_us: -win * 1e6 };
		if (level > 0) params.group_by_level = level;
		const doc = await api("usage", params);
		const rows = (doc.cgroups || []).slice().sort((a, b) => usageKeys[by](b) - usageKeys[by](a)).slice(0, top);
		const secs = (doc.until_us - doc.since_us) / 1e6;
		const frag = document.createDocumentFragment();
		for (const u of rows) {
			const tr = el("tr");
			tr.dataset.path = u.path;
			tr.appendChild(el("td", "name", shown(u.path) + (u.subtree_cgroups > 0 ? " (and " + u.subtree_cgroups + " below)" : "")));
			const [cpu, cpuB] = total(u.cpu_usec, fmtDuration);
			tr.appendChild(valueCell(cpu + (u.cpu_clipped ? "*" : ""), cpuB, u.cpu_usec && u.cpu_usec.value));
			tr.appendChild(valueCell(u.cpu_usec && u.recorded_us ? (u.cpu_usec.value / u.recorded_us).toFixed(2) : "–"));
			tr.appendChild(valueCell(fmtBytes(u.memory_avg_bytes)));
			tr.appendChild(valueCell(fmtBytes(u.memory_max_bytes)));
			tr.appendChild(valueCell(fmtBytes(u.memory_peak_bytes)));
			tr.appendChild(valueCell(...total(u.io_read_bytes, fmtBytes)));
			tr.appendChild(valueCell(...total(u.io_write_bytes, fmtBytes)));
			tr.appendChild(valueCell(String(u.lives)));
			frag.appendChild(tr);
		}
		$("#usage tbody").replaceChildren(frag);
		const gapUs = (doc.gaps || []).reduce((a, g) => a + (g.to_us - g.from_us), 0);
		$("#usage-note").textContent = "Top " + rows.length + " of " + (doc.cgroups || []).length + " by " + by +
			" over the last " + fmtDuration(secs * 1e6) + (level ? ", grouped at level " + level : "") +
			(gapUs ? "; acctd did not record for " + fmtDuration(gapUs) + " of it" : "") +
			(rows.some((u) => u.cpu_clipped) ? "; *: CPU cut to the host's CPUs over the window" : "");
	} catch (e) {
		$("#usage-note").textContent = "No usage: " + e.message;
	}
	await loadRemoved(win);
}

async function loadRemoved(win) {
	try {
		const doc = await api("usage", { since_us: -win * 1e6, include_removed: true });
		const gone = (doc.cgroups || []).filter((u) => u.removed_us).sort((a, b) => b.removed_us - a.removed_us);
		const span = doc.until_us - doc.since_us;
		const frag = document.createDocumentFragment();
		for (const u of gone) {
			const tr = el("tr");
			tr.dataset.path = u.path;
			tr.appendChild(el("td", "name", shown(u.path)));
			tr.appendChild(valueCell(fmtTime(u.removed_us, span)));
			tr.appendChild(valueCell(fmtTime(u.first_seen_us, span)));
			tr.appendChild(valueCell(...total(u.cpu_usec, fmtDuration)));
			tr.appendChild(valueCell(fmtBytes(u.memory_max_bytes)));
			tr.appendChild(valueCell(fmtBytes(u.memory_peak_bytes)));
			tr.appendChild(valueCell(...total(u.io_read_bytes, fmtBytes)));
			tr.appendChild(valueCell(...total(u.io_write_bytes, fmtBytes)));
			frag.appendChild(tr);
		}
		if (!gone.length) {
			const tr = el("tr");
			const td = el("td", "hint", "none in this window");
			td.colSpan = 8;
			tr.appendChild(td);
			frag.appendChild(tr);
		}
		$("#removed tbody").replaceChildren(frag);
	} catch (e) {
		const tr = el("tr");
		tr.appendChild(el("td", "bad", "No records: " + e.message));
		$("#removed tbody").replaceChildren(tr);
	}
}

/* ---- start ---------------------------------------------------------------------- */

/* #cgroup=PATH&window=SECONDS&until=SECONDS: a history to open, over a fixed
 * window when until is given (a link to a moment). */
function fromHash() {
	const h = new URLSearchParams(location.hash.slice(1));
	if (h.get("window")) state.window = Math.max(60, Number(h.get("window")) || 600);
	if (h.get("until")) state.until = Number(h.get("until")) || null;
	if (h.get("sort") && (h.get("sort") === "path" || sortKeys[h.get("sort")])) state.sort = h.get("sort");
	if (h.get("filter") !== null) $("#filter").value = state.filter = h.get("filter");
	if (h.get("cgroup")) select(h.get("cgroup"));
}

function start() {
	/* What the Content-Security-Policy stopped, counted where a test (or a
	 * curious person) can read it: none, if the page keeps its rules. */
	document.addEventListener("securitypolicyviolation", (e) => {
		document.body.dataset.cspViolations = String(Number(document.body.dataset.cspViolations || 0) + 1);
		console.warn("blocked by the Content-Security-Policy: " + e.violatedDirective + " " + e.blockedURI);
	});
	$("#tree thead").addEventListener("click", (e) => {
		const th = e.target.closest("th");
		if (!th || !th.dataset.sort) return;
		state.sort = th.dataset.sort;
		renderTree();
	});
	$("#tree tbody").addEventListener("click", (e) => {
		const tr = e.target.closest("tr");
		if (tr && tr.dataset.path) select(tr.dataset.path);
	});
	$("#filter").addEventListener("input", () => { state.filter = $("#filter").value; renderTree(); });
	$("#history-windows").addEventListener("click", (e) => {
		const b = e.target.closest("button");
		if (!b) return;
		state.window = Number(b.dataset.window);
		loadHistory();
	});
	$("#live").addEventListener("change", () => (state.timer === null ? tick() : schedule()));
	$("#interval").addEventListener("change", schedule);
	document.addEventListener("visibilitychange", () => { if (!document.hidden && state.timer === null) tick(); });
	for (const id of ["#usage-window", "#usage-top", "#usage-by", "#usage-level"])
		$(id).addEventListener("change", loadUsage);
	$("#usage-refresh").addEventListener("click", loadUsage);
	window.addEventListener("hashchange", fromHash);
	fromHash();
	tick();
	loadUsage();
}

start();
