"""The GRPO example as rlprof's main job: captures match `rlprof plan`, the critical-path
sampling (decode window, first micro-batch of the log-prob stages, first mini-batch of the
update) records exactly the planned sub-steps, and a 2-rank gloo run records all-reduce as
communication with clock offsets measured."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
import rlprof  # noqa: E402
from conftest import EXAMPLE, all_captures, capture_key, events, manifest, plan_captures  # noqa: E402

import grpo_tiny  # noqa: E402  (examples/grpo_tiny, on sys.path via conftest)

VERL = os.path.join(EXAMPLE, "grpo_verl.yaml")
MINDSPEED = os.path.join(EXAMPLE, "grpo_mindspeed.yaml")
# A smaller problem: 3 steps, 3x3 addition table, 4 samples per prompt.
SMALL = grpo_tiny.GrpoConfig(steps=3, max_digit=2, group=4, sft_steps=5, mini_batches=2,
                             micro_batches=2)
BLOCKS = ["actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"]


def one_rank_overrides(tmp_path, discrete=True):
    ov = [f"global_profiler.save_path={tmp_path}/out"]
    for b in BLOCKS:
        ov.append(f"{b}.profiler.ranks=[0]")
        if not discrete:
            ov.append(f"{b}.profiler.tool_config.rlprof.discrete=false")
    if not discrete:  # end to end, the decode window would cut the step window to 4 iterations
        ov.append("~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_start")
        ov.append("~actor_rollout_ref.rollout.profiler.tool_config.rlprof.profile_token_end")
    return ov


@pytest.mark.parametrize("discrete", [True, False], ids=["discrete", "e2e"])
def test_one_rank_writes_exactly_the_planned_captures(tmp_path, rlprof_cli, discrete):
    ov = one_rank_overrides(tmp_path, discrete)
    want = plan_captures(rlprof_cli, VERL, ov, world_size=1)
    res = grpo_tiny.train(SMALL, config=VERL, overrides=ov, verbose=False)
    got = {capture_key(c) for c in res["captures"]}
    assert got == want
    assert len(res["captures"]) == len(want)
    assert sorted(all_captures(str(tmp_path))) == sorted(res["captures"])
    if discrete:
        assert {s for _, s, _ in got} == {"rollout_generate", "ref_compute_log_prob",
                                          "actor_compute_log_prob", "actor_update"}
    else:
        assert {(st, s) for st, s, _ in got} == {(2, "e2e"), (3, "e2e")}
        evs = events(rlprof_cli, [c for c in res["captures"] if "step2" in c][0], str(tmp_path))
        stages = {e["name"] for e in evs if e["cat"] == "stage"}
        assert stages == {"weight_sync", "rollout_generate", "ref_compute_log_prob",
                          "actor_compute_log_prob", "actor_update"}
        decode = [e for e in evs if e["cat"] == "sub_step" and e["name"] == "decode"]
        assert len(decode) == SMALL.max_new_tokens
    assert len(res["rewards"]) == SMALL.steps


needs_ops = pytest.mark.skipif(not rlprof.HAVE_TORCH_OPS, reason="built without libtorch")


@needs_ops
def test_decode_schedule_captures_exactly_the_scheduled_iterations(tmp_path, rlprof_cli):
    ov = one_rank_overrides(tmp_path)
    res = grpo_tiny.train(SMALL, config=VERL, overrides=ov, verbose=False)
    gen = sorted(c for c in res["captures"] if "/rollout_generate/" in c)
    assert len(gen) == 2  # steps 2 and 3
    for cap in gen:
        m = manifest(cap)
        assert m["window"]["close_reason"] == "schedule"
        assert {k: m["window"]["sampling"][k] for k in ("unit", "first", "count", "complete")} == \
            {"unit": "decode", "first": 2, "count": 4, "complete": True}
        evs = events(rlprof_cli, cap, str(tmp_path))
        iters = [e["args"]["value"] for e in evs if e["name"] == "decode_iteration"]
        assert iters == [2, 3, 4, 5]  # wait 2, active 4
        subs = [e["args"]["index"] for e in evs if e["cat"] == "sub_step"]
        assert subs == [2, 3, 4, 5]  # "iteration k finished" marks of the recorded iterations
        ops = [e for e in evs if e["cat"] == "operator"]
        mult = [e for e in ops if e["name"] == "aten::multinomial"]
        assert len(mult) == 4


def test_recipe_records_the_first_micro_and_mini_batch_and_says_so(tmp_path, rlprof_cli):
    ov = one_rank_overrides(tmp_path)
    sub_steps = f"decode={SMALL.max_new_tokens},micro_batch={SMALL.log_prob_micro_batches}," \
                f"mini_batch={SMALL.mini_batches}"
    plan = json.loads(subprocess.run([rlprof_cli, "plan", VERL, *ov, "--world-size", "1",
                                      "--sub-steps", sub_steps, "--json"],
                                     check=True, capture_output=True, text=True).stdout)
    planned = {(c["steps"], c["scope"]): (c["sub_steps"]["first"], c["sub_steps"]["count"])
               for c in plan["captures"]}
    res = grpo_tiny.train(SMALL, config=VERL, overrides=ov, verbose=False)
    assert len(res["captures"]) == 8
    for cap in res["captures"]:
        m = manifest(cap)
        s = m["window"]["sampling"]
        assert planned[(str(m["steps"][0]), m["scope"])] == (s["first"], s["count"]), cap
        assert s["complete"] and m["window"]["close_reason"] == "schedule"
        evs = events(rlprof_cli, cap, str(tmp_path))
        subs = [e for e in evs if e["cat"] == "sub_step"]
        if m["scope"] in ("ref_compute_log_prob", "actor_compute_log_prob"):
            assert [(e["name"], e["args"]["index"]) for e in subs] == [("micro_batch", 0)]
            assert s["unit"] == "micro_batch"
        if m["scope"] == "actor_update":
            # Mini-batch 0 and its two micro-batches (indices count from the stage call).
            assert [(e["name"], e["args"]["index"]) for e in subs] == \
                [("micro_batch", 0), ("micro_batch", 1), ("mini_batch", 0)]
            assert s["unit"] == "mini_batch" and (s["first"], s["count"]) == (0, 1)
            fb = [e for e in evs if e["name"] == "forward_backward"]
            assert len(fb) == SMALL.micro_batches


def test_mindspeed_config_writes_one_continuous_capture(tmp_path, rlprof_cli):
    ov = [f"profiler_config.integrated.profile_save_path={tmp_path}/ms",
          "profiler_config.integrated.profile_ranks=[0]"]
    want = plan_captures(rlprof_cli, MINDSPEED, ov, world_size=1)
    res = grpo_tiny.train(SMALL, config=MINDSPEED, overrides=ov, verbose=False)
    assert {capture_key(c) for c in res["captures"]} == want == {(2, "steps2-3", 0)}
    m = manifest(res["captures"][0])
    assert m["steps"] == [2, 3] and "memory" in m["contents"]


def test_mindspeed_stage_names_capture_the_stages_the_code_annotates(tmp_path, rlprof_cli):
    # The example annotates verl's names; a MindSpeed-RL stage list names the same stages.
    ov = [f"profiler_config.integrated.profile_save_path={tmp_path}/ms",
          "profiler_config.integrated.profile_ranks=[0]",
          "profiler_config.integrated.stage=[actor_generate,reference_compute_log_prob]"]
    want = plan_captures(rlprof_cli, MINDSPEED, ov, world_size=1)
    res = grpo_tiny.train(SMALL, config=MINDSPEED, overrides=ov, verbose=False)
    got = {capture_key(c) for c in res["captures"]}
    assert got == want == {(s, st, 0) for s in (2, 3)
                           for st in ("rollout_generate", "ref_compute_log_prob")}


@needs_ops
def test_two_ranks_over_gloo_record_all_reduce_and_clock_offsets(tmp_path, rlprof_cli):
    summary = tmp_path / "summary.json"
    ov = [f"global_profiler.save_path={tmp_path}/out",
          "global_profiler.steps=[2]"]
    grpo_tiny.launch(SMALL, 2, summary=str(summary), config=VERL, overrides=ov, mode="rlprof",
                     verbose=False)
    result = json.loads(summary.read_text())
    ranks = result["ranks"]
    assert len(ranks) == 2
    want = plan_captures(rlprof_cli, VERL, ov, world_size=2)
    caps = ranks[0]["captures"] + ranks[1]["captures"]
    assert {capture_key(c) for c in caps} == want
    assert ranks[0]["run_dir"] == ranks[1]["run_dir"]  # one run id, broadcast by rank 0
    for r in (0, 1):
        upd = [c for c in ranks[r]["captures"] if "/actor_update/" in c]
        assert len(upd) == 1
        m = manifest(upd[0])
        assert m["identity"]["rank"] == r and m["identity"]["world_size"] == 2
        assert m["clock"]["offset_measured"] is True
        # One host, one kernel: the same CLOCK_MONOTONIC, so the offset is exactly 0 (not measured).
        assert m["clock"]["offset_to_rank0_ns"] == 0
        comm = [e for e in events(rlprof_cli, upd[0], str(tmp_path))
                if e["cat"] == "communication"]
        # The update is sampled: its first mini-batch, one gradient all-reduce.
        assert m["window"]["sampling"]["unit"] == "mini_batch"
        assert len([e for e in comm if "all_reduce" in e["name"]]) == 1
    # Same rewards on both ranks (all-reduced mean).
    assert ranks[0]["rewards"] == ranks[1]["rewards"]


def test_torchrun_launch_writes_one_run_for_both_ranks(tmp_path, rlprof_cli):
    # torch's own launcher (`torchrun` is `python -m torch.distributed.run`).
    import subprocess
    import sys

    out = tmp_path / "out"
    summary = tmp_path / "summary.json"
    env = dict(os.environ)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
         "--master_port", str(grpo_tiny._free_port()), os.path.join(EXAMPLE, "grpo_tiny.py"), "--small", "--steps", "3",
         "--override", f"global_profiler.save_path={out}", "--override", "global_profiler.steps=[2]",
         "--summary", str(summary)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    result = json.loads(summary.read_text())
    ranks = result["ranks"]
    assert [r["captures"] != [] for r in ranks] == [True, True]
    assert ranks[0]["run_dir"] == ranks[1]["run_dir"]
    want = plan_captures(rlprof_cli, VERL, [f"global_profiler.save_path={out}",
                                            "global_profiler.steps=[2]"], world_size=2)
    assert {capture_key(c) for c in ranks[0]["captures"] + ranks[1]["captures"]} == want
