"""Reference CPU kernels vs eager CPU, side by side in one process at the same
thread count: median time of each op on the device and on CPU, and the ratio
(device / CPU; lower is better, 1.0 = as fast as eager).

  PYTHONPATH=<site of a built backend> python bench/kernels.py --device <name> [--threads 2] [--runs 15]
      [--only <text in a case name>]

The device's ops run on its own kernels (the script fails if one falls back;
with --allow-fallback such a case is reported and skipped instead, for a
device whose kernel library covers only part of the reference set). Device
times include a device synchronize (asynchronous devices such as the CUDA
reference backend return before their kernels finish).
"""

import argparse
import statistics
import time

import torch
import torch.nn.functional as F


def timed(fn, runs, sync=lambda: None):
    fn()  # warm up: allocations, thread pool
    sync()
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        sync()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--only", default="", help="only the cases whose name contains this text")
    ap.add_argument("--allow-fallback", action="store_true", help="skip (and name) cases that fall back to CPU")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    pkg = __import__(f"torch_{args.device}")
    g = torch.Generator().manual_seed(0)
    big = torch.randn(16 * 1024 * 1024, generator=g)
    big2 = torch.randn(16 * 1024 * 1024, generator=g)
    sq = torch.randn(4096, 4096, generator=g)
    stem = (torch.randn(8, 3, 224, 224, generator=g), torch.randn(64, 3, 7, 7, generator=g))
    stem_bwd = stem + (torch.randn(8, 64, 112, 112, generator=g),)
    row = torch.randn(4096, generator=g)
    # One training step of an MLP (Linear, ReLU, cross_entropy, SGD with
    # momentum), each device with its own model and optimizer: on the device
    # torch.optim takes its foreach path (one library call per parameter
    # list), on CPU eager's per-tensor path.
    mlp_state = {}

    def mlp_step(t):
        x, y = t
        if x.device not in mlp_state:
            torch.manual_seed(0)
            m = torch.nn.Sequential(torch.nn.Linear(1024, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 10))
            m = m.to(x.device)
            mlp_state[x.device] = (m, torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9))
        m, opt = mlp_state[x.device]
        opt.zero_grad()
        F.cross_entropy(m(x), y).backward()
        opt.step()

    cases = [
        ("add 16M f32", lambda t: t[0] + t[1], (big, big2)),
        ("mul 16M f32", lambda t: t[0] * t[1], (big, big2)),
        ("relu 16M f32", lambda t: torch.relu(t[0]), (big,)),
        ("add 4096x4096 + 4096 (broadcast)", lambda t: t[0] + t[1], (sq, row)),
        ("sum dim=1 4096x4096 f32", lambda t: t[0].sum(1), (sq,)),
        ("sum dim=0 4096x4096 f32", lambda t: t[0].sum(0), (sq,)),
        ("cat dim=0 2x 4096x4096 f32", lambda t: torch.cat(t, 0), (sq, sq)),
        ("cat dim=1 2x 4096x4096 f32", lambda t: torch.cat(t, 1), (sq, sq)),
        ("index_select dim=0 4096x4096, 2048", lambda t: torch.index_select(t[0], 0, t[1]),
         (sq, torch.randint(0, 4096, (2048,), generator=g))),
        ("index_select dim=1 4096x4096, 2048", lambda t: torch.index_select(t[0], 1, t[1]),
         (sq, torch.randint(0, 4096, (2048,), generator=g))),
        ("gather dim=1 4096x4096, 4096x1024", lambda t: torch.gather(t[0], 1, t[1]),
         (sq, torch.randint(0, 4096, (4096, 1024), generator=g))),
        ("gather dim=0 4096x4096, 1024x4096", lambda t: torch.gather(t[0], 0, t[1]),
         (sq, torch.randint(0, 4096, (1024, 4096), generator=g))),
        ("sort dim=1 1024x1024 f32", lambda t: torch.sort(t[0], 1), (torch.randn(1024, 1024, generator=g),)),
        ("sort 1M f32", lambda t: torch.sort(t[0]), (torch.randn(1 << 20, generator=g),)),
        ("sort stable 1M f32", lambda t: torch.sort(t[0], stable=True), (torch.randn(1 << 20, generator=g),)),
        ("softmax dim=1 4096x4096 f32", lambda t: torch.softmax(t[0], 1), (sq,)),
        ("log_softmax dim=0 4096x4096 f32", lambda t: torch.log_softmax(t[0], 0), (sq,)),
        ("layer_norm 4096x4096 f32", lambda t: F.layer_norm(t[0], (4096,), t[1], t[1]), (sq, row)),
        ("mm 1024x1024 f32", lambda t: torch.mm(t[0], t[1]),
         (torch.randn(1024, 1024, generator=g), torch.randn(1024, 1024, generator=g))),
        ("bmm 64x128x128 f32", lambda t: torch.bmm(t[0], t[1]),
         (torch.randn(64, 128, 128, generator=g), torch.randn(64, 128, 128, generator=g))),
        ("linear (addmm) 512x1024 -> 1024 f32", lambda t: F.linear(t[0], t[1], t[2]),
         (torch.randn(512, 1024, generator=g), torch.randn(1024, 1024, generator=g), torch.randn(1024, generator=g))),
        ("conv2d stem 8x3x224x224 64x3x7x7/2 f32", lambda t: F.conv2d(t[0], t[1], stride=2, padding=3), stem),
        ("conv2d stem backward (input, weight)", lambda t: torch.ops.aten.convolution_backward(
            t[2], t[0], t[1], None, [2, 2], [3, 3], [1, 1], False, [0, 0], 1, [True, True, False]), stem_bwd),
        ("conv2d 3x3 32x64x56x56 64->64 f32", lambda t: F.conv2d(t[0], t[1], padding=1),
         (torch.randn(32, 64, 56, 56, generator=g), torch.randn(64, 64, 3, 3, generator=g))),
        ("max_pool2d 3x3/2 pad 1 32x64x112x112 f32", lambda t: F.max_pool2d(t[0], 3, 2, 1),
         (torch.randn(32, 64, 112, 112, generator=g),)),
        ("rfft dim=-1 4096x4096 f32", lambda t: torch.fft.rfft(t[0]), (sq,)),
        ("rfft dim=-1 1024x4099 f32 (prime)", lambda t: torch.fft.rfft(t[0]),
         (torch.randn(1024, 4099, generator=g),)),
        ("fft2 1024x1024 c64", lambda t: torch.fft.fft2(t[0]),
         (torch.randn(1024, 1024, dtype=torch.complex64, generator=g),)),
        ("sdpa 8x8x512x64 f32 causal", lambda t: F.scaled_dot_product_attention(*t, is_causal=True),
         tuple(torch.randn(8, 8, 512, 64, generator=g) for _ in range(3))),
        ("MLP step 256x1024-1024-10, SGD momentum", mlp_step,
         (torch.randn(256, 1024, generator=g), torch.randint(0, 10, (256,), generator=g))),
    ]
    print(f"threads={args.threads} runs={args.runs} (median)")
    print(f"{'case':36s} {'device ms':>10s} {'cpu ms':>10s} {'ratio':>7s}")
    for name, fn, inputs in cases:
        if args.only not in name:
            continue
        dev_inputs = tuple(x.to(args.device) for x in inputs)
        pkg.reset_fallback_counts()
        d = timed(lambda: fn(dev_inputs), args.runs, getattr(torch, args.device).synchronize)
        if args.allow_fallback and pkg.fallback_counts():
            print(f"{name:36s} falls back to CPU: {sorted(pkg.fallback_counts())}")
            continue
        assert pkg.fallback_counts() == {}, f"{name} fell back to CPU: {pkg.fallback_counts()}"
        c = timed(lambda: fn(inputs), args.runs)
        print(f"{name:36s} {d * 1e3:10.2f} {c * 1e3:10.2f} {d / c:7.2f}")


if __name__ == "__main__":
    main()
