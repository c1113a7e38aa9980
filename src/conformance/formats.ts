/**
 * Report renderers: one Report in, one document out (JUnit XML, Markdown,
 * self-contained HTML, JSON, terminal summary). Pure string functions with no
 * timestamps or absolute paths, so a report is a deterministic function of
 * the results (Note [One result per op x dtype x check] in types.ts).
 */
import { assertNever } from "../util/errors.js";
import type { Style } from "../util/term.js";
import { compareResults, dtypeRank } from "./aggregate.js";
import type { Report, Result, Status, Summary } from "./types.js";

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
  const failures = s.failed + s.xpass;
  const errors = s.crashed + s.timed_out;
  const skipped = s.skipped + s.xfail;
  const lines: string[] = ['<?xml version="1.0" encoding="UTF-8"?>'];
  lines.push(
    `<testsuites name="opgen-backend conformance (${xml(rep.meta.device)})" tests="${s.total}" failures="${failures}" errors="${errors}" skipped="${skipped}">`,
  );
  for (const [op, rs] of byOp) {
    const f = rs.filter((r) => r.status === "fail" || r.status === "xpass").length;
    const e = rs.filter((r) => r.status === "crash" || r.status === "timeout").length;
    const sk = rs.filter((r) => r.status === "skip" || r.status === "xfail").length;
    lines.push(`  <testsuite name="${xml(op)}" tests="${rs.length}" failures="${f}" errors="${e}" skipped="${sk}">`);
    for (const r of rs) {
      const open = `    <testcase classname="${xml(op)}" name="${xml(`${r.dtype}.${r.check}`)}"`;
      const where = `seed=${r.seed} sample=${r.sample} input=${r.input}`;
      switch (r.status) {
        case "pass":
          lines.push(`${open}/>`);
          break;
        case "warn":
          lines.push(`${open}><system-out>${xml(`warning: ${r.message}`)}</system-out></testcase>`);
          break;
        case "fail":
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

export function coreLevel(s: Summary): string {
  const pct = s.core_total > 0 ? ((100 * s.core_passed) / s.core_total).toFixed(1) : "0.0";
  return `${s.core_passed}/${s.core_total} (${pct}%)`;
}

const ICON: Readonly<Record<Status, string>> = {
  pass: "✅",
  warn: "⚠️",
  fail: "❌",
  crash: "💥",
  timeout: "⏱️",
  skip: "⏭️",
  xfail: "🔕",
  xpass: "❗",
};

const PROBLEM: ReadonlySet<Status> = new Set(["fail", "crash", "timeout", "xpass"]);

export function problems(rep: Report): Result[] {
  return rep.results.filter((r) => PROBLEM.has(r.status));
}

/** For CI job pages (GitHub step summary and the like). */
export function toMarkdown(rep: Report, maxRows = 50): string {
  const s = rep.summary;
  const out: string[] = [];
  out.push(`## opgen-backend conformance: \`${rep.meta.device}\``);
  out.push("");
  out.push(`**Core ATen conformance: ${coreLevel(s)}** core overloads pass every check on every claimed dtype.`);
  out.push("");
  out.push("| total | passed | warned | failed | crashed | timed out | skipped | xfail | xpass |");
  out.push("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
  out.push(
    `| ${s.total} | ${s.passed} | ${s.warned} | ${s.failed} | ${s.crashed} | ${s.timed_out} | ${s.skipped} | ${s.xfail} | ${s.xpass} |`,
  );
  out.push("");
  out.push(
    `${s.ops_passed}/${s.ops} operators pass everything. Seed ${rep.meta.seed}, up to ${rep.meta.max_samples} samples per op and dtype.`,
  );
  const bad = problems(rep);
  if (bad.length > 0) {
    out.push("");
    out.push(`### Problems (${bad.length})`);
    out.push("");
    out.push("| | op | dtype | check | message | sample |");
    out.push("|---|---|---|---|---|---|");
    for (const r of bad.slice(0, maxRows)) {
      const msg = r.message.replace(/\|/g, "\\|").replace(/\n/g, " ");
      out.push(
        `| ${ICON[r.status]} ${r.status} | \`${r.op}\` | ${r.dtype} | ${r.check} | ${msg} | seed ${r.seed} #${r.sample} |`,
      );
    }
    if (bad.length > maxRows) out.push(`\n…and ${bad.length - maxRows} more; see the HTML or JSON report.`);
  }
  return `${out.join("\n")}\n`;
}

/** Worst status of a cell, for the heatmap colour. */
const RANK: Readonly<Record<Status, number>> = {
  crash: 7,
  timeout: 6,
  fail: 5,
  xpass: 4,
  xfail: 3,
  warn: 2,
  pass: 1,
  skip: 0,
};

export function worst(rs: readonly Result[]): Status {
  let w: Status = "skip";
  for (const r of rs) if (RANK[r.status] > RANK[w]) w = r.status;
  return w;
}

const COLORS: Readonly<Record<Status, string>> = {
  pass: "#2da44e",
  warn: "#9be9a8",
  fail: "#cf222e",
  crash: "#6e0a1e",
  timeout: "#bc4c00",
  skip: "#d0d7de",
  xfail: "#8c959f",
  xpass: "#bf8700",
};

/** Self-contained: inline CSS, no scripts, no external resources. */
export function toHtml(rep: Report): string {
  const s = rep.summary;
  const dtypes = [...new Set(rep.results.map((r) => r.dtype))].sort(
    (a, b) => dtypeRank(a) - dtypeRank(b) || (a < b ? -1 : a > b ? 1 : 0),
  );
  const cells = new Map<string, Result[]>();
  for (const r of rep.results) {
    const k = `${r.op}\u0000${r.dtype}`;
    const list = cells.get(k) ?? [];
    list.push(r);
    cells.set(k, list);
  }
  const ops = [...new Set(rep.results.map((r) => r.op))].sort();
  const coreOps = new Set(rep.ops.filter((o) => o.core).map((o) => o.op));
  const o: string[] = [];
  o.push("<!DOCTYPE html>");
  o.push('<html lang="en"><head><meta charset="utf-8">');
  o.push(`<title>opgen-backend conformance: ${html(rep.meta.device)}</title>`);
  o.push("<style>");
  o.push(
    "body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#1f2328}" +
      "table{border-collapse:collapse}td,th{padding:2px 6px;border:1px solid #d0d7de;text-align:left}" +
      "td.c{width:5.5em;text-align:center;color:#fff;font-size:12px}th.op{font-family:monospace;font-weight:normal}" +
      ".sum td{text-align:right}.legend span{display:inline-block;padding:0 6px;margin-right:4px;color:#fff}" +
      "td.msg{font-family:monospace;font-size:12px;max-width:60em;white-space:pre-wrap;word-break:break-word}" +
      "code{font-size:12px}",
  );
  o.push("</style></head><body>");
  o.push(`<h1>Conformance of <code>${html(rep.meta.device)}</code> against eager CPU PyTorch</h1>`);
  o.push(
    `<p id="core-level" data-core-passed="${s.core_passed}" data-core-total="${s.core_total}"><strong>Core ATen conformance: ${html(coreLevel(s))}</strong></p>`,
  );
  o.push('<table class="sum" id="summary"><tr>');
  const fields: [keyof Summary, string][] = [
    ["total", "total"],
    ["passed", "passed"],
    ["warned", "warned"],
    ["failed", "failed"],
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
  o.push(
    `<p>Seed ${rep.meta.seed}; up to ${rep.meta.max_samples} samples per op and dtype; torch ${html(rep.meta.torch_version)}.</p>`,
  );
  o.push('<p class="legend">');
  for (const st of Object.keys(COLORS) as Status[]) {
    const ink = st === "skip" || st === "warn" ? "#1f2328" : "#fff";
    o.push(`<span style="background:${COLORS[st]};color:${ink}">${st}</span>`);
  }
  o.push("</p>");
  o.push(`<h2>Operators × dtypes</h2>`);
  o.push('<table id="heatmap"><tr><th>operator</th>');
  for (const d of dtypes) o.push(`<th>${html(d)}</th>`);
  o.push("</tr>");
  for (const op of ops) {
    o.push(`<tr><th class="op">${html(op)}${coreOps.has(op) ? " <small>core</small>" : ""}</th>`);
    for (const d of dtypes) {
      const rs = cells.get(`${op}\u0000${d}`);
      if (!rs) {
        o.push('<td class="c" style="background:#fff"></td>');
        continue;
      }
      const w = worst(rs);
      const ink = w === "skip" || w === "warn" ? "#1f2328" : "#fff";
      const title = rs.map((r) => `${r.check}: ${r.status}${r.message ? ` — ${r.message}` : ""}`).join("\n");
      o.push(
        `<td class="c" data-op="${html(op)}" data-dtype="${html(d)}" data-status="${w}" style="background:${COLORS[w]};color:${ink}" title="${html(title)}">${w}</td>`,
      );
    }
    o.push("</tr>");
  }
  o.push("</table>");
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
    out.push(`${tag} ${r.op} ${r.dtype} ${r.check}: ${r.message} ${st.dim(`(seed ${r.seed} sample ${r.sample})`)}`);
  }
  if (bad.length > maxRows) out.push(st.dim(`… ${bad.length - maxRows} more problems in the reports`));
  const parts = [
    st.green(`${s.passed} passed`),
    s.warned ? st.yellow(`${s.warned} warned`) : "",
    s.failed ? st.red(`${s.failed} failed`) : "",
    s.crashed ? st.red(`${s.crashed} crashed`) : "",
    s.timed_out ? st.red(`${s.timed_out} timed out`) : "",
    s.skipped ? st.dim(`${s.skipped} skipped`) : "",
    s.xfail ? st.dim(`${s.xfail} xfail`) : "",
    s.xpass ? st.yellow(`${s.xpass} xpass`) : "",
  ].filter((p) => p.length > 0);
  out.push(`${st.bold("conformance:")} ${s.total} results: ${parts.join(", ")}`);
  out.push(`${s.ops_passed}/${s.ops} operators pass everything; ${st.bold(`core ATen conformance ${coreLevel(s)}`)}`);
  return `${out.join("\n")}\n`;
}
