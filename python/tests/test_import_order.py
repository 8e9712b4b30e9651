"""rlprof's extensions share nothing with the other extensions of a process (docs/python.md,
"Install"): importing rlprof before or after torch, and making a Profiler after torch, works.

On the first GPU machine (2026-11-26) the compiler linked libstdc++ statically into the
extensions and `_rlprof` exported that copy: `import rlprof, torch` aborted in torch's import
(free(): invalid pointer) and a Profiler made after torch segfaulted. The symbol checks below
fail if the extensions export what their static archives brought in again."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT

PKG = os.path.join(BUILD, "python", "rlprof")
CONFIG = os.path.join(ROOT, "test", "gpu", "grpo_device.yaml")


def run(code: str, tmp_path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.path.join(BUILD, "python"), "PYTHONFAULTHANDLER": "1"}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(tmp_path), timeout=300)


@pytest.mark.parametrize("code", [
    "import rlprof, torch; torch.ones(3).sum()",
    "import torch, rlprof; torch.ones(3).sum()",
])
def test_rlprof_and_torch_import_in_either_order(code, tmp_path):
    p = run(code + "; print('ok')", tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


def test_a_profiler_made_after_torch_captures(tmp_path):
    code = f"""
import torch, rlprof
p = rlprof.Profiler({CONFIG!r}, roles=["actor"], quiet=True,
                    overrides=["actor_rollout_ref.actor.profiler.tool_config.rlprof.contents=[cpu,ops]"])
for step in range(1, 4):
    with p.step(step):
        (torch.ones(64, 64) @ torch.ones(64, 64)).sum()
print(len(p.shutdown()))
"""
    p = run(code, tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.strip() == "2"  # steps 2 and 3


def exported(module: str) -> list:
    out = subprocess.run(["nm", "-D", "-C", "--defined-only", module], capture_output=True, text=True,
                         check=True).stdout
    return [line.split(" ", 2)[2] for line in out.splitlines() if line.count(" ") >= 2]


@pytest.mark.skipif(shutil.which("nm") is None, reason="needs binutils' nm")
def test_the_extensions_export_only_their_init():
    modules = glob.glob(os.path.join(PKG, "_*.so"))
    assert any(os.path.basename(m).startswith("_rlprof.") for m in modules), modules
    for m in modules:
        names = exported(m)
        assert any(n.startswith("PyInit_") for n in names), m
        # rlprof's stages (static archives) and, with a statically linked libstdc++, the C++
        # runtime: none of it may be visible to the rest of the process.
        leaked = [n for n in names if n.startswith(("rlprof::", "YAML::", "std::locale", "__cxa_",
                                                    "operator delete", "operator new"))]
        assert not leaked, f"{os.path.basename(m)} exports {leaked[:10]}"
        # Nor anything of their own but the module's init (python/extension.map): weak template
        # instances, typeinfo and GNU-unique statics would bind across libraries.
        others = [n for n in names if not n.startswith("PyInit_")]
        assert not others, f"{os.path.basename(m)} exports {len(others)} more: {others[:10]}"
