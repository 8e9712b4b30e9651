"""`pip install ./python`, out of tree, into a fresh virtual environment: the `rlprof` command
(the launcher in Python, every other subcommand the installed C++ command), `python -m rlprof`,
the bootstrap and the vLLM entry point. RLPROF_PREBUILT installs what this tree's build made
(setup.py; a full `pip install ./python` compiles the tree again, docs/integrations.md).
And the self-contained wheel of scripts/wheel (auditwheel-repaired), installed alone."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import BUILD, ROOT, all_captures

with open(os.path.join(ROOT, "CMakeLists.txt")) as _f:  # the version's one source
    VERSION = re.search(r"project\(rlprof\s+VERSION\s+([0-9.]+)", _f.read()).group(1)


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

    assert run(cmd, "version").strip() == f"rlprof {VERSION}"          # the installed C++ command
    assert run(py, "-m", "rlprof", "version").strip() == f"rlprof {VERSION}"
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


# What an ELF file of the installed wheel may take from outside it: the C/C++ runtime, and for
# the operator hook PyTorch's libraries (from the torch the user imports; "not found" here).
_RUNTIME = re.compile(r"(linux-vdso|ld-linux[-\w]*|libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so")
_TORCH = re.compile(r"(libtorch_cpu|libc10|libgomp)\.so")


def _elf_files(top: str) -> list:
    found = []
    for d, _, files in os.walk(top):
        for n in files:
            p = os.path.join(d, n)
            if not os.path.islink(p):
                with open(p, "rb") as f:
                    if f.read(4) == b"\x7fELF":
                        found.append(p)
    return sorted(found)


def _ldd(path: str) -> list:
    """[(soname or path as ldd names it, resolved path or None)]."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, (path, out.stdout, out.stderr)
    deps = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if "=>" in line:
            name, _, where = line.partition("=>")
            where = where.strip()
            deps.append((name.strip(), None if where.startswith("not found") else where.split(" (")[0]))
        elif line:
            first = line.split(" (")[0]
            deps.append((os.path.basename(first), first if first.startswith("/") else None))
    return deps


def _built() -> bool:
    return bool(BUILD and glob.glob(os.path.join(BUILD, "python", "rlprof", "_rlprof*.so"))
                and os.access(os.path.join(BUILD, "bin", "rlprof"), os.X_OK))


@pytest.mark.skipif(not _built(), reason="rlprof is not built (no python/rlprof/_rlprof*.so and "
                    "bin/rlprof in RLPROF_BUILD_DIR or build/): scripts/wheel packages a build")
@pytest.mark.skipif(not sys.platform.startswith("linux") or not shutil.which("ldd"),
                    reason="the wheel is a Linux one, checked with ldd")
def test_repaired_wheel_is_self_contained(tmp_path):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RLPROF_") and k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    r = subprocess.run(["bash", os.path.join(ROOT, "scripts", "wheel")],
                       env={**env, "RLPROF_PREBUILT": BUILD, "RLPROF_WHEEL_OUT": str(tmp_path / "out")},
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    whl = r.stdout.strip().splitlines()[-1]
    assert os.path.dirname(whl) == str(tmp_path / "out" / "wheelhouse") and os.path.isfile(whl), r.stdout
    assert re.fullmatch(r"rlprof-0\.1\.0-cp\d+-cp\d+-manylinux_\d+_\d+_x86_64\.whl", os.path.basename(whl))

    # A fresh venv from the system's Python, the wheel alone in it.
    venv = tmp_path / "venv"
    subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True, timeout=300)
    py, cmd = str(venv / "bin" / "python"), str(venv / "bin" / "rlprof")
    p = subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-index",
                        "--no-deps", whl], env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

    def run(*args: str) -> str:
        q = subprocess.run(list(args), env=env, capture_output=True, text=True, timeout=120,
                           cwd=str(tmp_path))
        assert q.returncode == 0, (args, q.stdout[-2000:], q.stderr[-2000:])
        return q.stdout

    site = run(py, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])").strip()
    # (a) Every ELF file of the package (found by its magic bytes): ldd resolves nothing outside
    # the venv but the C/C++ runtime, and torch's libraries for the operator hook.
    elfs = _elf_files(os.path.join(site, "rlprof")) + _elf_files(os.path.join(site, "rlprof.libs"))
    names = [os.path.relpath(e, site) for e in elfs]
    for want in ("rlprof/_rlprof", "rlprof/_analysis", "rlprof/librlprof.so.0", "rlprof/librlprof_nvtx.so", "rlprof/_bin/rlprof",
                 "rlprof.libs/libyaml-cpp", "rlprof.libs/libzstd", "rlprof.libs/libz-"):
        assert any(n.startswith(want) for n in names), (want, names)
    if glob.glob(os.path.join(BUILD, "python", "rlprof", "_torch_ops*.so")):
        assert any(n.startswith("rlprof/_torch_ops") for n in names), names
    top = os.path.realpath(str(venv))
    outside, runtime = [], set()
    for e in elfs:
        hook = os.path.basename(e).startswith("_torch_ops")
        for name, where in _ldd(e):
            if where and os.path.realpath(where).startswith(top + os.sep):
                continue
            if _RUNTIME.match(name):
                if where:
                    runtime.add(where)
                continue
            if hook and _TORCH.match(name):
                continue
            outside.append(f"{os.path.relpath(e, site)}: {name} => {where or 'not found'}")
    assert not outside, "\n".join(outside)

    # (b) The console script: the launcher's --version and the C++ command's version.
    assert run(cmd, "--version").strip() == f"rlprof {VERSION}"
    assert run(cmd, "version").strip() == f"rlprof {VERSION}"
    # (c) The package and its extensions import with the standard library alone, and the
    # metadata declares numpy and pandas (rlprof.analysis) under the `analysis` extra only.
    code = ("import sys, rlprof, rlprof._rlprof, rlprof._analysis, rlprof.profiler, rlprof.launch, "
            "rlprof.integrations.vllm, rlprof.integrations.verl, rlprof.integrations.ray; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas', 'yaml', 'torch')))")
    assert run(py, "-c", code).strip() == "[]"
    reqs = run(py, "-c", "import importlib.metadata as m; print('\\n'.join(m.requires('rlprof') or []))").split("\n")
    reqs = [q.replace("'", '"') for q in reqs if q.strip()]
    assert all('extra == "analysis"' in q for q in reqs), reqs
    assert {re.match(r"[A-Za-z0-9_.-]+", q).group(0).lower() for q in reqs} == {"numpy", "pandas"}, reqs

    # (d) Where this test may make a mount namespace (root), run the wheel with the system's
    # library directory replaced by one holding only the C/C++ runtime (and for Python, its own
    # libraries): nothing of the build machine's libraries (yaml-cpp, zstd, zlib, …) is there.
    if os.geteuid() != 0 or not shutil.which("unshare") or \
            subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        return
    libdir = os.path.dirname(os.path.realpath(next(w for w in runtime if os.path.basename(w).startswith("libc.so"))))
    python_own = {w for _, w in _ldd(os.path.realpath(py)) if w}

    def only(libs: set, name: str) -> str:
        d = tmp_path / name
        d.mkdir()
        for w in libs:
            shutil.copyfile(w, d / os.path.basename(w))     # the name it is loaded by
            os.chmod(d / os.path.basename(w), 0o755)
        return str(d)

    def isolated(lib: str, *args: str) -> str:
        return run("unshare", "-m", "sh", "-c", 'mount --bind "$1" "$2" && shift 2 && exec "$@"',
                   "sh", lib, libdir, *args)

    fixture = os.path.join(ROOT, "test", "data", "fixtures", "kineto", "hta_trace_compare_base_base.json.gz")
    assert isolated(only(runtime, "runtime"), os.path.join(site, "rlprof", "_bin", "rlprof"),
                    "version").strip() == f"rlprof {VERSION}"
    assert "kineto" in isolated(os.path.join(tmp_path, "runtime"), os.path.join(site, "rlprof", "_bin", "rlprof"),
                                "summary", fixture)              # gzip: the grafted zlib
    code = ("import json, sys, rlprof._analysis as a; r = a.analyse([sys.argv[1]]); "
            "print(json.loads(r.summary_json())['inputs'][0]['format'])")
    assert isolated(only(runtime | python_own, "runtime+python"), py, "-c", code, fixture).strip() == "kineto"
