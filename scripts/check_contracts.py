#!/usr/bin/python3
"""Each on-disk contract is defined in one place (docs/architecture.md, "One contract per format").

Checked over the product's sources (src/, include/, python/src, tools/, examples/; tests and
fixtures excepted):
  - the manifest: one `struct Manifest`, and its JSON keys spelled only by its codec
    (src/format/manifest.cc);
  - the version: typed only in CMakeLists.txt's project(VERSION); compiled in once
    (src/base/version.cc, from src/base/CMakeLists.txt); no other "x.y.z" literal, no other
    RLPROF_VERSION;
  - the export format: one `enum class ExportFormat`;
  - the SQLite writer: only src/format/sqlite_file.cc creates a database (SQLITE_OPEN_CREATE).
Exit 0 when clean, 1 with one line per violation otherwise.
"""
import argparse
import os
import re
import sys

SOURCE_DIRS = ("src", "include", "python/src", "tools", "examples")
EXTS = (".h", ".hpp", ".cc", ".cpp", ".c")
# A fixture may say which version made it (it is data, not the build's version).
VERSION_FIXTURES = {"src/format/sample_capture.cc"}
# Keys only a manifest has (a writer or reader of manifest.json that spells one is a second codec).
MANIFEST_KEYS = ("monotonic_anchor_ns", "offset_to_rank0_ns", "realtime_anchor_ns", "offset_measured",
                 "dropped_budget", "dropped_buffer_full", "dropped_write_error", "open_ns")

RULES = [
    # (what, regex over a file's text, files allowed to match, how many matches in all)
    ("the manifest struct", re.compile(r"\bstruct\s+Manifest\s*\{"), {"src/format/manifest.h"}, 1),
    ("the export-format enum", re.compile(r"\benum\s+class\s+ExportFormat\b"),
     {"include/rlprof/format/export_format.h"}, 1),
    ("a SQLite database created", re.compile(r"\bSQLITE_OPEN_CREATE\b"), {"src/format/sqlite_file.cc"}, None),
    ("the version compiled in", re.compile(r"\bRLPROF_VERSION\b"), {"src/base/version.cc"}, None),
    ("a version literal", re.compile(r'"\d+\.\d+\.\d+"'), VERSION_FIXTURES, None),
    ("a manifest key spelled outside its codec",
     re.compile(r'"(?:' + "|".join(MANIFEST_KEYS) + r')"'), {"src/format/manifest.cc"}, None),
]


def is_test(rel):
    base = os.path.basename(rel)
    return (re.search(r"_test(_util)?\.(cc|h|c)$", base) is not None or "/test" in rel or
            base.endswith("_check.c") or "fake" in base)


def sources(root):
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith(EXTS):
                    full = os.path.join(dirpath, f)
                    rel = os.path.relpath(full, root).replace(os.sep, "/")
                    if not is_test(rel):
                        yield rel, open(full, encoding="utf-8", errors="replace").read()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    bad, counts, files = [], [0] * len(RULES), 0
    for rel, text in sources(args.root):
        files += 1
        for i, (what, rx, allowed, _) in enumerate(RULES):
            for m in rx.finditer(text):
                counts[i] += 1
                if rel not in allowed:
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{rel}:{line}: {what} ({m.group(0)}) outside {', '.join(sorted(allowed))}")
    for i, (what, _, allowed, want) in enumerate(RULES):
        if want is not None and counts[i] != want:
            bad.append(f"{what}: defined {counts[i]} times, want {want} (in {', '.join(sorted(allowed))})")
    cmake = os.path.join(args.root, "CMakeLists.txt")
    top = open(cmake, encoding="utf-8").read() if os.path.exists(cmake) else ""
    if not re.search(r"project\(\s*rlprof\s+VERSION\s+\d+\.\d+\.\d+", top):
        bad.append("CMakeLists.txt: no project(rlprof VERSION x.y.z): the version's one source")
    for b in bad:
        print(b)
    print(f"check_contracts: {files} files, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
