"""rlprof.analysis in a notebook: cells of a Jupyter session, runnable as a script.

    PYTHONPATH=build/python .venv/bin/python examples/analysis_notebook.py RUN [BASELINE NEW]

RUN: a run folder (rlprof captures of any ranks, e2e or discrete), a Kineto / Ascend trace or a
folder of them; BASELINE NEW: two runs to compare (default: RUN against itself). Each `# %%`
block is a notebook cell (VS Code and Jupytext run them as such). docs/python.md "Analysis in
Python" explains every frame.
"""
import sys

import pandas as pd

import rlprof.analysis as ra

pd.set_option("display.width", 160)
pd.set_option("display.max_columns", 20)
run = sys.argv[1] if len(sys.argv) > 1 else "test/golden/analysis/inputs/grpo_tiny_step2"
baseline, new = (sys.argv[2], sys.argv[3]) if len(sys.argv) > 3 else (run, run)

# %% Load: every trace under the path, analysed on 2 threads (the GIL is released meanwhile).
a = ra.load(run, jobs=2, activity=500)   # options as the CLI's: assign=, compat=, step_marker=, rules=
print(a)
print(a.inputs[["input", "format", "rank", "steps", "stages", "error"]])

# %% The run view: per step, each stage's duration on every rank, the gaps, the critical rank.
rv = a.run_view
stages = rv[rv["kind"] == "stage"]
print(stages[["step", "role", "stage", "min", "mean", "max", "critical_rank"]].to_string(index=False))
slowest = stages.sort_values("max", ascending=False).head(1)
for _, row in slowest.iterrows():
    print(f"slowest stage: {row['stage']} of step {row['step']}: {row['max']:.1f} us, "
          f"critical rank {row['critical_rank']}")

# %% Where a step's time goes, per rank (ns): compute, communication, their overlap, idle.
sb = a.step_breakdown
per_rank = sb.groupby(["rank", "step"])[["window", "compute", "communication", "overlap", "idle"]].sum()
print((per_rank / 1e3).round(1))                       # µs

# %% Stage time per rank, and which operators dominate.
print(a.stages.pivot_table(index=["step", "stage"], columns="rank", values="duration", aggfunc="sum"))
ops = a.op_stats
print(ops[ops["type"] == "host"].nlargest(5, "total")[["input", "name", "count", "total", "mean"]])

# %% Diagnostics: what had to be skipped or repaired, worst first (the catalogue's severities).
d = a.diagnostics
order = {"data_loss": 0, "error": 1, "warning": 2, "info": 3}
print(d.sort_values("severity", key=lambda s: s.map(order))[["input", "name", "count", "severity"]])

# %% Compare two runs: steps, stages and the operators that moved most (µs, new − baseline).
c = ra.compare(baseline, new, top=10)
print(c.stages.head(10).to_string(index=False))
print(c.ops.head(10).to_string(index=False))

# %% The ranks of one run side by side: balance and slow ranks.
k = a.cluster()
print(k.balance.head(10).to_string(index=False))
print(k.slow_ranks.to_string(index=False) if len(k.slow_ranks) else "no slow rank")

# %% Busy time per device stream and host thread (the report's device and host lanes), per rank.
act = a.activity
if len(act):
    busy = act.groupby(["rank", "lane", "class"])["busy_ns"].sum().unstack(fill_value=0) / 1e6
    print(busy.round(3).to_string())   # ms
else:
    print("no device or host activity recorded")
