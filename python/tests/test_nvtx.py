"""NVTX calls of other code in a Python process: with NVTX_INJECTION64_PATH = librlprof_nvtx.so,
`import rlprof` attaches the package's runtime to the library, so the NVTX ranges of a native
library (here through ctypes; torch.cuda.nvtx needs a CUDA build of torch) land in the
Profiler's capture, inside its windows only, and stage names stay ranges (the Profiler drives
the stages)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from conftest import BUILD, all_captures, events, manifest

SCRIPT = r"""
import ctypes, sys
import rlprof
lib = ctypes.CDLL(sys.argv[2])
lib.nvtx_plain_range.argtypes = [ctypes.c_char_p, ctypes.c_int]
lib.nvtx_plain_domain_mark.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
cfg = {"rlprof": {"steps": [2], "save_path": sys.argv[1], "roles": {"actor": {"ranks": [0]}}}}
prof = rlprof.Profiler(cfg, role="actor", quiet=True)
for step in (1, 2, 3):
    with prof.step(step):
        lib.nvtx_plain_range(b"update_actor", 100)
        lib.nvtx_plain_range(("execute_model %d" % step).encode(), 50)
        lib.nvtx_plain_domain_mark(b"vllm", b"scheduled")
print("\n".join(prof.shutdown()))
"""


def _libs():
    nvtx = os.path.join(BUILD, "python", "rlprof", "librlprof_nvtx.so")
    plain = os.path.join(BUILD, "src", "sources", "libnvtx_plain_lib.so")
    if not (os.path.isfile(nvtx) and os.path.isfile(plain)):
        pytest.skip("the NVTX injection library is not built")
    return nvtx, plain


def test_a_python_process_records_other_codes_nvtx_ranges_in_its_windows(tmp_path, rlprof_cli):
    nvtx, plain = _libs()
    env = dict(os.environ, NVTX_INJECTION64_PATH=nvtx)
    env.pop("RLPROF_CONFIG", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "out"), plain], env=env,
                         check=True, capture_output=True, text=True)
    caps = all_captures(str(tmp_path / "out"))
    assert len(caps) == 1, out.stdout + out.stderr
    names = {e["name"]: e for e in events(rlprof_cli, caps[0], str(tmp_path))}
    assert "execute_model 2" in names and "update_actor" in names, sorted(names)
    assert "execute_model 1" not in names and "execute_model 3" not in names
    assert names["update_actor"].get("cat") == "user"  # a range: the Profiler drives stages
    assert "scheduled" in names
    src = manifest(caps[0])["sources"]["nvtx"]
    assert src["standalone"] == 0 and src["ranges"] >= 2 and src["domains"] == 1, src
    ranges = json.loads(subprocess.run([rlprof_cli, "summary", "--view", "ranges", "--json", caps[0]],
                                       check=True, capture_output=True, text=True).stdout)
    table = ranges["inputs"][0]["tables"]["user_ranges"]
    cols = [c["name"] for c in table["columns"]]
    tracks = {r[cols.index("name")]: r[cols.index("track")] for r in table["rows"]}
    assert tracks["scheduled"] == "vllm"  # the domain's lane
    assert tracks["update_actor"] == ""


def test_torch_cuda_nvtx_needs_a_cuda_build_of_torch():
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None:
        pytest.skip("a CUDA build: torch.cuda.nvtx works and reaches the library like C++ NVTX")
    with pytest.raises(RuntimeError, match="NVTX functions not installed"):
        torch.cuda.nvtx.range_push("x")


def test_both_launchers_point_nvtx_at_the_library_and_keep_one_already_set(rlprof_cli, tmp_path):
    nvtx, _ = _libs()
    code = "import os; print(os.environ.get('NVTX_INJECTION64_PATH', '-'))"
    env = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
    env["PYTHONPATH"] = os.path.join(BUILD, "python")
    for launcher in ([rlprof_cli, "run"], [sys.executable, "-m", "rlprof", "run"]):
        r = subprocess.run([*launcher, "--", sys.executable, "-c", code], env=env,
                           capture_output=True, text=True, check=True)
        # (the last line, whole: the library's path may hold spaces)
        assert os.path.realpath(r.stdout.strip().splitlines()[-1]) == os.path.realpath(nvtx), (launcher, r.stdout)
        r = subprocess.run([*launcher, "--", sys.executable, "-c", code],
                           env=dict(env, NVTX_INJECTION64_PATH="/opt/nsys/libToolsInjection64.so"),
                           capture_output=True, text=True, check=True)
        assert r.stdout.strip().splitlines()[-1] == "/opt/nsys/libToolsInjection64.so"
