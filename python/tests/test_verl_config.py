"""verl's resolved config for every process (rlprof.integrations.verl_config), verl's worker
labels and TrainingWorker stage names (rlprof.integrations.verl), and the plan of that config.
No verl needed: verl's config objects are plain dicts here (OmegaConf when it is installed)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

pytestmark = pytest.mark.skipif(not BUILD, reason="rlprof is not built")

VERL_091 = os.path.join(ROOT, "test", "data", "fixtures", "configs", "verl-0.9.1",
                        "_generated_ppo_trainer.yaml")


def _verl_tree(**profiler):
    """The shape verl's resolved ppo_trainer config has where rlprof reads it (the generated
    config's rollout block interpolates the actor's enable/ranks, not its rlprof block)."""
    actor = {"tool": "rlprof", "enable": True, "all_ranks": False, "ranks": [0],
             "save_path": "out", "tool_config": {"rlprof": dict(profiler), "torch": {
                 "_target_": "verl.utils.profiler.config.TorchProfilerToolConfig",
                 "contents": [], "discrete": False}}}
    rollout = {"tool": "rlprof", "enable": True, "all_ranks": False, "ranks": [0],
               "save_path": "out", "tool_config": {"npu": {"contents": []}}}
    return {"global_profiler": {"_target_": "verl.utils.profiler.ProfilerConfig", "tool": "rlprof",
                                "steps": [2, 3], "save_path": "out",
                                "profile_continuous_steps": False},
            "actor_rollout_ref": {"actor": {"profiler": actor, "strategy": "fsdp2"},
                                  "rollout": {"profiler": rollout, "name": "vllm"},
                                  "model": {"path": "/m"}},
            "critic": {"profiler": {"tool": "rlprof", "enable": False, "ranks": []}},
            "trainer": {"total_training_steps": 3, "n_gpus_per_node": 2, "nnodes": 1,
                        "logger": ["console"]},
            "data": {"train_batch_size": 2}}


def test_profiler_part_keeps_what_rlprof_reads_and_the_rollout_follows_the_actor():
    from rlprof.integrations import verl_config
    part = verl_config.profiler_part(_verl_tree(discrete=True, contents=["cpu", "ops"]))
    assert set(part) == {"global_profiler", "actor_rollout_ref", "critic", "trainer"}
    assert "_target_" not in json.dumps(part)           # Hydra's keys: rlprof names them unknown
    assert "data" not in part and "model" not in part["actor_rollout_ref"]
    assert part["trainer"] == {"total_training_steps": 3, "n_gpus_per_node": 2, "nnodes": 1}
    ro = part["actor_rollout_ref"]["rollout"]["profiler"]["tool_config"]["rlprof"]
    assert ro == {"discrete": True, "contents": ["cpu", "ops"]}   # as verl does for torch/npu


def test_profiler_part_is_none_without_rlprof():
    from rlprof.integrations import verl_config
    tree = _verl_tree()
    for block in (tree["global_profiler"], tree["actor_rollout_ref"]["actor"]["profiler"],
                  tree["actor_rollout_ref"]["rollout"]["profiler"], tree["critic"]["profiler"]):
        block["tool"] = "torch"
    assert verl_config.profiler_part(tree) is None
    assert verl_config.profiler_part({"model": 1}) is None


def test_publish_sets_the_environment_and_writes_the_plan_file(tmp_path, monkeypatch, rlprof_cli):
    from rlprof.integrations import verl_config
    monkeypatch.setenv("RLPROF_RUN_ID", "run1")
    monkeypatch.delenv("RLPROF_CONFIG", raising=False)
    tree = _verl_tree(discrete=False, contents=["cpu"])
    tree["global_profiler"]["save_path"] = str(tmp_path)
    part = verl_config.publish(tree)
    assert json.loads(os.environ[verl_config.ENV]) == part
    assert verl_config.resolved_from_env() == part
    path = tmp_path / "run1" / verl_config.FILE_NAME
    assert json.loads(path.read_text()) == part
    # `rlprof plan` reads that file: the trainer worker's e2e captures, the rollout replica's and
    # the controller's
    out = subprocess.run([rlprof_cli, "plan", str(path), "--world-size", "1", "--json"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    plan = json.loads(out.stdout)
    rows = {(c["worker"], c["steps"], c["scope"]) for c in plan["captures"]}
    assert rows == {("actor_rollout_ref", "2", "e2e"), ("actor_rollout_ref", "3", "e2e"),
                    ("rollout replicas", "2", "e2e"), ("rollout replicas", "3", "e2e"),
                    ("controller", "2", "e2e"), ("controller", "3", "e2e")}
    assert not any("only captured in discrete" in w for w in plan.get("warnings", []))


def test_a_config_file_that_disagrees_is_named_key_by_key_and_adds_rlprof_only_keys(tmp_path, monkeypatch):
    from rlprof.integrations import verl_config
    f = tmp_path / "mine.yaml"
    f.write_text("global_profiler:\n  tool: rlprof\n  steps: [1, 2]\n"
                 "actor_rollout_ref:\n  actor:\n    profiler:\n      ranks: [0]\n"
                 "      tool_config:\n        rlprof:\n          schedule: {unit: mini_batch, active: 1}\n")
    monkeypatch.setenv("RLPROF_CONFIG", str(f))
    monkeypatch.setenv("RLPROF_OVERRIDES", "actor_rollout_ref.actor.profiler.enable=false")
    monkeypatch.setenv("RLPROF_RUN_ID", "run2")
    tree = _verl_tree(contents=["cpu"])
    tree["global_profiler"]["save_path"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c",
                        "import json, sys; from rlprof.integrations import verl_config as v; "
                        "print(json.dumps(v.publish(json.loads(sys.argv[1]))))", json.dumps(tree)],
                       capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    part = json.loads(r.stdout)
    # verl's values win, each disagreement is named once, in one warning
    assert part["global_profiler"]["steps"] == [2, 3]
    assert r.stderr.count("rlprof: warning:") == 1
    assert "global_profiler.steps: [1, 2] in the file, [2, 3] in verl's" in r.stderr
    assert "actor_rollout_ref.actor.profiler.enable: false in the file, true in verl's" in r.stderr
    assert "ranks" not in r.stderr                         # the same value: not named
    # the file's rlprof-only key (verl has no such key) joins verl's config, unwarned
    sched = part["actor_rollout_ref"]["actor"]["profiler"]["tool_config"]["rlprof"]["schedule"]
    assert sched == {"unit": "mini_batch", "active": 1} and "schedule" not in r.stderr


def test_worker_labels_and_training_worker_stages():
    from rlprof.integrations.verl import roles_of, stage_for
    assert roles_of("actor_rollout_ref") == ["actor", "rollout", "ref"]
    assert roles_of("value_model") == ["critic"]          # verl 0.9's critic TrainingWorker
    assert roles_of("reward_model") == ["reward"]
    assert roles_of("language_model") is None             # the actor's/ref's inner worker
    assert stage_for("train_batch", ["critic"]) == ("critic_update", "critic")
    assert stage_for("infer_batch", ["critic"]) == ("compute_values", "critic")
    assert stage_for("infer_batch", ["reward"]) == ("compute_rm_score", "reward")
    assert stage_for("actor_update", ["actor", "rollout", "ref"]) == ("actor_update", "actor")
    assert stage_for("train_batch", ["actor", "rollout", "ref"]) == ("train_batch", "actor")


@pytest.mark.skipif(not os.path.exists(VERL_091), reason="fixture missing")
def test_verl_091_generated_config_plans(rlprof_cli):
    """verl 0.9.1's own generated trainer config (global_tool_config.torch_memory gained
    memory_snapshot_num_steps) loads, and with tool rlprof the rollout replicas are planned in
    end-to-end mode too, and the controller's lane (its reward loop's workers only when the
    reward block is on)."""
    r = subprocess.run([rlprof_cli, "plan", VERL_091, "global_profiler.tool=rlprof",
                        "global_profiler.steps=[2]", "actor_rollout_ref.actor.profiler.enable=true",
                        "actor_rollout_ref.actor.profiler.all_ranks=true", "--world-size", "2",
                        "--json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {(c["worker"], c["scope"], c["ranks"]) for c in json.loads(r.stdout)["captures"]}
    assert rows == {("actor_rollout_ref", "e2e", "0-1"), ("rollout replicas", "e2e", "0-1"),
                    ("controller", "e2e", "0")}
    r = subprocess.run([rlprof_cli, "plan", VERL_091, "global_profiler.tool=rlprof",
                        "global_profiler.steps=[2]", "+reward_model.profiler.enable=true",
                        "+reward_model.profiler.ranks=[1,7]", "--world-size", "2", "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {(c["worker"], c["scope"], c["ranks"]) for c in json.loads(r.stdout)["captures"]}
    assert rows == {("reward loop", "e2e", "1,7"), ("controller", "e2e", "0")}  # reward.num_workers: 8


def test_colocated_workers_share_one_profiler_with_every_role():
    """verl colocates the workers of roles that share a resource pool (actor/rollout/ref and the
    critic by default) in one process: its one Profiler hosts all their roles, and each worker's
    stages keep its own role (a colocated critic's train_batch is critic_update)."""
    code = ("from rlprof.integrations import verl as v\n"
            "a = v.RlprofBackend(rank=0, save_file_prefix='actor_rollout_ref')\n"
            "c = v.RlprofBackend(rank=0, save_file_prefix='value_model')\n"
            "inner = v.RlprofBackend(rank=0, save_file_prefix='language_model')\n"
            "print(v._Shared.labelled)\n"
            "seen = []\n"
            "v._annotate = lambda stage, role=None: __import__('contextlib').nullcontext(seen.append((stage, role)))\n"
            "c.annotate(role='train_batch')(lambda: None)()\n"
            "a.annotate(role='actor_update')(lambda: None)()\n"
            "inner.annotate(role='train_batch')(lambda: None)()\n"
            "print(seen)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert out[0] == "['actor', 'rollout', 'ref', 'critic']"
    assert out[1] == ("[('critic_update', 'critic'), ('actor_update', 'actor'), "
                      "('train_batch', 'actor')]")
