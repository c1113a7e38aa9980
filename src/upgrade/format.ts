/** The upgrade report for people (terminal, Markdown for the upgrade pull request) and machines (JSON). */
import { formatDiagnostic, formatLoc } from "../util/errors.js";
import type { Change, OverloadReport, UpgradeReport } from "./compare.js";

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

function overloadBlock(o: OverloadReport): string[] {
  const at = o.loc ? ` (${formatLoc(o.loc)})` : "";
  const [first, ...rest] = linesOf(o);
  return [`${o.op}${at}: ${first}`, ...rest.map((l) => `    ${l}`)];
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

export function upgradeToTerminal(r: UpgradeReport): string {
  const lines = [headline(r)];
  for (const d of r.yamlErrors) lines.push(`backend.yaml against ${r.toTorch}: ${formatDiagnostic(d)}`);
  for (const o of r.overloads) if (o.changes.length) lines.push(...overloadBlock(o));
  lines.push(...tailLines(r));
  lines.push(r.actionNeeded ? "action needed" : "nothing to do");
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
  out.push(r.actionNeeded ? "**Action needed.**" : "Nothing to do.", "");
  return out.join("\n");
}

export function upgradeToJson(r: UpgradeReport): string {
  return `${JSON.stringify(r, null, 2)}\n`;
}
