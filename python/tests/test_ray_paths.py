"""A Ray job whose Python lives under a path with a space and non-ASCII letters (".../ci run é
ü/..."), as a project cloned into such a folder has it (docs/reliability.md, "Paths"). Ray 2.60
starts every worker of a job or actor with a runtime_env through `bash -c "exec <python> ..."`,
the interpreter's path unquoted, so such a worker never starts (raylet.err: "bash: line 1:
/tmp/.../ci: No such file or directory"; the driver sees "Failed to startup worker"). rlprof's
Ray patch starts a local cluster from a shell-safe path of the same interpreter and environment
(rlprof.integrations.ray.shell_safe_python)."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from typing import Dict

import pytest

from conftest import BUILD, ROOT, ray_env

PKG = os.path.join(BUILD, "python") if BUILD else ""
INTEG_PY = os.path.join(ROOT, ".venv-integ", "bin", "python")
AWKWARD = "ci run é ü"

needs_build = pytest.mark.skipif(not BUILD, reason="rlprof is not built")


def _env(**extra: str) -> Dict[str, str]:
    return ray_env(PYTHONPATH=PKG, **extra)


def _venv_inside(folder: str, python: str) -> str:
    """A venv that physically lives in folder (its prefix has no shell-safe real path): the
    environment of the venv `python` runs in, made by links (no install). Returns its python."""
    real = os.path.realpath(os.path.dirname(os.path.dirname(python)))  # the venv's real prefix
    venv = os.path.join(folder, "venv")
    os.makedirs(os.path.join(venv, "bin"))
    with open(os.path.join(real, "pyvenv.cfg")) as f:
        cfg = f.read()
    with open(os.path.join(venv, "pyvenv.cfg"), "w") as f:
        f.write(cfg)
    os.symlink(os.path.realpath(python), os.path.join(venv, "bin", "python"))
    os.symlink(os.path.join(real, "lib"), os.path.join(venv, "lib"))
    return os.path.join(venv, "bin", "python")


def _is_venv(python: str) -> bool:
    return os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(python)), "pyvenv.cfg"))


SAFE_PYTHON = ("import json, subprocess, sys\n"
               "from rlprof.integrations.ray import shell_safe_python\n"
               "p = shell_safe_python()\n"
               "q = subprocess.run([p, '-c', 'import sys; print(sys.prefix)'], capture_output=True,"
               " text=True, check=True).stdout.strip() if p else None\n"
               "print(json.dumps([sys.prefix, p, q]))\n")


def _safe(path: str) -> bool:
    return shlex.quote(path) == path


@needs_build
@pytest.mark.skipif(not _is_venv(sys.executable) or not _safe(os.path.realpath(sys.prefix)),
                    reason="the tests' Python is not a venv with a shell-safe real path")
def test_shell_safe_python_keeps_the_interpreter_and_its_venv(tmp_path):
    folder = tmp_path / AWKWARD
    folder.mkdir()
    tmp = tmp_path / "tmp"   # where the link goes (TMPDIR), not the user's /tmp
    tmp.mkdir()
    if not _safe(str(tmp)):
        pytest.skip(f"pytest's temporary folder needs shell quoting: {tmp}")
    real = os.path.realpath(sys.prefix)
    # The venv reached through a link (scripts/setup's .venv): its real path, nothing made.
    os.symlink(real, folder / "linked")
    linked_py = str(folder / "linked" / "bin" / "python")
    prefix, safe, child = json.loads(subprocess.run(
        [linked_py, "-c", SAFE_PYTHON], env=_env(TMPDIR=str(tmp)), capture_output=True,
        text=True, check=True).stdout)
    assert prefix == str(folder / "linked") and safe == os.path.join(real, "bin", "python")
    assert child == real
    assert os.listdir(tmp) == []
    # The venv inside the folder: a link to it in TMPDIR/rlprof-<uid>, this user's only.
    inside_py = _venv_inside(str(folder), sys.executable)
    prefix, safe, child = json.loads(subprocess.run(
        [inside_py, "-c", SAFE_PYTHON], env=_env(TMPDIR=str(tmp)), capture_output=True,
        text=True, check=True).stdout)
    base = tmp / f"rlprof-{os.getuid()}"
    assert prefix == str(folder / "venv") and _safe(safe)
    assert os.path.dirname(os.path.dirname(os.path.dirname(safe))) == str(base)
    assert child == os.path.dirname(os.path.dirname(safe))   # the venv, by the link
    assert os.readlink(os.path.dirname(os.path.dirname(safe))) == prefix
    assert oct(os.stat(base).st_mode & 0o777) == oct(0o700)
    # The same venv again: the same link. A shell-safe Python: nothing to do.
    again = json.loads(subprocess.run([inside_py, "-c", SAFE_PYTHON], env=_env(TMPDIR=str(tmp)),
                                      capture_output=True, text=True, check=True).stdout)
    assert again[1] == safe and len(os.listdir(base)) == 1
    assert json.loads(subprocess.run([os.path.join(real, "bin", "python"), "-c", SAFE_PYTHON],
                                     env=_env(), capture_output=True, text=True,
                                     check=True).stdout)[1] is None
    # Accents alone: bash starts it as it is (tried with Ray 2.60), so it is left alone too.
    accents = tmp_path / "éü"
    accents.mkdir()
    os.symlink(real, accents / "linked")
    assert json.loads(subprocess.run([str(accents / "linked" / "bin" / "python"), "-c",
                                      SAFE_PYTHON], env=_env(TMPDIR=str(tmp)), capture_output=True,
                                     text=True, check=True).stdout)[1] is None


@needs_build
def test_a_shared_or_linked_link_folder_is_not_used(tmp_path):
    from rlprof.integrations import ray as rray
    own = tmp_path / "own"
    own.mkdir(mode=0o700)
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    os.symlink(own, tmp_path / "link")
    assert rray._own_private_dir(str(own))
    assert not rray._own_private_dir(str(shared))
    assert not rray._own_private_dir(str(tmp_path / "link"))
    assert not rray._own_private_dir(str(tmp_path / "missing"))


# The job: ray.init (patched by rlprof's bootstrap under `rlprof run`) and an actor with a
# runtime_env, as verl's RayWorkerGroup makes its workers.
JOB = """
import json, os, sys
import ray
ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)

@ray.remote
class Where:
    def where(self):
        return {"python": sys.executable, "mark": os.environ.get("MARK"),
                "hooks": "rlprof._hooks" in sys.modules, "run_id": os.environ.get("RLPROF_RUN_ID")}

w = Where.options(runtime_env={"env_vars": {"MARK": "é ü"}}).remote()
got = ray.get(w.where.remote(), timeout=float(os.environ["JOB_TIMEOUT"]))
ray.shutdown()
got["driver_python"] = sys.executable
got["driver_run_id"] = os.environ.get("RLPROF_RUN_ID")
print("JOB " + json.dumps(got))
"""


@needs_build
@pytest.mark.skipif(not os.access(INTEG_PY, os.X_OK) or not _is_venv(INTEG_PY),
                    reason=".venv-integ (ray) is not set up: scripts/setup")
def test_a_ray_job_under_a_path_with_a_space_and_accents_starts_its_workers(rlprof_cli, tmp_path):
    folder = tmp_path / AWKWARD
    folder.mkdir()
    python = _venv_inside(str(folder), INTEG_PY)
    job = folder / "job.py"
    job.write_text(JOB)
    # Workers that never start: ray.get times out (within the subprocess' own limit).
    r = subprocess.run([rlprof_cli, "run", "--", python, str(job)],
                       env=_env(RLPROF_ENABLE="1", JOB_TIMEOUT="400"), cwd=str(folder),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    got = json.loads(next(line[4:] for line in r.stdout.splitlines() if line.startswith("JOB ")))
    assert got["driver_python"] == python            # the driver's own view is unchanged
    assert got["mark"] == "é ü" and got["hooks"]      # the actor's runtime_env, and rlprof in it
    assert got["run_id"] and got["run_id"] == got["driver_run_id"]
    assert _safe(got["python"]) and got["python"] != python  # started by the shell-safe path
    assert os.path.samefile(got["python"], python)
    link = os.path.dirname(os.path.dirname(got["python"]))   # <tmp>/rlprof-<uid>/py-<hash>
    if os.path.islink(link) and os.readlink(link) == os.path.dirname(os.path.dirname(python)):
        os.unlink(link)   # this test's venv goes with tmp_path
