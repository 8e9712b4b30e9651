"""rlprof.analysis: rlprof's analysis as pandas DataFrames, for notebooks.

    import rlprof.analysis as ra
    a = ra.load("runs/grpo/20261126-1200")          # a run folder, capture, trace file, or a list
    a.run_view                                       # steps × stages × ranks (µs), one table per run
    a.step_breakdown                                 # compute / communication / overlap / idle (ns)
    a.stages.groupby("stage")["duration"].describe()
    a.diagnostics                                    # what was skipped or repaired, by severity
    c = ra.compare("runs/baseline", a)               # .steps, .stages, .ops
    k = ra.cluster(a)                                # .balance, .slow_ranks, .collectives

The numbers are those of `rlprof analyse` (the same C++ library, src/analysis/run/run_pipeline.h):
every DataFrame equals the CSV of the same name that `rlprof analyse -o DIR` writes, with an
`input` column naming the input (the sub-folder of DIR). Units are the CSVs': msprof, stage,
operator and comm tables in µs (float64), step_breakdown in ns (int64); each frame's
`attrs["units"]` maps its columns to their unit. Analysis runs on `jobs` threads and releases
the GIL. Only usage errors raise (ValueError: a bad option; FileNotFoundError: no trace under the
paths, or a missing rules file; OSError: outputs that cannot be written); a corrupt or unreadable
trace gives a partial result, its problems in `diagnostics` and `inputs.error`. See
docs/python.md "Analysis in Python".

pandas is imported here only: `import rlprof` does not load it.
"""
from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import numpy as np
import pandas as pd

from rlprof import _analysis

PathArg = Union[str, bytes, "os.PathLike[str]"]
RunArg = Union[PathArg, Sequence[PathArg], "Analysis"]

__all__ = ["load", "compare", "cluster", "Analysis", "Comparison", "Cluster", "VIEWS"]

# summary --view NAME → the tables it shows (`rl` is the run view, as in the CLI).
VIEWS: Dict[str, List[str]] = {
    "msprof": ["step_trace_time"],
    "hta": ["hta_temporal_breakdown", "hta_idle_breakdown", "hta_kernel_type_breakdown"],
    "tracelens": ["gpu_timeline"],
    "rl": ["run_view"],
    "ops": ["op_statistic"],
    "kernels": ["kernel_details"],
    "comm": ["comm_by_group"],
    "atoms": ["step_atoms", "classes"],
    "module": ["module_view"],
    "memory": ["memory_peak"],
    "stack": ["ops_by_frame"],
    "tb": ["tb_step_time"],
    "all": ["step_trace_time", "step_atoms", "stage_time", "comm_by_group", "hta_temporal_breakdown",
            "hta_idle_breakdown", "hta_kernel_type_breakdown", "gpu_timeline", "tb_step_time", "classes",
            "module_view", "memory_peak", "ops_by_frame"],
}


def _frame(t: Dict[str, Any]) -> pd.DataFrame:
    """A table from the extension as a DataFrame: numbers come as bytearrays of native int64 /
    float64 (wrapped by numpy without a copy), text and ints with nulls as lists."""
    data: Dict[str, Any] = {}
    for name, typ, col in zip(t["columns"], t["types"], t["data"]):
        if isinstance(col, bytearray):
            col = np.frombuffer(col, dtype=np.int64 if typ == "int" else np.float64)
        elif typ == "int":  # ints with nulls: pandas' nullable Int64
            col = pd.array(col, dtype="Int64")
        data[name] = col
    df = pd.DataFrame(data, columns=list(t["columns"]))
    df.attrs["name"] = t["name"]
    df.attrs["units"] = {c: u for c, u in zip(t["columns"], t["units"]) if u}
    return df


def _paths(p: Union[PathArg, Sequence[PathArg]]) -> List[bytes]:
    if isinstance(p, (str, bytes, os.PathLike)):
        p = [p]
    out = [os.fsencode(x) for x in p]  # bytes: any file name the OS allows
    if not out:
        raise ValueError("rlprof.analysis: no path given")
    return out


def _diagnostics(d: Dict[str, Any]) -> pd.DataFrame:
    df = _frame(d)
    df.attrs["details"] = list(d.get("details", []))
    return df


class Analysis:
    """An analysed run: every input found under the paths, and the run's tables as DataFrames.

    Frames are built on first use and cached; the object is immutable and thread-safe."""

    def __init__(self, run: "_analysis.Run") -> None:
        self._run = run
        self._names: Optional[List[str]] = None
        self._frames: Dict[str, pd.DataFrame] = {}  # tables by name; "#inputs" … for the others

    def __repr__(self) -> str:
        inp = self.inputs
        ok = int(inp["error"].isna().sum())
        return (f"<rlprof.analysis.Analysis {ok}/{len(inp)} inputs, assign={self._run.assign}, "
                f"compat={self._run.compat}>")

    # -- options ---------------------------------------------------------------------------
    @property
    def paths(self) -> List[str]:
        return [os.fsdecode(p) for p in self._run.paths]

    @property
    def options(self) -> Dict[str, str]:
        return {"assign": self._run.assign, "compat": self._run.compat, "step_marker": self._run.step_marker}

    # -- tables ----------------------------------------------------------------------------
    @property
    def table_names(self) -> List[str]:
        """Every table, as analysis.db holds them."""
        if self._names is None:
            self._names = list(self._run.table_names())
        return list(self._names)

    def table(self, name: str) -> pd.DataFrame:
        """One table of analysis.db (an `input` column first for per-input tables). A copy."""
        if name not in self._frames:
            if name not in self.table_names:
                raise KeyError(f"rlprof.analysis: no table '{name}' (tables: {', '.join(self.table_names)})")
            self._frames[name] = _frame(self._run.table(name))
        return self._frames[name].copy()

    def view(self, name: str) -> Dict[str, pd.DataFrame]:
        """The tables `rlprof summary --view NAME` shows, by table name."""
        if name not in VIEWS:
            raise ValueError(f"rlprof.analysis: unknown view '{name}' ({' | '.join(VIEWS)})")
        have = self.table_names
        return {t: self.table(t) for t in VIEWS[name] if t in have}

    @property
    def inputs(self) -> pd.DataFrame:
        """One row per input: input (its name), path, format, rank, cpu_only, steps, stages, and
        error (NaN when it was read; else why not: it is left out of every other table)."""
        if "#inputs" not in self._frames:
            self._frames["#inputs"] = _frame(self._run.inputs())
        return self._frames["#inputs"].copy()

    def _with_rank(self, name: str) -> pd.DataFrame:
        df = self.table(name)
        if "rank" not in df.columns and "input" in df.columns:
            inp = self.inputs
            ranks = dict(zip(inp["input"], inp["rank"]))
            df.insert(1, "rank", df["input"].map(ranks).astype("int64"))
        return df

    @property
    def steps(self) -> pd.DataFrame:
        """step_trace_time (msprof columns, µs) of every input, with its rank."""
        return self._with_rank("step_trace_time")

    def _with_ns(self, name: str) -> pd.DataFrame:
        df = self.table(name)
        for col, buf in self._run.ns_columns(name).items():
            v = np.frombuffer(buf, dtype=np.int64)
            assert len(v) == len(df), (name, col)
            df[col] = v
            df.attrs["units"][col] = "ns"
        return df

    @property
    def stages(self) -> pd.DataFrame:
        """stage_time: every stage window of every rank and step (µs), plus start_ns, end_ns and
        duration_ns (exact int64 ns on the trace's clock)."""
        return self._with_ns("stage_time")

    @property
    def step_breakdown(self) -> pd.DataFrame:
        """step_atoms (ns, int64) per input × step, plus compute = compute_only + overlap and
        communication = comm_only + overlap (every step's time is compute_only + comm_only +
        overlap + memory_only + other_only + idle)."""
        df = self.table("step_atoms")
        df["compute"] = df["compute_only"] + df["overlap"]
        df["communication"] = df["comm_only"] + df["overlap"]
        df.attrs["units"].update({"compute": "ns", "communication": "ns"})
        return df

    @property
    def run_view(self) -> pd.DataFrame:
        """The run view: steps × stages × ranks (one column per rank, µs), gaps between stages,
        step windows, the critical rank (docs/analysis.md "Run view")."""
        return self.table("run_view")

    @property
    def run_view_long(self) -> pd.DataFrame:
        """The run view in long form, exact: step, kind (stage | gap | step_window | stage_span),
        role, stage, lane ("rank<R>"), rank, start_ns (from the step's start, null for gaps),
        value_ns (int64), partial — one row per rank that has the value. Pivot it at will:
        `a.run_view_long.pivot_table(index=["step", "stage"], columns="rank", values="value_ns")`."""
        if "#run_view_long" not in self._frames:
            self._frames["#run_view_long"] = _frame(self._run.run_view_long())
        return self._frames["#run_view_long"].copy()

    @property
    def stage_across_ranks(self) -> pd.DataFrame:
        return self.table("stage_across_ranks")

    @property
    def async_pools(self) -> pd.DataFrame:
        """Asynchronous RL: each process's window split into sync phases, idle by cause, busy
        and other (µs), then one row per pool (docs/definitions.md §5.12). Empty without
        rlprof.rl's records."""
        if "async_pools" not in self.table_names:
            return pd.DataFrame()
        return self.table("async_pools")

    @property
    def async_verdict(self) -> pd.DataFrame:
        """Asynchronous RL: rollout-bound or train-bound, each pool's rate per process, and the
        throughput with one process moved (estimates from the measured rates). Empty without
        rlprof.rl's records."""
        if "async_verdict" not in self.table_names:
            return pd.DataFrame()
        return self.table("async_verdict")

    @property
    def async_versions(self) -> pd.DataFrame:
        """Asynchronous RL by version interval: one row from each version's publish to the next
        (trainer steps, samples generated and consumed, staleness, the joined timeline and the
        waits by cause within it; docs/definitions.md §5.12). Empty without rlprof.rl's
        records or without a publish."""
        if "async_versions" not in self.table_names:
            return pd.DataFrame()
        return self.table("async_versions")

    @property
    def async_syncs(self) -> pd.DataFrame:
        """Asynchronous RL: one row per weight sync, joined across the processes that took part
        (the publisher's gather / wait / transfer, the receivers' phases, bytes and GB/s;
        docs/definitions.md §5.12). Empty without a publish."""
        if "async_syncs" not in self.table_names:
            return pd.DataFrame()
        return self.table("async_syncs")

    @property
    def samples(self) -> pd.DataFrame:
        """Each sample's life: one row per sample record (rlprof.sample, rlprof's vLLM source) —
        its step and replica, queue / prefill / TTFT / decode / TPOT / e2e (µs), tokens, finish
        reason, preemptions, tool calls, weight versions, and what became of it (outcome,
        used_step, used_version, staleness; docs/definitions.md §5.13). Empty without records."""
        return self.table("samples") if "samples" in self.table_names else pd.DataFrame()

    @property
    def sample_tail(self) -> pd.DataFrame:
        """The long tail per step (all replicas, then each): the times until 50/90/95/99/100 %
        of the samples had ended, the tail (p100 − p90) and its share of the step, idle
        replica-time in it, queue / TTFT / TPOT percentiles, imbalance, and the what-ifs (stop
        at p95, partial rollout at p90: estimates). Empty without sample records."""
        return self.table("sample_tail") if "sample_tail" in self.table_names else pd.DataFrame()

    @property
    def sample_outcomes(self) -> pd.DataFrame:
        """What became of the samples (consumed, dropped and why, unused) and the staleness of
        the consumed ones. Empty without sample records."""
        return self.table("sample_outcomes") if "sample_outcomes" in self.table_names else pd.DataFrame()

    @property
    def findings(self) -> pd.DataFrame:
        """The advisor's findings (`rlprof advise`; docs/advise.md), ranked: rule id, severity,
        estimated saving per step (µs) and its share of the step (%), title, action, how the saving
        was computed, the first evidence, regression. Empty when no rule fired."""
        return self.table("findings") if "findings" in self.table_names else pd.DataFrame()

    @property
    def op_stats(self) -> pd.DataFrame:
        """op_statistic: host operators (by name and by shapes) and device kernels (µs)."""
        return self.table("op_statistic")

    @property
    def kernels(self) -> pd.DataFrame:
        """kernel_details: every device work interval (µs), plus start_ns, duration_ns, wait_ns
        (exact int64 ns)."""
        return self._with_ns("kernel_details")

    @property
    def activity(self) -> pd.DataFrame:
        """Device and host activity (load(..., activity=N)): one row per span of each device
        stream's and host thread's lane — input, rank, lane, device (1 / 0), start_ns, end_ns,
        busy_ns (time its events covered), events, class (the one busy longest), longest (the
        longest event's name), longest_ns. Spans merge consecutive events across the shortest
        gaps until a lane has at most N (docs/analysis.md, device and host lanes). Empty
        unless asked for."""
        if "#activity" not in self._frames:
            self._frames["#activity"] = _frame(self._run.activity())
        return self._frames["#activity"].copy()

    @property
    def comm_by_group(self) -> pd.DataFrame:
        """comm_by_group: communication per step × process group (µs)."""
        return self.table("comm_by_group")

    @property
    def hta(self) -> pd.DataFrame:
        """hta_temporal_breakdown (µs and %)."""
        return self.table("hta_temporal_breakdown")

    @property
    def gpu_timeline(self) -> pd.DataFrame:
        """TraceLens' gpu_timeline rows (ms and %)."""
        return self.table("gpu_timeline")

    @property
    def tb_step_time(self) -> pd.DataFrame:
        """torch-tb-profiler's step time breakdown per input × step (µs): kernel, memcpy, memset,
        communication, runtime, dataloader, cpu_exec, other, total."""
        return self.table("tb_step_time")

    @property
    def diagnostics(self) -> pd.DataFrame:
        """Every diagnostic: input ("" for the run: finding inputs, unreadable inputs, the run
        view), name, count, and the catalogue's severity, source and description.
        attrs["details"]: the detail lines (which file, why)."""
        if "#diagnostics" not in self._frames:
            self._frames["#diagnostics"] = _diagnostics(self._run.diagnostics())
        df = self._frames["#diagnostics"].copy()
        df.attrs["details"] = list(self._frames["#diagnostics"].attrs["details"])
        return df

    @property
    def summary(self) -> Dict[str, Any]:
        """summary.json as a dict (docs/analysis.md "summary.json")."""
        return json.loads(self._run.summary_json())

    # -- actions ---------------------------------------------------------------------------
    def write(self, directory: PathArg, export: Iterable[str] = (), report: bool = True,
              title: Optional[str] = None) -> List[str]:
        """Writes what `rlprof analyse -o DIRECTORY [--export …]` writes: one folder of CSVs per
        input, run_view.csv, summary.json, analysis.db, report.html (unless report=False; titled
        `title`, else the path), and exports of rlprof captures (text, db, pftrace). Returns the
        run-level files and the exports."""
        files = _analysis.write(self._run, os.fsencode(directory), list(export), bool(report),
                                title or "")
        return [os.fsdecode(f) for f in files]

    def compare(self, new: RunArg, top: int = 30) -> "Comparison":
        """This run as the baseline against `new` (see compare())."""
        return compare(self, new, top=top)

    def cluster(self) -> "Cluster":
        return Cluster(_analysis.cluster(self._run))


class Comparison:
    """`rlprof compare`: steps, stages and ops (baseline, new, delta; µs), diagnostics; for
    asynchronous runs also `async_figures` (compare_async) and `async_versions`
    (compare_async_versions: the k-th version interval of each run), else empty frames."""

    def __init__(self, d: Dict[str, Any]) -> None:
        self.steps = _frame(d["compare_steps"])
        self.stages = _frame(d["compare_stages"])
        self.ops = _frame(d["compare_ops"])
        self.async_figures = _frame(d["compare_async"]) if "compare_async" in d else pd.DataFrame()
        self.async_versions = _frame(d["compare_async_versions"]) if "compare_async_versions" in d else pd.DataFrame()
        self.diagnostics = _frame(d["diagnostics"])
        self.diagnostics.attrs["details"] = list(d["details"])

    def __repr__(self) -> str:
        return f"<rlprof.analysis.Comparison {len(self.stages)} stages, {len(self.ops)} ops>"


class Cluster:
    """`rlprof cluster`: step_time, balance, slow_ranks, collectives, diagnostics."""

    def __init__(self, d: Dict[str, Any]) -> None:
        self.step_time = _frame(d["cluster_step_trace_time"])
        self.balance = _frame(d["cluster_balance"])
        self.slow_ranks = _frame(d["slow_rank"])
        self.collectives = _frame(d["collectives"])
        self.diagnostics = _frame(d["diagnostics"])
        self.diagnostics.attrs["details"] = list(d["details"])

    def __repr__(self) -> str:
        return f"<rlprof.analysis.Cluster {len(self.step_time)} rank-steps, {len(self.slow_ranks)} slow ranks>"


def load(paths: Union[PathArg, Sequence[PathArg]], *, rules: Optional[PathArg] = None,
         assign: str = "clip", compat: str = "native", step_marker: Optional[str] = None,
         jobs: int = 2, progress: Optional[Callable[[int, int], Any]] = None,
         ray: Optional[str] = None, activity: int = 0) -> Analysis:
    """Finds and analyses every trace under `paths` (rlprof captures and run folders, Kineto /
    torch JSON, Ascend trace_view.json), like `rlprof analyse PATHS --rules … --assign …
    --compat … --step-marker … --jobs …`. `progress(done, total)` is called after each input
    (from a worker thread; what it raises goes to sys.unraisablehook).

    `ray="auto"` (or a cluster address): like `rlprof analyse --ray`, each capture is analysed
    on the Ray node that holds it and only its results come back (rlprof.distributed,
    docs/scale.md); the numbers are the local analysis's. `jobs` is then each node's CPUs.

    `activity=N` (> 0) also keeps each device stream's and host thread's activity, at most N
    spans per lane (what the report's device and host lanes draw): `Analysis.activity`, and
    the lanes in the report `write()` makes. Not with `ray=`."""
    if jobs < 1:
        raise ValueError("rlprof.analysis: jobs must be at least 1")
    if activity < 0:
        raise ValueError("rlprof.analysis: activity must be 0 (off) or a number of spans per lane")
    if ray is not None:
        if activity:
            raise ValueError("rlprof.analysis: activity lanes are not gathered with ray= (analyse locally)")
        from rlprof import distributed
        return Analysis(distributed.analyse(paths, ray, rules=rules, assign=assign, compat=compat,
                                            step_marker=step_marker, progress=progress).run)
    run = _analysis.analyse(_paths(paths), os.fsencode(rules) if rules is not None else b"", assign,
                            compat, step_marker or "", int(jobs), progress, int(activity))
    return Analysis(run)


def _as_analysis(x: RunArg, **opts: Any) -> Analysis:
    return x if isinstance(x, Analysis) else load(x, **opts)


def compare(baseline: RunArg, new: RunArg, *, top: int = 30, **opts: Any) -> Comparison:
    """`rlprof compare BASELINE NEW --top N`: each side an Analysis (not analysed again) or
    paths, analysed with `opts` (load()'s options)."""
    if top < 1:
        raise ValueError("rlprof.analysis: top must be at least 1")
    b, n = _as_analysis(baseline, **opts), _as_analysis(new, **opts)
    return Comparison(_analysis.compare(b._run, n._run, int(top)))


def cluster(run: RunArg, **opts: Any) -> Cluster:
    """`rlprof cluster PATH`: the ranks of one run side by side."""
    return _as_analysis(run, **opts).cluster()
