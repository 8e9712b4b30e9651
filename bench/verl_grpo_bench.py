"""What watching costs on the real job: verl's own GRPO trainer with a vLLM rollout
(examples/verl_grpo), one run per mode and repetition (separate processes, modes alternated),
each run its own baseline: the profiled steps (4, 5) against the unprofiled steps after them
(6 .. STEPS) of the same run, from verl's own `timing_s/*` metrics; and that ratio against the
same ratio of the runs without a profiler (`net`: steps 4-5 are not exactly like 6-9 even
unprofiled).

Modes (separate processes, one after another):
  none     no profiler (the launcher is not used): the noise between steps 2-3 and 4-N
  markers  rlprof, `global_profiler.tool=rlprof`, contents [cpu]: stages, ranges, engine steps
  ops      rlprof, contents [cpu, ops]: every torch operator, trainer worker and vLLM engine
  opssampled  the same with `ops_sampling: 0.1` (one operator call in ten recorded; the
           rollout block inherits it, as verl's role YAML does)
  torch    verl's own `tool: torch` (torch.profiler, CPU activity) on the same steps, e2e
           (verl drives its rollout servers' torch profiler in discrete mode only, so the
           rollout is not profiled by it here)

    .venv/bin/python bench/verl_grpo_bench.py [--modes none,markers,ops,torch] [--steps 9]
                                              [--profiled 4-5] [--repeat 2]

(--profiled A-B: the profiled steps; the baseline is B+1 .. --steps of the same run.)

Prints, per mode: the mean step and gen time of the profiled and the unprofiled steps, the
added share, and verl's start/stop_profile time on the profiled steps (where a profiler's
flush or export lands). Figures, not assertions: CI's machine is shared.
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_SH = os.path.join(ROOT, "examples", "verl_grpo", "run.sh")
PROFILED = [4, 5]  # after the warm-up steps (step 1 compiles, 2-3 are still slower); --profiled

MODES: Dict[str, List[str]] = {
    "none": [],
    "markers": ["global_profiler.tool=rlprof", "actor_rollout_ref.actor.profiler.enable=True",
                "actor_rollout_ref.actor.profiler.all_ranks=True",
                "+actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu]"],
    "ops": ["global_profiler.tool=rlprof", "actor_rollout_ref.actor.profiler.enable=True",
            "actor_rollout_ref.actor.profiler.all_ranks=True",
            "+actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu,ops]"],
    "opssampled": ["global_profiler.tool=rlprof", "actor_rollout_ref.actor.profiler.enable=True",
                   "actor_rollout_ref.actor.profiler.all_ranks=True",
                   "+actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu,ops]",
                   "+actor_rollout_ref.actor.profiler.tool_config.rlprof.ops_sampling=0.1"],
    "torch": ["global_profiler.tool=torch", "actor_rollout_ref.actor.profiler.enable=True",
              "actor_rollout_ref.actor.profiler.all_ranks=True",
              "actor_rollout_ref.actor.profiler.tool_config.torch.contents=[cpu]"],
}


def run(mode: str, steps: int, work: str, cli: str, py: str) -> Dict[int, Dict[str, float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLPROF_", "RAY_"))}
    env.update(WORKDIR=work, STEPS=str(steps), VERL_PYTHON=py, RAY_ADDRESS="local",
               PYTHONPATH=os.path.join(ROOT, "build", "python"))
    args = [RUN_SH]
    if mode != "none":
        args += [f"global_profiler.steps={PROFILED}".replace(" ", ""),
                 f"global_profiler.save_path={os.path.join(work, 'profile')}"] + MODES[mode]
    if mode in ("markers", "ops"):
        env["RLPROF_CLI"] = cli
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    log = r.stdout + r.stderr
    if r.returncode != 0:
        sys.stderr.write(log[-4000:])
        raise SystemExit(f"verl_grpo_bench: mode {mode} failed (rc {r.returncode})")
    out: Dict[int, Dict[str, float]] = {}
    for m in re.finditer(r"step:(\d+) - (.*)", log):
        out[int(m.group(1))] = {k: float(v) for k, v in
                                re.findall(r"timing_s/(\w+):([0-9.e+-]+)", m.group(2))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--modes", default="none,markers,ops,torch")
    ap.add_argument("--steps", type=int, default=9)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--profiled", default="4-5", help="the profiled steps A-B (after warm-up)")
    ap.add_argument("--python", default=os.path.join(ROOT, ".venv-integ", "bin", "python"))
    args = ap.parse_args()
    global PROFILED
    a, _, b = args.profiled.partition("-")
    PROFILED = list(range(int(a), int(b or a) + 1))
    if PROFILED[-1] >= args.steps:
        raise SystemExit("verl_grpo_bench: --steps must leave unprofiled steps after --profiled")
    cli = os.path.join(ROOT, "build", "bin", "rlprof")
    rows: Dict[str, List[tuple]] = {}
    base = tempfile.mkdtemp(prefix="verl_bench_")
    model = os.path.join(base, "shared")
    modes = args.modes.split(",")
    for rep in range(args.repeat):
        for mode in modes:
            work = os.path.join(base, f"{mode}-{rep}")
            os.makedirs(work)
            if os.path.isdir(os.path.join(model, "model")):  # the same model and data for every run
                for d in ("model", "data"):
                    shutil.copytree(os.path.join(model, d), os.path.join(work, d))
            t0 = time.time()
            load0 = os.getloadavg()[0]
            timing = run(mode, args.steps, work, cli, args.python)
            if not os.path.isdir(os.path.join(model, "model")):
                for d in ("model", "data"):
                    shutil.copytree(os.path.join(work, d), os.path.join(model, d))
            prof = [timing[s] for s in PROFILED]
            rest = [timing[s] for s in timing if s > max(PROFILED)]

            def mean(xs: List[Dict[str, float]], k: str) -> float:
                return statistics.mean(x.get(k, 0.0) for x in xs)

            rows.setdefault(mode, []).append(
                (mean(prof, "step"), mean(rest, "step"), mean(prof, "gen"), mean(rest, "gen"),
                 mean(prof, "stop_profile") + mean(prof, "start_profile"), time.time() - t0, load0))
    print(f"verl_grpo_bench: profiled steps {PROFILED}, baseline steps "
          f"{PROFILED[-1] + 1}-{args.steps} of the same run; {args.repeat} run(s) per mode, "
          "means; seconds; net = the ratio over the unprofiled runs' same ratio")
    print(f"{'mode':8} {'step prof':>10} {'step rest':>10} {'added':>8} {'net':>8} {'gen prof':>9} "
          f"{'gen rest':>9} {'net':>8} {'start+stop':>10} {'job s':>6} {'load':>5}")
    avg = {m: [statistics.mean(col) for col in zip(*r)] for m, r in rows.items()}
    ref = avg.get("none")
    for mode in modes:
        sp, sr, gp, gr, ss, wall, load = avg[mode]
        net_s = (sp / sr) / (ref[0] / ref[1]) - 1 if ref else float("nan")
        net_g = (gp / gr) / (ref[2] / ref[3]) - 1 if ref else float("nan")
        print(f"{mode:8} {sp:10.3f} {sr:10.3f} {100 * (sp / sr - 1):+7.1f}% {100 * net_s:+7.1f}% "
              f"{gp:9.3f} {gr:9.3f} {100 * net_g:+7.1f}% {ss:10.3f} {wall:6.0f} {load:5.1f}")
    shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
