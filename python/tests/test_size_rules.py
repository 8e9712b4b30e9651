"""scripts/check_size.py: the size rules (functions ≤ 120 lines, .cc files ≤ 700 in src/ and
python/src) with a baseline that may only shrink. Checked on planted trees, and on this tree."""
from __future__ import annotations

import os
import subprocess
import sys

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "check_size.py")


def check(root, baseline_text=""):
    baseline = root / "baseline.txt"
    baseline.write_text(baseline_text)
    r = subprocess.run([sys.executable, SCRIPT, "--root", str(root), "--baseline", str(baseline)],
                       capture_output=True, text=True)
    return r.returncode, r.stdout


def function(name, body_lines, prefix="int"):
    body = "".join(f"  x += {i};  // {{ not a brace }}\n" for i in range(body_lines))
    return (f'{prefix} {name}(int x) {{\n  const char* s = "}}{{";\n'
            f'  auto f = [&](int y) {{ return y + 1; }};\n{body}  return f(x);\n}}\n')


def test_a_long_function_fails_and_names_itself(tmp_path):
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "x.cc").write_text(function("Short", 10) + function("Long", 130))
    (tmp_path / "src" / "a" / "x_test.cc").write_text(function("TestsAreExempt", 300))
    rc, out = check(tmp_path)
    assert rc == 1, out
    assert "src/a/x.cc Long: 135 lines, over 120" in out, out
    assert "Short" not in out and "TestsAreExempt" not in out


def test_the_baseline_is_a_ratchet(tmp_path):
    (tmp_path / "src" / "a").mkdir(parents=True)
    (tmp_path / "src" / "a" / "x.cc").write_text(function("Long", 130))
    assert check(tmp_path, "135 src/a/x.cc Long\n")[0] == 0
    rc, out = check(tmp_path, "134 src/a/x.cc Long\n")  # it grew
    assert rc == 1 and "was 134" in out, out
    (tmp_path / "src" / "a" / "x.cc").write_text(function("Long", 100))  # split: drop the line
    rc, out = check(tmp_path, "135 src/a/x.cc Long\n")
    assert rc == 1 and "now within 120 lines" in out, out


def test_a_long_file_fails(tmp_path):
    (tmp_path / "python" / "src").mkdir(parents=True)
    (tmp_path / "python" / "src" / "big.cc").write_text(
        "".join(function(f"F{i}", 40) for i in range(16)))
    rc, out = check(tmp_path)
    assert rc == 1 and "python/src/big.cc (file)" in out and "over 700" in out, out


def test_this_tree_keeps_the_rules():
    r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
