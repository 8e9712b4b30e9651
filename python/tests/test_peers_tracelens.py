"""TraceLens's gpu_timeline side by side with `rlprof summary --view tracelens` (issue 29).

TraceLens (AMD-AGI/TraceLens @ 171dd74) is not on PyPI, so its figures for the ROCm fixtures of
test/data/peers/ were produced once with python/tests/peers/tracelens_timeline.py (how: that
script's docstring; PROVENANCE.md there) and are held here, to TraceLens's own precision (its
`time ms` as printed). Two classes:
  - GPU-side ProfilerStep annotations a few µs long that bracket none of the work (ROCm + RCCL):
    rlprof's native view used to clip to them (communication 14.1 ms became 0); now it reads
    the whole trace and says so (`tracelens_gpu_steps_not_bracketing`);
  - ROCm hipMemset* launches whose "ac2g" flow has only its end: TraceLens links device work
    through flow pairs and leaves them out; `--compat tracelens` does the same, the native view
    links by correlation id and counts them.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import ROOT

PEERS = os.path.join(ROOT, "test", "data", "peers")

TRACELENS = {  # TraceLens 171dd74, get_df_gpu_timeline(), ms
    "rocm_rccl_tiny_gpu_steps.json": {
        "computation_time": 9.0015, "exposed_comm_time": 14.100375, "exposed_memcpy_time": 0.0,
        "busy_time": 23.101875, "idle_time": 4.64875, "total_time": 27.750625,
        "total_comm_time": 14.100375, "total_memcpy_time": 0.0},
    "rocm_memset_flow_end_only.json": {
        "computation_time": 0.6005, "exposed_comm_time": 0.40025, "exposed_memcpy_time": 0.0405,
        "busy_time": 1.04125, "idle_time": 0.648875, "total_time": 1.690125,
        "total_comm_time": 0.40025, "total_memcpy_time": 0.161},
}


def _timeline(cli, trace, *extra):
    p = subprocess.run([cli, "summary", os.path.join(PEERS, trace), "--view", "tracelens", "--json", *extra],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    (inp,) = json.loads(p.stdout)["inputs"]
    t = inp["tables"]["gpu_timeline"]
    names = [c["name"] for c in t["columns"]]
    rows = {r[names.index("type")]: r[names.index("time ms")] for r in t["rows"]}
    return rows, inp["diagnostics"]


@pytest.mark.parametrize("trace", sorted(TRACELENS))
def test_compat_tracelens_equals_tracelens(rlprof_cli, trace):
    got, _ = _timeline(rlprof_cli, trace, "--compat", "tracelens")
    for k, v in TRACELENS[trace].items():
        assert got[k] == pytest.approx(v, rel=0, abs=1e-9), (trace, k, got[k], v)


def test_tiny_gpu_step_annotations_are_not_clipped_to_and_that_is_said(rlprof_cli):
    got, diag = _timeline(rlprof_cli, "rocm_rccl_tiny_gpu_steps.json")
    assert got["total_comm_time"] == pytest.approx(14.100375, abs=1e-9)  # was 0, clipped to 3.5 µs windows
    assert got["computation_time"] == pytest.approx(9.0015, abs=1e-9)
    assert "tracelens_gpu_steps_not_bracketing" in json.dumps(diag)


def test_native_view_counts_memsets_linked_by_correlation(rlprof_cli):
    native, _ = _timeline(rlprof_cli, "rocm_memset_flow_end_only.json")
    compat, _ = _timeline(rlprof_cli, "rocm_memset_flow_end_only.json", "--compat", "tracelens")
    # The two 150.5 µs memsets: computation to TraceLens (memset counts as computation).
    assert native["computation_time"] == pytest.approx(compat["computation_time"] + 0.301, abs=1e-9)
