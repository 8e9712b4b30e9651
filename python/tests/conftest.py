"""Shared fixtures of rlprof's Python tests: the build tree on sys.path, the rlprof CLI, and a
capture reader (via `rlprof export --format json`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Dict, List, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "grpo_tiny")


def _build_dirs() -> List[str]:
    dirs = []
    if os.environ.get("RLPROF_BUILD_DIR"):
        dirs.append(os.environ["RLPROF_BUILD_DIR"])
    dirs += [os.path.join(ROOT, d) for d in ("build", "build-py")]
    return [d for d in dirs if os.path.isdir(os.path.join(d, "python", "rlprof"))]


def _setup_path() -> str:
    builds = _build_dirs()
    if builds:
        py = os.path.join(builds[0], "python")
        if py not in sys.path:
            sys.path.insert(0, py)
        # Children (mp.spawn) import rlprof too.
        os.environ["PYTHONPATH"] = py + os.pathsep + os.environ.get("PYTHONPATH", "")
        return builds[0]
    return ""


BUILD = _setup_path()


def peers_python(probe_import: str = "") -> str:
    """The peers test environment's Python (.venv-peers, or RLPROF_PEERS_PYTHON), "" when it is
    absent, RLPROF_SKIP_PEERS=1, or `probe_import` (a module) does not import there."""
    if os.environ.get("RLPROF_SKIP_PEERS") == "1":
        return ""
    p = os.environ.get("RLPROF_PEERS_PYTHON") or os.path.join(ROOT, ".venv-peers", "bin", "python")
    if not os.access(p, os.X_OK):
        return ""
    if probe_import:
        ok = subprocess.run([p, "-c", "import " + probe_import], capture_output=True, timeout=120)
        if ok.returncode != 0:
            return ""
    return p
if EXAMPLE not in sys.path:
    sys.path.insert(0, EXAMPLE)


@pytest.fixture(scope="session")
def rlprof_cli() -> str:
    p = os.path.join(BUILD, "bin", "rlprof") if BUILD else ""
    if not p or not os.access(p, os.X_OK):
        pytest.skip("the rlprof CLI is not built")
    return p


def plan_captures(cli: str, config: str, overrides: List[str], world_size: int) -> set:
    """{(step, scope, rank)} that `rlprof plan --json` promises."""
    out = subprocess.run([cli, "plan", config, *overrides, "--world-size", str(world_size), "--json"],
                         check=True, capture_output=True, text=True).stdout
    plan = json.loads(out)
    want = set()
    for c in plan["captures"]:
        ranks = _expand_ranks(c["ranks"], world_size)
        steps = str(c["steps"]).split("-")[0]
        for r in ranks:
            want.add((int(steps), c["scope"], r))
    return want


def _expand_ranks(text: str, world: int) -> List[int]:
    if text in ("all", "*"):
        return list(range(world))
    out: List[int] = []
    for part in str(text).split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    return out


def capture_key(cap: str) -> Tuple[int, str, int]:
    m = manifest(cap)
    return ((m.get("steps") or [0])[0], m["scope"], m["identity"]["rank"])


def manifest(cap: str) -> Dict[str, Any]:
    with open(os.path.join(cap, "manifest.json")) as f:
        return json.load(f)


def events(cli: str, cap: str, tmp: str) -> List[Dict[str, Any]]:
    """The capture's events as Chrome trace events (ts/dur in µs)."""
    out = os.path.join(tmp, "export-%d.json" % abs(hash(cap)))
    subprocess.run([cli, "export", cap, "--format", "json", "-o", out], check=True,
                   capture_output=True)
    with open(out) as f:
        trace = json.load(f)
    evs = trace["traceEvents"] if isinstance(trace, dict) else trace
    return [e for e in evs if e.get("ph") != "M"]


def all_captures(root: str) -> List[str]:
    out = []
    for dirpath, _, files in os.walk(root):
        if "manifest.json" in files:
            out.append(dirpath)
    return sorted(out)
