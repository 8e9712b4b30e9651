"""`rlprof analyse --ray` (docs/scale.md) on Ray's own multi-node test cluster
(ray.cluster_utils.Cluster: simulated nodes on this machine, each holding its own captures):
the distributed analysis equals the local one exactly, each capture is analysed on its node, the
CLI hands over to Python and writes the same files, and a node killed mid-analysis costs only
its inputs, counted as ray_node_lost. Runs under .venv-integ (Ray 2.60.0; scripts/setup), skipped
where it is absent (RLPROF_SKIP_INTEG=1)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from conftest import BUILD, ROOT, ray_env

INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")
GRPO = os.path.join(ROOT, "test", "golden", "analysis", "inputs", "grpo_tiny_step2")
KINETO = os.path.join(ROOT, "test", "golden", "analysis", "inputs", "kineto_launches.json")

pytestmark = [
    pytest.mark.skipif(not BUILD, reason="rlprof is not built"),
    pytest.mark.skipif(not os.access(INTEG_PY, os.X_OK),
                       reason=".venv-integ (ray) is not set up: scripts/setup"),
]


def _layout(root: str) -> None:
    """Three nodes: rank 0's captures on node_a, rank 1's on node_b, a Kineto trace on node_c."""
    for stage in sorted(os.listdir(GRPO)):
        for cap in sorted(os.listdir(os.path.join(GRPO, stage))):
            node = "node_a" if cap.startswith("rank0") else "node_b"
            shutil.copytree(os.path.join(GRPO, stage, cap), os.path.join(root, node, "grpo", "step2", stage, cap))
    os.makedirs(os.path.join(root, "node_c"))
    shutil.copy(KINETO, os.path.join(root, "node_c", "trainer.json"))


def test_distributed_analysis_on_a_ray_test_cluster_equals_local_and_survives_a_lost_node(tmp_path):
    root = tmp_path / "captures"
    _layout(str(root))
    env = ray_env(PYTHONPATH=os.path.join(BUILD, "python"))
    p = subprocess.run([INTEG_PY, os.path.join(os.path.dirname(__file__), "ray_cluster_check.py"), str(root),
                        os.path.join(BUILD, "bin", "rlprof")],
                       env=env, capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    assert p.returncode == 0, p.stderr[-4000:]
    line = [l for l in p.stdout.splitlines() if l.startswith("RLPROF_REPORT ")]
    assert line, p.stdout[-2000:] + p.stderr[-4000:]
    r = json.loads(line[-1][len("RLPROF_REPORT "):])
    print(r)
    assert r["inputs"] == 9  # 4 stages × 2 ranks + one Kineto trace
    assert r["equal"], r["differs"]
    assert r["cluster_equal"]
    assert r["placed_right"], (r["placement"], r["node_ids"])
    assert r["result_bytes"] < r["trace_bytes"]
    assert r["cli_rc"] == [0, 0], r["cli_err"]
    assert r["cli_equal"] and r["cli_run_view_equal"]
    # node_c (the last) was killed while analysing its one input.
    assert r["victim_inputs"] == 1
    assert r["ray_node_lost"] == 1
    assert len(r["lost_errors"]) == 1 and "lost" in r["lost_errors"][0]
    assert r["survivors_equal"]


def test_auto_never_joins_a_cluster_of_another_ray_and_starts_one_when_there_is_none(capsys):
    """`--ray` with its default `auto` joined an unrelated cluster on the machine (another
    job's Ray) and failed with Ray's "Version mismatch": now it says which and what to do; with
    no cluster at all it starts a local one, and says so."""
    from rlprof import distributed

    class FakeRay:
        __version__ = "9.9.9"

        def __init__(self, fail, at=("auto",)):
            self.fail, self.at, self.calls = fail, at, []

        def init(self, address=None, **kw):
            self.calls.append(address)
            if address in self.at and self.fail is not None:
                raise self.fail

    mismatch = FakeRay(RuntimeError("Version mismatch: The cluster was started with:\n Ray: 2.60.0"))
    with pytest.raises(distributed.ClusterMismatch) as e:
        distributed.join(mismatch, None)
    assert "RLPROF_PYTHON" in str(e.value) and "--ray local" in str(e.value)
    assert "Version mismatch" in str(e.value) and mismatch.calls == ["auto"]
    none = FakeRay(ConnectionError("Could not find any running Ray instance"))
    assert distributed.join(none, "auto") == "local" and none.calls == ["auto", "local"]
    assert "starting a local one" in capsys.readouterr().err
    given = FakeRay(ConnectionError("unreachable"), at=("10.0.0.5:6379",))
    with pytest.raises(ConnectionError):  # an address the user gave is never replaced
        distributed.join(given, "10.0.0.5:6379")
    assert given.calls == ["10.0.0.5:6379"]
