#!/usr/bin/env python3
"""Per-stage timing table of an rlprof run directory (or any directory holding captures).

    python3 examples/grpo_tiny/stage_table.py outputs/grpo_tiny/<run_id> [--rlprof build/bin/rlprof]

Each capture is converted with `rlprof export --format json`; the table lists, per step,
stage and rank, the stage's duration (stage ranges inside the capture; for a capture that
opened inside a stage, e.g. a decode schedule, the capture window instead, marked `window`),
and how many torch operators and collectives the capture holds.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Dict, List, Tuple


def find_rlprof(explicit: str) -> str:
    if explicit:
        return explicit
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for b in ("build", "build-py"):
        p = os.path.join(root, b, "bin", "rlprof")
        if os.access(p, os.X_OK):
            return p
    return shutil.which("rlprof") or "rlprof"


def captures_under(root: str) -> List[str]:
    out = []
    for dirpath, _, files in os.walk(root):
        if "manifest.json" in files and "events.rlp" in files:
            out.append(dirpath)
    return sorted(out)


def capture_rows(rlprof: str, cap: str) -> List[Tuple[int, str, int, float, int, int, str]]:
    with open(os.path.join(cap, "manifest.json")) as f:
        m = json.load(f)
    rank = m.get("identity", {}).get("rank", -1)
    step = (m.get("steps") or [0])[0]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "c.json")
        subprocess.run([rlprof, "export", cap, "--format", "json", "-o", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out) as f:
            trace = json.load(f)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    ops = sum(1 for e in events if e.get("cat") == "operator")
    comm = sum(1 for e in events if e.get("cat") == "communication")
    stages = [e for e in events if e.get("cat") == "stage" and e.get("ph") == "X"]
    steps = {e.get("args", {}).get("step"): e for e in events if e.get("cat") == "step"}
    rows = []
    if stages:
        # A stage belongs to the step range that contains it (continuous captures hold several).
        for e in stages:
            s = step
            for n, se in steps.items():
                if se["ts"] <= e["ts"] <= se["ts"] + se.get("dur", 0):
                    s = n
            rows.append((s, e["name"], rank, e.get("dur", 0) / 1000.0, ops, comm, "stage"))
    else:
        w = m.get("window", {})
        ms = ((w.get("close_ns") or 0) - (w.get("open_ns") or 0)) / 1e6
        rows.append((step, m.get("scope", "?"), rank, ms, ops, comm, "window"))
    return rows


def main(argv: List[str] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("root")
    ap.add_argument("--rlprof", default="")
    args = ap.parse_args(argv)
    rlprof = find_rlprof(args.rlprof)
    caps = captures_under(args.root)
    if not caps:
        print(f"no captures under {args.root}")
        return 1
    rows = []
    for c in caps:
        rows.extend(capture_rows(rlprof, c))
    agg: Dict[Tuple[int, str, int], List] = collections.OrderedDict()
    for s, name, rank, ms, ops, comm, kind in sorted(rows, key=lambda r: (r[0], r[1], r[2])):
        a = agg.setdefault((s, name, rank), [0.0, ops, comm, kind, 0])
        a[0] += ms
        a[4] += 1
    print(f"{'step':>4}  {'stage':<24} {'rank':>4} {'calls':>5} {'ms':>9}  {'ops':>7} {'comm':>5}  source")
    for (s, name, rank), (ms, ops, comm, kind, calls) in agg.items():
        print(f"{s:>4}  {name:<24} {rank:>4} {calls:>5} {ms:>9.2f}  {ops:>7} {comm:>5}  {kind}")
    print(f"({len(caps)} captures; ops/comm count every operator/collective of the capture)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
