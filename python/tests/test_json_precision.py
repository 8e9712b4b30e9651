"""`--json` keeps every time to the ns (issue 11): durations as µs reals are exact decimals (the
shortest float64 that reads back to the same ns), absolute times come as integer ns columns too
(`step_atoms.start`, `stage_time.start_ns`, `kernel_details.start_ns`), because an epoch-based
µs start (≈ 1.7e15) has no exact float64. Fixture: test/data/peers/epoch_ns.json
(PROVENANCE.md there)."""
from __future__ import annotations

import json
import os
import subprocess

from conftest import ROOT

EPOCH = os.path.join(ROOT, "test", "data", "peers", "epoch_ns.json")
ORIGIN_NS = 1_700_000_000_000_000_123


def _json(cli, *args):
    p = subprocess.run([cli, *args, "--json"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def _rows(table):
    names = [c["name"] for c in table["columns"]]
    return [dict(zip(names, r)) for r in table["rows"]]


def test_summary_json_gives_absolute_times_to_the_ns(rlprof_cli):
    (inp,) = _json(rlprof_cli, "summary", EPOCH, "--view", "all")["inputs"]
    t = inp["tables"]
    steps = _rows(t["step_atoms"])
    assert [s["start"] for s in steps] == [ORIGIN_NS, ORIGIN_NS + 1_000_001]
    assert steps[0]["host_end"] - steps[0]["host_start"] == 900_007
    stages = _rows(t["stage_time"])
    assert [s["start_ns"] for s in stages] == [ORIGIN_NS, ORIGIN_NS + 1_000_001]
    # The µs real of the same start cannot hold the .123: within float64's 0.25 µs spacing.
    assert abs(stages[0]["start"] * 1000 - ORIGIN_NS) < 250


def test_summary_json_durations_are_exact_decimal_us(rlprof_cli):
    (inp,) = _json(rlprof_cli, "summary", EPOCH, "--view", "all")["inputs"]
    stt = _rows(inp["tables"]["step_trace_time"])
    assert [r["Computing"] for r in stt] == [300.457, 300.457]
    assert [r["Free"] for r in stt] == [599.55, 599.552]
    kernels = _rows(_json(rlprof_cli, "summary", EPOCH, "--view", "kernels")["inputs"][0]["tables"]
                    ["kernel_details"])
    assert [k["start_ns"] for k in kernels] == [ORIGIN_NS + 20_011, ORIGIN_NS + 1_000_001 + 20_011]
    assert [k["Duration"] for k in kernels] == [300.457, 300.457]


def test_compare_and_cluster_json_are_exact(rlprof_cli):
    cmp = _json(rlprof_cli, "compare", EPOCH, EPOCH)
    window = next(r for r in _rows(cmp["compare_steps"]) if r["metric"] == "Step (window)")
    assert window["baseline"] == 900.008  # median of 900.007 and 900.009 µs
    cl = _rows(_json(rlprof_cli, "cluster", EPOCH)["cluster_step_trace_time"])
    assert [r["Computing"] for r in cl] == [300.457, 300.457]
