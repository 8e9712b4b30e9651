"""test/gpu/device_figures.py, the script a session lent a GPU runs for issue 14's figures, run
here on the CPU (`--device cpu`, with the fake CUPTI) so that it keeps working as the GRPO example
and rlprof change: every mode runs, every figure is computed, and device activity is recorded and
its bytes counted."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

SCRIPT = os.path.join(ROOT, "test", "gpu", "device_figures.py")


def run(out, **env):
    p = subprocess.run([sys.executable, SCRIPT, "--device", "cpu", "--steps", "4", "--out", str(out)],
                       capture_output=True, text=True, env={**os.environ, **env}, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads((out / "device_figures.json").read_text())


@pytest.fixture(scope="module")
def figures(tmp_path_factory):
    """One run of the script (nine GRPO runs, ~100 s) for both tests, with the fake CUPTI: on a
    GPU the script always has a CUPTI, and the fake's records make the device columns non-empty.
    A GPU image's Python has torch but need not have pandas: the script must not import it (here
    importing pandas fails, as it would there)."""
    tmp = tmp_path_factory.mktemp("device_figures")
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    records = os.path.join(ROOT, "test", "data", "cupti", "step.records")
    blocked = tmp / "no_pandas"
    (blocked / "pandas").mkdir(parents=True)
    (blocked / "pandas" / "__init__.py").write_text("raise ImportError('pandas is blocked by this test')\n")
    path = os.pathsep.join([str(blocked)] + [p for p in [os.environ.get("PYTHONPATH")] if p])
    out = tmp / "out"
    return out, run(out, RLPROF_CUPTI_LIBRARY=fake, RLPROF_FAKE_CUPTI_RECORDS=records, PYTHONPATH=path)


def test_every_mode_runs_and_every_figure_is_computed(figures):
    _, f = figures
    assert f["device"] == "cpu"
    assert set(f["step_times"]) == {"off", "off2", "rlprof", "nodev", "devcorr", "devkern", "torch",
                                    "torchfirst", "rlproffirst"}
    assert all(len(t) == 4 for t in f["step_times"].values())
    # The device work of steps 2 and 3 in rlprof's capture (the fake's kernels) and in
    # torch.profiler's trace (none: torch.profiler on a CPU records no kernels).
    assert [k["step"] for k in f["kernels"]] == [2, 3]
    for k in f["kernels"]:
        assert k["rlprof"]["count"] > 0 and k["torch_json"]["count"] == k["torch_read_by_rlprof"]["count"] == 0
        assert k["count_ratio"] is None  # against torch's 0 kernels: no ratio, not a division by 0
    o = f["overhead"]
    assert len(o["off_s"]) == 2 and all(s > 0 for s in o["off_s"])
    for mode in ("rlprof", "nodev", "devcorr", "devkern", "torch"):
        assert o[mode]["s"] > 0 and o[mode]["ratio"] > 0
    assert o["torch"]["without_export_cpu_s"] > 0
    assert [e["step"] for e in f["window_close_us"]] == [2, 3]
    assert all(e["us"] > 0 for e in f["window_close_us"])
    assert [e["step"] for e in f["window_open_us"]] == [2, 3] == [e["step"] for e in f["window_open_nodev_us"]]
    assert len(f["cupti"]) == 2  # one capture per profiled step, each with its CUPTI status
    # Both profilers in one process: rlprof's captures of steps 2 and 3 and torch.profiler's traces.
    c = f["coexistence"]
    assert [r["steps"] for r in c["torchfirst"]["rlprof"]] == [[2], [3]]
    assert [t["step"] for t in c["torchfirst"]["torch"]] == [2, 3]
    assert [r["steps"] for r in c["rlproffirst"]["rlprof"]] == [[2], [3]]
    assert [t["step"] for t in c["rlproffirst"]["torch"]] == [4]


def test_with_the_fake_cupti_device_activity_is_recorded_and_its_bytes_counted(figures, tmp_path):
    out, f = figures
    assert all(c["status"] == "on" for c in f["cupti"])
    b = f["bytes"]
    # Every device record the fake delivered is one more event in the capture (level0: no
    # external correlation events). The bytes are compared across two processes, whose host
    # captures differ by a few KB run to run, and the fake's records compress to almost nothing,
    # so on a CPU only their computation is checked, not their sign (on a GPU: performance.md).
    assert b["cupti_records"] > 0 and b["events_added"] == b["cupti_records"]
    assert b["bytes_per_event_added"] == pytest.approx(
        (b["with_device"]["bytes"] - b["without"]["bytes"]) / b["events_added"])
    assert b["bytes_per_cupti_record"] == pytest.approx(
        (b["with_device"]["bytes"] - b["without"]["bytes"]) / b["cupti_records"])
    # The rlprof run recorded what the fake delivered, one file per window, in the fake's format.
    assert len(f["records"]) == 2 and all(r.endswith(".records") for r in f["records"])
    # test/gpu/ingest.py turns the results (as run_on_device.sh returns them) into the figures'
    # table and keeps the first window's records; on a CPU the kernel targets cannot be met.
    (out / "run.log").write_text("NVIDIA H100 80GB HBM3, 580.159.04, 81559 MiB\n")
    subprocess.run(["tar", "czf", str(out / "work.tar.gz"), "-C", str(out), "work"], check=True)
    kept = tmp_path / "kept"
    kept.mkdir()
    p = subprocess.run([sys.executable, os.path.join(ROOT, "test", "gpu", "ingest.py"), str(out), "--write",
                        "--records-dir", str(kept)], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "| rlprof with device capture against torch.profiler | ×" in p.stdout
    assert "| window close on the training thread (steps 2, 3) |" in p.stdout
    assert "target missed: step 2: device work differs from torch.profiler's by more than 1 %" in p.stdout
    records = kept / "h100_80gb_hbm3_grpo_step2.records"
    text = records.read_text()
    assert text.startswith("# Recorded on a GPU: NVIDIA H100 80GB HBM3, 580.159.04")
    assert sum(1 for line in text.splitlines() if line.startswith("kernel ")) > 0
    # torch.profiler on the CPU takes no CUPTI: rlprof keeps it in both orders.
    for mode in ("torchfirst", "rlproffirst"):
        assert all(r["cupti_status"] == "on" and r["device_work"]["count"] > 0
                   for r in f["coexistence"][mode]["rlprof"])


def test_the_cupti_clients_probe_runs_against_the_fake_cupti():
    """test/gpu/cupti_clients.py talks to libcupti through ctypes: its plumbing (callbacks,
    record walking, the claim's timings) checked against the fake CUPTI; the torch.profiler
    probes need CUDA and say so."""
    fake = os.path.join(BUILD, "src", "sources", "librlprof_fake_cupti.so")
    records = os.path.join(ROOT, "test", "data", "cupti", "step.records")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "test", "gpu", "cupti_clients.py"), "--fake", fake],
                       capture_output=True, text=True, env={**os.environ, "RLPROF_FAKE_CUPTI_RECORDS": records},
                       timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    probes = {r["probe"]: r for r in map(json.loads, p.stdout.strip().splitlines())}
    assert probes["register_twice"]["after_A"] == {"A": 4, "B": 0}  # step.records: 4 kernels
    assert probes["claim_cost"]["codes"] == [0] and probes["claim_cost"]["kernels"] == 80
    assert set(probes["claim_cost"]["median_us_after"]) == {"subscribe", "register", "enable_5_kinds",
                                                            "disable_5_kinds", "flush", "unsubscribe"}
    for name in ("torch_subscribes", "subscriber_first", "callbacks_first", "released_first"):
        assert probes[name]["skipped"] == "needs torch with CUDA"
