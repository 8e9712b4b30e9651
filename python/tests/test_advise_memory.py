"""The advisor's memory rule (issue 34) on real captures: a real out-of-memory error of torch's
CPU allocator, recorded by rlprof's allocator source, is the first finding with its step, stage
and operator; on CUDA — a fake torch.cuda here, no GPU in CI — rlprof.torch writes the
allocator's snapshot at the error and the finding points to it; and the capacities the rule
compares with (`capacity_bytes host`, `capacity_bytes cuda:N`) are in the capture."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap
from typing import Any, Dict, List

import pytest

from conftest import BUILD, events

PKG = os.path.join(BUILD, "python") if BUILD else ""

pytestmark = pytest.mark.skipif(not BUILD, reason="rlprof is not built")


def _run(script: str, out: str, *args: str) -> List[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLPROF_")}
    env["PYTHONPATH"] = PKG
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(script), out, *args], env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def _run_advice(cli: str, caps: List[str]) -> Dict[str, Any]:
    """`rlprof advise --json` on the run of these captures (<run>/step<N>/<scope>/<capture>)."""
    return _advise(cli, os.path.dirname(os.path.dirname(os.path.dirname(caps[0]))))


def _advise(cli: str, path: str) -> Dict[str, Any]:
    r = subprocess.run([cli, "advise", path, "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _counters(cli: str, capture: str, tmp: str) -> Dict[str, List[float]]:
    """The capture's counter series: name → values."""
    got: Dict[str, List[float]] = {}
    for e in events(cli, capture, tmp):
        if e.get("ph") == "C":
            for v in e.get("args", {}).values():
                got.setdefault(e["name"], []).append(v)
    return got


CPU_OOM = """
    import json, sys, warnings
    warnings.simplefilter("ignore")
    import torch, rlprof
    prof = rlprof.Profiler({"rlprof": {"steps": [1, 2], "save_path": sys.argv[1],
                            "roles": {"actor": {"ranks": [0], "contents": ["cpu", "ops", "memory"]}}}},
                           role="actor", quiet=True)
    for step in (1, 2):
        with prof.step(step):
            with prof.stage("rollout_generate", "rollout"):
                x = torch.ones(1 << 16)
            with prof.stage("actor_update", "actor"):
                y = x * 2
                if step == 2:
                    try:  # far more than the machine has: torch's CPU allocator refuses it
                        torch.empty(1 << 50, dtype=torch.uint8)
                    except RuntimeError:
                        pass  # the job goes on
    print(json.dumps(prof.shutdown()))
"""


def test_a_real_cpu_out_of_memory_error_is_the_first_finding(rlprof_cli, tmp_path):
    caps = _run(CPU_OOM, str(tmp_path / "out"))
    j = _run_advice(rlprof_cli, caps)
    f = j["findings"][0]
    assert f["id"] == "device.memory" and f["severity"] == "high", j["findings"]
    assert "out-of-memory" in f["title"] and "cpu" in f["title"], f["title"]
    ev = f["evidence"][0]
    assert ev["step"] == 2 and ev["stage"] == "actor_update", ev
    assert "aten::empty" in ev["what"], ev["what"]
    assert "1024.0 TiB" in ev["what"] or "GiB asked" in ev["what"], ev["what"]
    assert ev["start_us"] is not None
    # The RSS and what it may grow to are in every window.
    got = _counters(rlprof_cli, caps[0], str(tmp_path))
    cap = [v for k, vs in got.items() if "capacity_bytes host" in k for v in vs]
    assert cap and 0 < cap[0] < 1 << 50, got.keys()


FAKE_CUDA_OOM = """
    import json, os, sys, warnings
    warnings.simplefilter("ignore")
    import torch
    # A fake CUDA (no GPU here): the torch.cuda calls rlprof.torch makes, as a device would answer.
    observers, history = [], []
    class Props: total_memory = 80 << 30
    torch.cuda.is_available = lambda: True
    torch.cuda.is_initialized = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_properties = lambda d: Props()
    torch.cuda.memory_allocated = lambda *a: 70 << 30
    torch.cuda.memory_reserved = lambda *a: 79 << 30
    torch.cuda.memory._record_memory_history = lambda enabled=None, *a, **k: history.append(enabled)
    torch.cuda.memory._snapshot = lambda *a, **k: {"segments": [{"device": 0, "total_size": 79 << 30}],
                                                   "device_traces": [[{"action": "oom", "size": 2 << 30}]]}
    torch._C._cuda_attach_out_of_memory_observer = observers.append
    import rlprof
    prof = rlprof.Profiler({"rlprof": {"steps": [1, 2], "save_path": sys.argv[1],
                            "roles": {"actor": {"ranks": [0], "contents": ["cpu", "memory"]}}}},
                           role="actor", quiet=True)
    for step in (1, 2):
        with prof.step(step):
            with prof.stage("actor_update", "actor"):
                if step == 2 and sys.argv[2] == "oom":  # the caching allocator cannot find 2 GiB: it calls its observers
                    for o in observers:
                        o(0, 2 << 30, 70 << 30, 1 << 30)
    caps = prof.shutdown()
    assert len(observers) == 1, observers  # attached once, not at every window
    assert history[0] == "all", history
    print(json.dumps(caps))
"""


def test_a_cuda_out_of_memory_error_writes_the_allocator_snapshot_the_finding_names(rlprof_cli, tmp_path):
    caps = _run(FAKE_CUDA_OOM, str(tmp_path / "out"), "oom")
    snap = os.path.join(caps[1], "oom_device0_rank0.pickle")
    assert os.path.exists(snap), os.listdir(caps[1])
    with open(snap, "rb") as f:
        assert pickle.load(f)["device_traces"][0][0]["action"] == "oom"
    j = _run_advice(rlprof_cli, caps)
    f = j["findings"][0]
    assert f["id"] == "device.memory" and f["severity"] == "high", j["findings"]
    assert "cuda:0" in f["title"] and "2.0 GiB asked" in f["title"], f["title"]
    ev = f["evidence"][0]
    assert snap in ev["what"] and "memory_viz" in ev["what"], ev["what"]
    assert ev["step"] == 2 and ev["stage"] == "actor_update", ev
    # The device's memory is in each window for the rule's "close to capacity".
    got = _counters(rlprof_cli, caps[0], str(tmp_path))
    assert [v for k, vs in got.items() if "capacity_bytes cuda:0" in k for v in vs][0] == 80 << 30


def test_a_cuda_device_close_to_capacity_is_a_finding_without_an_error(rlprof_cli, tmp_path):
    """The same fake device with 79 of its 80 GiB reserved (torch.cuda.memory_reserved(), sampled
    at each boundary) and no error: device.memory, medium (≥ 95 %), no saving estimated (no
    allocator calls in a CPU-only capture), placed on the stage holding the peak."""
    caps = _run(FAKE_CUDA_OOM, str(tmp_path / "out"), "full")
    j = _run_advice(rlprof_cli, caps)
    mem = [f for f in j["findings"] if f["id"] == "device.memory"]
    assert len(mem) == 1, j["findings"]
    f = mem[0]
    assert f["severity"] == "medium" and f["saving_us_per_step"] is None, f
    assert "79.0 GiB of 80.0 GiB (99 %)" in f["title"], f["title"]
    assert f["evidence"][0]["stage"] == "actor/actor_update" and f["evidence"][0]["start_us"] is not None
    # (this 1.5 ms step's own gaps between stages are 10 % of it: they rank first here)

