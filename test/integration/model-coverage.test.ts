/**
 * `coverage --model` without Python: the fate of each traced overload against
 * a backend YAML (Note [Model coverage] in src/dest/coverage.ts), the
 * terminal listing, the runner's JSON, and `--add`'s edit of the YAML
 * (src/yaml/edit.ts: inserted text only, everything else byte for byte).
 * test/integration/coverage-model.test.ts runs the real CLI and runner.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import YAML from "yaml";
import { loadBackendYaml, parseBackendYaml } from "../../src/backend/load.js";
import { addMissing, modelsLabel, parseTrace } from "../../src/conformance/modelcoverage.js";
import { computeModelCoverage, formatModelCoverage, type TracedCase } from "../../src/dest/coverage.js";
import { loadCatalog } from "../../src/model/catalog.js";
import type { OperatorCatalog } from "../../src/model/types.js";
import { discoverTorch } from "../../src/torch/discover.js";
import { UserError } from "../../src/util/errors.js";
import { appendToTopLevelList } from "../../src/yaml/edit.js";

let catalog: OperatorCatalog;
const work = mkdtempSync(path.join(tmpdir(), "opgen-modelcov-"));

beforeAll(async () => {
  catalog = await loadCatalog(await discoverTorch());
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const YAML_TEXT = `# A person's backend.yaml: comments, a flow list, a runtime list.
backend: PrivateUse1
cpp_namespace: at::cov
device: covdev
runtime: [view, empty.memory_format]
supported:
  - add.Tensor   # ours
  - mm
  - sigmoid.out
# the vendor's autograd
autograd:
  - mul.Tensor
`;

const n = (forward: number, backward = 0, step = 0) => ({ forward, backward, step });

const TRACED: TracedCase[] = [
  {
    name: "m:a",
    ops: {
      "add.Tensor": n(2),
      "add_.Tensor": n(0, 0, 3),
      view: n(1, 1),
      mm: n(1, 2),
      addmm: n(2),
      sigmoid: n(1),
      silu_backward: n(0, 1),
      detach: n(3, 4, 1),
      "mul.Tensor": n(1, 1),
      logit: n(1),
      "profiler::_record_function_enter_new": n(0, 0, 1),
    },
  },
  { name: "m:b", ops: { addmm: n(1), tril: n(1, 1), mm: n(0, 1) } },
];

describe("computeModelCoverage", () => {
  const fates: [string, { fate: string; detail: string; cases?: string[]; counts?: number[] }][] = [
    ["add.Tensor", { fate: "listed", detail: "supported" }],
    ["add_.Tensor", { fate: "derived", detail: "from add.Tensor" }],
    ["view", { fate: "listed", detail: "runtime" }],
    ["mul.Tensor", { fate: "listed", detail: "autograd" }],
    ["mm", { fate: "listed", detail: "supported", cases: ["m:a", "m:b"], counts: [1, 3, 0] }],
    // structured_delegate: torchgen's composite calls addmm.out, which nothing serves
    ["addmm", { fate: "fallback", detail: "as addmm.out", cases: ["m:a", "m:b"], counts: [3, 0, 0] }],
    // ... and sigmoid.out is listed, so sigmoid runs natively through it
    ["sigmoid", { fate: "composite", detail: "through sigmoid.out" }],
    ["silu_backward", { fate: "composite", detail: "CompositeImplicitAutograd" }],
    ["detach", { fate: "composite", detail: "CompositeExplicitAutograd" }],
    ["logit", { fate: "fallback", detail: "" }],
    ["tril", { fate: "fallback", detail: "as tril.out", cases: ["m:b"] }],
    ["profiler::_record_function_enter_new", { fate: "other", detail: expect.stringMatching(/not in native/) }],
  ];
  it.each(fates)("%s", (name, want) => {
    const r = computeModelCoverage(parseBackendYaml(YAML_TEXT, "b.yaml", catalog), catalog, TRACED);
    const o = r.ops.find((x) => x.name === name);
    expect(o).toMatchObject({ fate: want.fate, detail: want.detail });
    if (want.cases) expect(o!.cases).toEqual(want.cases);
    if (want.counts) expect([o!.forward, o!.backward, o!.step]).toEqual(want.counts);
  });

  it("sums up: sorted ops, counts per fate, the missing ones", () => {
    const r = computeModelCoverage(parseBackendYaml(YAML_TEXT, "b.yaml", catalog), catalog, TRACED);
    expect(r.ops.map((o) => o.name)).toEqual([...r.ops.map((o) => o.name)].sort());
    expect(r.ops).toHaveLength(12);
    expect(r.counts).toEqual({ unsupported: 0, fallback: 3, composite: 3, derived: 1, listed: 4, other: 1 });
    expect(r.missing).toEqual(["addmm", "logit", "tril"]);
    expect(r.cases).toEqual(["m:a", "m:b"]);
  });

  it("fallback: none makes the missing ones unsupported", () => {
    const r = computeModelCoverage(
      parseBackendYaml(`${YAML_TEXT}fallback: none\n`, "b.yaml", catalog),
      catalog,
      TRACED,
    );
    expect(r.ops.filter((o) => o.fate === "unsupported").map((o) => o.name)).toEqual(["addmm", "logit", "tril"]);
    expect(r.counts.fallback).toBe(0);
    expect(r.missing).toEqual(["addmm", "logit", "tril"]);
  });
});

describe("formatModelCoverage", () => {
  it("lists each fate with counts and the cases that need each overload", () => {
    const r = computeModelCoverage(parseBackendYaml(YAML_TEXT, "b.yaml", catalog), catalog, TRACED);
    const t = formatModelCoverage(r);
    expect(t).toContain("2 cases (a, b) reach 12 overloads");
    expect(t).toMatch(
      /falls back to CPU: 3\n.*fwd +bwd +step +cases\n {2}addmm \(as addmm\.out\) +3 +0 +0 {2}all 2 cases\n/,
    );
    expect(t).toMatch(/\n {2}tril \(as tril\.out\) +1 +1 +0 {2}b\n/);
    expect(t).toMatch(/derived .*: 1\n.*\n {2}add_\.Tensor \(from add\.Tensor\) +0 +0 +3 {2}a\n/);
    expect(t).toContain("3 overloads would fall back to CPU");
    expect(t).not.toContain("\u001b[");
  });

  it("colours only through the style it is given", () => {
    const r = computeModelCoverage(parseBackendYaml(YAML_TEXT, "b.yaml", catalog), catalog, TRACED);
    const tag = (c: string) => (s: string) => `<${c}>${s}</${c}>`;
    const t = formatModelCoverage(r, {
      red: tag("r"),
      green: tag("g"),
      yellow: tag("y"),
      dim: tag("d"),
      bold: tag("b"),
    });
    expect(t).toContain("<b><r>falls back to CPU: 3</r></b>");
    expect(t).toContain("<b><g>derived");
  });

  it("says so when nothing is missing", () => {
    const r = computeModelCoverage(parseBackendYaml(YAML_TEXT, "b.yaml", catalog), catalog, [
      { name: "m:a", ops: { mm: n(1) } },
    ]);
    expect(formatModelCoverage(r)).toContain("every overload the model reaches is served natively");
    expect(r.missing).toEqual([]);
  });
});

describe("parseTrace (the runner's model-ops JSON)", () => {
  it("reads cases named <file stem>:<case>", () => {
    const t = parseTrace(
      JSON.stringify([{ file: "/x/small.py", case: "mlp", ops: { mm: { forward: 1, backward: 2, step: 0 } } }]),
      "small.py",
    );
    expect(t).toEqual({ file: "/x/small.py", cases: [{ name: "small:mlp", ops: { mm: n(1, 2) } }] });
  });
  const bad: [string, string][] = [
    ["not JSON", "Traceback"],
    ["not a list", "{}"],
    ["a case without ops", '[{"file": "f.py", "case": "c"}]'],
    ["counts that are not integers", '[{"file": "f.py", "case": "c", "ops": {"mm": {"forward": "1"}}}]'],
  ];
  it.each(bad)("%s is a bug of the runner, not a user error", (_name, stdout) => {
    expect(() => parseTrace(stdout, "f.py")).toThrow(/model-ops --model f\.py printed/);
    try {
      parseTrace(stdout, "f.py");
    } catch (e) {
      expect(e).not.toBeInstanceOf(UserError);
    }
  });
});

describe("appendToTopLevelList (src/yaml/edit.ts)", () => {
  const C = "added";
  const cases: [string, { given: string; want: string; line: number }][] = [
    [
      "a block list: after its last item, before the comments and keys that follow",
      {
        given: "a: 1\nsupported:\n  - x\n  - y   # mine\n# next\nb: [2]\n",
        want: "a: 1\nsupported:\n  - x\n  - y   # mine\n  # added\n  - n1\n  - n2\n# next\nb: [2]\n",
        line: 6,
      },
    ],
    [
      "a block list at column 0, at the end of a file without a final newline",
      {
        given: "supported:\n- x",
        want: "supported:\n- x\n# added\n- n1\n- n2\n",
        line: 4,
      },
    ],
    [
      "a block list whose last item is a mapping",
      {
        given: "supported:\n  - op: g\n    backward: h\nz: 1\n",
        want: "supported:\n  - op: g\n    backward: h\n  # added\n  - n1\n  - n2\nz: 1\n",
        line: 5,
      },
    ],
    ["a flow list", { given: "supported: [x, y]  # c\n", want: "supported: [x, y, n1, n2]  # c\n", line: 1 }],
    ["an empty flow list", { given: "supported: []\nb: 1\n", want: "supported: [n1, n2]\nb: 1\n", line: 1 }],
    ["a flow list with a trailing comma", { given: "supported: [x,]\n", want: "supported: [x, n1, n2]\n", line: 1 }],
    [
      "a flow list over several lines",
      { given: "supported: [\n  x,\n  y\n]\n", want: "supported: [\n  x,\n  y, n1, n2\n]\n", line: 3 },
    ],
    [
      "a key without a value: indented as the file's other block lists",
      {
        given: "runtime:\n    - view\nsupported:\nb: 1\n",
        want: "runtime:\n    - view\nsupported:\n    # added\n    - n1\n    - n2\nb: 1\n",
        line: 5,
      },
    ],
    [
      "`key: ~` with a comment: the null goes, the comment stays",
      {
        given: "supported: ~  # none yet\nb: 1\n",
        want: "supported:  # none yet\n  # added\n  - n1\n  - n2\nb: 1\n",
        line: 3,
      },
    ],
    ["`key: null` at the end", { given: "supported: null", want: "supported:\n  # added\n  - n1\n  - n2\n", line: 3 }],
    [
      "no such key: a new list at the end",
      { given: "backend: X\n# end", want: "backend: X\n# end\nsupported:\n  # added\n  - n1\n  - n2\n", line: 5 },
    ],
    [
      "CRLF line ends",
      {
        given: "supported:\r\n  - x\r\nb: 1\r\n",
        want: "supported:\r\n  - x\r\n  # added\r\n  - n1\r\n  - n2\r\nb: 1\r\n",
        line: 4,
      },
    ],
  ];
  it.each(cases)("%s", (_name, { given, want, line }) => {
    const r = appendToTopLevelList(given, "supported", ["n1", "n2"], C);
    expect(r.text).toBe(want);
    expect(r.line).toBe(line);
    expect(r.text.split(/\r?\n/)[line - 1]).toMatch(/n1/);
    // What YAML reads: the old items, then the new ones; every other key as it was.
    const before = YAML.parse(given, { version: "1.1" }) ?? {};
    const after = YAML.parse(r.text, { version: "1.1" });
    const old = Array.isArray(before.supported) ? before.supported : [];
    expect(after.supported).toEqual([...old, "n1", "n2"]);
    expect({ ...after, supported: null }).toEqual({ ...before, supported: null });
  });

  it("adds nothing when given nothing", () => {
    expect(appendToTopLevelList("supported: [x]\n", "supported", [], C)).toEqual({ text: "supported: [x]\n", line: 0 });
  });

  it("refuses a key that holds something else than a list", () => {
    expect(() => appendToTopLevelList("supported: x\n", "supported", ["n"], C)).toThrow(/not a list/);
  });
});

describe("addMissing (--add)", () => {
  const file = path.join(work, "backend.yaml");
  const traced: TracedCase[] = [{ name: "m:a", ops: { mm: n(1), logit: n(1), addmm: n(1), detach: n(1) } }];

  it("lists the missing overloads under supported:, keeping every byte a person wrote; a second run adds nothing", () => {
    writeFileSync(file, YAML_TEXT);
    let config = loadBackendYaml(file, catalog);
    const first = addMissing(config, catalog, computeModelCoverage(config, catalog, traced), "--model m.py");
    expect(first).toEqual({ names: ["addmm", "logit"], line: 11 });
    const text = readFileSync(file, "utf8");
    expect(text).toBe(
      YAML_TEXT.replace(
        "  - sigmoid.out\n",
        "  - sigmoid.out\n  # 2 overloads added by `opgen-backend coverage --add` for --model m.py\n  - addmm\n  - logit\n",
      ),
    );
    config = loadBackendYaml(file, catalog);
    const again = computeModelCoverage(config, catalog, traced);
    expect(again.ops.find((o) => o.name === "addmm")).toMatchObject({ fate: "listed", detail: "supported" });
    expect(again.missing).toEqual([]);
    const mtime = statSync(file).mtimeMs;
    expect(addMissing(config, catalog, again, "--model m.py")).toEqual({ names: [], line: 0 });
    expect(readFileSync(file, "utf8")).toBe(text);
    expect(statSync(file).mtimeMs).toBe(mtime);
  });

  it("adds only aten overloads, never the trace's other operators", () => {
    writeFileSync(file, YAML_TEXT);
    const config = loadBackendYaml(file, catalog);
    const r = computeModelCoverage(config, catalog, [{ name: "m:a", ops: { "profiler::x": n(1), mm: n(1) } }]);
    expect(addMissing(config, catalog, r, "m.py").names).toEqual([]);
    expect(readFileSync(file, "utf8")).toBe(YAML_TEXT);
  });

  it("refuses a file that changed since it was read, and writes nothing", () => {
    writeFileSync(file, YAML_TEXT);
    const config = loadBackendYaml(file, catalog);
    const r = computeModelCoverage(config, catalog, traced);
    writeFileSync(file, `${YAML_TEXT}# edited meanwhile\n`);
    expect(() => addMissing(config, catalog, r, "m.py")).toThrow(UserError);
    expect(() => addMissing(config, catalog, r, "m.py")).toThrow(/changed while coverage ran/);
    expect(readFileSync(file, "utf8")).toBe(`${YAML_TEXT}# edited meanwhile\n`);
  });
});

describe("modelsLabel", () => {
  it("keeps the file's name and the case globs, not where the file is", () => {
    expect(modelsLabel(["/a/b/small.py:mlp,cnn", "zoo", "rel/m.py"])).toBe("small.py:mlp,cnn, zoo, m.py");
  });
});
