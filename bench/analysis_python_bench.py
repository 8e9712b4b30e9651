#!/usr/bin/env python3
"""rlprof.analysis (pandas DataFrames over the C++ analysis) against baselines measured in the same
run, on the repository's Kineto fixtures:

    PYTHONPATH=build/python .venv/bin/python bench/analysis_python_bench.py [--repeat N] [--jobs N]

1. `json.load` of every trace (gunzipped in memory beforehand): what any Python tool pays just to
   read the JSON, before analysing anything.
2. `rlprof analyse -o DIR` (the CLI) and `pandas.read_csv` of every CSV it wrote: the way to get
   the same DataFrames without the extension.
3. `rlprof.analysis.load(...)` and every table as a DataFrame (+ the run view, diagnostics).
4. The GIL: how long a Python thread looping beside `load` is paused at most.

Prints seconds (median of --repeat) and ratios to the json.load baseline. Figures go to
docs/performance.md "Python analysis".
"""
from __future__ import annotations

import argparse
import glob
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIX = os.path.join(ROOT, "test", "data", "fixtures", "kineto")
TRACES = [os.path.join(FIX, f) for f in (
    "hta_trace_diff_control_control.json.gz", "hta_trace_diff_test_test.json.gz",
    "hta_nccl_parser_config_nccl_data.json.gz")] + [
    os.path.join(FIX, "tracelens_h100_falconsai", "trace.json.gz")]

import pandas as pd  # noqa: E402

import rlprof.analysis as ra  # noqa: E402


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "bin", "rlprof"))
    args = ap.parse_args()
    texts = []
    for t in TRACES:
        with gzip.open(t, "rb") as f:
            texts.append(f.read())
    mb = sum(len(x) for x in texts) / 1e6

    def baseline():
        for x in texts:
            json.loads(x)

    def cli_and_read_csv():
        with tempfile.TemporaryDirectory() as d:
            subprocess.run([args.cli, "analyse", *TRACES, "-o", d, "--jobs", str(args.jobs)], check=True,
                           capture_output=True)
            for csv in glob.glob(os.path.join(d, "*", "*.csv")) + glob.glob(os.path.join(d, "*.csv")):
                pd.read_csv(csv)

    def python_api():
        a = ra.load(TRACES, jobs=args.jobs)
        for name in a.table_names:
            a.table(name)
        a.run_view_long
        a.diagnostics

    base = median_time(baseline, args.repeat)
    cli = median_time(cli_and_read_csv, args.repeat)
    api = median_time(python_api, args.repeat)

    # The GIL: a thread looping beside load(); its longest pause.
    done = threading.Event()

    def work():
        ra.load(TRACES, jobs=args.jobs)
        done.set()

    th = threading.Thread(target=work)
    t0 = last = time.perf_counter()
    gap = 0.0
    th.start()
    while not done.is_set():
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    th.join()
    took = time.perf_counter() - t0

    print(f"{len(TRACES)} Kineto traces, {mb:.1f} MB of JSON, jobs={args.jobs}, median of {args.repeat}")
    print(f"{'json.load of the traces (baseline)':52s} {base:8.3f} s   1.00x")
    print(f"{'rlprof analyse -o DIR + pandas.read_csv of its CSVs':52s} {cli:8.3f} s   {cli / base:.2f}x")
    print(f"{'rlprof.analysis.load + every table as a DataFrame':52s} {api:8.3f} s   {api / base:.2f}x")
    print(f"GIL: a Python thread beside load() paused at most {gap * 1e3:.1f} ms of {took * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
