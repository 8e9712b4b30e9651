#!/usr/bin/env python3
"""The cost of watching (issue 31): every figure against a baseline measured in the same run.

    PYTHONPATH=build/python .venv/bin/python bench/cost.py            # full (≈ 10 min, 2 cores)
    PYTHONPATH=build/python .venv/bin/python bench/cost.py --short    # CI: figures printed, not asserted
    ... bench/cost.py --only grpo,annotate --json out.json

Figures (each printed with its same-run baseline, the goal, and the load average):

grpo      The GRPO example (examples/grpo_tiny, one rank, torch.set_num_threads(1)), each mode in
          a process of its own, modes alternated rep by rep. In every process odd steps from 3
          are profiled and even steps are not, so each run is its own baseline: added CPU of a
          profiled step = (training-thread CPU of profiled − unprofiled steps) + CPU of the
          other threads (rlprof's writer) during the steps / profiled steps, net of the same
          odd/even difference of the runs without any profiler. Modes: off; floor (a global
          RecordFunction callback that does nothing, with rlprof's scopes: torch's own cost of
          any operator capture); markers (`contents: [cpu]`); ops (`[cpu, ops]`); torch
          (torch.profiler CPU on the same steps, its exit included; `torch+export` adds
          export_chrome_trace).
bytes     Bytes on disk per event of the ops runs' captures (events.rlp / counts.events).
ops       Per recorded operator, a loop of torch.neg: no profiler, the floor callback, rlprof
          `[ops]`; interleaved, best of N, thread CPU.
annotate  `with rlprof.annotate("x"): pass` in a window against an empty Python context
          manager, in the same batch.
windows   Windows back to back (25 ranges each, a step window every ≈ 2 ms): the writer thread's
          CPU a window, against the same layout (three directories, events.rlp and manifest.json
          of the sizes rlprof wrote) made by a loop in the same save directory right after: what
          the file system itself costs a window. The GRPO markers figure is the same work done
          once every other step (≈ 120 ms apart), on a thread whose caches the step has evicted.
range     build/bench/runtime_bench: RLPROF_RANGE with a window open against a naive range
          (two rdtsc + one 32-byte store) and two rdtsc reads, same run; and against Tracy's
          ZoneScopedN in the same process when the build was configured with
          -DRLPROF_TRACY_DIR=<a Tracy checkout>/public (Tracy is on neither PyPI nor Debian).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

GOALS = {
    "grpo_ops_added_pct": ("operators on, added step CPU", 5.0, "%"),
    "grpo_ops_us_per_op_over_floor": ("per operator over torch's RecordFunction floor", 1.0, "us"),
    "grpo_markers_added_pct": ("markers only, added step CPU", 1.0, "%"),
    "grpo_writer_ms_per_window_markers": ("writer CPU per window, markers", 0.2, "ms"),
    "windows_writer_ms_per_window": ("writer CPU per window, windows back to back", 0.2, "ms"),
    "bytes_per_event": ("bytes per event on disk (operator captures)", 4.0, "B"),
    "range_x_naive": ("C++ range in a window / naive range", 1.1, "x"),
    "range_x_tracy": ("C++ range in a window / Tracy's zone", 1.0, "x"),
    "annotate_x_empty": ("rlprof.annotate in a window / empty context manager", 0.8, "x"),
    "gpu_opsdev_added_pct": ("GPU: operators + device capture, added step time", 10.0, "%"),
    "grpo_opssampled_added_pct": ("operators sampled (ops_sampling), added step CPU", 5.0, "%"),
    "gpu_opsdevsampled_added_pct": ("GPU: operators sampled + device capture, added step time",
                                    10.0, "%"),
}

# The share of operator calls the sampled modes record (`ops_sampling`; --ops-sampling).
OPS_SAMPLING = float(os.environ.get("RLPROF_COST_OPS_SAMPLING", "0.1"))


def loadavg() -> str:
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


# ---------------------------------------------------------------------------------------------
# The GRPO child: one process, one mode.

def writer_cpu_s() -> float:
    """CPU time of rlprof's writer thread (named rlprof-writer) so far; 0 without one."""
    for t in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{t}/comm") as f:
                if f.read().strip() != "rlprof-writer":
                    continue
            with open(f"/proc/self/task/{t}/schedstat") as f:
                return int(f.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            continue
    return 0.0


def grpo_child(mode: str, steps: int, save: str, out: str, device: str = "cpu") -> None:
    sys.path.insert(0, os.path.join(ROOT, "examples", "grpo_tiny"))
    import torch
    import grpo_tiny
    import rlprof
    torch.set_num_threads(1)
    rt_ops = None
    if mode in ("floor", "floorfn", "ops", "opsdev", "devkern", "opssampled", "opsdevsampled"):
        import rlprof.torch  # noqa: F401
        from rlprof import _torch_ops as rt_ops
    profiled = [s for s in range(3, steps + 1) if s % 2 == 1]
    contents = {"markers": ["cpu"], "ops": ["cpu", "ops"],
                "opsdev": ["cpu", "ops", "device"], "devkern": ["cpu", "ops", "device"],
                "dev": ["cpu", "device"], "opssampled": ["cpu", "ops"],
                "opsdevsampled": ["cpu", "ops", "device"]}.get(mode)
    config = None
    if contents:
        role = {"ranks": [0], "contents": contents}
        if mode.endswith("sampled"):
            role["ops_sampling"] = OPS_SAMPLING
        config = {"rlprof": {"steps": profiled, "save_path": save,
                             "roles": {r: dict(role) for r in ("actor", "rollout", "ref")}}}
    marks: dict = {}
    ops_in_step: dict = {}

    @contextlib.contextmanager
    def around(n: int):
        on = n in profiled
        if n == 2:  # from here: setup (and its other threads' work) is over
            marks["p0"], marks["t0"] = time.process_time(), time.thread_time()
            marks["w0"] = writer_cpu_s()
        if mode in ("floor", "floorfn") and on:  # floorfn: FUNCTION scope alone
            rt_ops._floor_callback(True, 1 if mode == "floorfn" else 0)
        o0 = rt_ops.stats()["ops"] if rt_ops is not None else 0
        yield
        if rt_ops is not None:
            ops_in_step[n] = rt_ops.stats()["ops"] - o0
        if mode in ("floor", "floorfn") and on:
            rt_ops._floor_callback(False)
        if n == steps:
            marks["p1"], marks["t1"] = time.process_time(), time.thread_time()
            marks["w1"] = writer_cpu_s()

    cfg = grpo_tiny.GrpoConfig(steps=steps, device=device)
    kwargs = dict(config=config, verbose=False, around_step=around,
                  mode="rlprof" if config else ("torch" if mode.startswith("torch") else "off"),
                  torch_steps=tuple(profiled), torch_cpu=mode != "torchcuda")
    with tempfile.TemporaryDirectory() as tdir:
        if mode == "torch+export":
            kwargs["trace_dir"] = tdir
        res = grpo_tiny.train(cfg, **kwargs)
    # Steps 2.. only; step 1 warms up. Thread CPU per step of the training thread; for
    # torch.profiler the step includes its exit (and export), like rlprof's window close.
    # On a GPU the figure is the step's wall time (the device work and its waits included).
    th = res["step_times" if device == "cuda" else "thread_times"]
    prof = [th[s - 1] for s in profiled]
    unprof = [th[s - 1] for s in range(4, steps + 1, 2)]
    other = (marks["p1"] - marks["p0"]) - (marks["t1"] - marks["t0"])
    writer = marks["w1"] - marks["w0"]
    result = {"mode": mode, "profiled": prof, "unprofiled": unprof, "other_s": other, "writer_s": writer,
              "windows": len(profiled),
              "ops_per_step": statistics.median([ops_in_step[s] for s in profiled])
              if ops_in_step else 0,
              "captures": res.get("captures", [])}
    with open(out, "w") as f:
        json.dump(result, f)


def run_grpo(reps: int, steps: int, modes, tmp: str, device: str = "cpu") -> dict:
    runs = {m: [] for m in modes}
    env = dict(os.environ)
    for rep in range(reps):
        for m in modes:  # alternated: a noisy stretch of the machine hits every mode alike
            out = os.path.join(tmp, f"grpo_{m}_{rep}.json")
            save = os.path.join(tmp, f"save_{m}_{rep}")
            menv = dict(env)
            if m == "devkern":  # device capture without its launch API records: their share
                menv["RLPROF_CUPTI_OMIT"] = "launch_api"
            r = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", m,
                                "--steps", str(steps), "--save", save, "--out", out,
                                "--device", device],
                               env=menv, capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                raise SystemExit(f"grpo child {m} failed (rc {r.returncode}):\n{r.stderr[-3000:]}")
            with open(out) as f:
                runs[m].append(json.load(f))
    return runs


def summarise_grpo(runs: dict, wall: bool = False) -> dict:
    """wall: the figures are wall times (GPU runs): other threads run on other cores and are
    reported, not added."""
    med = statistics.median

    def per_run(r):
        p, u = med(r["profiled"]), med(r["unprofiled"])
        return p, u, r["other_s"] / r["windows"]

    # The odd/even difference of the runs without a profiler: what a step's parity alone does.
    null = med([per_run(r)[0] - per_run(r)[1] for r in runs.get("off", [])]) if runs.get("off") else 0.0
    out = {"null_ms": null * 1e3}
    for m, rs in runs.items():
        added = []   # s per profiled step, net of parity, writer included
        thread = []  # training thread only
        writer = []
        own = []  # the writer thread's own CPU (its schedstat), per window
        base = []
        for r in rs:
            own.append(r.get("writer_s", 0.0) / r["windows"])
            p, u, w = per_run(r)
            thread.append(p - u - null)
            writer.append(w)
            added.append(p - u - null + (0.0 if wall else w))
            base.append(u)
        out[m] = {"added_ms": med(added) * 1e3, "thread_ms": med(thread) * 1e3,
                  "writer_ms_per_window": med(writer) * 1e3,
                  "writer_thread_ms_per_window": med(own) * 1e3, "step_ms": med(base) * 1e3,
                  "added_pct": med(added) / med(base) * 100,
                  "spread_ms": (max(added) - min(added)) * 1e3,
                  "ops_per_step": med([r["ops_per_step"] for r in rs])}
    return out


def bytes_per_event(runs: dict) -> dict:
    events = size = 0
    for r in runs.get("ops", []):
        for cap in r.get("captures", []):
            try:
                with open(os.path.join(cap, "manifest.json")) as f:
                    m = json.load(f)
                events += int(m["counts"]["events"])
                size += os.path.getsize(os.path.join(cap, "events.rlp"))
            except (OSError, ValueError, KeyError):
                continue
    return {"events": events, "bytes": size, "bytes_per_event": size / events if events else 0.0}


# ---------------------------------------------------------------------------------------------
# In-process micro figures (thread CPU, interleaved, best of N).

def micro_ops(n: int, reps: int, tmp: str) -> dict:
    import torch
    import rlprof
    import rlprof.torch  # noqa: F401
    from rlprof import _torch_ops
    torch.set_num_threads(1)
    x = torch.ones(4)

    def loop(k):
        for _ in range(k):
            torch.neg(x)

    cfg = {"rlprof": {"steps": [10 ** 6], "save_path": os.path.join(tmp, "ops"),
                      "buffer": {"events_per_thread": 1 << 21},
                      "roles": {"bench": {"ranks": [0], "contents": ["ops"]}}}}
    prof = rlprof.Profiler(cfg, role="bench", quiet=True)
    best = {"off": float("inf"), "floor": float("inf"), "rlprof": float("inf")}

    def timed(key):
        loop(n // 10)
        t0 = time.thread_time_ns()
        loop(n)
        best[key] = min(best[key], (time.thread_time_ns() - t0) / n)

    recorded = 0.0
    for _ in range(reps):
        timed("off")
        _torch_ops._floor_callback(True)
        timed("floor")
        _torch_ops._floor_callback(False)
        prof.start_capture("ops")
        o0 = _torch_ops.stats()["ops"]
        timed("rlprof")
        recorded = (_torch_ops.stats()["ops"] - o0) / (n + n // 10)
        prof.stop_capture()
    prof.shutdown()
    # The same loop with ops_sampling (a session of its own), alternated with the bare loop.
    cfg["rlprof"]["roles"]["bench"]["ops_sampling"] = OPS_SAMPLING
    cfg["rlprof"]["save_path"] = os.path.join(tmp, "ops_sampled")
    prof = rlprof.Profiler(cfg, role="bench", quiet=True)
    best["sampled"] = float("inf")
    sampled_share = 0.0
    for _ in range(reps):
        timed("off")
        prof.start_capture("ops")
        o0 = _torch_ops.stats()["ops"]
        timed("sampled")
        sampled_share = (_torch_ops.stats()["ops"] - o0) / (n + n // 10) / max(recorded, 1e-9)
        prof.stop_capture()
    prof.shutdown()
    return {"ns_per_call": best, "ops_per_call": recorded, "sampled_share": sampled_share,
            "floor_ns_per_op": (best["floor"] - best["off"]) / max(recorded, 1e-9),
            "rlprof_ns_per_op_over_floor": (best["rlprof"] - best["floor"]) / max(recorded, 1e-9),
            "sampled_ns_per_op": (best["sampled"] - best["off"]) / max(recorded, 1e-9)}


def micro_annotate(n: int, reps: int, tmp: str) -> dict:
    import rlprof

    from ctx_loop import Empty, with_loop  # bench/ctx_loop.py

    def make(expr):
        return with_loop(expr, {"Empty": Empty, "rlprof": rlprof})

    cases = {"empty": make("Empty()"), "annotate": make('rlprof.annotate("x")')}
    cfg = {"rlprof": {"steps": [10 ** 6], "save_path": os.path.join(tmp, "annotate"),
                      "buffer": {"events_per_thread": 1 << 21},
                      "roles": {"bench": {"ranks": [0]}}}}
    prof = rlprof.Profiler(cfg, role="bench", quiet=True)
    prof.start_capture("annotate")
    best = {k: float("inf") for k in cases}
    for _ in range(reps):
        for k, run in cases.items():
            run(n // 10)
            t0 = time.thread_time_ns()
            run(n)
            best[k] = min(best[k], (time.thread_time_ns() - t0) / n)
    prof.stop_capture()
    prof.shutdown()
    return {"ns": best, "x_empty": best["annotate"] / best["empty"]}


def fs_type(path: str) -> str:
    """The file system holding `path` (the longest mount point above it in /proc/mounts)."""
    path, best = os.path.realpath(path), ("", "?")
    try:
        for line in open("/proc/mounts"):
            f = line.split()
            mnt = f[1].replace("\\040", " ")
            if (path == mnt or path.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
                best = (mnt, f[2])
    except OSError:
        pass
    return f"{best[1]} at {best[0] or '?'}"


def micro_windows(n: int, tmp: str) -> dict:
    import rlprof

    save = os.path.join(tmp, "windows")
    cfg = {"rlprof": {"steps": {"start": 2, "end": n + 2}, "save_path": save,
                      "roles": {"bench": {"ranks": [0], "contents": ["cpu"]}}}}
    prof = rlprof.Profiler(cfg, role="bench", quiet=True)
    w0 = 0.0
    for s in range(1, n + 2):
        if s == 2:
            w0 = writer_cpu_s()
        with prof.step(s):
            for _ in range(25):
                with rlprof.annotate("x"):
                    pass
            time.sleep(0.002)
    w1 = writer_cpu_s()
    caps = prof.shutdown()
    sizes = [0, 0]
    if caps:
        sizes = [os.path.getsize(os.path.join(caps[-1], f)) for f in ("events.rlp", "manifest.json")]
    # The same layout by hand, in the same save directory: the file system's own cost.
    base = os.path.join(save, "layout")
    os.makedirs(base, exist_ok=True)
    blobs = [b"\0" * sizes[0], b" " * sizes[1]]
    t0 = time.thread_time()
    for s in range(n):
        d = os.path.join(base, f"step{s}")
        os.mkdir(d)
        d = os.path.join(d, "e2e")
        os.mkdir(d)
        d = os.path.join(d, "rank0-host-1")
        os.mkdir(d)
        for name, blob in zip(("events.rlp", "manifest.json"), blobs):
            fd = os.open(os.path.join(d, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            os.write(fd, blob)
            os.close(fd)
    layout = (time.thread_time() - t0) / n
    return {"windows": n, "writer_ms": (w1 - w0) / n * 1e3, "layout_ms": layout * 1e3,
            "bytes": sizes, "fs": fs_type(save)}


def micro_range(build: str, short: bool) -> dict:
    exe = os.path.join(build, "bench", "runtime_bench")
    if not os.path.exists(exe):
        return {"skipped": f"{exe} not built (cmake --build build --target runtime_bench)"}
    args = [exe, "--benchmark_filter=BM_TwoRdtsc/real_time/threads:1|BM_NaiveRange|"
            "BM_RangeEnabled/real_time/threads:1|BM_TracyZone"]
    if short:
        args.append("--benchmark_min_time=0.05")
    r = subprocess.run(args, capture_output=True, text=True, timeout=600)
    ns = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^(BM_\S+)\s+([\d.]+)\s+([\d.]+)$", line.strip())
        if m:
            ns[m.group(1)] = float(m.group(2))
    rng, naive = ns.get("BM_RangeEnabled/real_time/threads:1"), ns.get("BM_NaiveRange")
    two = ns.get("BM_TwoRdtsc/real_time/threads:1")
    if not (rng and naive):
        return {"skipped": "runtime_bench printed no figures:\n" + r.stdout[-1000:] + r.stderr[-1000:]}
    out = {"range_ns": rng, "naive_ns": naive, "two_rdtsc_ns": two, "x_naive": rng / naive}
    if ns.get("BM_TracyZone"):  # built with -DRLPROF_TRACY_DIR=<tracy>/public
        out.update(tracy_ns=ns["BM_TracyZone"], x_tracy=rng / ns["BM_TracyZone"])
    return out


# ---------------------------------------------------------------------------------------------

def row(key: str, value: float, baseline: str) -> dict:
    label, goal, unit = GOALS[key]
    met = value <= goal
    print(f"  {label:<52} {value:9.3f} {unit:<2}  goal <= {goal:g} {unit:<2} "
          f"{'met' if met else 'NOT met'}   ({baseline})")
    return {"figure": key, "value": value, "goal": goal, "unit": unit, "met": met,
            "baseline": baseline}


def main() -> int:
    global OPS_SAMPLING
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--short", action="store_true", help="CI: fewer steps and reps")
    ap.add_argument("--only", default="", help="comma list of: grpo,ops,annotate,range,windows")
    ap.add_argument("--reps", type=int, default=0, help="GRPO runs per mode (default 5; short 1)")
    ap.add_argument("--steps", type=int, default=0, help="GRPO steps per run (default 16; short 8)")
    ap.add_argument("--torch", action="store_true", help="also torch.profiler modes in grpo")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="cuda: the GRPO example on the GPU (wall time per step; modes off, floor, "
                         "ops, opsdev = operators + device capture at level0, opssampled / "
                         "opsdevsampled = the same with ops_sampling, torch = "
                         "torch.profiler with CPU + CUDA activities)")
    ap.add_argument("--modes", default="", help="GRPO modes, comma list (default: by device)")
    ap.add_argument("--build", default=os.environ.get("RLPROF_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--json", default="", help="write every figure here")
    ap.add_argument("--save-dir", default=None,
                    help="where the captures go (default: the system's temporary directory); the "
                         "writer's figures depend on its file system, which is printed")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    ap.add_argument("--save", default="", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    ap.add_argument("--ops-sampling", type=float, default=None,
                    help=f"ops_sampling of the *sampled modes (default {OPS_SAMPLING:g})")
    args = ap.parse_args()
    if args.ops_sampling is not None:  # the children read it from the environment
        OPS_SAMPLING = args.ops_sampling
        os.environ["RLPROF_COST_OPS_SAMPLING"] = repr(args.ops_sampling)
    steps = args.steps or (8 if args.short else 16)
    if args.child:
        grpo_child(args.child, steps, args.save, args.out, args.device)
        return 0
    parts = set(filter(None, args.only.split(","))) or {"grpo", "ops", "annotate", "range", "windows"}
    reps = args.reps or (1 if args.short else 5)
    results: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "load_before": loadavg(),
                     "short": args.short, "figures": []}
    with tempfile.TemporaryDirectory(prefix="rlprof-cost-", dir=args.save_dir) as tmp:
        results["save_fs"] = fs_type(tmp)
        print(f"rlprof cost of watching ({'short' if args.short else 'full'}; load average "
              f"{results['load_before']}; python {sys.version.split()[0]}; captures on "
              f"{results['save_fs']})")
        if "range" in parts:
            results["range"] = micro_range(args.build, args.short)
        if "annotate" in parts:
            results["annotate"] = micro_annotate(20_000 if args.short else 200_000,
                                                 3 if args.short else 7, tmp)
        if "windows" in parts:
            results["windows"] = micro_windows(200 if args.short else 1000, tmp)
        if "ops" in parts:
            results["ops"] = micro_ops(2_000 if args.short else 10_000, 3 if args.short else 7, tmp)
        if "grpo" in parts:
            if args.modes:
                modes = args.modes.split(",")
            elif args.device == "cuda":
                modes = ["off", "floor", "ops", "opsdev", "opsdevsampled", "torch"]
            else:
                modes = ["off", "floor", "markers", "ops", "opssampled"] + (
                    ["torch", "torch+export"] if args.torch else [])
            runs = run_grpo(reps, steps, modes, tmp, args.device)
            results["grpo"] = summarise_grpo(runs, wall=args.device == "cuda")
            results["bytes"] = bytes_per_event(runs)
    results["load_after"] = loadavg()

    print(f"\nfigures (load average before {results['load_before']}, after {results['load_after']})")
    figs = results["figures"]
    g = results.get("grpo")
    if g:
        first = next(k for k in g if isinstance(g[k], dict))
        n = g.get("ops", g.get("opsdev", {})).get("ops_per_step", 0)
        print(f"  GRPO: step {g[first]['step_ms']:.1f} ms {'wall' if args.device == 'cuda' else 'CPU'} "
              f"unprofiled; {steps} steps, {n:.0f} operators a profiled step; parity null "
              f"{g['null_ms']:+.2f} ms")
        for m in [k for k in g if isinstance(g[k], dict)]:
            v = g[m]
            print(f"    {m:<13} added {v['added_ms']:+7.2f} ms/step ({v['added_pct']:+6.2f} %): "
                  f"training thread {v['thread_ms']:+7.2f} ms, other threads "
                  f"{v['writer_ms_per_window']:6.2f} ms/window (writer thread "
                  f"{v.get('writer_thread_ms_per_window', 0.0):.2f}); spread {v['spread_ms']:.2f} ms")
        if "ops" in g:
            figs.append(row("grpo_ops_added_pct", g["ops"]["added_pct"],
                            f"unprofiled steps of the same runs: {g['ops']['step_ms']:.1f} ms"))
        if n and "ops" in g and "floor" in g:
            over = (g["ops"]["added_ms"] - g["floor"]["added_ms"]) * 1e3 / n
            figs.append(row("grpo_ops_us_per_op_over_floor", over,
                            f"floor {g['floor']['added_ms'] * 1e3 / n:.2f} us/op, same runs"))
        if "opssampled" in g:
            figs.append(row("grpo_opssampled_added_pct", g["opssampled"]["added_pct"],
                            f"ops_sampling {OPS_SAMPLING:g}: "
                            f"{g['opssampled'].get('ops_per_step', 0):.0f} operators recorded a "
                            f"step of {n:.0f}; every operator {g.get('ops', {}).get('added_pct', float('nan')):+.1f} %"))
        if "markers" in g:
            figs.append(row("grpo_markers_added_pct", g["markers"]["added_pct"],
                            f"unprofiled steps: {g['markers']['step_ms']:.1f} ms"))
            figs.append(row("grpo_writer_ms_per_window_markers",
                            g["markers"]["writer_thread_ms_per_window"],
                            "the writer thread's CPU during the steps / windows; all threads "
                            f"but training: {g['markers']['writer_ms_per_window']:.2f} ms; "
                            f"{results['save_fs']}"))
        if "opsdev" in g:
            figs.append(row("gpu_opsdev_added_pct", g["opsdev"]["added_pct"],
                            f"wall time; unprofiled steps {g['opsdev']['step_ms']:.1f} ms; "
                            f"torch.profiler {g.get('torch', {}).get('added_pct', float('nan')):+.1f} %"))
        if "opsdevsampled" in g:
            figs.append(row("gpu_opsdevsampled_added_pct", g["opsdevsampled"]["added_pct"],
                            f"ops_sampling {OPS_SAMPLING:g}; wall time; every operator "
                            f"{g.get('opsdev', {}).get('added_pct', float('nan')):+.1f} %"))
        if "torch" in g:
            print(f"  torch.profiler CPU: {g['torch']['added_pct']:+.1f} % "
                  f"(+export {g.get('torch+export', {}).get('added_pct', float('nan')):+.1f} %); "
                  f"rlprof ops {g['ops']['added_pct']:+.1f} %")
    b = results.get("bytes")
    if b and b["events"]:
        figs.append(row("bytes_per_event", b["bytes_per_event"],
                        f"{b['events']} events in {b['bytes']} bytes"))
    r = results.get("range")
    if r and "x_naive" in r:
        figs.append(row("range_x_naive", r["x_naive"],
                        f"range {r['range_ns']:.1f} ns, naive {r['naive_ns']:.1f} ns, "
                        f"two rdtsc {r['two_rdtsc_ns']:.1f} ns"))
        if "x_tracy" in r:
            figs.append(row("range_x_tracy", r["x_tracy"],
                            f"range {r['range_ns']:.1f} ns, Tracy's zone {r['tracy_ns']:.1f} ns, same process"))
        else:
            print("  Tracy's zone: not built (cmake -DRLPROF_TRACY_DIR=<a Tracy checkout>/public build)")
    elif r:
        print("  range: " + r["skipped"])
    w = results.get("windows")
    if w:
        figs.append(row("windows_writer_ms_per_window", w["writer_ms"],
                        f"{w['windows']} windows; the same layout by a loop "
                        f"{w['layout_ms']:.3f} ms a window ({w['bytes'][0]} + {w['bytes'][1]} B); "
                        f"{w['fs']}"))
    a = results.get("annotate")
    if a:
        figs.append(row("annotate_x_empty", a["x_empty"],
                        f"annotate {a['ns']['annotate']:.0f} ns, empty {a['ns']['empty']:.0f} ns"))
    o = results.get("ops")
    if o:
        print(f"  torch.neg loop: off {o['ns_per_call']['off']:.0f} ns/call, floor "
              f"+{o['floor_ns_per_op']:.0f} ns/op, rlprof [ops] +{o['rlprof_ns_per_op_over_floor']:.0f} "
              f"ns/op over the floor ({o['ops_per_call']:.2f} recorded ops per call); "
              f"ops_sampling {OPS_SAMPLING:g}: +{o['sampled_ns_per_op']:.0f} ns/op in all "
              f"(floor included; {o['sampled_share']:.3f} of the calls recorded)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
