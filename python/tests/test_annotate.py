"""rlprof.annotate, the C type: plain ranges land with their names and nesting, one object may be
entered again (also from another thread), arguments are checked, stages still drive the
Profiler."""
from __future__ import annotations

import threading

import pytest

import rlprof
from conftest import events


def window(tmp_path):
    cfg = {"rlprof": {"steps": [99], "save_path": str(tmp_path / "out"),
                      "roles": {"actor": {"ranks": [0]}}}}
    prof = rlprof.Profiler(cfg, role="actor", quiet=True)
    assert prof.start_capture("t")
    return prof


def user_ranges(cli, prof, tmp_path):
    prof.stop_capture()
    caps = prof.shutdown()
    assert len(caps) == 1
    return [e for e in events(cli, caps[0], str(tmp_path)) if e["cat"] == "user"]


def test_is_the_public_c_type():
    assert rlprof.annotate is rlprof._rlprof.annotate
    assert isinstance(rlprof.annotate("x"), rlprof.annotate)
    a = rlprof.annotate(name="n", role="actor", counts="decode")
    assert (a.name, a.role, a.counts) == ("n", "actor", "decode")
    assert rlprof.annotate().name is None
    assert "rlprof.annotate('x'" in repr(rlprof.annotate("x"))


@pytest.mark.parametrize("args,kwargs", [((1,), {}), (("x",), {"bogus": 1}),
                                         (("x",), {"name": "y"}), (("a", "b", "c", "d"), {}),
                                         (("x",), {"role": 3})])
def test_bad_arguments_raise_type_error(args, kwargs):
    with pytest.raises(TypeError):
        rlprof.annotate(*args, **kwargs)


def test_enter_and_exit_called_by_hand_bound_unbound_and_on_the_wrong_object(tmp_path, rlprof_cli):
    """__enter__ / __exit__ are rlprof's own descriptors (no bound builtin method per `with`):
    they still behave as methods, also called by hand, and hold no reference once done."""
    import gc
    import sys
    prof = window(tmp_path)
    a = rlprof.annotate("by hand")
    assert a.__enter__() is a
    assert a.__exit__(None, None, None) is None
    e, x = a.__enter__, a.__exit__  # bound, kept: still callable
    assert e() is a and x(None, None, None) is None
    assert rlprof.annotate.__enter__(a) is a
    assert rlprof.annotate.__exit__(a, None, None, None) is None
    assert "__exit__" in repr(x) and "__enter__" in repr(rlprof.annotate.__enter__)
    with pytest.raises(TypeError):
        rlprof.annotate.__enter__(object())
    with pytest.raises(TypeError):
        rlprof.annotate.__exit__()
    with pytest.raises(TypeError):
        a.__enter__(1)
    with pytest.raises(TypeError):
        x(None, None, None, bogus=1)
    del e, x
    gc.collect()
    before = sys.getrefcount(a)
    for _ in range(1000):
        with a:
            with a:
                pass
    assert sys.getrefcount(a) == before
    evs = user_ranges(rlprof_cli, prof, tmp_path)
    assert len([v for v in evs if v["name"] == "by hand"]) == 3 + 2000


def test_a_context_manager_without_a_name_raises():
    with pytest.raises(ValueError, match="needs a name"):
        with rlprof.annotate():
            pass


def test_ranges_land_with_names_and_nesting(tmp_path, rlprof_cli):
    prof = window(tmp_path)
    a = rlprof.annotate("outer")
    with a:
        with a:  # one object entered again nests
            with rlprof.annotate("inner"):
                pass
    # More distinct names than the name cache has slots, built at run time (not interned).
    for i in range(300):
        with rlprof.annotate(f"dyn {i}"):
            pass
    with pytest.raises(KeyError):
        with rlprof.annotate("raising"):
            raise KeyError("k")
    evs = user_ranges(rlprof_cli, prof, tmp_path)
    by = {}
    for e in evs:
        by.setdefault(e["name"], []).append(e)
    outer = sorted(by["outer"], key=lambda e: e["ts"])
    assert len(outer) == 2
    assert outer[0]["ts"] <= outer[1]["ts"]
    assert outer[1]["ts"] + outer[1]["dur"] <= outer[0]["ts"] + outer[0]["dur"]
    (inner,) = by["inner"]
    assert outer[1]["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer[1]["ts"] + outer[1]["dur"]
    assert sorted(n for n in by if n.startswith("dyn ")) == sorted(f"dyn {i}" for i in range(300))
    assert all(len(by[f"dyn {i}"]) == 1 for i in range(300))
    assert len(by["raising"]) == 1


def test_one_object_shared_by_two_threads_records_each_threads_range(tmp_path, rlprof_cli):
    prof = window(tmp_path)
    shared = rlprof.annotate("shared")
    entered, release = threading.Event(), threading.Event()

    def other():
        with shared:
            entered.set()
            release.wait(5)

    t = threading.Thread(target=other)
    with shared:  # main enters first, the other thread second, main exits first
        t.start()
        assert entered.wait(5)
        with rlprof.annotate("main_body"):
            pass
    release.set()
    t.join()
    evs = user_ranges(rlprof_cli, prof, tmp_path)
    shared_evs = [e for e in evs if e["name"] == "shared"]
    (body,) = [e for e in evs if e["name"] == "main_body"]
    assert len(shared_evs) == 2
    assert len({e["tid"] for e in shared_evs}) == 2
    (main_range,) = [e for e in shared_evs if e["tid"] == body["tid"]]
    (other_range,) = [e for e in shared_evs if e["tid"] != body["tid"]]
    # Each thread's range has its own start: main's began before the other thread existed.
    assert main_range["ts"] < other_range["ts"]
    assert main_range["ts"] <= body["ts"] <= main_range["ts"] + main_range["dur"]


def test_outside_a_window_nothing_is_recorded_and_a_closed_window_drops_the_range(tmp_path, rlprof_cli):
    cfg = {"rlprof": {"steps": [99], "save_path": str(tmp_path / "out"),
                      "roles": {"actor": {"ranks": [0]}}}}
    prof = rlprof.Profiler(cfg, role="actor", quiet=True)
    with rlprof.annotate("before"):
        pass
    a = rlprof.annotate("straddles")
    a.__enter__()
    prof.start_capture("t")
    a.__exit__(None, None, None)  # began outside the window: not recorded
    with rlprof.annotate("inside"):
        pass
    names = {e["name"] for e in user_ranges(rlprof_cli, prof, tmp_path)}
    assert "inside" in names and "before" not in names and "straddles" not in names


def test_stage_objects_nest_on_reentry(tmp_path):
    cfg = {"rlprof": {"steps": [1], "save_path": str(tmp_path / "out"),
                      "roles": {"actor": {"ranks": [0], "discrete": True}}}}
    prof = rlprof.Profiler(cfg, role="actor", quiet=True)
    stage = rlprof.annotate("actor_update", role="actor")
    with prof.step(1):
        with stage:
            assert stage._stack == [prof]
            with stage:
                assert stage._stack == [prof, prof]
            assert stage._stack == [prof]
        assert stage._stack == []
    caps = prof.shutdown()
    assert len(caps) == 1
