#!/usr/bin/env python3
"""Issue 14's GPU figures in one run (docs/performance.md, "Device capture").

On a machine with an NVIDIA GPU, torch with CUDA, libcupti (torch's nvidia-cuda-cupti wheel) and
rlprof's Python package built for its python3, from the repository root:

    PYTHONPATH=BUILD/python python3 test/gpu/device_figures.py --out OUT

It runs the GRPO example (examples/grpo_tiny) on one GPU, one rank, each way in a process of its
own (CUPTI takes one subscriber per process), steps 2 and 3 profiled:

  off       no profiler (the baseline);
  rlprof    rlprof, steps 2 and 3 end to end with operators and device activity at level0
            (test/gpu/grpo_device.yaml);
  nodev     the same without device activity (for the bytes device activity adds);
  devcorr, devkern   the rlprof run with external correlation added (level1 without its other
            additions: the level0 of before 2026-11-26), and without the launch API records
            (RLPROF_CUPTI_OMIT): what each part of device capture costs;
  torch     torch.profiler with CPU + CUDA activities on steps 2 and 3;
  torchfirst   both: torch.profiler opens before rlprof's windows of steps 2 and 3 (when its
               Kineto holds CUPTI, rlprof keeps its host capture and says so);
  rlproffirst  both: rlprof captures steps 2 and 3, torch.profiler profiles the last step while
               rlprof's session lives on (rlprof holds CUPTI only inside its windows).

It prints and writes OUT/device_figures.json (and keeps the captures and traces under OUT/work):

  kernels      per step, count and total time of device work (kernels, copies, memsets) in
               rlprof's capture (through rlprof.analysis) and in torch.profiler's trace (its
               JSON read directly, and through rlprof.analysis), and their ratios;
  overhead     each mode's wall time of steps 2 and 3 against the run without a profiler
               (torch: with and without its trace export);
  bytes        what device activity adds to the captures: bytes per event added and per CUPTI
               record (with external correlation, device capture also adds an event per operator);
  window_close the step window's exit on the training thread (EndStep: cuptiActivityDisable per
               enabled kind, the flush handed to the writer), per profiled step;
  window_open  the step window's opening (BeginStep: CUPTI claimed — cuptiSubscribe, buffer
               callbacks — and the kinds enabled), per profiled step, and the same without device
               capture (nodev);
  cupti        the captures' manifest `sources.cupti` (status, library, record counts);
  coexistence  per mode torchfirst / rlproffirst: rlprof's CUPTI status and device work per
               capture, and the device work in torch.profiler's traces.

The rlprof run also records the CUPTI records it converts (RLPROF_CUPTI_RECORD_DIR) under
OUT/work/records: real records for test/data/cupti.

--device cpu runs the same on the CPU (no device work: a check of this script itself; with
RLPROF_CUPTI_LIBRARY set to the fake CUPTI the rlprof run records its replayed activity).
Exit status: 0 when every mode ran, 1 otherwise, 2 when CUDA is asked for and missing.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "grpo_tiny")
CONFIG = os.path.join(ROOT, "test", "gpu", "grpo_device.yaml")
DEVICE_KINDS = ("kernel", "gpu_memcpy", "gpu_memset")  # torch.profiler's device work categories


# The overhead's parts: device capture with kinds taken out (RLPROF_CUPTI_OMIT, a diagnostic) of a
# level: devcorr = level1 less its runtime calls and synchronisation = level0 + external correlation.
OMIT = {"devcorr": "runtime_api,sync", "devkern": "launch_api"}
LEVEL = {"devcorr": "level1"}


def rlproffirst_torch_step(steps: int) -> int:
    """The step torch.profiler takes in mode rlproffirst: the last, after rlprof's steps 2, 3."""
    return max(4, steps)


def run_mode(mode: str, device: str, steps: int, work: str) -> Dict[str, Any]:
    """One GRPO run in this process (called in a child): the example's result, the captures'
    manifests and the window exit times."""
    sys.path.insert(0, EXAMPLE)
    import grpo_tiny as g  # torch, then rlprof (as the example imports them)
    import rlprof

    exits: List[Dict[str, float]] = []
    opens: List[Dict[str, float]] = []
    original = rlprof.Profiler.step

    def timed_step(self: Any, step: int, *a: Any, **k: Any) -> Any:
        cm = original(self, step, *a, **k)

        class Timed:
            def __enter__(self_inner: Any) -> Any:
                t0 = time.perf_counter_ns()
                r = cm.__enter__()
                opens.append({"step": step, "us": (time.perf_counter_ns() - t0) / 1e3})
                return r

            def __exit__(self_inner: Any, *exc: Any) -> Any:
                t0 = time.perf_counter_ns()
                r = cm.__exit__(*exc)
                exits.append({"step": step, "us": (time.perf_counter_ns() - t0) / 1e3})
                return r

        return Timed()

    rlprof.Profiler.step = timed_step
    os.makedirs(work, exist_ok=True)
    os.chdir(work)  # captures (save_path is relative) and torch traces land here
    cfg = g.GrpoConfig(steps=steps, device=device)
    kwargs: Dict[str, Any] = {"verbose": False}
    if mode in ("rlprof", "nodev") or mode in OMIT:
        kwargs.update(mode="rlprof", config=CONFIG)
        if mode == "nodev":
            kwargs["overrides"] = ["actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu,ops]"]
        if mode in LEVEL:
            kwargs["overrides"] = [f"actor_rollout_ref.actor.profiler.tool_config.rlprof.level={LEVEL[mode]}"]
    elif mode == "torch":
        kwargs.update(mode="torch", trace_dir=work, torch_steps=(2, 3))
    elif mode == "torchfirst":
        kwargs.update(mode="rlprof+torch", config=CONFIG, trace_dir=work, torch_steps=(2, 3))
    elif mode == "rlproffirst":
        kwargs.update(mode="rlprof+torch", config=CONFIG, trace_dir=work,
                      torch_steps=(rlproffirst_torch_step(steps),))
    else:
        kwargs.update(mode="off")
    result = g.train(cfg, **kwargs)
    manifests = []
    for c in result.get("captures", []):
        with open(os.path.join(c, "manifest.json")) as f:
            m = json.load(f)
        size = sum(os.path.getsize(os.path.join(c, x)) for x in os.listdir(c))
        manifests.append({"dir": c, "steps": m.get("steps"), "bytes": size, "counts": m.get("counts"),
                          "cupti": m.get("sources", {}).get("cupti"), "contents": m.get("contents")})
    result["manifests"] = manifests
    result["window_exits"] = exits
    result["window_opens"] = opens
    return result


def device_work_of_torch_trace(path: str) -> Dict[str, float]:
    with open(path) as f:
        events = json.load(f)["traceEvents"]
    work = [e for e in events if e.get("ph") == "X" and e.get("cat") in DEVICE_KINDS]
    return {"count": len(work), "total_us": sum(float(e.get("dur", 0)) for e in work)}


def device_work_of(path: str) -> Dict[str, float]:
    """Device work as rlprof reads it (kernel_details: kernels, copies, memsets), through the
    analysis extension itself: what rlprof.analysis.load(path).kernels holds, without pandas and
    numpy (a GPU image's Python need not have them)."""
    from array import array
    from rlprof import _analysis
    run = _analysis.analyse([os.fsencode(path)], b"", "clip", "native", "", 1, None, 0)
    dur = array("q", bytes(run.ns_columns("kernel_details")["duration_ns"]))
    return {"count": len(dur), "total_us": sum(dur) / 1e3}


def ratio(a: float, b: float) -> float | None:
    return a / b if b else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "device_figures_out"))
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--mode", help=argparse.SUPPRESS)  # a child: run one mode, print its JSON
    args = ap.parse_args()
    work = os.path.join(os.path.abspath(args.out), "work")
    if args.mode:
        print(json.dumps(run_mode(args.mode, args.device, args.steps, os.path.join(work, args.mode))))
        return 0
    if args.device == "cuda":
        import torch
        if not torch.cuda.is_available():
            print("device_figures: torch sees no CUDA device (use --device cpu to check the script)", file=sys.stderr)
            return 2
    os.makedirs(work, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    records_dir = os.path.join(work, "records")
    os.makedirs(records_dir, exist_ok=True)
    results: Dict[str, Any] = {}
    ok = True
    # off twice: its spread is the noise floor.
    for mode in ("off", "rlprof", "nodev", "devcorr", "devkern", "torch", "torchfirst", "rlproffirst", "off"):
        t0 = time.perf_counter()
        menv = dict(env)
        if mode == "rlprof":
            menv["RLPROF_CUPTI_RECORD_DIR"] = records_dir
        if mode in OMIT:
            menv["RLPROF_CUPTI_OMIT"] = OMIT[mode]
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--mode", mode, "--device", args.device,
                            "--steps", str(args.steps), "--out", args.out],
                           capture_output=True, text=True, env=menv)
        if p.returncode != 0:
            print(f"device_figures: mode {mode} failed ({p.returncode}):\n{p.stderr[-3000:]}", file=sys.stderr)
            ok = False
            continue
        r = json.loads(p.stdout.strip().splitlines()[-1])
        key = mode if mode not in results else mode + "2"
        results[key] = r
        print(f"{mode:7s} ran in {time.perf_counter() - t0:.1f} s; step times (ms): "
              + " ".join(f"{1000 * t:.1f}" for t in r["step_times"]), flush=True)
        for line in [x for x in p.stderr.strip().splitlines() if "rlprof" in x or "arn" in x][:4] \
                or p.stderr.strip().splitlines()[-1:]:
            print("  stderr: " + line[:300])

    figures: Dict[str, Any] = {"device": args.device, "steps": args.steps}
    try:
        import torch
        figures["torch"] = torch.__version__
        if torch.cuda.is_available():
            figures["gpu"] = torch.cuda.get_device_name(0)
    except Exception as e:  # noqa: BLE001 - reported, not fatal
        figures["torch"] = f"unavailable: {e}"
    # Kernels: rlprof's capture of step s against torch.profiler's trace of step s.
    kernels = []
    if "rlprof" in results and "torch" in results:
        captures = {m["steps"][0] if m.get("steps") else None: m["dir"] for m in results["rlprof"]["manifests"]}
        for step in (2, 3):
            trace = os.path.join(work, "torch", f"torch_step{step}_rank0.json")
            row: Dict[str, Any] = {"step": step}
            if step in captures:
                row["rlprof"] = device_work_of(captures[step])
            if os.path.exists(trace):
                row["torch_json"] = device_work_of_torch_trace(trace)
                row["torch_read_by_rlprof"] = device_work_of(trace)
            if "rlprof" in row and "torch_json" in row:
                row["count_ratio"] = ratio(row["rlprof"]["count"], row["torch_json"]["count"])
                row["time_ratio"] = ratio(row["rlprof"]["total_us"], row["torch_json"]["total_us"])
            kernels.append(row)
    figures["kernels"] = kernels
    # Overhead of steps 2 and 3 (the profiled ones) against the runs without a profiler.
    def steps23(r: Dict[str, Any], key: str = "step_times") -> float:
        return sum(r[key][1:3])
    if "off" in results:
        base = [steps23(results[k]) for k in ("off", "off2") if k in results]
        base_s = statistics.mean(base)
        over: Dict[str, Any] = {"off_s": base, "noise": ratio(max(base), min(base)) if len(base) > 1 else None}
        for mode in ("rlprof", "nodev", "devcorr", "devkern", "torch"):
            if mode in results:
                over[mode] = {"s": steps23(results[mode]), "ratio": ratio(steps23(results[mode]), base_s)}
        if "torch" in results:
            over["torch"]["without_export_cpu_s"] = steps23(results["torch"], "body_times")
        if "rlprof" in over and "torch" in over:
            over["rlprof_vs_torch"] = ratio(over["rlprof"]["s"], over["torch"]["s"])
        figures["overhead"] = over
    # Bytes per device event.
    if "rlprof" in results and "nodev" in results:
        def totals(r: Dict[str, Any]) -> Dict[str, int]:
            return {"bytes": sum(m["bytes"] for m in r["manifests"]),
                    "events": sum((m.get("counts") or {}).get("events", 0) for m in r["manifests"])}
        dev, nodev = totals(results["rlprof"]), totals(results["nodev"])
        added = dev["events"] - nodev["events"]
        # CUPTI's records (device work, API calls, external correlations): device capture also
        # adds host events (an external correlation id per operator), hence both figures.
        records = sum(sum(v for k, v in (m.get("cupti") or {}).items()
                          if k in ("kernels", "memcpy", "memset", "sync", "runtime_api", "driver_api",
                                   "overhead", "graphs", "external_correlation") and isinstance(v, int))
                      for m in results["rlprof"]["manifests"])
        figures["bytes"] = {"with_device": dev, "without": nodev, "events_added": added,
                            "bytes_per_event_added": ratio(dev["bytes"] - nodev["bytes"], added),
                            "cupti_records": records,
                            "bytes_per_cupti_record": ratio(dev["bytes"] - nodev["bytes"], records)}
    if "rlprof" in results:
        exits = [e for e in results["rlprof"]["window_exits"] if e["step"] in (2, 3)]
        figures["window_close_us"] = exits
        # The window's opening: with device capture it claims CUPTI (cuptiSubscribe, the buffer
        # callbacks registered again) and enables the kinds; nodev: the same without CUPTI.
        figures["window_open_us"] = [e for e in results["rlprof"].get("window_opens", []) if e["step"] in (2, 3)]
        if "nodev" in results:
            figures["window_open_nodev_us"] = [e for e in results["nodev"].get("window_opens", [])
                                               if e["step"] in (2, 3)]
        figures["cupti"] = [m["cupti"] for m in results["rlprof"]["manifests"]]
    # Coexistence: who got CUPTI when both profilers ran in one process.
    coexistence: Dict[str, Any] = {}
    for mode, torch_steps in (("torchfirst", (2, 3)), ("rlproffirst", (rlproffirst_torch_step(args.steps),))):
        if mode not in results:
            continue
        row: Dict[str, Any] = {"rlprof": [], "torch": []}
        for m in results[mode]["manifests"]:
            row["rlprof"].append({"steps": m.get("steps"), "cupti_status": (m.get("cupti") or {}).get("status"),
                                  "device_work": device_work_of(m["dir"])})
        for step in torch_steps:
            trace = os.path.join(work, mode, f"torch_step{step}_rank0.json")
            if os.path.exists(trace):
                row["torch"].append({"step": step, "device_work": device_work_of_torch_trace(trace)})
        coexistence[mode] = row
    figures["coexistence"] = coexistence
    figures["records"] = sorted(os.listdir(records_dir))
    figures["step_times"] = {k: v["step_times"] for k, v in results.items()}
    with open(os.path.join(args.out, "device_figures.json"), "w") as f:
        json.dump(figures, f, indent=1)
    print(json.dumps({k: figures[k] for k in ("kernels", "overhead", "bytes", "window_close_us", "window_open_us",
                                              "window_open_nodev_us", "coexistence")
                      if k in figures},
                     indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
