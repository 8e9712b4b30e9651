#!/usr/bin/python3
"""Rejects #includes that point against rlprof's stage dependency rules (docs/architecture.md).

Each stage may include only the stages listed for it below. Public headers under
include/rlprof/<stage>/ belong to <stage>; include/rlprof/rlprof.h(pp) belong to runtime.
The Python binding (python/src) is to include only rlprof's public headers (include/rlprof/,
docs/architecture.md): its internal includes (src/...) are listed in
scripts/python_internal_includes.txt, a baseline that may only shrink (a new internal include
fails; a listed one that is gone must be struck from the list). The torch sources it builds
into rlprof._torch_ops (src/sources/torch_*) count as the binding's own code: python/src may
include their headers, and they in turn may include only public headers and each other (they
reach the runtime through librlprof's C ABI, include/rlprof/rlprof.h, like the binding).
Exit 0 when clean, 1 with one line per violation otherwise.
"""
import os
import re
import sys

ALLOWED = {
    "base": {"base"},
    "config": {"base", "format", "config"},
    "format": {"base", "format"},
    "runtime": {"base", "config", "format", "runtime"},
    "sources": {"base", "config", "format", "runtime", "sources"},
    "analysis": {"base", "config", "format", "analysis"},
    "report": {"base", "config", "format", "analysis", "report"},
    "cli": {"base", "config", "format", "runtime", "sources", "analysis", "report", "cli"},
}
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def stage_of_include(path):
    m = re.match(r"src/([a-z_]+)/", path)
    if m:
        return m.group(1)
    m = re.match(r"(?:include/)?rlprof/([a-z_]+)/", path)
    if m:
        return m.group(1)
    if re.match(r"(?:include/)?rlprof/rlprof\.hp?p?$", path):
        return "runtime"
    return None


def stage_of_file(rel):
    m = re.match(r"src/([a-z_]+)/", rel)
    if m:
        return m.group(1)
    m = re.match(r"include/rlprof/([a-z_]+)/", rel)
    if m:
        return m.group(1)
    if re.match(r"include/rlprof/rlprof\.hp?p?$", rel):
        return "runtime"
    return None


TORCH_SOURCE = re.compile(r"^src/sources/torch_[a-z_]+\.h$")


def check_torch_sources(root, bad):
    """src/sources/torch_* (not the tests) include public headers and each other only."""
    d = os.path.join(root, "src", "sources")
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        if not f.startswith("torch_") or not f.endswith((".h", ".cc")) or f.endswith("_test.cc"):
            continue
        text = open(os.path.join(d, f), encoding="utf-8", errors="replace").read()
        for m in INCLUDE.finditer(text):
            inc = m.group(1)
            if inc.startswith("src/") and not TORCH_SOURCE.match(inc):
                line = text.count("\n", 0, m.start()) + 1
                bad.append(f"src/sources/{f}:{line}: the torch sources reach the runtime through "
                           f"include/rlprof/rlprof.h only, not '{inc}'")


def check_python(root, bad):
    """python/src may include public headers, its own, and the baseline's internal ones."""
    listed = set()
    baseline = os.path.join(root, "scripts", "python_internal_includes.txt")
    if os.path.exists(baseline):
        for line in open(baseline, encoding="utf-8"):
            line = line.split("#", 1)[0].strip()
            if line:
                listed.add(tuple(line.split()))
    seen, checked = set(), 0
    for dirpath, _, files in os.walk(os.path.join(root, "python", "src")):
        for f in sorted(files):
            if not f.endswith((".h", ".cc")):
                continue
            full = os.path.join(dirpath, f)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            checked += 1
            text = open(full, encoding="utf-8", errors="replace").read()
            for m in INCLUDE.finditer(text):
                inc = m.group(1)
                if not inc.startswith("src/") or TORCH_SOURCE.match(inc):
                    continue
                seen.add((rel, inc))
                if (rel, inc) not in listed:
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{rel}:{line}: the Python binding may include only public headers "
                               f"(include/rlprof/), not '{inc}'")
    for rel, inc in sorted(listed - seen):
        bad.append(f"scripts/python_internal_includes.txt: '{rel} {inc}' is gone: strike it from the list")
    return checked


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = []
    checked = 0
    for top in ("src", "include"):
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if not f.endswith((".h", ".hpp", ".cc", ".cpp", ".c")):
                    continue
                full = os.path.join(dirpath, f)
                rel = os.path.relpath(full, root)
                stage = stage_of_file(rel)
                if stage is None or stage not in ALLOWED:
                    continue
                checked += 1
                text = open(full, encoding="utf-8", errors="replace").read()
                for m in INCLUDE.finditer(text):
                    target = stage_of_include(m.group(1))
                    if target is None or target in ALLOWED[stage]:
                        continue
                    line = text.count("\n", 0, m.start()) + 1
                    bad.append(f"{rel}:{line}: stage '{stage}' may not include "
                               f"'{m.group(1)}' (stage '{target}'); allowed: "
                               f"{', '.join(sorted(ALLOWED[stage]))}")
    checked += check_python(root, bad)
    check_torch_sources(root, bad)
    for b in bad:
        print(b)
    print(f"check_deps: {checked} files, {len(bad)} violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
