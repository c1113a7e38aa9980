"""all_reduce bus bandwidth of the device's c10d backend ("<device>ccl",
Note [Collective staging] in backends/ref/csrc/runtime/Distributed.cpp)
against Gloo on CPU tensors, at world size 2 on this machine (ranks are
processes meeting through a FileStore, Gloo over TCP on the loopback).

Each size is timed on the device and on CPU in the same processes, interleaved
(a warm-up each, then the median of --runs rounds of --reps calls). Bus
bandwidth is NCCL-tests' definition: size * 2 * (n - 1) / n / time. The
ratio (device time / CPU time; lower is better) is the staging overhead:
device -> pinned host copies, the stream synchronization, the copies back.
Issue 26's goal: <= 1.5x at 64 MB. `--clock cpu` times the rank process's
CPU seconds (all its threads: Gloo's, the backend's completion thread)
instead of wall time, for a machine other work shares: the staging overhead
is CPU work (copies, page faults), so its ratio stays meaningful under load,
while the bandwidth column then means "per CPU second".

  PYTHONPATH=<site of a built backend> python bench/distributed.py --device <name> [--package torch_<name>]
      [--sizes-mb 1,64] [--runs 5] [--reps 5] [--clock wall|cpu] [--json out.json]
"""

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time


def rank_main(args, rank: int, store_path: str) -> None:
    import torch
    import torch.distributed as dist

    importlib.import_module(args.package)
    world = 2
    dist.init_process_group(f"cpu:gloo,{args.device}:{args.device}ccl", store=dist.FileStore(store_path, world),
                            rank=rank, world_size=world)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    rows = []
    for mb in args.sizes_mb:
        n = int(mb * 2**20) // 4
        tensors = {"cpu": torch.ones(n), "device": torch.ones(n, device=args.device)}
        times = {k: [] for k in tensors}
        for k, t in tensors.items():  # warm-up (connections, first allocations)
            dist.all_reduce(t)
        for _ in range(args.runs):
            for k, t in tensors.items():
                dist.barrier()
                start = clock()
                for _ in range(args.reps):
                    dist.all_reduce(t)
                if k == "device":
                    getattr(torch, args.device).synchronize()
                times[k].append((clock() - start) / args.reps)
        med = {k: statistics.median(v) for k, v in times.items()}
        size = n * 4
        busbw = {k: size * 2 * (world - 1) / world / v / 1e9 for k, v in med.items()}
        rows.append({"size_mb": mb, "cpu_s": med["cpu"], "device_s": med["device"], "cpu_busbw_gbs": busbw["cpu"],
                     "device_busbw_gbs": busbw["device"], "ratio": med["device"] / med["cpu"]})
    if rank == 0:
        print(json.dumps(rows))
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", required=True)
    ap.add_argument("--package")
    ap.add_argument("--sizes-mb", type=lambda s: [float(x) for x in s.split(",")], default=[1.0, 64.0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--json")
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.package = args.package or f"torch_{args.device}"
    if args.rank is not None:
        rank_main(args, args.rank, args.store)
        return
    env = dict(os.environ, GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"))
    with tempfile.TemporaryDirectory() as d:
        argv = [sys.executable, __file__, "--device", args.device, "--package", args.package,
                "--sizes-mb", ",".join(str(s) for s in args.sizes_mb), "--runs", str(args.runs), "--reps", str(args.reps), "--clock", args.clock,
                "--store", os.path.join(d, "store")]
        procs = [subprocess.Popen([*argv, "--rank", str(r)], env=env, stdout=subprocess.PIPE, text=True) for r in range(2)]
        outs = [p.communicate()[0] for p in procs]
        if any(p.returncode for p in procs):
            sys.exit(f"bench/distributed.py: a rank failed (exit codes {[p.returncode for p in procs]})")
    rows = json.loads(outs[0].strip().splitlines()[-1])
    print(f"all_reduce float32, world size 2, median of {args.runs} x {args.reps}, {args.clock} clock")
    print(f"{'size':>8} {'gloo cpu':>12} {'busbw':>10} {args.device + 'ccl':>12} {'busbw':>10} {'ratio':>7}")
    for r in rows:
        print(f"{r['size_mb']:>6g}MB {r['cpu_s'] * 1e3:>10.2f}ms {r['cpu_busbw_gbs']:>7.2f}GB/s "
              f"{r['device_s'] * 1e3:>10.2f}ms {r['device_busbw_gbs']:>7.2f}GB/s {r['ratio']:>6.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
