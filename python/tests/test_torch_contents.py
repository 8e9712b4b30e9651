"""Torch contents module / stack / memory (issue 18): each is in the capture exactly when the
config selects it, with what it names (module paths, user frames, allocations with their
operator), the hooks exist only inside windows, and what cannot be honoured here is named."""
from __future__ import annotations

import json
import subprocess
import warnings

import pytest

import rlprof
from conftest import events, manifest

torch = pytest.importorskip("torch")
if rlprof.HAVE_TORCH_OPS:
    import rlprof.torch  # noqa: E402,F401
pytestmark = pytest.mark.skipif(not rlprof.HAVE_TORCH_OPS, reason="built without libtorch")

nn = torch.nn


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.Linear(16, 16)
        self.mlp = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16))

    def forward(self, x):
        return x + self.mlp(self.attn(x))


class TinyLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def cfg(tmp_path, contents, steps=(2,)):
    return {"rlprof": {"steps": list(steps), "save_path": str(tmp_path / "out"),
                       "roles": {"actor": {"ranks": [0], "contents": list(contents)}}}}


def global_hooks() -> int:
    mm = torch.nn.modules.module
    return len(mm._global_forward_pre_hooks) + len(mm._global_forward_hooks)


def train(prof, model, opt, steps=(1, 2, 3)):
    """A GRPO-like loop: a no-grad rollout, then an update with forward, backward and step."""
    hooks_inside = {}
    for step in steps:
        with prof.step(step):
            with rlprof.annotate("rollout_generate", role="rollout"):
                with torch.no_grad():
                    model(torch.randn(4, 16))
            with rlprof.annotate("actor_update", role="actor"):
                hooks_inside[step] = global_hooks()
                loss = model(torch.randn(8, 16)).pow(2).mean()  # the user's line
                loss.backward()
                opt.step()
                opt.zero_grad()
    return hooks_inside


ALL = ["cpu", "ops", "memory", "stack", "module"]


@pytest.mark.parametrize("contents", [["cpu", "ops"], ["cpu", "ops", "module"],
                                      ["cpu", "ops", "stack"], ["cpu", "memory"], ALL])
def test_each_content_is_in_the_capture_exactly_when_selected(tmp_path, rlprof_cli, contents):
    torch.manual_seed(0)
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    base_hooks = global_hooks()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        prof = rlprof.Profiler(cfg(tmp_path, contents), role="actor", quiet=True)
        inside = train(prof, model, opt)
    caps = prof.shutdown()
    assert len(caps) == 1
    evs = events(rlprof_cli, caps[0], str(tmp_path))
    cats = {e["cat"] for e in evs}
    m = manifest(caps[0])
    # module: ranges named by path, hooks only while the window (step 2) is open.
    assert ("module" in cats) == ("module" in contents)
    assert global_hooks() == base_hooks
    if "module" in contents:
        assert inside == {1: base_hooks, 2: base_hooks + 2, 3: base_hooks}
        paths = {e["name"] for e in evs if e["cat"] == "module"}
        assert {"TinyLM", "TinyLM.layers.0", "TinyLM.layers.1.attn",
                "TinyLM.layers.1.mlp.2"} <= paths
        attn = [e for e in evs if e["name"] == "TinyLM.layers.0.attn"]
        assert len(attn) == 2 and attn[0]["args"] == {"depth": 2, "class": "Linear"}
        assert m["sources"]["torch_module"]["modules"] == 2 * 13
    else:
        assert inside == {1: base_hooks, 2: base_hooks, 3: base_hooks}
    # stack: outermost operators carry their Python frames, with this file's lines.
    assert ("stack" in cats) == ("stack" in contents)
    if "stack" in contents:
        stacks = [e["name"] for e in evs if e["cat"] == "stack"]
        assert any("test_torch_contents.py" in s and ":train" in s for s in stacks)
        assert all(len(s.split("\n")) <= 32 for s in stacks)
        assert m["sources"]["torch_ops"]["stacks"] == len(stacks)
    # memory: allocator events with size, device and operator; per-device counters.
    assert ("allocation" in cats) == ("memory" in contents)
    if "memory" in contents:
        allocs = [e for e in evs if e["cat"] == "allocation"]
        assert {e["name"] for e in allocs} == {"cpu"}
        assert any(e["args"]["bytes"] > 0 for e in allocs)
        assert any(e["args"]["bytes"] < 0 for e in allocs)
        assert any(e["args"].get("operator", "").startswith("aten::") for e in allocs)
        counters = {e["name"] for e in evs if e["cat"] == "memory"}
        assert "allocated_bytes cpu" in counters
        assert m["sources"]["torch_memory"]["allocator_events"] == len(allocs)
        # No CUDA here: named in the manifest (and as a capture event).
        if not torch.cuda.is_available():
            assert m["sources"]["torch_memory"]["not_honoured_device_memory_no_cuda"] == 1
            assert any(e["cat"] == "capture" and e["name"].startswith("not honoured: memory")
                       for e in evs)
    else:
        assert "torch_memory" not in m.get("sources", {})


def test_views_on_a_capture_with_every_content(tmp_path, rlprof_cli):
    model = TinyLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        prof = rlprof.Profiler(cfg(tmp_path, ALL), role="actor", quiet=True)
        train(prof, model, opt)
    caps = prof.shutdown()

    def view(name):
        out = subprocess.run([rlprof_cli, "summary", caps[0], "--view", name, "--json"],
                             check=True, capture_output=True, text=True).stdout
        t = json.loads(out)["inputs"][0]["tables"]
        table = next(iter(t.values()))
        cols = [c["name"] for c in table["columns"]]
        return [dict(zip(cols, r)) for r in table["rows"]]

    modules = {r["module"]: r for r in view("module")}
    assert modules["TinyLM.layers.0.mlp.1"]["class"] == "ReLU"
    assert modules["TinyLM"]["calls"] == 2  # rollout and update forwards
    assert modules["TinyLM.layers.0.attn"]["ops"] >= 2
    assert all(r["self"] <= r["total"] + 1e-6 for r in modules.values())
    frames = view("stack")
    assert any("test_torch_contents.py" in r["frame"] and ":train" in r["frame"] for r in frames)
    peaks = view("memory")
    update = [r for r in peaks if r["stage"] == "actor_update" and r["series"] == "allocated_bytes cpu"]
    assert len(update) == 1 and update[0]["peak"] >= update[0]["at_start"]
    assert update[0]["allocations"] > 0 and update[0]["allocated"] > 0


def test_not_honoured_is_named_once(tmp_path):
    if torch.cuda.is_available():
        pytest.skip("CUDA present: device memory is honoured")
    model = TinyLM()
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        prof = rlprof.Profiler(cfg(tmp_path, ["cpu", "memory"], steps=[1, 2]), role="actor",
                               quiet=True)
        rlprof.torch._warned.clear()
        for step in (1, 2, 3):
            with prof.step(step):
                model(torch.randn(2, 16))
        prof.shutdown()
    named = [x for x in w if "memory: no CUDA device" in str(x.message)]
    assert len(named) == 1
    assert rlprof.torch.not_honoured(8) and not rlprof.torch.not_honoured(1)


def test_memory_reporter_leaves_a_running_torch_profiler_alone(tmp_path):
    model = TinyLM()
    prof = rlprof.Profiler(cfg(tmp_path, ["cpu", "memory"], steps=[1]), role="actor", quiet=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with torch.profiler.profile(profile_memory=True) as tp:
            with prof.step(1):
                model(torch.randn(2, 16))
    caps = prof.shutdown()
    assert rlprof.torch.stats()["memory_conflict"]
    assert manifest(caps[0])["sources"]["torch_memory"][
        "not_honoured_torch_profiler_holds_allocator"] == 1
    # torch.profiler still got its memory events.
    assert any(e.name == "[memory]" for e in tp.events())


def test_memory_snapshots_go_into_the_open_capture(tmp_path):
    """The directory a CUDA memory snapshot is written to: the capture of the latest window."""
    prof = rlprof.Profiler(cfg(tmp_path, ["cpu"], steps=[2, 3]), role="actor", quiet=True)
    seen = {}
    for step in (1, 2, 3):
        with prof.step(step):
            pass
        prof.flush()
        seen[step] = rlprof.torch._latest_capture_dir()
    caps = prof.shutdown()
    assert seen[1] is None
    assert [seen[2], seen[3]] == caps
    if not torch.cuda.is_available():
        assert rlprof.torch.memory_snapshot() is None


def test_memory_in_a_program_that_imports_torch_after_the_profiler(tmp_path, rlprof_cli):
    """The allocator source loads at the first step after torch is imported."""
    import textwrap
    script = textwrap.dedent(f"""
        import sys, warnings
        warnings.simplefilter("ignore")
        import rlprof
        prof = rlprof.Profiler({{"rlprof": {{"steps": [1], "save_path": {str(tmp_path / "out")!r},
                                "roles": {{"actor": {{"ranks": [0], "contents": ["cpu", "memory"]}}}}}}}},
                               role="actor", quiet=True)
        assert "torch" not in sys.modules
        import torch
        with prof.step(1):
            torch.ones(1000)
        print(prof.shutdown()[0])
    """)
    import sys
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                         text=True).stdout.strip().splitlines()[-1]
    evs = events(rlprof_cli, out, str(tmp_path))
    assert any(e["cat"] == "allocation" and e["args"]["bytes"] == 4000 for e in evs)
