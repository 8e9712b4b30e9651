"""rlprof.mstx: MindSpeed-RL's / torch_npu's mstx calls record rlprof ranges and marks inside
capture windows (seen by `rlprof summary` and the Perfetto export), are no-ops outside them,
and are also sent to torch_npu's mstx when it is there (a stand-in module here)."""
from __future__ import annotations

import json
import subprocess
import threading

import rlprof
from rlprof import mstx
from conftest import events


class FakeNpuMstx:
    """torch_npu.npu.mstx's calls, recorded."""

    def __init__(self):
        self.calls = []
        self._next = 100

    def mark(self, message, stream=None, domain="default"):
        self.calls.append(("mark", message, domain))

    def range_start(self, message, stream=None, domain="default"):
        self._next += 1
        self.calls.append(("range_start", message, domain, self._next))
        return self._next

    def range_end(self, range_id, domain="default"):
        self.calls.append(("range_end", range_id, domain))


class Worker:
    @mstx.mstx_timer_decorator
    def update(self, x):
        return x + 1


def _profile(tmp_path):
    cfg = {"rlprof": {"steps": [2], "save_path": str(tmp_path / "out"),
                      "roles": {"actor": {"ranks": [0]}}}}
    return rlprof.Profiler(cfg, role="actor", quiet=True)


def _run(prof):
    w = Worker()
    for step in (1, 2):
        with prof.step(step):
            rid = mstx.range_start("rollout step %d" % step)
            mstx.mark("weights synced")
            assert w.update(step) == step + 1
            with mstx.mstx_range("reshard"):
                pass
            # A range may end on another thread, as mstx allows.
            t = threading.Thread(target=mstx.range_end, args=(rid,))
            t.start()
            t.join()


def test_mstx_calls_land_in_the_capture_and_its_exports(tmp_path, rlprof_cli):
    mstx.set_npu_forwarding(False)
    prof = _profile(tmp_path)
    _run(prof)
    caps = prof.shutdown()
    assert len(caps) == 1
    evs = [e for e in events(rlprof_cli, caps[0], str(tmp_path)) if e.get("cat") == "user"]
    names = {e["name"] for e in evs}
    # Step 2 only: step 1 is outside the window.
    assert {"rollout step 2", "weights synced", "Worker.update", "reshard"} <= names, names
    assert "rollout step 1" not in names
    out = subprocess.run([rlprof_cli, "summary", "--view", "ranges", "--json", caps[0]],
                         check=True, capture_output=True, text=True).stdout
    table = json.loads(out)["inputs"][0]["tables"]["user_ranges"]
    cols = [c["name"] for c in table["columns"]]
    rows = {(r[cols.index("name")], r[cols.index("kind")]): r[cols.index("count")]
            for r in table["rows"]}
    assert rows[("Worker.update", "range")] == 1, rows
    assert rows[("reshard", "range")] == 1
    assert rows[("rollout step 2", "range")] == 1
    assert rows[("weights synced", "mark")] == 1
    trace = tmp_path / "t.pftrace"
    subprocess.run([rlprof_cli, "export", caps[0], "-o", str(trace)], check=True,
                   capture_output=True)
    data = trace.read_bytes()
    for n in (b"rollout step 2", b"Worker.update", b"weights synced"):
        assert n in data


def test_calls_are_forwarded_to_torch_npu_mstx_when_present(tmp_path, rlprof_cli):
    fake = FakeNpuMstx()
    mstx.set_npu_forwarding(True, fake)
    try:
        assert mstx.npu_forwarding()
        prof = _profile(tmp_path)
        _run(prof)
        caps = prof.shutdown()
    finally:
        mstx.set_npu_forwarding(False)
    # Every call reaches torch_npu (inside and outside rlprof's windows), ids matched.
    starts = [c for c in fake.calls if c[0] == "range_start"]
    ends = [c for c in fake.calls if c[0] == "range_end"]
    assert [c[1] for c in starts] == ["rollout step 1", "Worker.update", "reshard",
                                      "rollout step 2", "Worker.update", "reshard"]
    assert sorted(c[1] for c in ends) == sorted(c[3] for c in starts)
    assert [c[1] for c in fake.calls if c[0] == "mark"] == ["weights synced"] * 2
    names = {e["name"] for e in events(rlprof_cli, caps[0], str(tmp_path)) if e.get("cat") == "user"}
    assert {"rollout step 2", "Worker.update", "reshard", "weights synced"} <= names


def test_outside_windows_calls_are_no_ops_and_the_decorator_keeps_the_function():
    mstx.set_npu_forwarding(False)
    assert mstx.range_start("nothing open") == 0
    mstx.range_end(0)
    mstx.mark("nothing")
    assert Worker.update.__name__ == "update"
    assert Worker().update(1) == 2


def test_the_decorator_ends_its_range_when_the_function_raises(tmp_path, rlprof_cli):
    mstx.set_npu_forwarding(False)

    @mstx.mstx_timer_decorator
    def boom():
        raise ValueError("x")

    prof = _profile(tmp_path)
    with prof.step(2):
        try:
            boom()
        except ValueError:
            pass
    caps = prof.shutdown()
    evs = [e for e in events(rlprof_cli, caps[0], str(tmp_path)) if e.get("cat") == "user"]
    ends = [e for e in evs if e["name"].endswith("boom")]
    assert ends and all(e.get("ph") in ("b", "e", "X") for e in ends)
    assert len([e for e in ends if e.get("ph") == "e"]) == len([e for e in ends if e.get("ph") == "b"])


def test_the_launcher_points_nvtx_at_rlprofs_injection_library_unless_one_is_set():
    import os

    from rlprof import launch
    lib = os.path.join(os.path.dirname(launch.bootstrap_dir()), "librlprof_nvtx.so")
    env = launch.environment(None, [], base={})
    if os.path.isfile(lib):
        assert env["NVTX_INJECTION64_PATH"] == lib
    else:
        assert "NVTX_INJECTION64_PATH" not in env
    kept = launch.environment(None, [], base={"NVTX_INJECTION64_PATH": "/opt/nsys/libToolsInjection64.so"})
    assert kept["NVTX_INJECTION64_PATH"] == "/opt/nsys/libToolsInjection64.so"
