#!/usr/bin/python3
"""rlprof's Python overhead, measured against torch's profiler in the same run.

    PYTHONPATH=build/python python3 bench/python_bench.py [--quick]

1. Cost of one `with rlprof.annotate("x"):` (inside a capture window and outside one) against
   `torch.autograd.profiler.record_function` while torch's profiler is active, and against an
   empty context manager.
2. Step time of the GRPO example (examples/grpo_tiny, one rank, in process): rlprof off,
   markers only (contents [cpu]), operators on (contents [cpu, ops]), and
   torch.profiler.profile on the same steps (2 and 3; with and without writing its trace).
Figures go to docs/performance.md "Python".
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "grpo_tiny"))

import torch  # noqa: E402

import rlprof  # noqa: E402
import grpo_tiny  # noqa: E402


class Empty:
    __slots__ = ()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def _loop(expr: str, env: dict):
    """A function running `with <expr>: pass` n times, compiled from source so that every case
    pays exactly the same loop and the same kind of name lookup: the context-manager
    expression is written inline, as users write it (no lambda or extra call per case)."""
    src = f"def _run(n):\n    for _ in range(n):\n        with {expr}:\n            pass\n"
    ns = dict(env)
    exec(compile(src, f"<bench {expr}>", "exec"), ns)
    return ns["_run"]


def per_call_ns(cases, n: int, reps: int = 7) -> dict:
    """{expr: best thread-CPU ns per `with expr: pass`}, the cases interleaved rep by rep so
    that a noisy moment of the shared machine hits all of them alike."""
    env = {"Empty": Empty, "contextlib": contextlib, "rlprof": rlprof, "torch": torch}
    loops = {expr: _loop(expr, env) for expr in cases}
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


def grpo_times(cfg, mode: str, overrides, tmp: str):
    res = grpo_tiny.train(cfg, config=os.path.join(ROOT, "examples", "grpo_tiny", "grpo_verl.yaml")
                          if mode.startswith("rlprof") else None,
                          overrides=overrides, mode="torch" if mode.startswith("torch") else
                          "rlprof" if mode.startswith("rlprof") else "off",
                          trace_dir=tmp if mode == "torch+export" else "", verbose=False)
    t, b = res["cpu_times"], res["body_times"]
    # CPU seconds of the profiled steps 2 and 3 (with, without torch's exit), and of the run.
    return t[1] + t[2], b[1] + b[2], sum(t)


def bench_grpo(cfg, reps: int, tmp: str) -> None:
    base = [f"global_profiler.save_path={tmp}/out"]
    for b in ("actor", "rollout", "ref"):
        base += [f"actor_rollout_ref.{b}.profiler.ranks=[0]",
                 f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.discrete=false"]
    base.append("~actor_rollout_ref.rollout.profiler.tool_config.rlprof.schedule")
    markers = base + [f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.contents=[cpu]"
                      for b in ("actor", "rollout", "ref")]
    ops = base + [f"actor_rollout_ref.{b}.profiler.tool_config.rlprof.contents=[cpu,ops]"
                  for b in ("actor", "rollout", "ref")]
    modes = [("off", "rlprof off", []), ("rlprof-markers", "rlprof markers only", markers),
             ("rlprof-ops", "rlprof markers + torch ops", ops),
             ("torch", "torch.profiler (no export)", []),
             ("torch+export", "torch.profiler + export_chrome_trace", [])]
    print(f"== GRPO step CPU time (process, all threads), steps 2+3 profiled end to end "
          f"(1 rank, {cfg.steps} steps, best of {reps}, ms)")
    results = {}
    for key, _, ov in modes:
        runs = [grpo_times(cfg, key, ov, tmp) for _ in range(reps)]  # CPU seconds
        results[key] = min(runs)
    off = results["off"][0]
    print(f"  {'':<40} {'steps 2+3':>10} {'vs off':>8} {'in steps':>10} {'run':>9}")
    for key, label, _ in modes:
        p, body, total = results[key]
        print(f"  {label:<40} {p * 1000:8.1f} ms {(p / off - 1) * 100:+7.1f}% "
              f"{body * 1000:8.1f} ms {total * 1000:7.0f} ms")
    results["_ratio"] = results["torch"][0] / max(results["rlprof-ops"][0], 1e-9)
    print(f"  torch.profiler vs rlprof with ops, steps 2+3: {results['_ratio']:.1f}x the CPU time")
    print("  (steps 2+3: CPU time of the profiled steps including the profiler's own work at the "
          "end of the window, writer thread included; in steps: without torch.profiler's "
          "exit/export)")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer iterations (CI smoke)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        bench_markers(20_000 if args.quick else 200_000, tmp)
        cfg = grpo_tiny.GrpoConfig(steps=4)
        if args.quick:
            cfg = dataclasses.replace(cfg, max_digit=2, group=4, sft_steps=5)
        bench_grpo(cfg, 1 if args.quick else 3, tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
