"""The Python facade: Profiler, annotate, markers, windows chosen by the config."""
from __future__ import annotations

import os

import pytest

import rlprof
from conftest import all_captures, capture_key, events, manifest


def native(tmp_path, steps=(2,), discrete=False, ranks=(0,), contents=("cpu",), role="actor",
           **extra):
    block = {"ranks": list(ranks), "discrete": discrete, "contents": list(contents)}
    block.update(extra)
    return {"rlprof": {"steps": list(steps), "save_path": str(tmp_path / "out"),
                       "roles": {role: block}}}


def run_steps(prof, steps, body=None):
    for s in steps:
        with prof.step(s):
            with rlprof.annotate("actor_update", role="actor"):
                with rlprof.annotate("inner"):
                    rlprof.mark("m")
                    rlprof.counter("c", float(s))
            if body:
                body(s)


def test_markers_without_a_profiler_are_no_ops():
    assert rlprof.current() is None
    assert not rlprof.recording()
    with rlprof.annotate("nothing"):
        rlprof.mark("x")
        rlprof.counter("y", 1.0)
    assert rlprof.range_start("r") == 0
    rlprof.range_end(0)
    rlprof.sub_step("decode")

    @rlprof.annotate("actor_update", role="actor")
    def f(x):
        return x + 1

    assert f(1) == 2


def test_end_to_end_captures_only_the_selected_steps(tmp_path, rlprof_cli):
    prof = rlprof.Profiler(native(tmp_path, steps=[2, 3]), role="actor", quiet=True)
    assert prof.enabled and rlprof.current() is prof
    run_steps(prof, [1, 2, 3, 4])
    caps = prof.shutdown()
    assert rlprof.current() is None
    assert sorted(capture_key(c) for c in caps) == [(2, "e2e", 0), (3, "e2e", 0)]
    evs = events(rlprof_cli, caps[0], str(tmp_path))
    names = {(e["cat"], e["name"]) for e in evs}
    assert ("stage", "actor_update") in names
    assert ("user", "inner") in names and ("user", "m") in names
    steps = [e for e in evs if e["cat"] == "step"]
    assert [e["args"]["step"] for e in steps] == [2]


def test_discrete_captures_one_per_stage_call(tmp_path):
    prof = rlprof.Profiler(native(tmp_path, steps=[2], discrete=True), role="actor", quiet=True)
    def body(s):
        with rlprof.annotate("actor_compute_log_prob", role="actor"):
            pass
    run_steps(prof, [1, 2, 3], body)
    caps = prof.shutdown()
    assert sorted(capture_key(c) for c in caps) == [
        (2, "actor_compute_log_prob", 0), (2, "actor_update", 0)]
    assert manifest(caps[0])["mode"] == "discrete"


def test_ranks_and_roles_outside_the_plan_capture_nothing(tmp_path):
    for kwargs in ({"rank": 1, "world_size": 2, "role": "actor"},
                   {"rank": 0, "world_size": 2, "role": "critic"}):
        prof = rlprof.Profiler(native(tmp_path, steps=[1, 2]), quiet=True, **kwargs)
        assert not prof.enabled
        run_steps(prof, [1, 2])
        assert prof.shutdown() == []
    assert all_captures(str(tmp_path)) == []


def test_a_raising_stage_closes_its_range_and_is_not_called_again(tmp_path, rlprof_cli):
    calls = []

    @rlprof.annotate("actor_update", role="actor")
    def update():
        calls.append(1)
        rlprof.mark("before_raise")
        raise RuntimeError("boom")

    prof = rlprof.Profiler(native(tmp_path, steps=[1], discrete=True), role="actor", quiet=True)
    with pytest.raises(RuntimeError, match="boom"):
        with prof.step(1):
            update()
    assert calls == [1]
    with pytest.raises(ValueError):
        with rlprof.annotate("inner_range"):
            raise ValueError("again")
    caps = prof.shutdown()
    assert [capture_key(c) for c in caps] == [(1, "actor_update", 0)]
    m = manifest(caps[0])
    assert m["window"]["close_reason"] == "stage_end"
    evs = events(rlprof_cli, caps[0], str(tmp_path))
    stage = [e for e in evs if e["cat"] == "stage"]
    assert len(stage) == 1 and stage[0]["name"] == "actor_update"
    mark = [e for e in evs if e["name"] == "before_raise"][0]
    assert stage[0]["ts"] <= mark["ts"] <= stage[0]["ts"] + stage[0]["dur"]


def test_dict_config_overrides_and_identity(tmp_path):
    prof = rlprof.Profiler(native(tmp_path, steps=[5]), overrides=["rlprof.steps=[1]"],
                           rank=0, world_size=1, role="actor", run_id="fixed-run", quiet=True)
    assert prof.run_id == "fixed-run"
    assert prof.run_dir == str(tmp_path / "out" / "fixed-run")
    assert prof.identity["roles"] == ["actor"]
    run_steps(prof, [1])
    caps = prof.shutdown()
    assert [capture_key(c) for c in caps] == [(1, "e2e", 0)]
    assert manifest(caps[0])["clock"]["offset_to_rank0_ns"] == 0


def test_a_bad_config_raises_with_the_key(tmp_path):
    with pytest.raises(ValueError, match="stepz"):
        rlprof.Profiler({"rlprof": {"stepz": [1]}})


def test_async_ranges_and_manual_capture(tmp_path, rlprof_cli):
    prof = rlprof.Profiler(native(tmp_path, steps=[99]), role="actor", quiet=True)
    assert prof.start_capture("probe")
    rid = rlprof.range_start("async_range")
    assert rid != 0
    rlprof.range_end(rid)
    prof.stop_capture()
    caps = prof.shutdown()
    assert len(caps) == 1 and manifest(caps[0])["scope"] == "probe"
    names = [e["name"] for e in events(rlprof_cli, caps[0], str(tmp_path))]
    assert "async_range" in names


def test_verl_adapter_drives_stages(tmp_path):
    from rlprof.integrations.verl import DistProfiler

    cfg = native(tmp_path, steps=[3], discrete=True)
    profiler = DistProfiler(rank=0, config=cfg, roles=["actor"], quiet=True)

    class Worker:
        @DistProfiler.annotate(color="red", role="actor_update")
        def update_actor(self):
            return "done"

    w = Worker()
    for step in (2, 3):
        profiler.start(role="actor", profile_step=step)
        assert w.update_actor() == "done"
        profiler.stop()
    caps = profiler.profiler.shutdown()
    assert [capture_key(c) for c in caps] == [(3, "actor_update", 0)]


def test_a_profiler_never_shut_down_finalises_at_exit(tmp_path):
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import rlprof
        p = rlprof.Profiler({{"rlprof": {{"steps": [1], "save_path": {str(tmp_path)!r},
                             "roles": {{"actor": {{"ranks": [0]}}}}}}}}, role="actor", quiet=True)
        p.start(1)
        rlprof.mark("left_open")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, env=dict(os.environ))
    caps = all_captures(str(tmp_path))
    assert len(caps) == 1
    m = manifest(caps[0])
    assert m["complete"] is True and m["window"]["close_reason"] == "step_end"  # shutdown ends the step
    assert m["counts"]["events"] >= 1


CHILD_SCRIPT = '''
import multiprocessing as mp
import sys

import rlprof


def child(save):
    p = rlprof.Profiler({"rlprof": {"steps": [1], "save_path": save,
                                    "roles": {"actor": {"ranks": [0]}}}}, role="actor", quiet=True)
    p.start(1)
    with rlprof.annotate("in_child"):
        rlprof.mark("left_open")
    # Neither stop() nor shutdown(): multiprocessing children leave through os._exit.


if __name__ == "__main__":
    proc = mp.get_context(sys.argv[2]).Process(target=child, args=(sys.argv[1],))
    proc.start()
    proc.join()
    sys.exit(proc.exitcode)
'''


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_multiprocessing_child_that_never_shuts_down_writes_a_complete_capture(
        tmp_path, rlprof_cli, method):
    import subprocess
    import sys
    script = tmp_path / "mp_child.py"
    script.write_text(CHILD_SCRIPT)
    save = tmp_path / "out"
    subprocess.run([sys.executable, str(script), str(save), method], check=True,
                   env=dict(os.environ), timeout=120)
    caps = all_captures(str(save))
    assert len(caps) == 1
    m = manifest(caps[0])
    assert m["complete"] is True and m["window"]["close_reason"] == "step_end"
    names = {e["name"] for e in events(rlprof_cli, caps[0], str(tmp_path))}
    assert {"in_child", "left_open"} <= names


def _offset_worker(rank, port, same_kernel, out):
    import torch.distributed as dist
    from rlprof import _dist
    if not same_kernel:  # as if rank 1 ran on another host: a boot id of its own
        _dist._boot_id = lambda: f"kernel-of-rank-{rank}"
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        offset = _dist.measure_offset_to_rank0()
        with open(os.path.join(out, f"offset{rank}"), "w") as f:
            f.write(str(offset))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("same_kernel", [True, False], ids=["one-kernel", "two-kernels"])
def test_clock_offsets_are_zero_under_one_kernel_and_measured_across_kernels(tmp_path, same_kernel):
    """Ranks under one kernel read one CLOCK_MONOTONIC: offset exactly 0, no measurement error.
    Under two kernels (another host) the round trips measure it: near 0 here, never exactly
    assumed."""
    mp = pytest.importorskip("torch.multiprocessing")
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(_offset_worker, args=(port, same_kernel, str(tmp_path)), nprocs=2, join=True,
                       start_method="spawn")
    offsets = [int((tmp_path / f"offset{r}").read_text()) for r in (0, 1)]
    assert offsets[0] == 0
    if same_kernel:
        assert offsets[1] == 0
    else:
        assert abs(offsets[1]) < 50_000_000  # one host really: the measurement finds ~0
