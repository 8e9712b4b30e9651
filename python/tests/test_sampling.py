"""Critical-path sampling against torch.profiler's own schedule function.

Several schedules are active at once in one process (a decode schedule on rollout_generate, a
micro-batch schedule on actor_compute_log_prob and a mini-batch schedule on actor_update, the
update also running micro-batches that its schedule must not count). For every unit and every
combination of skip_first / wait / warmup / active / repeat, the sub-steps each capture holds
(its manifest's window.sampling) must be exactly the active periods that torch's
`torch.profiler.schedule` gives over the same sub-step sequence, with torch's transition rules:
a period starts when the action becomes RECORD or RECORD_AND_SAVE, ends after
RECORD_AND_SAVE, and is flushed (cut) by the end of the stage, as torch's stop() saves a partial
window. WARMUP is never written.
"""
from __future__ import annotations

import glob
import itertools
import json
import os
import subprocess
import warnings
from typing import Dict, List, Tuple

import pytest

torch = pytest.importorskip("torch")
import rlprof  # noqa: E402

UNITS = ("decode", "micro_batch", "mini_batch")
STAGE_OF_UNIT = {"decode": "rollout_generate", "micro_batch": "actor_compute_log_prob",
                 "mini_batch": "actor_update"}
# skip_first, wait, warmup, active, repeat
COMBOS = list(itertools.product((0, 1, 3), (0, 1, 2), (0, 1), (1, 2, 3), (0, 1, 2)))
# Sub-steps each stage call runs, one value per step (step 1 runs none).
COUNTS = (0, 1, 5, 12)

Period = Tuple[int, int, bool]  # first index, number of sub-steps, ended at RECORD_AND_SAVE


def torch_periods(combo, n: int) -> List[Period]:
    """The active periods of torch.profiler.schedule over a loop of n sub-steps: k = 0 when the
    stage begins, prof.step() after each sub-step, stop() at the stage end (k = n)."""
    skip_first, wait, warmup, active, repeat = combo
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns about warmup 0
        fn = torch.profiler.schedule(skip_first=skip_first, wait=wait, warmup=warmup,
                                     active=active, repeat=repeat)
    A = torch.profiler.ProfilerAction
    recording = (A.RECORD, A.RECORD_AND_SAVE)
    periods: List[Period] = []
    first = None
    prev = fn(0)
    if prev in recording:
        first = 0
    for k in range(1, n + 1):
        cur = fn(k)
        if first is not None and prev == A.RECORD_AND_SAVE:  # stop + trace ready
            periods.append((first, k - first, True))
            first = None
        if first is None and cur in recording:  # start
            first = k
        prev = cur
    if first is not None:  # stop() inside an active period: partial window saved
        periods.append((first, n - first, False))
    return periods


def schedule_dict(combo, unit: str, stage: str) -> Dict[str, object]:
    skip_first, wait, warmup, active, repeat = combo
    return {"stage": stage, "unit": unit, "skip_first": skip_first, "wait": wait,
            "warmup": warmup, "active": active, "repeat": repeat}


def run_session(tmp_path, combos: Dict[str, tuple], name: str) -> List[dict]:
    """One process, three schedules; returns every manifest written."""
    cfg = {"rlprof": {
        "steps": "all", "save_path": str(tmp_path),
        "roles": {
            "rollout": {"discrete": True, "ranks": [0],
                        "schedule": [schedule_dict(combos["decode"], "decode", "rollout_generate")]},
            "actor": {"discrete": True, "ranks": [0],
                      "schedule": [schedule_dict(combos["micro_batch"], "micro_batch",
                                                 "actor_compute_log_prob"),
                                   schedule_dict(combos["mini_batch"], "mini_batch", "actor_update")]},
        }}}
    prof = rlprof.Profiler(cfg, rank=0, world_size=1, roles=["actor", "rollout"], run_id=name,
                           quiet=True, install_signal_handlers=False, measure_clock_offset=False)
    assert prof.enabled
    for step, n in enumerate(COUNTS, start=1):
        with prof.step(step):
            with rlprof.annotate("weight_sync", role="rollout"):  # no schedule: whole stage
                pass
            with rlprof.annotate("rollout_generate", role="rollout"):  # nothing declared
                for _ in range(n):
                    rlprof.sub_step("decode")
            with rlprof.annotate("actor_compute_log_prob", role="actor"):
                for _ in range(n):
                    rlprof.sub_step("micro_batch")
            with rlprof.annotate("actor_update", role="actor"):
                for _ in range(n):
                    rlprof.sub_step("micro_batch")  # not the update schedule's unit
                    rlprof.sub_step("micro_batch")
                    rlprof.sub_step("mini_batch")
    caps = prof.shutdown()
    out = []
    for c in caps:
        with open(os.path.join(c, "manifest.json")) as f:
            out.append(json.load(f))
    assert len(glob.glob(os.path.join(str(tmp_path), name, "step*", "*", "*", "manifest.json"))) == len(out)
    return out


def periods_by_stage(manifests: List[dict]) -> Dict[Tuple[int, str], List[Period]]:
    got: Dict[Tuple[int, str], List[Period]] = {}
    for m in manifests:
        if m["stage"] == "weight_sync":
            assert "sampling" not in m["window"]
            continue
        s = m["window"]["sampling"]
        assert s["unit"] == {v: k for k, v in STAGE_OF_UNIT.items()}[m["stage"]]
        assert s["complete"] == (m["window"]["close_reason"] == "schedule")
        got.setdefault((m["steps"][0], m["stage"]), []).append((s["first"], s["count"], s["complete"]))
    for v in got.values():
        v.sort()
    return got


@pytest.mark.parametrize("offset", [0, 1, 2], ids=["block0", "block1", "block2"])
def test_every_unit_and_parameter_combination_records_torch_active_periods(tmp_path, offset):
    # Sessions cover every (unit, combination) pair: session i gives the decode schedule combo
    # i, the micro-batch schedule combo i + 54, the mini-batch schedule combo i + 108.
    third = len(COMBOS) // 3
    mismatches = []
    periods = 0
    for i in range(offset * third, (offset + 1) * third):
        combos = {"decode": COMBOS[i], "micro_batch": COMBOS[(i + 54) % len(COMBOS)],
                  "mini_batch": COMBOS[(i + 108) % len(COMBOS)]}
        got = periods_by_stage(run_session(tmp_path, combos, f"s{i}"))
        for unit in UNITS:
            stage = STAGE_OF_UNIT[unit]
            for step, n in enumerate(COUNTS, start=1):
                want = torch_periods(combos[unit], n)
                have = got.get((step, stage), [])
                if have != want:
                    mismatches.append((unit, combos[unit], n, have, want))
                periods += len(want)
    assert not mismatches, mismatches[:5]
    assert periods > 300  # the loops really compared captures


def test_scopes_name_parts_only_for_repeating_schedules(tmp_path):
    combos = {"decode": (0, 1, 0, 1, 1), "micro_batch": (0, 1, 0, 1, 0), "mini_batch": (1, 0, 1, 2, 2)}
    manifests = run_session(tmp_path, combos, "scopes")
    scopes = {(m["steps"][0], m["scope"]) for m in manifests if m["steps"][0] == 4}
    assert (4, "rollout_generate") in scopes                                   # repeat 1
    assert {(4, f"actor_compute_log_prob.part{k}") for k in range(1, 7)} <= scopes  # repeat 0
    assert {(4, "actor_update.part1"), (4, "actor_update.part2")} <= scopes      # repeat 2


def test_step_unit_schedule_over_a_continuous_window_matches_torch(tmp_path):
    # unit: step counts the steps of a continuous end-to-end run (torch's prof.step() once per
    # iteration); the captures' steps are the active periods.
    for combo in [(0, 1, 1, 2, 0), (1, 0, 0, 1, 2), (2, 1, 0, 3, 1), (0, 0, 2, 1, 0)]:
        n = 11
        skip_first, wait, warmup, active, repeat = combo
        cfg = {"rlprof": {"steps": {"start": 1, "end": n + 1}, "continuous_steps": True,
                          "save_path": str(tmp_path),
                          "roles": {"actor": {"ranks": [0], "schedule": {
                              "unit": "step", "skip_first": skip_first, "wait": wait,
                              "warmup": warmup, "active": active, "repeat": repeat}}}}}
        name = "step" + "".join(map(str, combo))
        prof = rlprof.Profiler(cfg, rank=0, world_size=1, role="actor", run_id=name, quiet=True,
                               install_signal_handlers=False, measure_clock_offset=False)
        for step in range(1, n + 1):
            with prof.step(step):
                rlprof.sub_step("micro_batch")
        got = []
        for c in prof.shutdown():
            with open(os.path.join(c, "manifest.json")) as f:
                m = json.load(f)
            s = m["window"]["sampling"]
            assert s["unit"] == "step"
            assert m["steps"] == list(range(1 + s["first"], 1 + s["first"] + s["count"]))
            got.append((s["first"], s["count"]))
        # The run's last step ends the window (torch: step() after it, then stop()).
        want = [(f, c) for f, c, _ in torch_periods(combo, n) if c > 0]
        assert sorted(got) == want, combo


def test_verl_adapter_stage_gets_its_schedule_without_declaring_it(tmp_path):
    from rlprof.integrations.verl import DistProfiler

    cfg = {"global_profiler": {"tool": "rlprof", "steps": [1], "save_path": str(tmp_path)},
           "actor_rollout_ref": {"actor": {"profiler": {"enable": True, "ranks": [0], "tool_config": {
               "rlprof": {"discrete": True, "schedule": {"unit": "micro_batch", "skip_first": 1,
                                                         "wait": 1, "warmup": 1, "active": 2,
                                                         "repeat": 2}}}}}}}
    prof = DistProfiler(rank=0, config=cfg, roles=["actor", "rollout", "ref"], world_size=1,
                        run_id="verl", quiet=True, install_signal_handlers=False)

    class Worker:
        @DistProfiler.annotate(color="red", role="actor_update")  # verl's call: no counts
        def update_actor(self):
            for _ in range(8):
                rlprof.sub_step("micro_batch")

    prof.start(role="actor", profile_step=1)
    Worker().update_actor()
    prof.stop()
    caps = prof.profiler.shutdown()
    got = []
    for c in sorted(caps):
        with open(os.path.join(c, "manifest.json")) as f:
            m = json.load(f)
        got.append((m["scope"], m["window"]["sampling"]["first"], m["window"]["sampling"]["count"]))
    assert got == [("actor_update.part1", 3, 2), ("actor_update.part2", 7, 1)]
    assert [(f, c) for f, c, _ in torch_periods((1, 1, 1, 2, 2), 8)] == [(3, 2), (7, 1)]


def test_plan_predicts_what_the_runtime_records(tmp_path):
    build = os.environ.get("RLPROF_BUILD_DIR", "")
    cli = os.path.join(build, "bin", "rlprof")
    if not os.access(cli, os.X_OK):
        pytest.skip("the rlprof CLI is not built")
    for i in range(0, len(COMBOS), 17):
        combo = COMBOS[i]
        cfg = tmp_path / f"c{i}.yaml"
        sched = schedule_dict(combo, "micro_batch", "actor_compute_log_prob")
        cfg.write_text(json.dumps({"rlprof": {"steps": [1], "roles": {"actor": {
            "discrete": True, "stages": ["actor_compute_log_prob"], "schedule": [sched]}}}}))
        plan = json.loads(subprocess.run([cli, "plan", str(cfg), "--sub-steps", "micro_batch=12",
                                          "--json"], check=True, capture_output=True,
                                         text=True).stdout)
        got = [(c["sub_steps"]["first"], c["sub_steps"]["count"], c["sub_steps"]["complete"])
               for c in plan["captures"]]
        assert got == torch_periods(combo, 12), combo
