#!/usr/bin/env node
/**
 * Writes backends/ref/cuda-ops.txt: the operators a CUDA project registers
 * (`opgen-backend init --device cuda`, src/scaffold/init.ts kernelSetOps).
 * They are the reference backend.yaml's operators (`supported:` and the aten
 * operators of `autograd:`) whose ATen glue (csrc/aten, csrc/runtime) reaches
 * no kernel library entry point that kernels/cuda/NotImplemented.cu stubs.
 *
 *   node scripts/cuda-ops.mjs           rewrite the file
 *   node scripts/cuda-ops.mjs --check   exit 1 if the file is not what this writes
 *
 * test/integration/cuda-backend.test.ts runs the check, so the file follows
 * the sources instead of being kept by hand.
 *
 * Note [Glue walk]: the walk reads C++ as text, not as a compiler would:
 * top-level functions of the glue's .cpp files (comments and strings
 * removed), each with the free identifiers its body calls; an operator's
 * glue function is the one named as its base name (`add` for add.Tensor),
 * overloads share a name, and what it reaches is followed through every
 * function the walk knows. It sees enough for this one question; its known
 * answers are checked before the file is written (KNOWN_REACHES).
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REF = path.join(ROOT, "backends", "ref");
const CSRC = path.join(REF, "csrc");
const OUT = path.join(REF, "cuda-ops.txt");

const read = (...p) => readFileSync(path.join(...p), "utf8");
const files = (dir, ext) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(ext))
    .sort()
    .map((f) => path.join(dir, f));

/** The kernel library entry points a source defines or declares (`refkStatus refkX(`). */
function entryPoints(text) {
  return [...text.matchAll(/^(?:extern\s+"C"\s+)?refkStatus\s+(refk\w+)\s*\(/gm)].map((m) => m[1]);
}

/**
 * Top-level C++ functions of a source file (comments and strings removed):
 * name -> the identifiers its body calls. Overloads share a name; namespace
 * braces are transparent.
 */
function callsOf(src, into) {
  const code = src
    .replace(/\/\*[\s\S]*?\*\//g, "")
    .replace(/\/\/.*$/gm, "")
    .replace(/"(?:\\.|[^"\\\n])*"/g, '""')
    .replace(/'(?:\\.|[^'\\\n])'/g, "''");
  const stack = [];
  let headerStart = 0;
  let fn = null;
  for (let i = 0; i < code.length; i++) {
    const c = code[i];
    if (c === "{") {
      if (!fn) {
        const header = code.slice(headerStart, i);
        const m = /([A-Za-z_]\w*)\s*\(/.exec(header);
        if (/\bnamespace\b[^;]*$/.test(header) || /extern\s+""\s*$/.test(header)) stack.push({ kind: "ns" });
        else if (m && /\)\s*(const)?\s*(noexcept)?\s*(->[^{;]*)?$/.test(header)) {
          stack.push({ kind: "fn", name: m[1] });
          fn = { name: m[1], start: i };
        } else stack.push({ kind: "other" });
      } else stack.push({ kind: "other" });
      headerStart = i + 1;
    } else if (c === "}") {
      const top = stack.pop();
      if (top?.kind === "fn" && fn) {
        const body = code.slice(fn.start, i);
        const calls = into.get(fn.name) ?? new Set();
        // Free calls only: not members (x.f(), p->f()) and not other namespaces' (at::f()).
        for (const m of body.matchAll(/(?<![\w.>:])(?:(?:opgen_ref|runtime)::)?([A-Za-z_]\w*)\s*\(/g)) calls.add(m[1]);
        into.set(fn.name, calls);
        fn = null;
      }
      headerStart = i + 1;
    } else if (c === ";" && !fn) {
      headerStart = i + 1;
    }
  }
}

/** The glue's call graph and the stubbed entry points: what an operator reaches (Note [Glue walk]). */
function glueWalk() {
  const calls = new Map();
  for (const dir of ["aten", "runtime"]) {
    for (const f of files(path.join(CSRC, dir), ".cpp")) callsOf(readFileSync(f, "utf8"), calls);
  }
  const stubs = new Set(entryPoints(read(CSRC, "kernels", "cuda", "NotImplemented.cu")));
  /** The stubbed entry points the glue function `name` reaches. */
  return (name) => {
    const seen = new Set([name]);
    const todo = [name];
    const hit = new Set();
    while (todo.length > 0) {
      for (const callee of calls.get(todo.pop()) ?? []) {
        if (stubs.has(callee)) hit.add(callee);
        if (!seen.has(callee) && calls.has(callee)) {
          seen.add(callee);
          todo.push(callee);
        }
      }
    }
    return [...hit].sort();
  };
}

/** What the walk must see in today's sources: a walk that misses these is broken, not the sources. */
const KNOWN_REACHES = [
  ["_embedding_bag", "refkEmbeddingBag"],
  ["max_pool2d_with_indices", "refkPool"],
  ["histc", "refkHistc"],
];

/** A section comment's title: the whole of a one-line comment, else its first line up to `: ` or ` (`. */
function sectionName(lines) {
  if (lines.length === 1) return lines[0];
  const first = lines[0];
  const cut = [first.indexOf(": "), first.indexOf(" (")].filter((i) => i > 0);
  return cut.length > 0 ? first.slice(0, Math.min(...cut)) : first;
}

/**
 * Note [cuda-ops.txt order]: the file follows backend.yaml, supported: then
 * autograd:, with its section comments (`# unary pointwise`) carried over
 * to the first listed operator under them, so a reader finds an operator
 * where backend.yaml has it.
 */
function cudaOps() {
  const reaches = glueWalk();
  for (const [op, stub] of KNOWN_REACHES) {
    if (!reaches(op).includes(stub)) {
      throw new Error(`scripts/cuda-ops.mjs: the glue walk no longer sees ${op} reach ${stub}; fix the walk`);
    }
  }
  const text = read(REF, "backend.yaml");
  const yaml = YAML.parse(text);
  // A CUDA project lists the aten operators of `autograd:` as supported (kernelSetOps).
  const ops = [...(yaml.supported ?? []), ...(yaml.autograd ?? []).map((e) => (typeof e === "string" ? e : e.op))];
  const keep = new Set(ops.filter((op) => reaches(op.split(".")[0]).length === 0));
  const out = [];
  const seen = new Set();
  let key = null;
  let section = null;
  let block = [];
  for (const line of text.split("\n")) {
    const top = /^([a-z_]+):/.exec(line);
    if (top) {
      key = top[1];
      // autograd:'s operators are under no section comment of their own.
      section = key === "autograd" ? "autograd: entries (a CUDA project lists them as supported)" : null;
      continue;
    }
    if (key !== "supported" && key !== "autograd") continue;
    const comment = /^ {2}# ?(.*)$/.exec(line);
    if (comment) {
      block.push(comment[1]);
      continue;
    }
    if (block.length > 0) section = sectionName(block);
    block = [];
    const m = /^ {2}- (?:op:\s*)?([A-Za-z_][\w.]*)\s*$/.exec(line);
    if (!m || !keep.has(m[1]) || seen.has(m[1])) continue;
    if (section !== null) {
      out.push("", `# ${section}`);
      section = null;
    }
    out.push(m[1]);
    seen.add(m[1]);
  }
  const missing = [...keep].filter((op) => !seen.has(op));
  if (missing.length > 0)
    throw new Error(`scripts/cuda-ops.mjs: cannot place ${missing.join(", ")} in backend.yaml's order`);
  return out;
}

const HEADER = `# Generated by \`node scripts/cuda-ops.mjs\` from the sources: do not edit.
# The operators a CUDA project registers (\`opgen-backend init --device cuda\`):
# backend.yaml's operators whose ATen glue calls only kernel library entry
# points that kernels/cuda/ implements. The rest (those whose glue reaches
# an entry point kernels/cuda/NotImplemented.cu still stubs) run through the
# CPU fallback until their CUDA kernels exist; rerun the script then.
`;

function render() {
  return `${HEADER}${cudaOps().join("\n")}\n`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const want = render();
  if (process.argv.includes("--check")) {
    // A missing file is as stale as a wrong one.
    const have = existsSync(OUT) ? readFileSync(OUT, "utf8") : null;
    if (have !== want) {
      console.error("backends/ref/cuda-ops.txt is not what the sources give: run node scripts/cuda-ops.mjs");
      process.exit(1);
    }
  } else {
    writeFileSync(OUT, want);
    console.log(
      `wrote ${path.relative(ROOT, OUT)} (${want.split("\n").filter((l) => /^[A-Za-z_]/.test(l)).length} operators)`,
    );
  }
}
