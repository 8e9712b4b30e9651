"""rlprof.distributed: `rlprof analyse --ray`, analysis where the captures are.

    from rlprof import distributed
    r = distributed.analyse(["/tmp/ray/rlprof/grpo/20261126-1200"], address="auto")
    r.run            # the rlprof._analysis.Run: the same as analysing those captures locally
    r.placement      # {input: node id that analysed it}
    rlprof.analysis.load(paths, ray="auto")   # the same, as an rlprof.analysis.Analysis

On a Ray cluster (the one the RL job runs on, or any), the driver
 1. asks every alive node, with a task pinned to it (NodeAffinitySchedulingStrategy, soft=False),
    which inputs it holds under the paths (the same search as `rlprof analyse`; a node whose
    environment sets RLPROF_CAPTURE_ROOTS, os.pathsep-separated, claims only inputs below those
    folders — for shared file systems, or to say which node should read what);
 2. names the inputs over all nodes (as `rlprof analyse` would) and runs one task per input on
    a node that holds it (the least loaded of them), which analyses it with rlprof's C++ (the
    `_analysis` extension) and returns the per-input result, encoded — kilobytes, not the trace;
 3. assembles the run on the driver (src/analysis/run/input_codec.h AssembleRemoteRun): run view,
    cluster view, compare and report are then computed here exactly as locally.
A node that dies (or a task that fails) costs only its inputs: each is kept as an unreadable
input and counted as `ray_node_lost`; a path no node holds is counted as `ray_input_missing`.
Nothing else moves over the network: the options, the rules file's text, input paths, results.

Every node needs rlprof (this package and its extension) importable by Ray's workers, as the
job's own nodes have it. Imports ray lazily; pandas is not needed (CLI path).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

PathArg = Union[str, bytes, "os.PathLike[str]"]

__all__ = ["analyse", "RayAnalysis", "main"]


# ---- what runs on the nodes (module-level: Ray imports it by reference) -----------------------

def _under(path: bytes, roots: List[bytes]) -> bool:
    p = os.path.abspath(path)
    return any(p == r or p.startswith(r.rstrip(b"/") + b"/") for r in roots)


def _node_find(paths: List[bytes]) -> Tuple[List[bytes], bytes, List[Tuple[bytes, str]]]:
    from rlprof import _analysis
    inputs, found, missing = _analysis.find_inputs(paths)
    roots = os.environ.get("RLPROF_CAPTURE_ROOTS")
    if roots:
        rl = [os.path.abspath(os.fsencode(r)) for r in roots.split(os.pathsep) if r]
        inputs = [i for i in inputs if _under(i, rl)]
    return inputs, found, missing


def _node_analyse(input: bytes, name: bytes, opts: Dict[str, Any], hook: Optional[Callable[[bytes], Any]]) -> bytes:
    from rlprof import _analysis
    if hook is not None:  # tests: stand in for a long analysis (a node killed mid-way)
        hook(input)
    return _analysis.analyse_input(input, name, opts["rules_yaml"], opts["rules_origin"], opts["assign"],
                                   opts["compat"], opts["step_marker"])


# ---- the driver -----------------------------------------------------------------------------

class RayAnalysis:
    """The assembled run (`run`, an rlprof._analysis.Run), where each input was analysed
    (`placement`: input → node id), the nodes asked (`nodes`), and the bytes that came back."""

    def __init__(self, run: Any, placement: Dict[str, str], nodes: List[str], result_bytes: int) -> None:
        self.run = run
        self.placement = placement
        self.nodes = nodes
        self.result_bytes = result_bytes


def _error(e: BaseException) -> str:
    first = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first}"[:300]


class ClusterMismatch(RuntimeError):
    """The Ray cluster `auto` found on this machine cannot be used by this Python's Ray."""


def join(ray: Any, address: Optional[str]) -> str:
    """Joins the cluster at `address` and returns what was joined. "auto" (and None) means the
    cluster this machine belongs to, if it is one this Python's Ray can join: a cluster of
    another Ray version (another job's, another virtual environment's) is never joined
    silently — ClusterMismatch says which and what to do — and with no cluster at all a local
    one is started for the analysis (said on stderr)."""
    kw = dict(logging_level="ERROR", log_to_driver=False, configure_logging=False)
    if address not in (None, "", "auto"):
        ray.init(address=address, **kw)
        return address
    try:
        ray.init(address="auto", **kw)
        return "auto"
    except ConnectionError:  # no cluster on this machine: a local one for this analysis
        sys.stderr.write("rlprof analyse: no Ray cluster on this machine: starting a local one "
                         "(pass --ray ADDRESS to use another)\n")
        ray.init(address="local", **kw)
        return "local"
    except Exception as e:
        text = str(e)
        if "version mismatch" not in text.lower() and "Version mismatch" not in text:
            raise
        raise ClusterMismatch(
            "the Ray cluster running on this machine was started by another Ray or Python than "
            f"this one (ray {getattr(ray, '__version__', '?')}, {sys.executable}): "
            f"{text.splitlines()[0][:200]}. Run with RLPROF_PYTHON set to the Python of the job "
            "that started it (it has the same Ray and rlprof), pass that cluster's address, or "
            "--ray local to analyse on a new local cluster of this Python") from None


def analyse(paths: Union[PathArg, Sequence[PathArg]], address: Optional[str] = None, *,
            rules: Optional[PathArg] = None, assign: str = "clip", compat: str = "native",
            step_marker: Optional[str] = None, progress: Optional[Callable[[int, int], Any]] = None,
            timeout_s: Optional[float] = None,
            _task_hook: Optional[Callable[[bytes], Any]] = None) -> RayAnalysis:
    """Analyses the captures under `paths` on the Ray cluster at `address` ("auto": the
    cluster this machine belongs to, never one of another Ray version, and a local one when
    there is none: join(); "local": a new local cluster; None: the one ray.init() already
    joined, else "auto").
    Options as rlprof.analysis.load(). `timeout_s`: inputs not back by then count as lost.
    Raises FileNotFoundError when no node holds any trace (as the local analysis does)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
    from rlprof import _analysis

    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    pb = [os.fsencode(p) for p in paths]
    if not pb:
        raise ValueError("rlprof.distributed: no path given")
    opts = {"rules_yaml": b"", "rules_origin": "", "assign": assign, "compat": compat,
            "step_marker": step_marker or ""}
    if rules is not None:  # shipped as text: the nodes need not have the file
        with open(rules, "rb") as f:
            opts["rules_yaml"] = f.read()
        opts["rules_origin"] = os.fsdecode(rules)
    # Bad options fail here, before the cluster is asked anything.
    _analysis.check_options(opts["rules_yaml"], opts["rules_origin"], assign, compat, opts["step_marker"])

    if not ray.is_initialized():
        join(ray, address)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s

    def pin(node_id: str) -> Any:
        return NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)

    nodes = sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive"))
    find = ray.remote(num_cpus=0, max_retries=0)(_node_find)
    searches = {n: find.options(scheduling_strategy=pin(n)).remote(pb) for n in nodes}
    holders: Dict[bytes, List[str]] = {}
    found: List[bytes] = []
    lost_searches: List[str] = []
    missing_here: Dict[bytes, int] = {}
    for n, ref in searches.items():
        try:
            inputs, diag, missing = ray.get(ref, timeout=None if deadline is None else max(1.0, deadline - time.monotonic()))
        except Exception as e:  # node died, worker crashed, timeout: its inputs are unknown
            lost_searches.append(f"node {n}: {_error(e)}")
            continue
        found.append(diag)
        for i in inputs:
            holders.setdefault(i, []).append(n)
        for p, _why in missing:
            missing_here[p] = missing_here.get(p, 0) + 1
    # Nodes that see the same files (a shared file system) report the same search: count it once.
    found = list(dict.fromkeys(found))
    searched = len(nodes) - len(lost_searches)
    # A path no node could search (exists nowhere); paths some node holds are fine.
    missing = [p for p in pb if missing_here.get(p, 0) >= searched]
    ordered = sorted(holders)
    if not ordered:
        why = "; ".join(lost_searches) or f"{searched} node(s) searched"
        raise FileNotFoundError("no trace found under " + ", ".join(os.fsdecode(p) for p in pb) +
                                f" on any node of the Ray cluster ({why})")
    names = _analysis.input_names(ordered)

    # Each input on a node that holds it, the least loaded first (a shared file system
    # spreads the work over every node).
    load: Dict[str, int] = {n: 0 for n in nodes}
    placement: Dict[bytes, str] = {}
    for i in ordered:
        n = min(holders[i], key=lambda h: (load[h], h))
        placement[i] = n
        load[n] += 1
    work = ray.remote(num_cpus=1, max_retries=0)(_node_analyse)
    refs = {work.options(scheduling_strategy=pin(placement[i])).remote(i, name, opts, _task_hook): i
            for i, name in zip(ordered, names)}
    results: Dict[bytes, Tuple[bytes, str]] = {}
    pending = list(refs)
    total = len(refs)
    while pending:
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        ready, pending = ray.wait(pending, num_returns=1, timeout=left)
        if not ready:  # the deadline passed
            for ref in pending:
                results[refs[ref]] = (b"", f"node {placement[refs[ref]]}: no result within {timeout_s} s")
                ray.cancel(ref, force=True)
            break
        for ref in ready:
            i = refs[ref]
            try:
                results[i] = (ray.get(ref), "")
            except Exception as e:  # its node died, its worker crashed, the task failed
                results[i] = (b"", f"node {placement[i]}: {_error(e)}")
        if progress is not None:
            progress(len(results), total)
    rows = [(i, n, results[i][0], results[i][1]) for i, n in zip(ordered, names)]
    run = _analysis.assemble(pb, assign, compat, step_marker or "", found, rows, missing, lost_searches)
    return RayAnalysis(run, {os.fsdecode(i): n for i, n in placement.items()}, nodes,
                       sum(len(r[2]) for r in rows))


# ---- `python -m rlprof analyse --ray [ADDRESS] …` (what `rlprof analyse --ray` runs) -----------

def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(prog="rlprof analyse --ray",
                                description="Analyse captures where they are, on a Ray cluster")
    p.add_argument("paths", nargs="+")
    p.add_argument("--ray", nargs="?", const="auto", default="auto", metavar="ADDRESS")
    p.add_argument("-o", "--output", default="rlprof-analysis")
    p.add_argument("-j", "--jobs", type=int, default=2, help="ignored: each node runs as many as its CPUs")
    p.add_argument("--export", action="append", default=[])
    p.add_argument("--rules")
    p.add_argument("--assign", default="clip", choices=["clip", "by_start", "by_launch"])
    p.add_argument("--compat", default="native", choices=["native", "hta", "tracelens"])
    p.add_argument("--step-marker")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, help="seconds; inputs not back by then count as lost")
    try:
        a = p.parse_args(list(argv))
    except SystemExit as e:
        return 1 if e.code else 0
    if a.export:
        sys.stderr.write("rlprof analyse: --export reads the traces themselves: run it on the node "
                         "that holds them (without --ray)\n")
        return 1
    try:
        import ray  # noqa: F401
    except ImportError:
        sys.stderr.write(f"rlprof analyse: --ray needs Ray in this Python ({sys.executable}); "
                         "set RLPROF_PYTHON to one that has it\n")
        return 1
    from rlprof import _analysis
    try:
        r = analyse(a.paths, a.ray, rules=a.rules, assign=a.assign, compat=a.compat,
                    step_marker=a.step_marker, timeout_s=a.timeout)
    except FileNotFoundError as e:
        sys.stderr.write(f"rlprof analyse: {e}\n")
        return 2
    except ValueError as e:
        sys.stderr.write(f"rlprof analyse: {e}\n")
        return 1
    except ClusterMismatch as e:
        sys.stderr.write(f"rlprof analyse: {e}\n")
        return 3
    except Exception as e:  # cannot reach the cluster
        sys.stderr.write(f"rlprof analyse: Ray cluster {a.ray}: {_error(e)}\n")
        return 3
    title = a.paths[0] if len(a.paths) == 1 else f"{len(a.paths)} paths"
    try:
        _analysis.write(r.run, os.fsencode(a.output), [], True, title)
    except OSError as e:
        sys.stderr.write(f"rlprof analyse: {e}\n")
        return 4
    summary = json.loads(r.run.summary_json())
    summary["output"] = a.output
    inp = r.run.inputs()
    errors = [(path, err) for path, err in zip(inp["data"][1], inp["data"][7]) if err is not None]
    for path, err in errors:
        sys.stderr.write(f"rlprof analyse: {path}: {err}\n")
    if a.json:
        sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    else:
        nodes_used = len(set(r.placement.values()))
        sys.stdout.write(f"{len(inp['data'][0]) - len(errors)}/{len(inp['data'][0])} inputs analysed on "
                         f"{nodes_used} of {len(r.nodes)} Ray node(s) ({r.result_bytes} bytes of results); "
                         f"wrote {a.output}/{{summary.json,analysis.db,run_view.csv,report.html}} and one "
                         "folder of CSVs per input\n")
        d = r.run.diagnostics()
        cols = dict(zip(d["columns"], d["data"]))
        problems = [f"{n}={c}" for n, c, s in zip(cols["name"], _ints(cols["count"]), cols["severity"])
                    if s != "info"]
        sys.stdout.write("diagnostics: " + (" ".join(problems) if problems else "none") + "\n")
    return 2 if errors or _missing_or_lost(r) else 0


def _ints(col: Any) -> List[int]:
    if isinstance(col, (bytes, bytearray)):
        import struct
        return list(struct.unpack(f"={len(col) // 8}q", bytes(col)))
    return list(col)


def _missing_or_lost(r: RayAnalysis) -> bool:
    """Whether any path or node was lost (exit 2, as unreadable inputs are)."""
    d = r.run.diagnostics()
    cols = dict(zip(d["columns"], d["data"]))
    return any(n in ("ray_input_missing", "ray_node_lost", "ray_bad_result") for n in cols["name"])
