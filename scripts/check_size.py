#!/usr/bin/python3
"""Size rules of rlprof's C++ (docs/architecture.md, "Size rules"): no function in src/ or
python/src over 120 lines, no .cc there over 700 lines (tests excepted).

The functions that were longer when the rule came (issue 30) are listed in
scripts/size_baseline.txt with the length they had: each may only shrink (a ratchet). A new
function over the limit, a listed one that grew, or a listed one now within the limit (drop its
line) fails with one line each. Exit 0 when clean, 1 otherwise.

    scripts/check_size.py            # check
    scripts/check_size.py --list     # print every function over the limit, longest first
    scripts/check_size.py --root DIR --baseline FILE   # another tree (the tests)

Function lengths are counted from the line of a body's opening brace to its closing brace,
comments and string literals (raw ones too) blanked first; a lambda or a local class counts
within the function that holds it.
"""
import os
import re
import sys

MAX_FUNCTION_LINES = 120
MAX_FILE_LINES = 700
ROOTS = ("src", "python/src")
BASELINE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "size_baseline.txt")

_CONTROL = re.compile(r"\b(if|for|while|switch|catch)\s*\([^;{}]*\)$")
_SIGNATURE_END = re.compile(
    r"\)\s*(const)?\s*(noexcept)?\s*(override)?\s*(final)?\s*(->\s*[\w:<>,\s\*&]+)?$")


def blank(src):
    """`src` with comments and string / char literals emptied, newlines kept."""
    out, i, n = [], 0, len(src)
    while i < n:
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
            continue
        if src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        m = re.match(r'R"([^(\s]{0,16})\(', src[i:i + 20])
        if m and (i == 0 or not (src[i - 1].isalnum() or src[i - 1] == "_")):
            end = ")" + m.group(1) + '"'
            j = src.find(end, i + len(m.group(0)))
            j = n if j < 0 else j + len(end)
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        c = src[i]
        if c in "\"'" and not (c == "'" and i > 0 and src[i - 1].isdigit()):  # 1'000'000
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out)


def functions(text):
    """(first line, length in lines, signature) of each outermost function body."""
    found, stack, line = [], [], 1
    for i, ch in enumerate(text):
        if ch == "\n":
            line += 1
        elif ch == "{":
            before = text[max(0, i - 300):i].rstrip()
            is_fn = bool(_SIGNATURE_END.search(before)) and not _CONTROL.search(before)
            stack.append((is_fn and not any(f for f, _, _ in stack), line, i))
        elif ch == "}" and stack:
            is_fn, first, at = stack.pop()
            if is_fn:
                head = " ".join(text[max(0, at - 800):at].split())
                m = re.search(r"([\w:~<>]+)\s*\([^()]*(\([^()]*\)[^()]*)*\)[^()]*$", head)
                found.append((first, line - first + 1, m.group(1) if m else head[-60:]))
    return found


def measure(root):
    long_functions, long_files = {}, []
    for top in ROOTS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if not f.endswith(".cc") or f.endswith("_test.cc"):
                    continue
                path = os.path.join(dirpath, f)
                rel = os.path.relpath(path, root)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    src = fh.read()
                if src.count("\n") > MAX_FILE_LINES:
                    long_files.append((rel, src.count("\n")))
                for first, length, name in functions(blank(src)):
                    if length > MAX_FUNCTION_LINES:
                        key = f"{rel} {name}"
                        long_functions[key] = max(length, long_functions.get(key, 0))
    return long_functions, long_files


def read_baseline(path):
    base = {}
    if os.path.exists(path):
        for raw in open(path, encoding="utf-8"):
            raw = raw.split("#", 1)[0].strip()
            if raw:
                n, key = raw.split(None, 1)
                base[key] = int(n)
    return base


def _option(name, default):
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args[:-1] else default


def main():
    root = _option("--root", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    long_functions, long_files = measure(root)
    if "--list" in sys.argv[1:]:
        for key, n in sorted(long_functions.items(), key=lambda kv: -kv[1]):
            print(n, key)
        for rel, n in long_files:
            print(n, rel, "(file)")
        return 0
    base = read_baseline(_option("--baseline", BASELINE))
    bad = []
    for key, n in sorted(long_functions.items()):
        if key not in base:
            bad.append(f"{key}: {n} lines, over {MAX_FUNCTION_LINES} (split it along its phases)")
        elif n > base[key]:
            bad.append(f"{key}: {n} lines, was {base[key]} (scripts/size_baseline.txt): only shrinks")
    files = {f"{rel} (file)": n for rel, n in long_files}
    for key in sorted(base):
        if key not in long_functions and key not in files:
            limit = MAX_FILE_LINES if key.endswith(" (file)") else MAX_FUNCTION_LINES
            bad.append(f"{key}: now within {limit} lines: drop it from scripts/size_baseline.txt")
    for key, n in sorted(files.items()):
        if key not in base:
            bad.append(f"{key}: {n} lines, over {MAX_FILE_LINES} (split the file)")
        elif n > base[key]:
            bad.append(f"{key}: {n} lines, was {base[key]} (scripts/size_baseline.txt): only shrinks")
    for line in bad:
        print("check_size:", line)
    print(f"check_size: {len(long_functions)} functions over {MAX_FUNCTION_LINES} lines, "
          f"{len(long_files)} files over {MAX_FILE_LINES} ({len(base)} in the baseline), "
          f"{len(bad)} problems")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
