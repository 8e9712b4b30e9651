"""Torch operator capture: operators inside windows only, in the right stage, with shapes."""
from __future__ import annotations

import os

import pytest

import rlprof
from conftest import capture_key, events, manifest

torch = pytest.importorskip("torch")
if rlprof.HAVE_TORCH_OPS:
    import rlprof.torch  # noqa: E402,F401
pytestmark = pytest.mark.skipif(not rlprof.HAVE_TORCH_OPS, reason="built without libtorch")


def cfg(tmp_path, contents, steps=(2,), discrete=False):
    return {"rlprof": {"steps": list(steps), "save_path": str(tmp_path / "out"),
                       "roles": {"actor": {"ranks": [0], "discrete": discrete,
                                           "contents": list(contents)}}}}


def work(x):
    y = torch.mm(x, x).relu().sum()
    y.backward()


def test_operators_land_inside_their_stage_and_only_in_windows(tmp_path, rlprof_cli):
    x = torch.randn(8, 8, requires_grad=True)
    before = rlprof.torch.stats()["ops"] if rlprof._rlprof._torch_ops_loaded() else 0
    prof = rlprof.Profiler(cfg(tmp_path, ["cpu", "ops"]), role="actor", quiet=True)
    for step in (1, 2, 3):
        with prof.step(step):
            with rlprof.annotate("rollout_generate", role="rollout"):
                torch.sub(x, 1)
            with rlprof.annotate("actor_update", role="actor"):
                work(x)
    caps = prof.shutdown()
    stats = rlprof.torch.stats()
    assert not stats["enabled"]  # off outside windows
    assert [capture_key(c) for c in caps] == [(2, "e2e", 0)]
    evs = events(rlprof_cli, caps[0], str(tmp_path))
    stages = {e["name"]: e for e in evs if e["cat"] == "stage"}
    ops = [e for e in evs if e["cat"] == "operator"]
    # Step 2 only: one sub in rollout, mm/relu/sum + backward in actor_update.
    assert stats["ops"] - before == len(ops)
    def inside(e, s):
        return s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] + 1e-3
    mm = [e for e in ops if e["name"] == "aten::mm"]
    assert len(mm) >= 3  # forward + two in MmBackward0
    assert all(inside(e, stages["actor_update"]) for e in mm)
    sub = [e for e in ops if e["name"] == "aten::sub"]
    assert len(sub) == 1 and inside(sub[0], stages["rollout_generate"])
    assert any(e["name"] == "MmBackward0" for e in ops)
    assert any(e["args"].get("seq") is not None for e in mm)
    assert "shapes" not in mm[0]["args"]


def test_shapes_and_memory_when_asked(tmp_path, rlprof_cli):
    x = torch.randn(4, 6, requires_grad=True)
    prof = rlprof.Profiler(cfg(tmp_path, ["cpu", "shapes", "memory"], steps=[1], discrete=True),
                           role="actor", quiet=True)
    assert set(prof.contents) >= {"ops", "shapes", "memory"}
    with prof.step(1):
        with rlprof.annotate("actor_update", role="actor"):
            torch.mm(x, x.t())
    caps = prof.shutdown()
    evs = events(rlprof_cli, caps[0], str(tmp_path))
    mm = [e for e in evs if e["name"] == "aten::mm"][0]
    assert mm["args"]["shapes"] == "[[4, 6], [6, 4]]"
    mem = [e for e in evs if e["cat"] == "memory" and e["name"] == "rss_bytes"]
    assert len(mem) >= 2 and all(e["args"]["value"] > 1e6 for e in mem)


def test_import_rlprof_does_not_load_libtorch_until_operators_are_asked_for(tmp_path):
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import sys
        import rlprof
        def libtorch():
            with open("/proc/self/maps") as f:
                return "libtorch" in f.read()
        assert "torch" not in sys.modules and not libtorch(), "import rlprof loaded torch"
        cfg = {{"rlprof": {{"steps": [1], "save_path": {str(tmp_path)!r},
                          "roles": {{"actor": {{"ranks": [0], "contents": ["cpu"]}}}}}}}}
        rlprof.Profiler(cfg, role="actor", quiet=True).shutdown()
        assert not libtorch(), "a Profiler without ops loaded libtorch"
        cfg["rlprof"]["roles"]["actor"]["contents"] = ["cpu", "ops"]
        rlprof.Profiler(cfg, role="actor", quiet=True).shutdown()
        assert libtorch() and rlprof._rlprof._torch_ops_loaded()
        assert rlprof.torch.stats()["bound"]
    """)
    subprocess.run([sys.executable, "-c", script], check=True, env=dict(os.environ))


def test_user_record_function_scopes_are_recorded(tmp_path, rlprof_cli):
    prof = rlprof.Profiler(cfg(tmp_path, ["ops"], steps=[1]), role="actor", quiet=True)
    with prof.step(1):
        for i in range(3):
            with torch.autograd.profiler.record_function(f"scope_{i}"):
                torch.ones(2)
    caps = prof.shutdown()
    names = [e["name"] for e in events(rlprof_cli, caps[0], str(tmp_path))
             if e["cat"] == "operator"]
    assert [n for n in names if n.startswith("scope_")] == ["scope_0", "scope_1", "scope_2"]


def test_ops_sampling_records_a_share_of_the_calls_and_analysis_scales_it(tmp_path, rlprof_cli):
    """`ops_sampling: 0.1`: torch draws each call (its sampled RecordFunction callbacks), the
    manifest says the share, and `rlprof analyse` turns the sample into estimates (× 10)."""
    import csv
    import subprocess
    x = torch.randn(4, 4)
    n = 5000

    def run(share, out):
        c = cfg(out, ["cpu", "ops"], steps=[1])
        if share is not None:
            c["rlprof"]["roles"]["actor"]["ops_sampling"] = share
        prof = rlprof.Profiler(c, role="actor", quiet=True)
        with prof.step(1):
            for _ in range(n):
                torch.neg(x)
        caps = prof.shutdown()
        assert len(caps) == 1
        return caps[0]

    sampled = run(0.1, tmp_path / "sampled")
    assert manifest(sampled)["ops_sampling"] == 0.1
    negs = [e for e in events(rlprof_cli, sampled, str(tmp_path)) if e["name"] == "aten::neg"]
    # Binomial(5000, 0.1): 500 ± 21; far from every call and from none.
    assert 350 < len(negs) < 650, len(negs)
    out = tmp_path / "analysis"
    res = subprocess.run([rlprof_cli, "analyse", sampled, "-o", str(out)], capture_output=True,
                         text=True)
    assert res.returncode == 0, res.stderr
    rows = [r for r in csv.DictReader(open(next(out.rglob("op_statistic.csv"))))
            if r["type"] == "host" and r["name"] == "aten::neg"]
    assert len(rows) == 1 and int(rows[0]["count"]) == 10 * len(negs)
    assert "operators_sampled" in res.stdout + res.stderr + "".join(
        p.read_text() for p in out.rglob("*.json"))
    # The same process, a window without sampling: every call again (the callback re-registered).
    full = run(None, tmp_path / "full")
    assert "ops_sampling" not in manifest(full)
    assert len([e for e in events(rlprof_cli, full, str(tmp_path)) if e["name"] == "aten::neg"]) == n
