#!/usr/bin/env python3
"""What a framework's own idle metrics say about an async_grpo.py run, next to what rlprof
measures from the trace (issue 32; docs/analysis.md, "What the frameworks' metrics say").

The framework figures are verl 0.9.1's fully_async ones, computed the way verl computes them,
from the example's own timers (its ground truth, <out>/truth/*.jsonl):

  trainer idle_ratio   fully_async/trainer/idle_ratio = timing_s/gen / timing_s/step
                       (detach_utils.py): the time a training step waited for its batch over the
                       step, steps aggregated by their mean;
  rollouter idle_ratio fully_async/rollouter/idle_ratio = 1 - active / version_time per version
                       (fully_async_rollouter.py, reset_staleness): active runs from the version's
                       start to the moment the rollouter last paused in it (idle_start_time) — a
                       wait it came back from before the version ended counts as active.

rlprof's figures come from `rlprof summary RUN --view async --json`: the waits by cause summed
over the version intervals (async_versions; the start-up before the first publish left out, as
verl's per-version figures leave it out), over each pool's processes × the intervals' time.

  .venv/bin/python examples/async_rl/framework_metrics.py OUT [--rlprof build/bin/rlprof] [--json]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
from typing import Any, Dict, List


def load_truth(out: str) -> Dict[str, List[Dict[str, Any]]]:
    truth = {}
    for path in sorted(glob.glob(os.path.join(out, "truth", "*.jsonl"))):
        with open(path) as f:
            truth[os.path.basename(path)[:-len(".jsonl")]] = [json.loads(line) for line in f]
    return truth


def trainer_idle_ratio(records: List[Dict[str, Any]]) -> float:
    """timing_s/gen over timing_s/step: per update, the waits for samples since the previous
    update (gen) and the time from the first of them to the update's end (step)."""
    gen = step = 0
    pending: List[Dict[str, Any]] = []
    for r in sorted(records, key=lambda r: r["start_ns"]):
        if r["kind"] == "wait/samples":
            pending.append(r)
        elif r["kind"] == "actor_update" and pending:
            gen += sum(w["end_ns"] - w["start_ns"] for w in pending)
            step += r["end_ns"] - pending[0]["start_ns"]
            pending = []
    return gen / step if step else float("nan")


def rollouter_idle_ratio(records: List[Dict[str, Any]]) -> float:
    """1 - active / version_time, averaged over the versions: a version runs from one load's end
    to the next; active ends where the last wait of the version began if the version ended in
    it (the rollouter's final pause), else at the version's end."""
    loads = sorted(r["end_ns"] for r in records if r["kind"] == "sync/load")
    waits = sorted((r for r in records if r["kind"].startswith("wait/")), key=lambda r: r["start_ns"])
    ratios = []
    for a, b in zip(loads, loads[1:]):
        # The final pause: a wait still open when the next sync began (it ends inside the sync).
        syncs = [r["start_ns"] for r in records if r["kind"] == "weight_sync" and a < r["start_ns"] <= b]
        next_sync = min(syncs) if syncs else b
        trailing = [w for w in waits if a <= w["start_ns"] < next_sync <= w["end_ns"] + 1]
        idle_start = trailing[-1]["start_ns"] if trailing else None
        active = (idle_start - a) if idle_start is not None else (b - a)
        ratios.append(1 - active / (b - a))
    return sum(ratios) / len(ratios) if ratios else float("nan")


def rlprof_tables(rlprof: str, run: str) -> Dict[str, List[Dict[str, Any]]]:
    r = subprocess.run([rlprof, "summary", run, "--view", "async", "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(r.stderr)
    out = {}
    for name, t in json.loads(r.stdout).items():
        if isinstance(t, dict) and "columns" in t:
            cols = [c["name"] for c in t["columns"]]
            out[name] = [dict(zip(cols, x)) for x in t["rows"]]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out", help="the example's --out directory")
    ap.add_argument("--rlprof", default=os.path.join("build", "bin", "rlprof"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    with open(os.path.join(a.out, "summary.json")) as f:
        run = json.load(f)["run_dir"]
    truth = load_truth(a.out)
    trainers = [trainer_idle_ratio(v) for k, v in truth.items() if k.startswith("trainer")]
    rollouts = [rollouter_idle_ratio(v) for k, v in truth.items() if k.startswith("rollout")]
    t = rlprof_tables(a.rlprof, run)
    verdict = t["async_verdict"][0]
    # Like with like: the version intervals (the start-up before the first publish left out, as
    # verl's per-version figures leave it out), each process's waits over its share of them.
    intervals = [v for v in t["async_versions"] if v["version"] is not None]
    span = sum(v["duration"] for v in intervals)
    n_train, n_gen = verdict["training_processes"], verdict["generating_processes"]
    rollout_waits = ["wait_weights", "wait_staleness", "wait_queue_full"]
    measured_trainer = sum(v["wait_samples"] for v in intervals) / (span * n_train)
    measured_rollout = sum(v[w] for v in intervals for w in rollout_waits) / (span * n_gen)
    rows = [
        ("trainer idle", sum(trainers) / len(trainers), measured_trainer,
         "verl: timing_s/gen / timing_s/step; rlprof: trainers' wait for samples / their time"),
        ("rollouter idle", sum(rollouts) / len(rollouts), measured_rollout,
         "verl: 1 - active / version_time; rlprof: rollout processes' waits / their time"),
    ]
    if a.json:
        print(json.dumps([{"metric": m, "framework": f, "rlprof": r, "how": h} for m, f, r, h in rows], indent=1))
        return 0
    print(f"over the {len(intervals)} version intervals ({span / 1e3:.1f} ms), {n_gen} rollout and {n_train} training processes")
    print(f"{'figure':<15} {'verl-style':>10} {'rlprof':>8}  how")
    for m, f, r, h in rows:
        print(f"{m:<15} {f:>10.3f} {r:>8.3f}  {h}")
    print("rollout waits by cause (share of their time): " +
          ", ".join(f"{w[5:]} {sum(v[w] for v in intervals) / (span * n_gen):.3f}" for w in rollout_waits))
    print(f"rlprof's verdict: {verdict['verdict']} (balance {verdict['balance']:.2f}); exposed generation "
          f"{verdict['exposed_generation'] / 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
