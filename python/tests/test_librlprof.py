"""librlprof.so, the one runtime image (issue 30): it exports the C ABI of include/rlprof/rlprof.h
and nothing else; the Python extensions and the NVTX injection library link it (found beside
them through $ORIGIN); a process that uses all of them loads one copy and records once."""
from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import BUILD, ROOT

PKG = os.path.join(BUILD, "python", "rlprof") if BUILD else ""
LIB = os.path.join(PKG, "librlprof.so.0")

pytestmark = pytest.mark.skipif(not os.path.exists(LIB), reason="librlprof.so.0 not built")


def _dynamic(path: str) -> str:
    return subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True).stdout


def test_it_exports_the_c_abi_and_nothing_else():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                         check=True).stdout
    exported = {line.split()[-1] for line in out.splitlines() if line.strip()}
    header = open(os.path.join(ROOT, "include", "rlprof", "rlprof.h"), encoding="utf-8").read()
    declared = set(re.findall(r"\b(rlprof_[a-z_0-9]+)\s*\(", header)) | {"rlprof_hot"}
    inline = set(re.findall(r"static inline [a-z_0-9 ]+\b(rlprof_[a-z_0-9]+)\s*\(", header))
    assert exported, out
    assert all(s.startswith("rlprof_") for s in exported), sorted(exported)
    assert exported == declared - inline, (sorted(exported - declared), sorted(declared - inline - exported))
    assert "librlprof.so.0" in _dynamic(LIB)  # its soname


@pytest.mark.parametrize("pattern", ["_rlprof.*.so", "_torch_ops.*.so", "librlprof_nvtx.so"])
def test_the_extensions_and_the_injection_library_link_it_beside_them(pattern):
    found = glob.glob(os.path.join(PKG, pattern))
    if not found:
        pytest.skip(f"{pattern} not built here")
    d = _dynamic(found[0])
    assert "Shared library: [librlprof.so.0]" in d, d
    assert re.search(r"R(UN)?PATH.*\$ORIGIN", d), d
    # No runtime of their own: none of librlprof's C entry points is defined in them.
    out = subprocess.run(["nm", "-D", "--defined-only", found[0]], capture_output=True,
                         text=True, check=True).stdout
    assert "rlprof_session_open" not in out and "rlprof_emit" not in out, out


def test_one_process_loads_one_runtime(tmp_path):
    # The core extension, the torch extension and the NVTX injection library in one process:
    # one librlprof mapped, and the session's capture holds the torch operators and the marker.
    if not glob.glob(os.path.join(PKG, "_torch_ops.*.so")):
        pytest.skip("no torch extension here")
    nvtx = os.path.join(PKG, "librlprof_nvtx.so")
    code = textwrap.dedent(f"""
        import ctypes, json, os, sys
        import rlprof, torch, rlprof.torch
        if os.path.exists({nvtx!r}):
            ctypes.CDLL({nvtx!r})
        prof = rlprof.Profiler({{"rlprof": {{"steps": [1], "save_path": {str(tmp_path)!r},
                                "roles": {{"actor": {{"all_ranks": True, "contents": ["cpu", "ops"]}}}}}}}},
                               roles=["actor"], run_id="one", quiet=True)
        prof.start(1)
        with rlprof.annotate("marker"):
            torch.ones(4, 4).sum()
        prof.stop()
        prof.shutdown()
        maps = [l.split()[-1] for l in open("/proc/self/maps") if "librlprof.so" in l]
        print(json.dumps({{"libs": sorted(set(maps)), "captures": prof.captures()}}))
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(BUILD, "python"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    import json
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(out["libs"]) == 1 and out["libs"][0].endswith("librlprof.so.0"), out
    assert len(out["captures"]) == 1, out
    rlprof_cli = os.path.join(BUILD, "bin", "rlprof")
    if os.access(rlprof_cli, os.X_OK):
        s = subprocess.run([rlprof_cli, "summary", out["captures"][0], "--view", "ops"],
                           capture_output=True, text=True)
        assert "aten::" in s.stdout, s.stdout + s.stderr


def test_a_c_program_links_it(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    src = tmp_path / "main.c"
    src.write_text(textwrap.dedent("""
        #include <stdio.h>
        #include "rlprof/rlprof.h"
        int main(int argc, char** argv) {
          rlprof_session* s = NULL;
          char text[512];
          snprintf(text, sizeof text, "rlprof: {steps: [1], save_path: %s, roles: {c: {all_ranks: true}}}", argv[1]);
          rlprof_options o;
          rlprof_options_init(&o);
          o.roles = "c"; o.quiet = 1; o.install_signal_handlers = 0;
          if (rlprof_session_open_text(text, "<main.c>", NULL, 0, &o, &s) != RLPROF_OK) {
            fprintf(stderr, "%s\\n", rlprof_last_error());
            return 2;
          }
          rlprof_session_step_begin(s, 1);
          rlprof_mark("from C");
          rlprof_session_step_end(s);
          rlprof_session_info info = {sizeof info};
          rlprof_session_get_info(s, &info);
          rlprof_session_close(s);
          printf("%s %d %s\\n", rlprof_version(), info.selected, info.roles);
          return 0;
        }
    """))
    exe = tmp_path / "main"
    subprocess.run([cc, str(src), "-I", os.path.join(ROOT, "include"), "-L", PKG, "-l:librlprof.so.0",
                    f"-Wl,-rpath,{PKG}", "-o", str(exe)], check=True)
    r = subprocess.run([str(exe), str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[1:] == ["1", "c"], r.stdout
    assert glob.glob(str(tmp_path / "out" / "*" / "step1" / "*" / "*" / "manifest.json"))


def test_doctor_names_the_runtime_library_a_profiled_process_loads():
    cli = os.path.join(BUILD, "bin", "rlprof")
    if not os.access(cli, os.X_OK):
        pytest.skip("no rlprof command built")
    import json
    r = subprocess.run([cli, "doctor", "--json"], capture_output=True, text=True, timeout=120)
    rt = json.loads(r.stdout)["runtime"]
    assert rt["status"] == "on", rt
    assert os.path.realpath(rt["file"]) == os.path.realpath(LIB), rt
    assert rt["records"].startswith("8 of 8"), rt
    text = subprocess.run([cli, "doctor"], capture_output=True, text=True, timeout=120).stdout
    assert "runtime library (librlprof.so): on" in text, text
