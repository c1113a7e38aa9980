"""``python -m opgen_conformance run|worker|index|rerun|custom|upstream|...`` (see __init__.py)."""

from __future__ import annotations

import argparse
import json
import sys


def cpu_capability(torch) -> str:
    """Note [CPU capability] (src/conformance/expectations.ts): ATen's vector
    capability (torch.backends.cpu.get_cpu_capability(): "AVX2", "AVX512",
    "DEFAULT", ...), then "+fp16" where the CPU has AVX512-FP16 (Linux
    /proc/cpuinfo flag avx512_fp16). ATen's capability does not say it, but
    eager's half-precision ops that hand work to oneDNN take oneDNN's fp16 path
    only there (measured: AVX512 gelu_backward on float16 broadcasts fine on an
    AMD EPYC with AVX512 but no avx512_fp16, and fails in oneDNN on a CPU with it)."""
    cap = torch.backends.cpu.get_cpu_capability()
    try:
        with open("/proc/cpuinfo", encoding="utf8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    return cap + ("+fp16" if "avx512_fp16" in flags else "")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="opgen_conformance")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("run", help="run a conformance config (written by opgen-backend test)")
    p.add_argument("--config", required=True)
    p = sub.add_parser("worker", help="internal: one pool worker")
    p.add_argument("--config", required=True)
    p = sub.add_parser("bench", help="time operators on the device and eager (written by opgen-backend bench)")
    p.add_argument("--config", required=True)
    p = sub.add_parser("bench-worker", help="internal: one bench worker")
    p.add_argument("--config", required=True)
    p = sub.add_parser("index", help="build the OpInfo -> overload index into a cache dir")
    p.add_argument("--cache-dir", required=True)
    p = sub.add_parser("rerun", help="rerun one sample alone and print its verdicts")
    p.add_argument("--config", required=True)
    p.add_argument("--op", required=True)
    p.add_argument("--dtype", required=True)
    p.add_argument("--sample", type=int, required=True)
    p.add_argument("--seed", type=int)
    p = sub.add_parser("custom", help="check a backend's custom operators against their references")
    p.add_argument("--package", required=True)
    p.add_argument("--device", required=True)
    p.add_argument("--json", action="store_true")
    sub.add_parser("cpu-capability", help="eager CPU's vector capability (torch.backends.cpu.get_cpu_capability())")
    p = sub.add_parser("model-cases", help="list the cases a model file spec selects (JSON)")
    p.add_argument("--model", required=True, help="FILE[:NAME,...]; 'zoo' is the shipped zoo")
    p = sub.add_parser("model-ops", help="the aten overloads a model file's cases dispatch on eager CPU (JSON)")
    p.add_argument("--model", required=True, help="FILE[:NAME,...]; 'zoo' is the shipped zoo")
    p = sub.add_parser("replay", help="rerun one call saved by a model case's first-divergence search")
    p.add_argument("--config", required=True)
    p.add_argument("--file", required=True)
    p = sub.add_parser("upstream", help="run PyTorch's test files on the device (written by test --upstream)")
    p.add_argument("--config", required=True)
    p = sub.add_parser("upstream-deps", help="the modules test files import that are not installed (JSON)")
    p.add_argument("--test-dir", required=True)
    p.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    if a.cmd == "upstream":
        from .upstream import run as upstream_run

        return upstream_run(a.config)
    if a.cmd == "upstream-deps":
        from .upstream import missing_imports

        print(json.dumps(missing_imports(a.files, a.test_dir), sort_keys=True))
        return 0
    if a.cmd == "bench":
        from .bench import run as bench_run

        return bench_run(a.config)
    if a.cmd == "bench-worker":
        from .bench import worker_main as bench_worker

        return bench_worker(a.config)
    if a.cmd == "run":
        from .pool import run

        return run(a.config)
    if a.cmd == "worker":
        from .worker import main as worker_main

        return worker_main(a.config)
    if a.cmd == "index":
        from .sources.opinfo import load_index

        idx = load_index(a.cache_dir)
        print(json.dumps({"overloads": len(idx["reach"]), "opinfos": len(idx["opinfos"])}))
        return 0
    if a.cmd == "rerun":
        return rerun(a)
    if a.cmd == "cpu-capability":
        import torch

        print(cpu_capability(torch))
        return 0
    if a.cmd == "model-cases":
        from .modelfile import ModelFileError, resolve, select

        try:
            file, globs = resolve(a.model)
            print(json.dumps([{"file": file, "case": c} for c in select(file, globs)]))
        except ModelFileError as e:
            print(e, file=sys.stderr)
            return 1
        return 0
    if a.cmd == "model-ops":
        from .modelfile import ModelFileError, resolve, select
        from .models import model_ops

        try:
            file, globs = resolve(a.model)
            cases = [{"file": file, "case": c, "ops": model_ops(file, c)} for c in select(file, globs)]
        except ModelFileError as e:
            print(e, file=sys.stderr)
            return 1
        print(json.dumps(cases, sort_keys=True))
        return 0
    if a.cmd == "replay":
        from .config import load_config
        from .device import open_device
        from .models import replay

        ok, msg = replay(a.file, open_device(load_config(a.config)))
        print(f"{'pass' if ok else 'fail'}: {msg}")
        return 0 if ok else 1
    if a.cmd == "custom":
        from .custom import main as custom_main

        return custom_main(a.package, a.device, a.json)
    return 2


def rerun(a: argparse.Namespace) -> int:
    from .checks import CHECKS, Runner
    from .device import open_device
    from .config import load_config
    from .sample import describe
    from .samples import sample_list
    from .sources.opinfo import load_index
    from .tensors import DTYPES

    config = load_config(a.config)
    seed = a.seed if a.seed is not None else config.seed
    op = next((o for o in config.ops if o["name"] == a.op), {"name": a.op, "kind": "functional", "view": False})
    index = load_index(config.cache_dir)
    dtype = DTYPES[a.dtype]
    samples = sample_list(a.op, op["kind"], dtype, seed, index, config.max_samples)
    if a.sample >= len(samples):
        print(f"{a.op} {a.dtype} has {len(samples)} samples with seed {seed}", file=sys.stderr)
        return 1
    s = samples[a.sample]
    runner = Runner(
        a.op, op["kind"], bool(op["view"]), dtype, open_device(config),
        grad_samples=config.grad_samples, overrides=config.tolerances, decomposed=bool(op.get("decomposed")),
    )
    print(f"{a.op} {a.dtype} seed={seed} sample={a.sample} source={s.source}")
    print(f"  input {describe(s)}")
    for check, (status, msg) in sorted(runner.run(s).items(), key=lambda kv: CHECKS.index(kv[0])):
        print(f"  {check:14} {status:5} {msg}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
