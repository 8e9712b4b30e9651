"""scripts/check_contracts.py: one manifest struct and codec, one version, one export-format
enum, one SQLite writer. Checked on planted trees (each second definition is caught) and on
this tree."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = os.path.join(ROOT, "scripts", "check_contracts.py")

CLEAN = {
    "CMakeLists.txt": "project(rlprof VERSION 1.2.3 LANGUAGES C CXX)\n",
    "src/format/manifest.h": "struct Manifest {\n  int rank;\n};\n",
    "src/format/manifest.cc": 'auto k = "monotonic_anchor_ns";\n',
    "include/rlprof/format/export_format.h": "enum class ExportFormat { kChromeJson };\n",
    "src/format/sqlite_file.cc": "int f = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;\n",
    "src/base/version.cc": "const char* Version() { return RLPROF_VERSION; }\n",
    "src/cli/x_test.cc": 'struct Manifest {}; auto v = "9.9.9"; int f = SQLITE_OPEN_CREATE;\n',
}


def plant(root, extra):
    for rel, text in {**CLEAN, **extra}.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    r = subprocess.run([sys.executable, SCRIPT, "--root", str(root)], capture_output=True, text=True)
    return r.returncode, r.stdout


def test_a_clean_tree_passes_and_tests_are_exempt(tmp_path):
    rc, out = plant(tmp_path, {})
    assert rc == 0, out
    assert "0 violations" in out


@pytest.mark.parametrize("rel,text,expect", [
    ("src/runtime/writer.h", "struct Manifest {\n};\n", "src/runtime/writer.h:1: the manifest struct"),
    ("src/runtime/writer.cc", 'j["monotonic_anchor_ns"] = 1;\n', "a manifest key spelled outside its codec"),
    ("src/config/plan.h", "enum class ExportFormat { kText };\n", "the export-format enum"),
    ("src/analysis/tables/table_io.cc", "sqlite3_open_v2(p, &db, SQLITE_OPEN_CREATE, 0);\n", "a SQLite database created"),
    ("python/src/module.cc", 'm.attr("__version__") = "0.1.0";\n', "python/src/module.cc:1: a version literal"),
    ("src/cli/version_command.cc", "puts(RLPROF_VERSION);\n", "the version compiled in"),
])
def test_a_second_definition_fails_and_says_where(tmp_path, rel, text, expect):
    rc, out = plant(tmp_path, {rel: text})
    assert rc == 1, out
    assert expect in out, out


def test_the_enum_defined_nowhere_fails_too(tmp_path):
    rc, out = plant(tmp_path, {"include/rlprof/format/export_format.h": "// gone\n"})
    assert rc == 1 and "the export-format enum: defined 0 times, want 1" in out, out


def test_the_version_must_come_from_project_version(tmp_path):
    rc, out = plant(tmp_path, {"CMakeLists.txt": "project(rlprof LANGUAGES C CXX)\n"})
    assert rc == 1 and "the version's one source" in out, out


def test_this_tree_keeps_each_contract_in_one_place():
    r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout
