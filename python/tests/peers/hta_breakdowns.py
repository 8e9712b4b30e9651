"""Runs HolisticTraceAnalysis 0.5.0 on one Kineto trace and prints its breakdowns as JSON.

Run with the peers test environment's Python (.venv-peers), not the project's:

    .venv-peers/bin/python python/tests/peers/hta_breakdowns.py TRACE.json.gz

HTA reads a folder of rank files and takes each file's rank from `distributedInfo.rank`
(rank 0 when absent): the trace is linked into a fresh temporary folder. Prints
{"rank", "temporal": {column: value}, "idle": [[stream, category, idle_time, ratio]],
 "overlap": comp_comm_overlap_pctg or null,
 "kernel_types": [[kernel_type, sum_us, percentage]] of get_gpu_kernel_breakdown} with HTA's own
numbers, untouched.
"""
import json
import logging
import math
import os
import sys
import tempfile


def main() -> None:
    trace = os.path.abspath(sys.argv[1])
    logging.disable(logging.CRITICAL)
    import warnings

    warnings.simplefilter("ignore")
    from hta.trace_analysis import TraceAnalysis

    with tempfile.TemporaryDirectory() as d:
        os.symlink(trace, os.path.join(d, os.path.basename(trace)))
        ta = TraceAnalysis(trace_dir=d)
        (rank,) = list(ta.t.traces.keys())
        out = {"rank": int(rank)}
        try:
            tb = ta.get_temporal_breakdown(visualize=False)
            out["temporal"] = {k: (None if isinstance(v, float) and math.isnan(v) else v)
                               for k, v in tb.iloc[0].to_dict().items()}
        except Exception as e:  # HTA 0.5.0 raises IndexError on traces without device work
            out["temporal_error"] = f"{type(e).__name__}: {e}"
        try:
            idle, _ = ta.get_idle_time_breakdown(ranks=[rank], visualize=False)
            out["idle"] = [[int(r.stream), r.idle_category, float(r.idle_time),
                            None if math.isnan(r.idle_time_ratio) else float(r.idle_time_ratio)]
                           for r in idle.itertuples()]
        except Exception as e:  # HTA fails on traces without device work
            out["idle_error"] = f"{type(e).__name__}: {e}"
        try:
            kt, _ = ta.get_gpu_kernel_breakdown(visualize=False)
            out["kernel_types"] = [[r.kernel_type, int(r.sum), float(r.percentage)] for r in kt.itertuples()]
        except Exception as e:
            out["kernel_types_error"] = f"{type(e).__name__}: {e}"
        try:
            ov = ta.get_comm_comp_overlap(visualize=False)
            v = float(ov.iloc[0]["comp_comm_overlap_pctg"])
            out["overlap"] = None if math.isnan(v) else v
        except Exception as e:
            out["overlap_error"] = f"{type(e).__name__}: {e}"
    json.dump(out, sys.stdout, default=lambda o: o.item() if hasattr(o, "item") else str(o))


if __name__ == "__main__":
    main()
