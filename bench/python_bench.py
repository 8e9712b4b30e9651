#!/usr/bin/env python3
"""rlprof's Python overhead, measured against torch's profiler in the same run.

    PYTHONPATH=build/python .venv/bin/python bench/python_bench.py [--quick]

1. Cost of one `with rlprof.annotate("x"):` (inside a capture window and outside one) against
   `torch.autograd.profiler.record_function` while torch's profiler is active, and against an
   empty context manager.
2. Step time of the GRPO example (examples/grpo_tiny, one rank, in process): rlprof off,
   markers only (contents [cpu]), operators on (contents [cpu, ops]), and
   torch.profiler.profile on the same steps (2 and 3; with and without writing its trace).
3. (`--only module`) Per forward of a 2-layer model: no hooks, rlprof `contents: [module]`
   (global module hooks in a window), torch.profiler(with_modules=True), in one run.
4. (`--only contents`) The GRPO step with each torch content added to `[cpu, ops]` (and
   `memory` / `module` to `[cpu]`), in one run, configurations interleaved: the cost of
   module, stack and memory as a ratio of step time.
Figures go to docs/performance.md "Python". The cost figures of issue 31 (each against its
same-run baseline, modes in processes of their own) are bench/cost.py's; this script's GRPO
part runs its modes in one process, one after another.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import resource
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "grpo_tiny"))

import torch  # noqa: E402

import rlprof  # noqa: E402
import grpo_tiny  # noqa: E402
from ctx_loop import Empty, with_loop  # noqa: E402 (bench/ctx_loop.py)

if rlprof.HAVE_TORCH_OPS:
    import rlprof.torch  # noqa: E402


def per_call_ns(cases, n: int, reps: int = 7) -> dict:
    """{expr: best thread-CPU ns per `with expr: pass`}, the cases interleaved rep by rep so
    that a noisy moment of the shared machine hits all of them alike."""
    env = {"Empty": Empty, "contextlib": contextlib, "rlprof": rlprof, "torch": torch}
    loops = {expr: with_loop(expr, env) for expr in cases}
    best = {expr: float("inf") for expr in cases}
    for _ in range(reps):
        for expr, run in loops.items():
            run(n // 10)  # warm
            t0 = time.thread_time_ns()  # CPU time: descheduled time does not count
            run(n)
            best[expr] = min(best[expr], (time.thread_time_ns() - t0) / n)
    return best


def bench_markers(n: int, tmp: str) -> dict:
    print(f"== one context-manager range (best of 7 x {n} calls, interleaved, thread CPU ns "
          "per call; every case is `with <expr>: pass` written inline)")
    empty_e, null_e, ann_e = "Empty()", "contextlib.nullcontext()", 'rlprof.annotate("x")'
    rf_e = 'torch.autograd.profiler.record_function("x")'
    off = per_call_ns([empty_e, null_e, ann_e], n)
    cfg = {"rlprof": {"steps": [1000], "save_path": tmp,
                      "buffer": {"events_per_thread": 1 << 20},
                      "roles": {"bench": {"ranks": [0]}}}}
    prof = rlprof.Profiler(cfg, role="bench", quiet=True)
    prof.start_capture("bench")
    on = per_call_ns([empty_e, ann_e], n)
    prof.stop_capture()
    prof.shutdown()
    rf_off = per_call_ns([empty_e, rf_e], n // 4, reps=3)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        rf_on = per_call_ns([empty_e, rf_e], n // 20, reps=3)
    # Each ratio uses the empty baseline measured in the same batch.
    rows = [("empty class context manager", off[empty_e], off[empty_e]),
            ("contextlib.nullcontext()", off[null_e], off[empty_e]),
            ("rlprof.annotate, no window", off[ann_e], off[empty_e]),
            ("rlprof.annotate, in a window", on[ann_e], on[empty_e]),
            ("record_function, no torch profiler", rf_off[rf_e], rf_off[empty_e]),
            ("record_function, torch.profiler active", rf_on[rf_e], rf_on[empty_e])]
    for name, v, base in rows:
        print(f"  {name:<40} {v:8.0f} ns   x{v / base:5.2f} empty (empty: {base:.0f} ns)")
    print(f"  rlprof in-window vs record_function+torch.profiler: "
          f"{rf_on[rf_e] / on[ann_e]:.1f}x cheaper")
    return {name: (v, base) for name, v, base in rows}


def _ops_stats() -> dict:
    try:
        import rlprof.torch as rt  # split extension (this tree)
        return rt.stats()
    except ImportError:
        return rlprof._rlprof.torch_ops_stats()  # older builds: one extension


def bench_ops(n: int, tmp: str, reps: int = 7) -> dict:
    """Per-operator cost of capture: a loop of one small torch op (`torch.neg` on 4 floats; the
    dispatcher also records its output's aten::empty) with no profiler, inside an rlprof window
    with contents [ops], and under torch.profiler; interleaved rep by rep, best of `reps`,
    thread CPU time. Only the op loop is timed (not torch.profiler's exit)."""
    x = torch.ones(4)

    def loop(k):
        for _ in range(k):
            torch.neg(x)

    cfg = {"rlprof": {"steps": [1000], "save_path": tmp, "buffer": {"events_per_thread": 1 << 21},
                      "roles": {"bench": {"ranks": [0], "contents": ["ops"]}}}}
    prof = rlprof.Profiler(cfg, role="bench", quiet=True)
    best = {"off": float("inf"), "rlprof": float("inf"), "torch": float("inf")}
    ops_per_call = 0.0
    for _ in range(reps):
        loop(n // 10)
        t0 = time.thread_time_ns()
        loop(n)
        best["off"] = min(best["off"], (time.thread_time_ns() - t0) / n)
        prof.start_capture("ops")
        before = _ops_stats()["ops"]
        loop(n // 10)
        t0 = time.thread_time_ns()
        loop(n)
        best["rlprof"] = min(best["rlprof"], (time.thread_time_ns() - t0) / n)
        ops_per_call = (_ops_stats()["ops"] - before) / (n + n // 10)
        prof.stop_capture()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
            loop(n // 10)
            t0 = time.thread_time_ns()
            loop(n // 4)
            best["torch"] = min(best["torch"], (time.thread_time_ns() - t0) / (n // 4))
    prof.shutdown()
    print(f"== torch operator capture (best of {reps} x {n} torch.neg calls, interleaved, "
          f"thread CPU ns per call; {ops_per_call:.2f} recorded ops per call)")
    for key, label in (("off", "no profiler"), ("rlprof", "rlprof window, contents [ops]"),
                       ("torch", "torch.profiler active (loop only)")):
        extra = (best[key] - best["off"]) / max(ops_per_call, 1e-9)
        print(f"  {label:<40} {best[key]:8.0f} ns/call  +{extra:6.0f} ns per recorded op")
    return {"ns_per_call": best, "ops_per_call": ops_per_call}


def grpo_times(cfg, mode: str, overrides, tmp: str):
    r0s = resource.getrusage(resource.RUSAGE_SELF)
    r0t = resource.getrusage(resource.RUSAGE_THREAD)
    res = grpo_tiny.train(cfg, config=os.path.join(ROOT, "examples", "grpo_tiny", "grpo_verl.yaml")
                          if mode.startswith("rlprof") else None,
                          overrides=overrides, mode="torch" if mode.startswith("torch") else
                          "rlprof" if mode.startswith("rlprof") else "off",
                          trace_dir=tmp if mode == "torch+export" else "", verbose=False)
    r1s = resource.getrusage(resource.RUSAGE_SELF)
    r1t = resource.getrusage(resource.RUSAGE_THREAD)

    def cpu(a, b):
        return (b.ru_utime - a.ru_utime) + (b.ru_stime - a.ru_stime)
    t, b = res["cpu_times"], res["body_times"]
    # CPU seconds of the profiled steps 2 and 3 (with, without torch's exit), of the run, and
    # of the run's threads other than the training thread (rlprof's writer; 0 when off).
    return t[1] + t[2], b[1] + b[2], sum(t), cpu(r0s, r1s) - cpu(r0t, r1t)


def bench_grpo(cfg, reps: int, tmp: str) -> dict:
    base = [f"global_profiler.save_path={tmp}/out"]
    for b in ("actor", "rollout", "ref"):
        base += [f"actor_rollout_ref.{b}.profiler.ranks=[0]",
                 f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.discrete=false"]
    # Whole steps, every stage: no schedules, no token window (the rollout has no `schedule`).
    base += ["~actor_rollout_ref.actor.profiler.tool_config.rlprof.schedule",
             "~actor_rollout_ref.ref.profiler.tool_config.rlprof.schedule",
             "~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_start",
             "~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_end"]
    markers = base + [f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.contents=[cpu]"
                      for b in ("actor", "rollout", "ref")]
    ops = base + [f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.contents=[cpu,ops]"
                  for b in ("actor", "rollout", "ref")]
    modes = [("off", "rlprof off", []), ("rlprof-markers", "rlprof markers only", markers),
             ("rlprof-ops", "rlprof markers + torch ops", ops),
             ("torch", "torch.profiler (no export)", []),
             ("torch+export", "torch.profiler + export_chrome_trace", [])]
    print(f"== GRPO step CPU time (process, all threads), steps 2+3 profiled end to end "
          f"(1 rank, {cfg.steps} steps, best of {reps}, configurations interleaved, ms)")
    runs = {key: [] for key, _, _ in modes}
    for _ in range(reps):  # interleaved: a noisy stretch of the machine hits every mode alike
        for key, _, ov in modes:
            runs[key].append(grpo_times(cfg, key, ov, tmp))  # CPU seconds
    results = {key: min(v) for key, v in runs.items()}
    off = results["off"][0]
    print(f"  {'':<40} {'steps 2+3':>10} {'vs off':>8} {'in steps':>10} {'run':>9} "
          f"{'other thr':>9}")
    for key, label, _ in modes:
        p, body, total, other = results[key]
        print(f"  {label:<40} {p * 1000:8.1f} ms {(p / off - 1) * 100:+7.1f}% "
              f"{body * 1000:8.1f} ms {total * 1000:7.0f} ms {other * 1000:7.1f} ms")
    spread = {key: (max(r[0] for r in v) / min(r[0] for r in v) - 1) * 100
              for key, v in runs.items()}
    print("  spread (max/min - 1) of steps 2+3 over the reps: " +
          ", ".join(f"{k} {v:.1f}%" for k, v in spread.items()))
    results["_ratio"] = results["torch"][0] / max(results["rlprof-ops"][0], 1e-9)
    print(f"  torch.profiler vs rlprof with ops, steps 2+3: {results['_ratio']:.1f}x the CPU time")
    print("  (steps 2+3: CPU time of the profiled steps including the profiler's own work at the "
          "end of the window, writer thread included; in steps: without torch.profiler's "
          "exit/export; other thr: CPU time of the whole run outside the training thread)")
    return results


class _Block(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.attn = torch.nn.Linear(d, d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 2 * d), torch.nn.ReLU(),
                                       torch.nn.Linear(2 * d, d))

    def forward(self, x):
        return x + self.mlp(self.attn(x))


class _TwoLayer(torch.nn.Module):
    def __init__(self, d: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([_Block(d), _Block(d)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def bench_module(n: int, tmp: str, reps: int = 7) -> dict:
    """Per forward of a 2-layer model (13 modules, 10 operators a forward at d=64, batch 8):
    thread CPU ns, best of `reps`, the three configurations interleaved."""
    model = _TwoLayer(64)
    x = torch.randn(8, 64)

    def run(k):
        with torch.no_grad():
            for _ in range(k):
                model(x)

    def timed(k):
        t0 = time.thread_time_ns()
        run(k)
        return (time.thread_time_ns() - t0) / k

    # Odd steps are profiled (a window with the module hooks), even steps are not.
    cfg = {"rlprof": {"save_path": os.path.join(tmp, "module"),
                      "steps": list(range(1, 2 * reps + 2, 2)),
                      "roles": {"actor": {"ranks": [0], "contents": ["cpu", "module"]}}}}
    prof = rlprof.Profiler(cfg, role="actor", quiet=True)
    run(200)  # warm
    out = {"none": [], "rlprof_module": [], "torch_with_modules": []}
    modules0 = rlprof.torch.stats()["modules"]
    for i in range(reps):
        with prof.step(2 * i + 2):
            out["none"].append(timed(n))
        with prof.step(2 * i + 1):
            out["rlprof_module"].append(timed(n))
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU],
                                    with_modules=True):
            out["torch_with_modules"].append(timed(n))
    prof.shutdown()
    assert rlprof.torch.stats()["modules"] - modules0 == 13 * n * reps, "module hooks not on"
    best = {k: min(v) for k, v in out.items()}
    print(f"== per forward of a 2-layer model (13 modules), thread CPU, best of {reps} (ns)")
    for k, v in best.items():
        print(f"  {k:<22} {v:10.0f} ns  x{v / best['none']:.2f} of no hooks")
    print(f"  rlprof module per module call: {(best['rlprof_module'] - best['none']) / 13:.0f} ns;"
          f" torch.profiler(with_modules) / rlprof module: "
          f"{best['torch_with_modules'] / best['rlprof_module']:.2f}x")
    return best


def bench_contents(cfg, reps: int, tmp: str) -> dict:
    base = [f"global_profiler.save_path={tmp}/out"]
    for b in ("actor", "rollout", "ref"):
        base += [f"actor_rollout_ref.{b}.profiler.ranks=[0]",
                 f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.discrete=false"]

    # Whole steps 2 and 3, every stage: no schedules, no token window.
    base += ["~actor_rollout_ref.actor.profiler.tool_config.rlprof.schedule",
             "~actor_rollout_ref.ref.profiler.tool_config.rlprof.schedule",
             "~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_start",
             "~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_end"]

    def with_contents(c):
        return base + [f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.contents=[{c}]"
                       for b in ("actor", "rollout", "ref")]
    modes = [("cpu", "cpu"), ("cpu+module", "cpu,module"), ("cpu+memory", "cpu,memory"),
             ("ops", "cpu,ops"), ("ops+module", "cpu,ops,module"),
             ("ops+stack", "cpu,ops,stack"), ("ops+memory", "cpu,ops,memory"),
             ("all", "cpu,ops,module,stack,memory")]
    runs = {k: [] for k, _ in modes}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "memory: no CUDA device"
        for _ in range(reps):
            for key, c in modes:
                runs[key].append(grpo_times(cfg, "rlprof", with_contents(c), tmp)[0])
    best = {k: min(v) for k, v in runs.items()}
    print(f"== GRPO steps 2+3 CPU time by contents (1 rank, best of {reps}, interleaved, ms)")
    for key, c in modes:
        ref = "cpu" if key.startswith("cpu") else "ops"
        print(f"  [{c}]{'':<{34 - len(c)}} {best[key] * 1000:8.1f} ms  x{best[key] / best[ref]:.3f} "
              f"of [{'cpu' if ref == 'cpu' else 'cpu,ops'}]")
    spread = {k: (max(v) / min(v) - 1) * 100 for k, v in runs.items()}
    print("  spread (max/min - 1): " + ", ".join(f"{k} {v:.1f}%" for k, v in spread.items()))
    return best


def markers_budget(cfg, tmp: str, n: int, step_cpu_s: float, writer_cpu_s: float) -> None:
    """A deterministic figure for markers only: rlprof calls per profiled step (counted by
    wrapping the functions the GRPO example calls) x their measured in-window cost, plus the
    writer thread's CPU time, as a fraction of one step's CPU time."""
    counts = {"annotate": 0, "sub_step": 0, "counter": 0, "stage": 0}
    orig = {"annotate": rlprof.annotate, "sub_step": rlprof.sub_step, "counter": rlprof.counter}
    orig_stage = rlprof.Profiler.begin_stage

    def counting(key):
        def f(*a, **k):
            counts[key] += 1
            return orig[key](*a, **k)
        return f

    def stage(self, *a, **k):
        counts["stage"] += 1
        return orig_stage(self, *a, **k)

    for key in orig:
        setattr(rlprof, key, counting(key))
    rlprof.Profiler.begin_stage = stage
    try:
        one = dataclasses.replace(cfg, steps=1)
        grpo_tiny.train(one, mode="off", verbose=False)  # calls are made without a profiler too
    finally:
        for key, f in orig.items():
            setattr(rlprof, key, f)
        rlprof.Profiler.begin_stage = orig_stage
    # Stages need a profiler to be counted: the example has five stage calls per step.
    counts["stage"] = max(counts["stage"], 5)
    # In-window cost of each call (thread CPU ns, best of 5), with an e2e step window open.
    pcfg = {"rlprof": {"steps": [1], "save_path": tmp, "buffer": {"events_per_thread": 1 << 21},
                       "roles": {"actor": {"ranks": [0]}}}}
    prof = rlprof.Profiler(pcfg, role="actor", quiet=True)
    prof.start(1)
    env = {"rlprof": rlprof}
    cost = {}
    stmts = {"annotate": 'with rlprof.annotate("x"): pass', "sub_step": 'rlprof.sub_step("decode")',
             "counter": 'rlprof.counter("c", 1.0)',
             "stage": 'with rlprof.annotate("actor_update", role="actor"): pass',
             "empty": "pass"}
    for key, stmt in stmts.items():
        src = f"def _run(n):\n    for _ in range(n):\n        {stmt}\n"
        ns = dict(env)
        exec(src, ns)
        k = n // 10 if key == "stage" else n
        best = float("inf")
        for _ in range(5):
            t0 = time.thread_time_ns()
            ns["_run"](k)
            best = min(best, (time.thread_time_ns() - t0) / k)
        cost[key] = best
    prof.stop()
    prof.shutdown()
    calls_ns = sum(counts[k] * (cost[k] - cost["empty"]) for k in counts)
    print("== markers only, deterministic budget per GRPO step")
    print("  calls per step: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("  in-window cost: " + ", ".join(f"{k} {cost[k] - cost['empty']:.0f} ns"
                                           for k in counts))
    step_ns = step_cpu_s * 1e9
    print(f"  calls {calls_ns / 1e3:.1f} us + writer thread {writer_cpu_s * 1e6 / 2:.1f} us "
          f"(per profiled step) = {(calls_ns + writer_cpu_s * 1e9 / 2) / step_ns * 100:.3f}% "
          f"of a step's CPU time ({step_cpu_s * 1000:.0f} ms)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer iterations (CI smoke)")
    ap.add_argument("--reps", type=int, default=5, help="GRPO runs per configuration")
    ap.add_argument("--only", choices=["markers", "ops", "grpo", "module", "contents"],
                    help="run one part")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        n = 20_000 if args.quick else 200_000
        if args.only in (None, "markers"):
            bench_markers(n, tmp)
        if args.only in (None, "ops") and rlprof.HAVE_TORCH_OPS:
            bench_ops(n // 20, tmp, reps=3 if args.quick else 7)
        if args.only in (None, "module") and rlprof.HAVE_TORCH_OPS:
            bench_module(n // 100, tmp, reps=3 if args.quick else 7)
        if args.only not in (None, "grpo", "contents"):
            return 0
        cfg = grpo_tiny.GrpoConfig(steps=4)
        if args.quick:
            cfg = dataclasses.replace(cfg, max_digit=2, group=4, sft_steps=5)
        if args.only == "contents" or (args.only is None and rlprof.HAVE_TORCH_OPS):
            bench_contents(cfg, 1 if args.quick else args.reps, tmp)
            if args.only == "contents":
                return 0
        res = bench_grpo(cfg, 1 if args.quick else args.reps, tmp)
        # Writer CPU of the markers run (two profiled steps) net of the unprofiled run's.
        writer = max(res["rlprof-markers"][3] - res["off"][3], 0.0)
        markers_budget(cfg, tmp, n // 10, res["off"][0] / 2, writer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
