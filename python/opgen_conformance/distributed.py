"""`opgen-backend test --distributed N`: the device's c10d backend
("<device>ccl", csrc/runtime/Distributed.cpp of a project) checked at world
size N on this machine, reported like the operator checks.

    python -m opgen_conformance.distributed --package torch_<name> --device <name> --world N

starts N rank processes (this module with --rank), which meet through a
FileStore and talk over Gloo on the loopback; each collective runs on
device tensors through the device's backend and on the same CPU tensors
through Gloo, per dtype, and the results must be equal (torch.equal: the
device backend stages to host and runs Gloo, so any difference is a staging
bug). Rank 0 prints one JSON list of results, each
{op: "c10d::<collective>", dtype, check: "values", status, message, input}.
A rank that fails or hangs past --timeout fails the whole run (exit 2).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time

DTYPES = ("float32", "float16", "int32")


def _values(torch, rank, shape, dtype):
    n = 1
    for s in shape:
        n *= s
    base = torch.arange(n, dtype=torch.float64).reshape(shape)
    if dtype.is_floating_point:
        return ((base % 7) * 0.25 + rank + 1).to(dtype)
    return ((base % 5) + rank + 1).to(dtype)


def _cases(torch, dist, rank, world, dev):
    """(collective, description, run(on_device) -> list of result tensors) per case."""
    R = dist.ReduceOp

    def on(device, t):
        return t.to(device)

    def all_reduce(op, strided):
        def run(d, dtype):
            t = _values(torch, rank, (6, 8), dtype)
            t = on(d, t)[:, ::2] if strided and d != "cpu" else (t[:, ::2].contiguous() if strided else on(d, t))
            dist.all_reduce(t, op=op)
            return [t]

        return run

    def broadcast(d, dtype):
        t = on(d, _values(torch, rank, (5,), dtype))
        dist.broadcast(t, src=world - 1)
        return [t]

    def reduce(d, dtype):
        t = on(d, _values(torch, rank, (5,), dtype))
        dist.reduce(t, dst=0)
        return [t]

    def all_gather(d, dtype):
        outs = [torch.empty(5, dtype=dtype, device=d) for _ in range(world)]
        dist.all_gather(outs, on(d, _values(torch, rank, (5,), dtype)))
        return outs

    def all_gather_into_tensor(d, dtype):
        out = torch.empty(world * 5, dtype=dtype, device=d)
        dist.all_gather_into_tensor(out, on(d, _values(torch, rank, (5,), dtype)))
        return [out]

    def reduce_scatter(d, dtype):
        out = torch.empty(3, dtype=dtype, device=d)
        dist.reduce_scatter(out, [on(d, _values(torch, rank + i, (3,), dtype)) for i in range(world)])
        return [out]

    def reduce_scatter_tensor(d, dtype):
        out = torch.empty(3, dtype=dtype, device=d)
        dist.reduce_scatter_tensor(out, on(d, _values(torch, rank, (world * 3,), dtype)))
        return [out]

    def all_to_all_single(d, dtype):
        ins = [(rank + j) % 3 + 1 for j in range(world)]
        outs = [(j + rank) % 3 + 1 for j in range(world)]
        out = torch.empty(sum(outs), dtype=dtype, device=d)
        dist.all_to_all_single(out, on(d, _values(torch, rank, (sum(ins),), dtype)), outs, ins)
        return [out]

    def gather(d, dtype):
        outs = [torch.empty(5, dtype=dtype, device=d) for _ in range(world)] if rank == 0 else None
        dist.gather(on(d, _values(torch, rank, (5,), dtype)), outs, dst=0)
        return outs or []

    def scatter(d, dtype):
        out = torch.empty(4, dtype=dtype, device=d)
        pieces = [on(d, _values(torch, 10 + i, (4,), dtype)) for i in range(world)] if rank == 0 else None
        dist.scatter(out, pieces, src=0)
        return [out]

    def send_recv(d, dtype):
        got = torch.empty(5, dtype=dtype, device=d)
        reqs = [dist.isend(on(d, _values(torch, rank, (5,), dtype)), (rank + 1) % world),
                dist.irecv(got, (rank - 1) % world)]
        for r in reqs:
            r.wait()
        return [got]

    for op in (R.SUM, R.PRODUCT, R.MIN, R.MAX):
        yield "all_reduce", f"{op}, contiguous (6, 8)", all_reduce(op, False), DTYPES
        yield "all_reduce", f"{op}, strided [:, ::2] of (6, 8)", all_reduce(op, True), DTYPES
    for op in (R.BAND, R.BOR, R.BXOR):
        yield "all_reduce", f"{op}, contiguous (6, 8)", all_reduce(op, False), ("int32",)
    yield "broadcast", f"(5,) from rank {world - 1}", broadcast, DTYPES
    yield "reduce", "(5,) SUM to rank 0", reduce, DTYPES
    yield "all_gather", "(5,) per rank, list", all_gather, DTYPES
    yield "all_gather_into_tensor", "(5,) per rank", all_gather_into_tensor, DTYPES
    yield "reduce_scatter", "(3,) per rank, list", reduce_scatter, DTYPES
    yield "reduce_scatter_tensor", "(3,) per rank", reduce_scatter_tensor, DTYPES
    yield "all_to_all_single", "uneven splits (r + j) % 3 + 1", all_to_all_single, DTYPES
    yield "gather", "(5,) to rank 0", gather, DTYPES
    yield "scatter", "(4,) from rank 0", scatter, DTYPES
    yield "send_recv", "(5,) around the ring (isend/irecv)", send_recv, DTYPES


def rank_main(package: str, device: str, rank: int, world: int, store: str) -> list[dict]:
    import torch
    import torch.distributed as dist

    importlib.import_module(package)
    mod = getattr(torch, device)
    mod.set_device(rank % mod.device_count())
    dist.init_process_group(f"cpu:gloo,{device}:{device}ccl", store=dist.FileStore(store, world), rank=rank,
                            world_size=world, timeout=datetime.timedelta(seconds=60))
    results = []
    sample = {}
    for name, what, run, dtypes in _cases(torch, dist, rank, world, device):
        op = f"c10d::{name}"
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            i = sample[(op, dtype_name)] = sample.get((op, dtype_name), -1) + 1
            row = {"op": op, "dtype": dtype_name, "check": "values", "sample": i, "input": f"world {world}, {what}"}
            # Gloo on CPU first, then the device: every rank runs both in the same order.
            want = [t.clone() for t in run("cpu", dtype)]
            try:
                got = [t.to("cpu") for t in run(device, dtype)]
            except Exception as e:  # noqa: BLE001 - the device side raised where Gloo did not
                results.append({**row, "status": "fail", "message": f"{type(e).__name__}: {str(e).splitlines()[0]}"})
                continue
            bad = [k for k, (g, w) in enumerate(zip(got, want)) if g.dtype != w.dtype or g.shape != w.shape
                   or not torch.equal(g, w)]
            if len(got) != len(want) or bad:
                k = bad[0] if bad else 0
                msg = f"result {k} differs from Gloo's on CPU: {got[k].tolist()} vs {want[k].tolist()}" if bad else \
                    f"{len(got)} results, Gloo gives {len(want)}"
                results.append({**row, "status": "fail", "message": msg})
            else:
                results.append({**row, "status": "pass", "message": ""})
    dist.barrier()
    dist.destroy_process_group()
    return results


def run(package: str, device: str, world: int, timeout: float) -> tuple[int, list[dict] | str]:
    env = dict(os.environ, GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"), OMP_NUM_THREADS="1")
    path = [os.path.abspath(p or os.curdir) for p in sys.path]
    env["PYTHONPATH"] = os.pathsep.join(path)
    with tempfile.TemporaryDirectory() as d:
        argv = [sys.executable, "-m", "opgen_conformance.distributed", "--package", package, "--device", device,
                "--world", str(world), "--store", os.path.join(d, "store")]
        procs = [subprocess.Popen([*argv, "--rank", str(r)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for r in range(world)]
        deadline = time.monotonic() + timeout
        outs = []
        for r, p in enumerate(procs):
            try:
                outs.append(p.communicate(timeout=max(1.0, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                return 2, f"rank {r} of {world} did not finish within {timeout:g} s"
            if p.returncode != 0:
                for q in procs:
                    q.kill()
                return 2, f"rank {r} of {world} failed (exit {p.returncode}):\n{outs[-1][1][-3000:]}"
    return 0, json.loads(outs[0][0].strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="opgen_conformance.distributed", description=__doc__)
    ap.add_argument("--package", required=True)
    ap.add_argument("--device", required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.world < 1:
        ap.error(f"--world {a.world}: a world size is 1 or more")
    if a.rank is not None:
        rows = rank_main(a.package, a.device, a.rank, a.world, a.store)
        if a.rank == 0:
            print(json.dumps(rows))
        return 0
    code, out = run(a.package, a.device, a.world, a.timeout)
    if code:
        print(out, file=sys.stderr)
        return code
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
