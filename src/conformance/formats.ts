/**
 * Report renderers: one Report in, one document out (JUnit XML, Markdown,
 * self-contained HTML, JSON, terminal summary). Pure string functions with no
 * timestamps or absolute paths, so a report is a deterministic function of
 * the results (Note [One result per op x dtype x check] in types.ts).
 */
import { assertNever } from "../util/errors.js";
import type { Style } from "../util/term.js";
import { cmp, isProblem, PROBLEM_STATUSES, STATUS_SEVERITY } from "../vocab.js";
import { compareResults, dtypeRank, passingOps } from "./aggregate.js";
import { FAMILIES, FAMILY_TITLES, type Family, familyOf } from "./families.js";
import { isModel, modelsHtml, modelsMarkdown, modelsTerminal } from "./models.js";
import { type Report, type Result, STATUSES, type Status, type Summary } from "./types.js";
import { isUpstream, upstreamHtml, upstreamMarkdown, upstreamTerminal } from "./upstream-report.js";

export function toJson(r: Report): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}

function xml(s: string): string {
  return (
    s
      // XML 1.0 cannot carry most control characters, even escaped
      // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping them is the point
      .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/g, "")
      .replace(/&/g, "&amp;")
      .replace(/</g, "&lt;")
      .replace(/>/g, "&gt;")
      .replace(/"/g, "&quot;")
  );
}

const html = xml;

/** Note [Compiled mode]: " [compiled]" after a result's name in a `test --compile` report. */
function compiledTag(r: { readonly compiled?: true }): string {
  return r.compiled ? " [compiled]" : "";
}

export function rerunCommand(r: Result): string {
  return `python -m opgen_conformance rerun --config <run config> --op '${r.op}' --dtype ${r.dtype} --seed ${r.seed} --sample ${r.sample}`;
}

/** One <testcase> per op x dtype x check; classname = op, name = dtype.check. */
export function toJunit(rep: Report): string {
  const s = rep.summary;
  const byOp = new Map<string, Result[]>();
  for (const r of rep.results) {
    const list = byOp.get(r.op) ?? [];
    list.push(r);
    byOp.set(r.op, list);
  }
  const failures = s.failed + (s.compile_failed ?? 0) + s.xpass;
  const errors = s.crashed + s.timed_out;
  const skipped = s.skipped + s.xfail;
  const lines: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  lines.push(
    `<testsuites name="opgen-backend conformance (${xml(rep.meta.device)}${rep.meta.compiled ? ", compiled" : ""})" tests="${s.total}" failures="${failures}" errors="${errors}" skipped="${skipped}">`,
  );
  for (const [op, rs] of byOp) {
    // Problems split as JUnit does: an error is a sample that never finished.
    const e = rs.filter((r) => r.status === "crash" || r.status === "timeout").length;
    const f = rs.filter((r) => isProblem(r.status)).length - e;
    const sk = rs.filter((r) => r.status === "skip" || r.status === "xfail").length;
    lines.push(`  <testsuite name="${xml(op)}" tests="${rs.length}" failures="${f}" errors="${e}" skipped="${sk}">`);
    for (const r of rs) {
      const open = `    <testcase classname="${xml(op)}" name="${xml(`${r.dtype}.${r.check}${compiledTag(r)}`)}"`;
      const where = `seed=${r.seed} sample=${r.sample} input=${r.input}`;
      switch (r.status) {
        case "pass":
          lines.push(`${open}/>`);
          break;
        case "warn":
          lines.push(`${open}><system-out>${xml(`warning: ${r.message}`)}</system-out></testcase>`);
          break;
        case "fail":
        case "compile-failed":
        case "xpass":
          lines.push(
            `${open}><failure type="${r.status.toUpperCase()}" message="${xml(r.message)}">${xml(`${r.message}\n${where}\n${rerunCommand(r)}`)}</failure></testcase>`,
          );
          break;
        case "crash":
        case "timeout":
          lines.push(
            `${open}><error type="${r.status.toUpperCase()}" message="${xml(r.message)}">${xml(`${r.message}\n${where}\n${rerunCommand(r)}`)}</error></testcase>`,
          );
          break;
        case "skip":
        case "xfail":
          lines.push(
            `${open}><skipped message="${xml(r.status === "xfail" ? `XFAIL: ${r.message}` : r.message)}"/></testcase>`,
          );
          break;
        default:
          assertNever(r.status, "status");
      }
    }
    lines.push("  </testsuite>");
  }
  lines.push("</testsuites>");
  return `${lines.join("\n")}\n`;
}

/**
 * A `test --distributed N` report (meta.distributed): its ops are the c10d
 * collectives, none of them core ATen, so its headline counts collectives
 * and names the backend and world size, not a core-ATen level of 0/0.
 */
function distributedTitle(rep: Report): string | undefined {
  const d = rep.meta.distributed;
  return d ? `distributed tier (c10d backend ${d.backend}, world size ${d.world})` : undefined;
}

function collectivesLine(s: Summary): string {
  return `${s.ops_passed}/${s.ops} collectives pass every check, against Gloo on CPU tensors`;
}

export function coreLevel(s: Summary): string {
  const pct = s.core_total > 0 ? ((100 * s.core_passed) / s.core_total).toFixed(1) : "0.0";
  const d = s.core_decomposed ?? 0;
  // Note [Core overloads through their decomposition] (coverage.ts): say what served them.
  const fb = s.core_decomposed_fallback ?? 0;
  const k = s.core_passed - d;
  const how = d > 0 ? `: ${k} kernel${k === 1 ? "" : "s"}, ${d} through their decomposition` : "";
  const fell = fb > 0 ? `; ${fb} decompose${fb === 1 ? "s" : ""} into the CPU fallback` : "";
  return `${s.core_passed}/${s.core_total} (${pct}%)${how}${fell}`;
}

const ICON: Readonly<Record<Status, string>> = {
  pass: "✅",
  warn: "⚠️",
  fail: "❌",
  "compile-failed": "🧱",
  crash: "💥",
  timeout: "⏱️",
  skip: "⏭️",
  xfail: "🔕",
  xpass: "❗",
};

export function problems(rep: Report): Result[] {
  return rep.results.filter((r) => isProblem(r.status));
}

function mdCell(s: string, max = 120): string {
  const one = s.replace(/\s+/g, " ").trim();
  const cut = one.length > max ? `${one.slice(0, max - 1)}…` : one;
  return cut.replace(/\|/g, "\\|").replace(/`/g, "'");
}

/** Problems grouped per op: worst status, the dtypes and checks involved, the first message. */
export interface OpProblems {
  readonly op: string;
  readonly status: Status;
  readonly dtypes: readonly string[];
  readonly checks: readonly string[];
  readonly first: Result;
  readonly count: number;
}

export function problemsByOp(rep: Report): OpProblems[] {
  const by = new Map<string, Result[]>();
  for (const r of [...problems(rep)].sort(compareResults)) {
    const list = by.get(r.op) ?? [];
    list.push(r);
    by.set(r.op, list);
  }
  return [...by].map(([op, rs]) => ({
    op,
    status: worst(rs),
    dtypes: [...new Set(rs.map((r) => r.dtype))],
    checks: [...new Set(rs.map((r) => r.check))],
    first: rs[0]!,
    count: rs.length,
  }));
}

/** What the report says of the uncovered core overloads, in one line (undefined when it does not know). */
export function uncoveredLine(rep: Report): string | undefined {
  const c = rep.coverage;
  if (!c) return undefined;
  const fallback = c.missing.filter((m) => m.fate === "cpu-fallback").length;
  const raise = c.missing.filter((m) => m.fate === "not-implemented").length;
  const parts = [
    fallback ? `${fallback} fall back to CPU` : "",
    raise ? `${raise} raise NotImplementedError` : "",
    c.missing.length - fallback - raise ? `${c.missing.length - fallback - raise} decompose or run a composite` : "",
  ].filter((x) => x);
  return `${c.core_covered}/${c.core_total} core overloads registered; ${c.missing.length} not covered${parts.length ? ` (${parts.join(", ")})` : ""}`;
}

/**
 * Short enough for a pull-request comment or a CI job summary: a few lines of
 * totals, then at most `maxRows` operators with problems (one row per op),
 * then how many more the full report has.
 */
export function toMarkdown(rep: Report, maxRows = 20): string {
  const s = rep.summary;
  const bad = problemsByOp(rep);
  const nBad = s.failed + (s.compile_failed ?? 0) + s.crashed + s.timed_out + s.xpass;
  const out: string[] = [];
  const verdict =
    nBad === 0
      ? "✅ no problems"
      : `❌ ${nBad} problem${nBad === 1 ? "" : "s"} in ${bad.length} operator${bad.length === 1 ? "" : "s"}`;
  const dist = distributedTitle(rep);
  out.push(
    dist
      ? `### opgen-backend ${dist}: \`${rep.meta.device}\`: ${verdict}`
      : `### opgen-backend conformance: \`${rep.meta.device}\`${rep.meta.compiled ? " (compiled, Inductor)" : ""}: ${verdict}`,
  );
  out.push("");
  const modelRun = s.ops === 0 && (Boolean(rep.models?.length) || Boolean(rep.upstream)); // or an upstream run
  out.push(
    (dist
      ? `**${collectivesLine(s)}** · `
      : modelRun
        ? ""
        : `**Core ATen conformance: ${coreLevel(s)}** · ${s.ops_passed}/${s.ops} operators pass everything · `) +
      `${s.total} results: ${s.passed} passed, ${s.warned} warned, ${s.failed} failed, ` +
      `${rep.meta.compiled ? `${s.compile_failed ?? 0} compile-failed, ` : ""}${s.crashed} crashed, ` +
      `${s.timed_out} timed out, ${s.skipped} skipped, ${s.xfail} xfail, ${s.xpass} xpass`,
  );
  const unc = uncoveredLine(rep);
  out.push("");
  out.push(
    dist
      ? `Ranks are processes on one machine over Gloo on 127.0.0.1; each collective and dtype against Gloo on the same CPU tensors.`
      : `${unc ? `${unc}. ` : ""}Seed ${rep.meta.seed}, up to ${rep.meta.max_samples} samples per op and dtype${rep.meta.shards.length ? `, shards ${rep.meta.shards.join(" ")}` : ""}.`,
  );
  out.push(...modelsMarkdown(rep.models ?? []));
  out.push(...upstreamMarkdown(rep.upstream));
  if (bad.length > 0) {
    out.push("");
    out.push("| | op | dtypes | checks | first problem | rerun |");
    out.push("|---|---|---|---|---|---|");
    for (const p of bad.slice(0, maxRows)) {
      const f = p.first;
      out.push(
        `| ${ICON[p.status]} ${p.status} | \`${p.op}\` | ${p.dtypes.join(" ")} | ${p.checks.join(" ")} | ${mdCell(`${f.dtype} ${f.check}: ${f.message}`)} | \`--seed ${f.seed} --sample ${f.sample}\` |`,
      );
    }
    if (bad.length > maxRows) {
      const more = bad.slice(maxRows);
      const results = more.reduce((n, p) => n + p.count, 0);
      out.push("");
      out.push(
        `${more.length} more operator${more.length === 1 ? "" : "s"} with problems (${results} result${results === 1 ? "" : "s"}) in the full report.`,
      );
    }
  }
  return `${out.join("\n")}\n`;
}

/** Worst status of a cell, for the heatmap colour. */
const RANK = STATUS_SEVERITY;

export function worst(rs: readonly Result[]): Status {
  let w: Status = "skip";
  for (const r of rs) if (RANK[r.status] > RANK[w]) w = r.status;
  return w;
}

const COLORS: Readonly<Record<Status, string>> = {
  pass: "#2da44e",
  warn: "#9be9a8",
  fail: "#cf222e",
  "compile-failed": "#8250df",
  crash: "#6e0a1e",
  timeout: "#bc4c00",
  skip: "#d0d7de",
  xfail: "#8c959f",
  xpass: "#bf8700",
};

const FATE_TEXT: Readonly<Record<string, readonly [string, string]>> = {
  "cpu-fallback": ["falls back to CPU", "fall back to CPU"],
  "not-implemented": ["raises NotImplementedError (fallback: none)", "raise NotImplementedError (fallback: none)"],
  "composite-kernel": ["runs a composite kernel over other ops", "run a composite kernel over other ops"],
  decomposes: ["decomposes (CompositeImplicitAutograd)", "decompose (CompositeImplicitAutograd)"],
};

/**
 * The filter: a status select; rows whose statuses lack it are hidden, and
 * the families and all-pass groups holding a shown row open. `#status=fail`
 * in the address selects on load. Inline, no network.
 */
const FILTER_SCRIPT = `(function(){
var sel=document.getElementById("status-filter");
function apply(v){
  var rows=document.querySelectorAll("tr.op-row");
  for(var i=0;i<rows.length;i++){var r=rows[i];var st=" "+r.getAttribute("data-statuses")+" ";
    var show=v==="all"||(v==="problems"?/ (${PROBLEM_STATUSES.join("|")}) /.test(st):st.indexOf(" "+v+" ")>=0);
    r.hidden=!show;}
  var groups=document.querySelectorAll("details.family, details.allpass");
  for(var j=0;j<groups.length;j++){var g=groups[j];
    var n=g.querySelectorAll("tr.op-row:not([hidden])").length;
    g.hidden=v!=="all"&&n===0;
    if(v!=="all"&&n>0)g.open=true;}
  var c=document.getElementById("filter-count");
  if(c)c.textContent=v==="all"?"":document.querySelectorAll("tr.op-row:not([hidden])").length+" operators shown";
  document.body.setAttribute("data-filter",v);
}
sel.addEventListener("change",function(){apply(sel.value);history.replaceState(null,"",sel.value==="all"?"#":"#status="+sel.value);});
var m=/status=([a-z-]+)/.exec(location.hash);
if(m){for(var k=0;k<sel.options.length;k++)if(sel.options[k].value===m[1])sel.value=m[1];}
apply(sel.value);
})();`;

/**
 * Self-contained (inline CSS and one inline script, no external resources):
 * operators grouped by family (Note [Operator families] in families.ts),
 * problem rows shown, all-pass rows collapsed, a status filter, then the
 * uncovered core overloads, the failing samples and the known failures.
 */
export function toHtml(rep: Report): string {
  const s = rep.summary;
  const dtypes = [...new Set(rep.results.map((r) => r.dtype))].sort((a, b) => dtypeRank(a) - dtypeRank(b) || cmp(a, b));
  const cells = new Map<string, Result[]>();
  const byOp = new Map<string, Result[]>();
  for (const r of rep.results) {
    if (isModel(r.op) || isUpstream(r.op)) continue; // the models and upstream sections show them
    const k = `${r.op}\u0000${r.dtype}`;
    const list = cells.get(k) ?? [];
    list.push(r);
    cells.set(k, list);
    const ol = byOp.get(r.op) ?? [];
    ol.push(r);
    byOp.set(r.op, ol);
  }
  const ops = [...byOp.keys()].sort();
  const coreOps = new Set(rep.ops.filter((o) => o.core).map((o) => o.op));
  const passing = passingOps(rep.results);
  const o: string[] = [];
  o.push("<!DOCTYPE html>");
  o.push('<html lang="en"><head><meta charset="utf-8">');
  o.push(`<title>opgen-backend conformance: ${html(rep.meta.device)}${rep.meta.compiled ? " (compiled)" : ""}</title>`);
  o.push("<style>");
  o.push(
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1f2328}" +
      "table{border-collapse:collapse}td,th{padding:2px 6px;border:1px solid #d0d7de;text-align:left}" +
      "td.c{width:5.5em;text-align:center;color:#fff;font-size:12px}th.op{font-family:monospace;font-weight:normal;min-width:22em}" +
      ".sum td{text-align:right}.legend span{display:inline-block;padding:0 6px;margin-right:4px;color:#fff}" +
      "td.msg{font-family:monospace;font-size:12px;max-width:60em;white-space:pre-wrap;word-break:break-word}" +
      "code{font-size:12px}details.family{margin:.4em 0;border:1px solid #d0d7de;border-radius:6px;padding:.3em .6em}" +
      "details.family>summary{cursor:pointer;font-weight:600}details.allpass{margin:.4em 0}" +
      "details.allpass>summary{cursor:pointer;color:#57606a}.badge{display:inline-block;padding:0 6px;margin-left:6px;border-radius:8px;color:#fff;font-size:12px;font-weight:normal}" +
      "#filter{margin:1em 0;padding:.5em;background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px}" +
      "ul.uncovered{columns:3;font-family:monospace;font-size:12px}",
  );
  o.push("</style></head><body>");
  const dist = distributedTitle(rep);
  o.push(
    dist
      ? `<h1 data-distributed="${rep.meta.distributed?.world}">The ${html(dist)} of <code>${html(rep.meta.device)}</code></h1>`
      : rep.meta.compiled
        ? `<h1 data-compiled="true">Conformance of <code>${html(rep.meta.device)}</code>, compiled with Inductor (<code>torch.compile</code>), against eager CPU PyTorch</h1>`
        : `<h1>Conformance of <code>${html(rep.meta.device)}</code> against eager CPU PyTorch</h1>`,
  );
  // a model run (--model) tests no operator of its own: no operator-level headline
  const modelRun = s.ops === 0 && (Boolean(rep.models?.length) || Boolean(rep.upstream)); // or an upstream run
  if (dist) {
    o.push(`<p id="collectives-level"><strong>${html(collectivesLine(s))}</strong></p>`);
  } else if (!modelRun) {
    o.push(
      `<p id="core-level" data-core-passed="${s.core_passed}" data-core-total="${s.core_total}"><strong>Core ATen conformance: ${html(coreLevel(s))}</strong></p>`,
    );
  }
  o.push('<table class="sum" id="summary"><tr>');
  const fields: [keyof Summary, string][] = [
    ["total", "total"],
    ["passed", "passed"],
    ["warned", "warned"],
    ["failed", "failed"],
    ...(rep.meta.compiled ? [["compile_failed", "compile-failed"] as [keyof Summary, string]] : []),
    ["crashed", "crashed"],
    ["timed_out", "timed out"],
    ["skipped", "skipped"],
    ["xfail", "xfail"],
    ["xpass", "xpass"],
  ];
  for (const [, label] of fields) o.push(`<th>${label}</th>`);
  o.push("</tr><tr>");
  for (const [k] of fields) o.push(`<td data-key="${k}">${s[k]}</td>`);
  o.push("</tr></table>");
  const unc = uncoveredLine(rep);
  o.push(
    `<p>${modelRun || dist ? "" : `${s.ops_passed}/${s.ops} operators pass everything. `}${unc ? `<a href="#uncovered">${html(unc)}</a>. ` : ""}` +
      `Seed ${rep.meta.seed}; up to ${rep.meta.max_samples} samples per op and dtype; torch ${html(rep.meta.torch_version)}` +
      `${rep.meta.shards.length ? `; shards ${html(rep.meta.shards.join(" "))}` : ""}.</p>`,
  );
  o.push('<p class="legend">');
  for (const st of Object.keys(COLORS) as Status[]) {
    const ink = st === "skip" || st === "warn" ? "#1f2328" : "#fff";
    o.push(`<span style="background:${COLORS[st]};color:${ink}">${st}</span>`);
  }
  o.push("</p>");

  o.push('<form id="filter" onsubmit="return false"><label>Show operators with status ');
  o.push('<select id="status-filter"><option value="all">any</option><option value="problems">any problem</option>');
  for (const st of STATUSES) o.push(`<option value="${st}">${st}</option>`);
  o.push('</select></label> <span id="filter-count"></span></form>');

  o.push(...modelsHtml(rep.models ?? [], (st) => COLORS[st]));
  o.push(...upstreamHtml(rep.upstream, rep.results, (st) => COLORS[st]));
  o.push('<h2 id="operators">Operators × dtypes, by family</h2>');
  o.push('<div id="heatmap">');
  const header = `<tr><th>operator</th>${dtypes.map((d) => `<th>${html(d)}</th>`).join("")}</tr>`;
  const row = (op: string): string => {
    const rs = byOp.get(op) ?? [];
    const statuses = [...new Set(rs.map((r) => r.status))].sort();
    const w = worst(rs);
    const parts = [
      `<tr class="op-row" data-op="${html(op)}" data-worst="${w}" data-statuses="${statuses.join(" ")}">`,
      `<th class="op">${html(op)}${coreOps.has(op) ? " <small>core</small>" : ""}</th>`,
    ];
    for (const d of dtypes) {
      const cell = cells.get(`${op}\u0000${d}`);
      if (!cell) {
        parts.push('<td class="c" style="background:#fff"></td>');
        continue;
      }
      const cw = worst(cell);
      const ink = cw === "skip" || cw === "warn" ? "#1f2328" : "#fff";
      const title = cell.map((r) => `${r.check}: ${r.status}${r.message ? ` — ${r.message}` : ""}`).join("\n");
      parts.push(
        `<td class="c" data-op="${html(op)}" data-dtype="${html(d)}" data-status="${cw}" style="background:${COLORS[cw]};color:${ink}" title="${html(title)}">${cw}</td>`,
      );
    }
    parts.push("</tr>");
    return parts.join("");
  };
  const byFamily = new Map<Family, string[]>();
  for (const op of ops) {
    const f = familyOf(op);
    const list = byFamily.get(f) ?? [];
    list.push(op);
    byFamily.set(f, list);
  }
  for (const fam of FAMILIES) {
    const members = byFamily.get(fam);
    if (!members) continue;
    const clean = members.filter((op) => passing.has(op));
    const rest = members.filter((op) => !passing.has(op));
    const bad = rest.filter((op) => (byOp.get(op) ?? []).some((r) => isProblem(r.status)));
    const badges = [
      `<span class="badge" style="background:${COLORS.pass}">${clean.length}/${members.length} pass</span>`,
      bad.length ? `<span class="badge" style="background:${COLORS.fail}">${bad.length} with problems</span>` : "",
    ].join("");
    o.push(
      `<details class="family" id="family-${fam}" data-family="${fam}"${bad.length ? " open" : ""}><summary>${html(FAMILY_TITLES[fam])} (${members.length})${badges}</summary>`,
    );
    if (rest.length > 0) o.push(`<table class="heatmap">${header}${rest.map(row).join("\n")}</table>`);
    if (clean.length > 0) {
      o.push(
        `<details class="allpass"><summary>${clean.length} operator${clean.length === 1 ? " passes" : "s pass"} every check on every dtype</summary>`,
      );
      o.push(`<table class="heatmap">${header}${clean.map(row).join("\n")}</table></details>`);
    }
    o.push("</details>");
  }
  o.push("</div>");

  const cov = rep.coverage;
  if (!dist) {
    o.push(
      `<h2 id="uncovered">Core ATen overloads the backend does not cover${cov ? ` (${cov.missing.length} of ${cov.core_total})` : ""}</h2>`,
    );
  }
  if (dist) {
    // the distributed tier tests collectives: operator coverage is the op runs' section
  } else if (!cov) {
    o.push(
      "<p>Not known: this report was made without the project's backend.yaml (run <code>opgen-backend coverage</code>).</p>",
    );
  } else if (cov.missing.length === 0) {
    o.push("<p>None: every core-ATen overload of this torch is registered.</p>");
  } else {
    for (const fate of ["cpu-fallback", "not-implemented", "composite-kernel", "decomposes"]) {
      const names = cov.missing.filter((m) => m.fate === fate).map((m) => m.name);
      if (names.length === 0) continue;
      const text = FATE_TEXT[fate]?.[names.length === 1 ? 0 : 1] ?? fate;
      o.push(`<h3 data-fate="${fate}">${names.length} overload${names.length === 1 ? "" : "s"} ${html(text)}</h3>`);
      const fams = new Map<Family, string[]>();
      for (const n of names) {
        const f = familyOf(n);
        fams.set(f, [...(fams.get(f) ?? []), n]);
      }
      o.push('<ul class="uncovered">');
      for (const fam of FAMILIES) {
        for (const n of fams.get(fam) ?? []) {
          o.push(
            `<li class="uncovered-op" data-fate="${fate}" data-family="${fam}">${html(n)} <small>${html(FAMILY_TITLES[fam].toLowerCase())}</small></li>`,
          );
        }
      }
      o.push("</ul>");
    }
  }

  const bad = [...problems(rep)].sort(compareResults);
  o.push(`<h2 id="failing">Failing samples (${bad.length})</h2>`);
  if (bad.length === 0) o.push("<p>None.</p>");
  else {
    o.push(
      '<table id="failures"><tr><th>status</th><th>op</th><th>dtype</th><th>check</th><th>message</th><th>input</th><th>rerun</th></tr>',
    );
    for (const r of bad) {
      o.push(
        `<tr class="failure" data-status="${r.status}"><td style="background:${COLORS[r.status]};color:#fff">${r.status}</td>` +
          `<td><code>${html(r.op)}</code></td><td>${html(r.dtype)}</td><td>${html(r.check)}</td>` +
          `<td class="msg">${html(r.message)}</td><td class="msg">${html(r.input)}</td>` +
          `<td><code>--seed ${r.seed} --sample ${r.sample}</code></td></tr>`,
      );
    }
    o.push("</table>");
  }
  const xf = rep.results.filter((r) => r.status === "xfail");
  if (xf.length > 0) {
    o.push(`<h2>Known failures (${xf.length})</h2><ul>`);
    for (const r of xf) {
      const link = r.expected?.issue ? ` <a href="${html(r.expected.issue)}">${html(r.expected.issue)}</a>` : "";
      o.push(
        `<li><code>${html(r.op)}</code> ${html(r.dtype)} ${html(r.check)}: ${html(r.expected?.reason ?? "")}${link}</li>`,
      );
    }
    o.push("</ul>");
  }
  o.push(`<footer><small>${html(rep.generator)}</small></footer>`);
  o.push(`<script>${FILTER_SCRIPT}</script>`);
  o.push("</body></html>");
  return `${o.join("\n")}\n`;
}

/** The final terminal summary. */
export function toTerminal(rep: Report, st: Style, maxRows = 30): string {
  const s = rep.summary;
  const out: string[] = [];
  const bad = problems(rep);
  for (const r of bad.slice(0, maxRows)) {
    const tag =
      r.status === "fail" || r.status === "xpass"
        ? st.red(r.status.toUpperCase())
        : st.red(st.bold(r.status.toUpperCase()));
    out.push(
      `${tag} ${r.op} ${r.dtype} ${r.check}${compiledTag(r)}: ${r.message} ${st.dim(`(seed ${r.seed} sample ${r.sample})`)}`,
    );
  }
  if (bad.length > maxRows) out.push(st.dim(`… ${bad.length - maxRows} more problems in the reports`));
  const parts = [
    st.green(`${s.passed} passed`),
    s.warned ? st.yellow(`${s.warned} warned`) : "",
    s.failed ? st.red(`${s.failed} failed`) : "",
    s.compile_failed ? st.red(`${s.compile_failed} compile-failed`) : "",
    s.crashed ? st.red(`${s.crashed} crashed`) : "",
    s.timed_out ? st.red(`${s.timed_out} timed out`) : "",
    s.skipped ? st.dim(`${s.skipped} skipped`) : "",
    s.xfail ? st.dim(`${s.xfail} xfail`) : "",
    s.xpass ? st.yellow(`${s.xpass} xpass`) : "",
  ].filter((p) => p.length > 0);
  const dist = distributedTitle(rep);
  out.push(
    `${st.bold(dist ? `${dist}:` : rep.meta.compiled ? "conformance (compiled, Inductor):" : "conformance:")} ${s.total} results: ${parts.join(", ")}`,
  );
  if (dist) {
    out.push(collectivesLine(s));
  } else if (s.ops > 0 || (!rep.models?.length && !rep.upstream)) {
    // (a model run, --model, tests no operator of its own)
    out.push(`${s.ops_passed}/${s.ops} operators pass everything; ${st.bold(`core ATen conformance ${coreLevel(s)}`)}`);
  }
  out.push(...modelsTerminal(rep.models ?? []));
  out.push(...upstreamTerminal(rep.upstream));
  return `${out.join("\n")}\n`;
}
