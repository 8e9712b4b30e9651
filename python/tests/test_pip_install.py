"""`pip install ./python`, out of tree, into a fresh virtual environment: the `rlprof` command
(the launcher in Python, every other subcommand the installed C++ command), `python -m rlprof`,
the bootstrap and the vLLM entry point. RLPROF_PREBUILT installs what this tree's build made
(setup.py; a full `pip install ./python` compiles the tree again, docs/integrations.md)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, all_captures


@pytest.mark.skipif(not BUILD or not os.access(os.path.join(BUILD, "bin", "rlprof"), os.X_OK),
                    reason="rlprof is not built")
def test_pip_install_into_a_fresh_venv(tmp_path):
    src = tmp_path / "src" / "python"
    shutil.copytree(os.path.join(ROOT, "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", "tests"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RLPROF_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["RLPROF_PREBUILT"] = BUILD
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q",
                        "--disable-pip-version-check", str(src)], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    del env["RLPROF_PREBUILT"]
    cmd, py = str(venv / "bin" / "rlprof"), str(venv / "bin" / "python")

    def run(*args: str) -> str:
        p = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=300,
                           cwd=str(tmp_path))
        assert p.returncode == 0, (args, p.stdout[-2000:], p.stderr[-2000:])
        return p.stdout

    assert run(cmd, "version").strip() == "rlprof 0.1.0"          # the installed C++ command
    assert run(py, "-m", "rlprof", "version").strip() == "rlprof 0.1.0"
    site = run(py, "-c", "import rlprof, os; print(os.path.dirname(rlprof.__file__))").strip()
    assert os.access(os.path.join(site, "_bin", "rlprof"), os.X_OK)
    # rlprof._analysis (rlprof.analysis without pandas, which this environment lacks) analyses.
    fixture = os.path.join(ROOT, "test", "data", "fixtures", "kineto", "hta_trace_compare_base_base.json.gz")
    code = ("import json, sys, rlprof._analysis as a; r = a.analyse([sys.argv[1]]); "
            "print(json.loads(r.summary_json())['inputs'][0]['format'])")
    assert run(py, "-c", code, fixture).strip() == "kineto"
    eps = run(py, "-c", "from importlib.metadata import entry_points; "
              "print([e.value for e in entry_points(group='vllm.general_plugins')])")
    assert "rlprof.integrations.vllm:register" in eps
    # rlprof-bootstrap.pth: in this environment, the variable alone installs the hooks.
    code = "import sys; print('rlprof._hooks' in sys.modules, 'rlprof' in sys.modules)"
    assert run(py, "-c", code).split() == ["False", "False"]
    env["RLPROF_ENABLE"] = "1"
    assert run(py, "-c", code).split() == ["True", "True"]
    del env["RLPROF_ENABLE"]
    # The launcher from the install: the project's Python (torch) runs the rollout example and
    # imports rlprof from the fresh environment through the bootstrap alone.
    save = tmp_path / "out"
    out = run(cmd, "run", "--config", os.path.join(ROOT, "examples", "rollout_server", "rollout.yaml"),
              f"rlprof.save_path={save}", "--", sys.executable,
              os.path.join(ROOT, "examples", "rollout_server", "serve.py"))
    assert "rollout_server: done" in out
    caps = all_captures(str(save))
    assert len(caps) == 2
    run_dir = os.path.dirname(os.path.dirname(os.path.dirname(caps[0])))
    summary = run(cmd, "summary", run_dir, "--view", "rl")             # analysis, installed
    assert "rollout_generate" in summary
