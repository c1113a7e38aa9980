/** The upgrade report for people (terminal, Markdown for the upgrade pull request) and machines (JSON). */
import { formatDiagnostic, formatLoc } from "../util/errors.js";
import type { Style } from "../util/term.js";
import type { Change, OverloadReport, UpgradeReport } from "./compare.js";
import type { PythonApiEntry, PythonApiReport } from "./python-api.js";

const id = (x: string) => x;
const plain: Style = { red: id, green: id, yellow: id, dim: id, bold: id };

function changeLines(c: Change): string[] {
  switch (c.kind) {
    case "signature":
      return [
        "signature changed",
        `  old: ${c.oldDeclaration}`,
        `  new: ${c.newDeclaration}`,
        ...(c.breaks.length === 0
          ? ["  no definition found under the kernel sources"]
          : c.breaks.map((b) => `  breaks: ${formatLoc(b.loc)}: ${b.definition}`)),
      ];
    case "schema":
      return ["schema changed (C++ declaration unchanged)", `  old: ${c.oldSchema}`, `  new: ${c.newSchema}`];
    case "removed":
      return [
        c.renamedTo
          ? `removed: renamed to ${c.renamedTo}`
          : `removed${c.suggestions.length ? `; did you mean ${c.suggestions.join(", ")}?` : ""}`,
      ];
    case "dispatch":
      return [`dispatch: ${c.was} -> ${c.now}`, `  ${c.effect}`];
    case "tags":
      return [
        `tags: ${[...c.added.map((t) => `+${t}`), ...c.removed.map((t) => `-${t}`)].join(" ")}${
          c.added.includes("core") || c.removed.includes("core") ? " (core-ATen coverage changes)" : ""
        }`,
      ];
  }
}

/** Changes in words; a runtime overload's registration is hand-written (Note [Runtime operators]), so say where to look. */
function linesOf(o: OverloadReport): string[] {
  const lines = o.changes.flatMap(changeLines);
  if (o.servedBy === "runtime" && o.changes.some((c) => c.kind === "schema" || c.kind === "removed")) {
    lines.push("  registered by the project's runtime (csrc/runtime): check its hand-written registration");
  }
  return lines;
}

function headline(r: UpgradeReport): string {
  const s = r.summary;
  return (
    `torch ${r.fromTorch} -> ${r.toTorch}: ${r.overloads.length} listed overloads, ${s.unchanged} unchanged, ` +
    `${s.signature} signature changed, ${s.schema} schema changed, ${s.removed} removed, ${s.dispatch} dispatch changed, ${s.tags} tags changed`
  );
}

function tailLines(r: UpgradeReport): string[] {
  const out: string[] = [];
  const c = r.core;
  out.push(`core ATen: ${c.before ?? "?"} overloads in ${r.fromTorch}, ${c.after} in ${r.toTorch}`);
  if (c.addedUncovered === null) {
    out.push("  (no baseline torch: which core overloads were added or dropped is not known by name)");
  } else {
    if (c.addedUncovered.length) out.push(`  new core overloads not served: ${c.addedUncovered.join(", ")}`);
    if (c.removedUncovered?.length) out.push(`  no longer core (not served): ${c.removedUncovered.join(", ")}`);
  }
  if (r.derived.added.length) out.push(`newly derived siblings: ${r.derived.added.join(", ")}`);
  if (r.derived.removed.length) out.push(`no longer derived: ${r.derived.removed.join(", ")}`);
  if (r.compositeInTarget.length) {
    out.push(
      `CompositeImplicitAutograd in ${r.toTorch} (no baseline to tell whether that is new; the kernel is bypassed under autograd): ${r.compositeInTarget.join(", ")}`,
    );
  }
  return out;
}

const CHANGE_WORDS: Record<Change["kind"], string> = {
  signature: "signature changed",
  schema: "schema changed",
  removed: "removed",
  dispatch: "dispatch changed",
  tags: "tags changed",
};

/** How much a change asks of the vendor: a break first, then what silently changes behaviour, then the rest. */
function severity(c: Change): "break" | "behaviour" | "note" {
  if (c.kind === "signature" || c.kind === "removed") return "break";
  if (c.kind === "dispatch") return "behaviour";
  return "note";
}

const pad = (s: string, n: number) => s + " ".repeat(Math.max(0, n - s.length));

/** The private Python APIs' count line (Note [Python API drift]). */
function pythonApiHeadline(p: PythonApiReport): string {
  if (p.unavailable) return `private torch Python APIs: not compared (${p.unavailable})`;
  const s = p.summary;
  return (
    `private torch Python APIs ${p.from} -> ${p.to}: ${p.entries.length} watched, ${s.unchanged} unchanged, ` +
    `${s.compatible} compatible, ${s.break} break, ${s.missing} missing${p.sameFiles ? " (the same files)" : ""}`
  );
}

/** A changed or missing definition's details: why, then the old and new parameter lists. */
function pythonApiDetails(e: PythonApiEntry): string[] {
  return [
    ...e.reasons,
    ...(e.inheritedFrom ? [`defined in its base ${e.inheritedFrom}`] : []),
    ...(e.old !== null && e.kind !== "attribute" ? [`old: ${e.old}`] : []),
    ...(e.new !== null && e.kind !== "attribute" ? [`new: ${e.new}`] : []),
  ];
}

const drifted = (p: PythonApiReport) => p.entries.filter((e) => e.status !== "unchanged");

function pythonApiTerminal(p: PythonApiReport, s: Style): string[] {
  const rows = drifted(p);
  const lines = [pythonApiHeadline(p)];
  if (rows.length === 0) return lines;
  const w0 = Math.max("DEFINITION".length, ...rows.map((e) => e.name.length));
  const w1 = Math.max("CHANGE".length, ...rows.map((e) => e.status.length));
  const w2 = Math.max("USED BY".length, ...rows.map((e) => e.usedBy.length));
  lines.push(s.dim(`  ${pad("DEFINITION", w0)}  ${pad("CHANGE", w1)}  ${pad("USED BY", w2)}  AT`));
  for (const e of rows) {
    const paint = e.status === "compatible" ? (x: string) => x : s.red;
    lines.push(`  ${pad(e.name, w0)}  ${paint(pad(e.status, w1))}  ${pad(e.usedBy, w2)}  ${e.where ?? e.file}`);
    for (const l of pythonApiDetails(e)) lines.push(s.dim(`      ${l}`));
  }
  return lines;
}

function pythonApiMarkdown(p: PythonApiReport): string[] {
  const out = ["## Private torch Python APIs", "", pythonApiHeadline(p), ""];
  const rows = drifted(p);
  if (rows.length === 0) return out;
  out.push("| definition | change | used by | at |", "|---|---|---|---|");
  for (const e of rows) out.push(`| \`${e.name}\` | ${e.status} | ${e.usedBy} | \`${e.where ?? e.file}\` |`);
  out.push("");
  for (const e of rows) {
    out.push(`- **${e.name}** (${e.status})`);
    for (const l of pythonApiDetails(e)) out.push(`  - ${l.replace(/^(old|new): (.*)$/, "$1: `$2`")}`);
  }
  out.push("");
  return out;
}

/**
 * The report as a terminal table: one row per changed overload (overload,
 * change, where backend.yaml lists it), the details indented under it, then
 * the torch-wide lines. Colour from `s` (src/util/term: only on a TTY, never
 * with NO_COLOR): breaks red, dispatch changes yellow.
 */
export function upgradeToTerminal(r: UpgradeReport, s: Style = plain): string {
  const lines = [s.bold(headline(r)) + (r.baseline ? "" : s.dim(" (no baseline torch)"))];
  for (const d of r.yamlErrors) lines.push(s.red(`backend.yaml against ${r.toTorch}: ${formatDiagnostic(d)}`));
  const changed = r.overloads.filter((o) => o.changes.length);
  if (changed.length) {
    const rows = changed.map((o) => ({ o, change: o.changes.map((c) => CHANGE_WORDS[c.kind]).join(", ") }));
    const w0 = Math.max("OVERLOAD".length, ...rows.map((x) => x.o.op.length));
    const w1 = Math.max("CHANGE".length, ...rows.map((x) => x.change.length));
    lines.push("", s.dim(`${pad("OVERLOAD", w0)}  ${pad("CHANGE", w1)}  LISTED AT`));
    for (const { o, change } of rows) {
      const worst = o.changes.map(severity);
      const paint = worst.includes("break") ? s.red : worst.includes("behaviour") ? s.yellow : (x: string) => x;
      lines.push(`${pad(o.op, w0)}  ${paint(pad(change, w1))}  ${o.loc ? formatLoc(o.loc) : "-"}`);
      for (const l of linesOf(o)) lines.push(s.dim(`    ${l}`));
    }
    lines.push("");
  }
  lines.push(...tailLines(r));
  if (r.pythonApi) lines.push(...pythonApiTerminal(r.pythonApi, s));
  lines.push(r.actionNeeded ? s.bold(s.red("action needed")) : s.green("nothing to do"));
  return `${lines.join("\n")}\n`;
}

export function upgradeToMarkdown(r: UpgradeReport): string {
  const s = r.summary;
  const out = [
    `# Moving to torch ${r.toTorch} (from ${r.fromTorch})`,
    "",
    "| unchanged | signature changed | schema changed | removed | dispatch changed | tags changed |",
    "|---|---|---|---|---|---|",
    `| ${s.unchanged} | ${s.signature} | ${s.schema} | ${s.removed} | ${s.dispatch} | ${s.tags} |`,
    "",
  ];
  const changed = r.overloads.filter((o) => o.changes.length);
  if (changed.length || r.yamlErrors.length) {
    out.push("## Overloads in backend.yaml", "");
    for (const d of r.yamlErrors) out.push(`- backend.yaml: \`${formatDiagnostic(d)}\``);
    for (const o of changed) {
      out.push(`- **${o.op}**${o.loc ? ` (\`${formatLoc(o.loc)}\`)` : ""}`);
      for (const l of linesOf(o)) out.push(`  - ${l.trim().replace(/^(old|new|breaks): (.*)$/, "$1: `$2`")}`);
    }
    out.push("");
  }
  out.push("## Torch-wide", "", ...tailLines(r).map((l) => `- ${l.trim()}`), "");
  if (r.pythonApi) out.push(...pythonApiMarkdown(r.pythonApi));
  out.push(r.actionNeeded ? "**Action needed.**" : "Nothing to do.", "");
  return out.join("\n");
}

export function upgradeToJson(r: UpgradeReport): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
