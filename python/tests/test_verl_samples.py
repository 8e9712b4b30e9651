"""verl's trajectories as samples (rlprof.integrations.verl_samples, issue 33), on verl 0.9.1's
own classes (.venv-integ). The whole chain on verl's real GRPO job — ids minted by the agent loop,
the vLLM requests named by them, the trainer's consumption — is checked in test_verl_grpo.py;
here the parts that job cannot reach: a tool call (a tiny model asks for none) and verl's
full_determinism."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from conftest import BUILD, ROOT

INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")
PROBE = os.path.join(os.path.dirname(__file__), "verl_samples_probe.py")

pytestmark = [pytest.mark.skipif(not BUILD, reason="rlprof is not built"),
              pytest.mark.skipif(not os.path.exists(INTEG_PY), reason=".venv-integ (verl) is not set up: scripts/setup")]


def _rows(t):
    cols = [c["name"] for c in t["columns"]]
    return [dict(zip(cols, r)) for r in t["rows"]]


def test_tool_calls_reward_and_use_of_verls_trajectories(rlprof_cli, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RLPROF_")}
    env["PYTHONPATH"] = os.path.join(BUILD, "python")
    r = subprocess.run([INTEG_PY, PROBE, str(tmp_path / "profile")], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    seen = json.loads(r.stdout.strip().splitlines()[-1])
    ids = seen["ids"]
    assert all(re.fullmatch(r"s4\.i7\.n[01]\.[0-9a-f]{8}", i) for i in ids), ids
    assert seen["request_ids"] == ids                      # each turn's vLLM request: the trajectory's id
    assert re.fullmatch(r"[0-9a-f]{32}", seen["outside"])  # outside a trajectory: verl's own uuid
    assert seen["determinism"] == "det-3"                  # full_determinism: verl's id kept
    assert "Unknown function 'search'" in seen["tool_text"]  # verl's own _call_tool ran
    assert seen["recorded"] == 2 and seen["consumed"] == 2
    assert "rlprof_stamps" not in seen["columns"] and "rlprof_sample" in seen["columns"]
    out = subprocess.run([rlprof_cli, "summary", str(tmp_path / "profile"), "--view", "samples", "--json"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = {r["id"]: r for r in _rows(json.loads(out.stdout)["samples"])}
    assert sorted(rows) == sorted(ids + list(seen["evicted"]))
    for i, tid in enumerate(ids):
        row = rows[tid]
        (name, dur), = seen["tools"][i]
        assert name == "search" and row["tool_calls"] == 1
        assert row["tool"] == pytest.approx(dur / 1e3, abs=1e-3)
        assert row["reward"] == pytest.approx(1000.0, abs=1e-3)
        assert (row["group"], row["version_first"], row["version_last"]) == ("u-a", 4, 4)
        assert (row["outcome"], row["used_step"], row["used_version"], row["staleness"]) == ("consumed", 4, 4, 0)
    # verl's v1 ReplayBuffer evicted one group as stale and one as filtered: their trajectories are
    # samples with those outcomes (verl's own eviction ran: the groups are gone from its buffer)
    assert seen["left"] == []
    out = subprocess.run([rlprof_cli, "summary", str(tmp_path / "profile"), "--view", "samples", "--json"],
                         capture_output=True, text=True, timeout=300)
    doc = json.loads(out.stdout)
    rows = {r["id"]: r for r in _rows(doc["samples"])}
    for tid, uid in seen["evicted"].items():
        assert rows[tid]["outcome"] == ("stale" if uid == "ua" else "filtered"), rows[tid]
        assert (rows[tid]["group"], rows[tid]["version_last"], rows[tid]["e2e"]) == (uid, 3, 5000.0)
    outcomes = {r["value"]: r["samples"] for r in _rows(doc["sample_outcomes"]) if r["kind"] == "outcome"}
    assert outcomes == {"consumed": 2, "stale": 2, "filtered": 2}, outcomes
