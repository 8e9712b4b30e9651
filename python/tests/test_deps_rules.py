"""scripts/check_deps.py: the stage rules, and python/src's internal includes held to a baseline
that may only shrink. Checked on planted trees and on this tree."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "check_deps.py")


def check(root, files, baseline=""):
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    (root / "scripts").mkdir(exist_ok=True)
    (root / "scripts" / "python_internal_includes.txt").write_text(baseline)
    r = subprocess.run([sys.executable, SCRIPT, str(root)], capture_output=True, text=True)
    return r.returncode, r.stdout


def test_a_stage_including_a_later_one_fails(tmp_path):
    rc, out = check(tmp_path, {"src/format/x.cc": '#include "src/runtime/session.h"\n'})
    assert rc == 1 and "src/format/x.cc:1: stage 'format' may not include" in out, out


def test_the_binding_may_include_public_headers_and_listed_internal_ones(tmp_path):
    files = {"python/src/module.cc": '#include "rlprof/rlprof.h"\n#include "src/runtime/session.h"\n'}
    rc, out = check(tmp_path, files, "# comment\npython/src/module.cc src/runtime/session.h\n")
    assert rc == 0, out
    rc, out = check(tmp_path, {**files, "python/src/new.cc": '#include "src/config/loader.h"\n'},
                    "python/src/module.cc src/runtime/session.h\n")
    assert rc == 1 and "python/src/new.cc:1: the Python binding may include only public headers" in out, out


def test_the_baseline_only_shrinks(tmp_path):
    rc, out = check(tmp_path, {"python/src/module.cc": '#include "rlprof/rlprof.h"\n'},
                    "python/src/module.cc src/runtime/session.h\n")
    assert rc == 1 and "'python/src/module.cc src/runtime/session.h' is gone" in out, out


def test_this_tree_passes():
    r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout


def test_the_bindings_include_public_headers_only():
    # Issue 30: the runtime's binding and the torch sources reach the runtime through
    # include/rlprof/rlprof.h, rlprof._analysis the analysis library through
    # include/rlprof/report/run_api.h; the baseline is empty.
    listed = [l.split()[0] for l in open(os.path.join(ROOT, "scripts", "python_internal_includes.txt"))
              if l.strip() and not l.startswith("#")]
    assert listed == [], listed


def test_a_torch_source_reaching_into_the_runtime_fails(tmp_path):
    files = {"python/src/torch_module.cc": '#include "src/sources/torch_ops.h"\n',
             "src/sources/torch_ops.h": '#include "rlprof/rlprof.h"\n'}
    rc, out = check(tmp_path, files)
    assert rc == 0, out
    files["src/sources/torch_ops.cc"] = '#include "src/runtime/thread_buffer.h"\n'
    rc, out = check(tmp_path, files)
    assert rc == 1 and "src/sources/torch_ops.cc:1: the torch sources reach the runtime through" in out, out
