/**
 * What a `test --upstream` run reports: the runner's per-test records
 * (python/opgen_conformance/upstream.py) as ordinary results, and the
 * "upstream" section every report carries, a part per test file.
 *
 * A test is a result like an (op, dtype, check): its op is
 * `upstream:<file>::<Class>::<test>` (pytest's id), its dtype the test's
 * dtype suffix where it has one (`-` otherwise), its check `test`; so
 * expectations (an entry's `test:` glob), JUnit, `report merge` and `report
 * diff` take them as they are.
 *
 * Note [Passed on CPU]: a test that passes while the op under test ran
 * through the device's CPU fallback proves nothing of the device's kernel:
 * it is a `warn` ("passed on CPU"), not a pass, and under --strict any
 * fallback at all fails the test. Which fallback overloads are "the op
 * under test" the runner says (Note [Upstream runs] in upstream.py); the
 * others are listed in the section, and the test stays a pass.
 */
import { cmp, DTYPES } from "../vocab.js";
import type { Result, Status } from "./types.js";

export const UPSTREAM_PREFIX = "upstream:";
export const UPSTREAM_CHECK = "test";

export function isUpstream(op: string): boolean {
  return op.startsWith(UPSTREAM_PREFIX);
}

/** One line of the runner's upstream results file. */
export type UpstreamRecord =
  | { readonly kind: "upstream_header"; readonly device: string }
  | {
      readonly kind: "upstream_test";
      readonly file: string;
      readonly id: string;
      readonly status: "pass" | "fail" | "skip" | "crash" | "timeout";
      readonly message: string;
      readonly fallback: Readonly<Record<string, number>>;
      readonly under_test: readonly string[];
    }
  | {
      readonly kind: "upstream_file";
      readonly file: string;
      readonly collected: number;
      readonly errors: readonly string[];
      readonly not_run: readonly string[];
      readonly processes: number;
      readonly crashes: number;
      readonly timeouts: number;
    };

export interface UpstreamCounts {
  readonly tests: number;
  readonly passed: number;
  readonly passed_on_cpu: number;
  readonly failed: number;
  readonly crashed: number;
  readonly timed_out: number;
  readonly skipped: number;
  readonly xfail: number;
  readonly xpass: number;
  /** tests (any outcome) that ran some operator through the CPU fallback */
  readonly used_fallback: number;
}

export interface UpstreamFileReport {
  /** path under test/, e.g. test_view_ops.py */
  readonly file: string;
  /** the generic classes run (all when empty), e.g. TestCommon of test_ops.py */
  readonly classes: readonly string[];
  readonly counts: UpstreamCounts;
  /** import or collection errors, and modules it imports that neither the Python nor test/ has */
  readonly errors: readonly string[];
  readonly processes: number;
  /** per test that ran operators on CPU: which, how often, and which of them are its op under test */
  readonly fallback: readonly {
    readonly id: string;
    readonly ops: Readonly<Record<string, number>>;
    readonly under_test: readonly string[];
  }[];
}

export interface UpstreamReport {
  /** the PyTorch commit the files are from (torch.version.git_version, or the checkout's HEAD) */
  readonly commit: string;
  /** where they came from: a base URL, or `checkout` for --upstream-dir */
  readonly source: string;
  readonly strict: boolean;
  readonly files: readonly UpstreamFileReport[];
}

const DTYPE_SUFFIX = new RegExp(`_(${[...DTYPES, "uint16", "uint32", "uint64", "float8_\\w+"].join("|")})$`);

/** test_add_refdev_float32 -> float32; a test without a dtype suffix -> "-". */
export function testDtype(id: string): string {
  return DTYPE_SUFFIX.exec(id)?.[1] ?? "-";
}

function fallbackText(ops: Readonly<Record<string, number>>, only?: readonly string[]): string {
  return Object.entries(ops)
    .filter(([k]) => !only || only.includes(k))
    .sort(([a], [b]) => cmp(a, b))
    .map(([k, n]) => `${k} (${n})`)
    .join(", ");
}

/** The results of a run's records (Note [Passed on CPU]), before expectations. */
export function upstreamResults(records: readonly UpstreamRecord[], strict: boolean): Result[] {
  const out: Result[] = [];
  const base = { seed: 0, sample: 0, samples: 1, check: UPSTREAM_CHECK };
  for (const r of records) {
    if (r.kind === "upstream_test") {
      let status: Status = r.status;
      let message = r.message;
      const used = Object.keys(r.fallback).length > 0;
      if (r.status === "pass" && strict && used) {
        status = "fail";
        message = `ran on the CPU fallback (--strict): ${fallbackText(r.fallback)}`;
      } else if (r.status === "pass" && r.under_test.length > 0) {
        status = "warn";
        message = `passed on CPU: the op under test ran through the CPU fallback: ${fallbackText(r.fallback, r.under_test)}`;
      }
      out.push({ ...base, op: `${UPSTREAM_PREFIX}${r.id}`, dtype: testDtype(r.id), status, message, input: r.file });
    } else if (r.kind === "upstream_file") {
      // A file that could not be collected is one failing result, named by the file.
      if (r.errors.length > 0 && r.collected === 0) {
        out.push({
          ...base,
          op: `${UPSTREAM_PREFIX}${r.file}`,
          dtype: "-",
          status: "fail",
          message: `cannot collect: ${r.errors.join("; ")}`,
          input: r.file,
        });
      }
      for (const id of r.not_run) {
        out.push({
          ...base,
          op: `${UPSTREAM_PREFIX}${id}`,
          dtype: testDtype(id),
          status: "skip",
          message: "selected but never run: the last pytest process of its file stopped before it",
          input: r.file,
        });
      }
    }
  }
  return out;
}

/** The section, from the records and the results after expectations. */
export function upstreamSection(
  records: readonly UpstreamRecord[],
  results: readonly Result[],
  meta: { commit: string; source: string; strict: boolean; classes: Readonly<Record<string, readonly string[]>> },
  missing: Readonly<Record<string, readonly string[]>>,
): UpstreamReport {
  const files: UpstreamFileReport[] = [];
  for (const f of records) {
    if (f.kind !== "upstream_file") continue;
    const tests = records.filter(
      (r): r is Extract<UpstreamRecord, { kind: "upstream_test" }> => r.kind === "upstream_test" && r.file === f.file,
    );
    const rs = results.filter((r) => isUpstream(r.op) && r.input === f.file);
    const n = (s: Status) => rs.filter((r) => r.status === s).length;
    files.push({
      file: f.file,
      classes: meta.classes[f.file] ?? [],
      counts: {
        tests: rs.length,
        passed: n("pass"),
        passed_on_cpu: n("warn"),
        failed: n("fail"),
        crashed: n("crash"),
        timed_out: n("timeout"),
        skipped: n("skip"),
        xfail: n("xfail"),
        xpass: n("xpass"),
        used_fallback: tests.filter((t) => Object.keys(t.fallback).length > 0).length,
      },
      errors: [
        ...(missing[f.file] ?? []).map((m) => `imports ${m}: not installed here, and no test/ file provides it`),
        ...f.errors,
      ],
      processes: f.processes,
      fallback: tests
        .filter((t) => Object.keys(t.fallback).length > 0)
        .map((t) => ({ id: t.id, ops: t.fallback, under_test: t.under_test })),
    });
  }
  return { commit: meta.commit, source: meta.source, strict: meta.strict, files };
}

/** UpstreamCounts' keys, in report column order. */
const COUNT_KEYS: readonly (keyof UpstreamCounts)[] = [
  "tests",
  "passed",
  "passed_on_cpu",
  "failed",
  "crashed",
  "timed_out",
  "skipped",
  "xfail",
  "xpass",
  "used_fallback",
];

function total(u: UpstreamReport): UpstreamCounts {
  return Object.fromEntries(
    COUNT_KEYS.map((k) => [k, u.files.reduce((s, f) => s + f.counts[k], 0)]),
  ) as unknown as UpstreamCounts;
}

/** `n passed, m passed on CPU, ...` (zeros left out, except passed). */
export function countsLine(c: UpstreamCounts): string {
  const parts: [number, string][] = [
    [c.passed_on_cpu, "passed on CPU"],
    [c.failed, "failed"],
    [c.crashed, "crashed"],
    [c.timed_out, "timed out"],
    [c.skipped, "skipped"],
    [c.xfail, "xfail"],
    [c.xpass, "xpass"],
  ];
  const rest = parts.filter(([k]) => k > 0).map(([k, s]) => `${k} ${s}`);
  const fb = c.used_fallback ? `; ${c.used_fallback} ran some operator on CPU` : "";
  return `${c.tests} test${c.tests === 1 ? "" : "s"}: ${[`${c.passed} passed`, ...rest].join(", ")}${fb}`;
}

function what(u: UpstreamReport): string {
  return `PyTorch's tests at ${u.commit.slice(0, 12)} (${u.source})${u.strict ? ", --strict" : ""}`;
}

function fileName(f: UpstreamFileReport): string {
  return f.classes.length ? `${f.file}::${f.classes.join(",")}` : f.file;
}

export function upstreamMarkdown(u: UpstreamReport | undefined): string[] {
  if (!u) return [];
  const out = ["", `**Upstream tests:** ${what(u)}: ${countsLine(total(u))}.`, ""];
  out.push(
    "| file | tests | passed | passed on CPU | failed | crashed | timed out | skipped | xfail | xpass | notes |",
  );
  out.push("|---|---|---|---|---|---|---|---|---|---|---|");
  for (const f of u.files) {
    const c = f.counts;
    const notes = f.errors.map((e) => e.replace(/\|/g, "\\|").replace(/\s+/g, " ").slice(0, 160)).join("; ") || "—";
    out.push(
      `| \`${fileName(f)}\` | ${c.tests} | ${c.passed} | ${c.passed_on_cpu} | ${c.failed} | ${c.crashed} | ${c.timed_out} | ${c.skipped} | ${c.xfail} | ${c.xpass} | ${notes} |`,
    );
  }
  return out;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

export function upstreamHtml(
  u: UpstreamReport | undefined,
  results: readonly Result[],
  color: (s: Status) => string,
): string[] {
  if (!u) return [];
  const o: string[] = [];
  o.push(`<h2 id="upstream">Upstream tests (${u.files.length} files)</h2>`);
  o.push(`<p id="upstream-line">${esc(what(u))}: ${esc(countsLine(total(u)))}.</p>`);
  o.push(
    '<table id="upstream-files"><tr><th>file</th><th>tests</th><th>passed</th><th>passed on CPU</th><th>failed</th>' +
      "<th>crashed</th><th>timed out</th><th>skipped</th><th>xfail</th><th>xpass</th><th>ran some op on CPU</th></tr>",
  );
  for (const f of u.files) {
    o.push(
      `<tr class="upstream-file" data-file="${esc(f.file)}"><td><code>${esc(fileName(f))}</code></td>` +
        COUNT_KEYS.map((k) => `<td data-key="${k}">${f.counts[k]}</td>`).join("") +
        "</tr>",
    );
  }
  o.push("</table>");
  for (const f of u.files) {
    const rs = results.filter((r) => isUpstream(r.op) && r.input === f.file && r.status !== "pass");
    const fb = new Map(f.fallback.map((x) => [x.id, x]));
    o.push(
      `<details class="upstream-tests" data-file="${esc(f.file)}"${rs.some((r) => r.status !== "skip") || f.errors.length ? " open" : ""}>` +
        `<summary><code>${esc(fileName(f))}</code>: ${esc(countsLine(f.counts))}</summary>`,
    );
    for (const e of f.errors) o.push(`<p class="upstream-error">${esc(e)}</p>`);
    if (rs.length > 0) {
      o.push("<table><tr><th>status</th><th>test</th><th>message</th><th>ran on CPU</th></tr>");
      for (const r of rs) {
        const id = r.op.slice(UPSTREAM_PREFIX.length);
        const ops = fb.get(id);
        o.push(
          `<tr class="upstream-test" data-status="${r.status}" data-test="${esc(id)}"><td style="background:${color(r.status)};color:${r.status === "warn" || r.status === "skip" ? "#1f2328" : "#fff"}">${r.status === "warn" ? "passed on CPU" : r.status}</td>` +
            `<td><code>${esc(id)}</code></td><td class="msg">${esc(r.message)}</td><td class="msg">${ops ? esc(fallbackText(ops.ops)) : "—"}</td></tr>`,
        );
      }
      o.push("</table>");
    }
    o.push("</details>");
  }
  return o;
}

export function upstreamTerminal(u: UpstreamReport | undefined): string[] {
  if (!u) return [];
  const out = [`upstream: ${what(u)}: ${countsLine(total(u))}`];
  for (const f of u.files) {
    out.push(`  ${fileName(f)}: ${countsLine(f.counts)}`);
    for (const e of f.errors) out.push(`    ${e}`);
  }
  return out;
}

/** The sections of one run's shards as one (`report merge`): per file, the counts added up. */
export function mergeUpstream(parts: readonly UpstreamReport[]): UpstreamReport | undefined {
  if (parts.length === 0) return undefined;
  const byFile = new Map<string, UpstreamFileReport>();
  for (const p of parts) {
    for (const f of p.files) {
      const prev = byFile.get(f.file);
      if (!prev) {
        byFile.set(f.file, f);
        continue;
      }
      const counts = Object.fromEntries(
        Object.entries(prev.counts).map(([k, v]) => [k, v + f.counts[k as keyof UpstreamCounts]]),
      ) as unknown as UpstreamCounts;
      byFile.set(f.file, {
        ...prev,
        counts,
        errors: [...new Set([...prev.errors, ...f.errors])],
        processes: prev.processes + f.processes,
        fallback: [...prev.fallback, ...f.fallback].sort((a, b) => cmp(a.id, b.id)),
      });
    }
  }
  return { ...parts[0]!, files: [...byFile.values()].sort((a, b) => cmp(a.file, b.file)) };
}
