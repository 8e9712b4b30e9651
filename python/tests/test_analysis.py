"""rlprof.analysis (pandas DataFrames over the analysis library): every frame equals the CSV that
`rlprof analyse -o DIR` (and `compare`, `cluster`) writes, number for number, on Kineto, Ascend
and rlprof inputs; corrupt traces give diagnostics, never an exception; the GIL is released
while analysing; `import rlprof` does not import pandas."""
from __future__ import annotations

import gzip
import math
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest

pd = pytest.importorskip("pandas")
np = pytest.importorskip("numpy")

import rlprof  # noqa: E402
from conftest import BUILD, ROOT  # noqa: E402

if not BUILD or not os.path.exists(os.path.join(BUILD, "python", "rlprof", "analysis.py")):
    pytest.skip("rlprof.analysis is not built", allow_module_level=True)

import rlprof.analysis as ra  # noqa: E402

FIX = os.path.join(ROOT, "test", "data", "fixtures")
GOLDEN = os.path.join(ROOT, "test", "golden", "analysis", "inputs")
KINETO_GPU = os.path.join(FIX, "kineto", "tracelens_h100_falconsai", "trace.json.gz")
# torch.profiler (CPU + CUDA) of step 2 of examples/grpo_tiny on an H100 (test/gpu/device_figures.py).
GRPO_H100 = os.path.join(FIX, "kineto", "grpo_tiny_h100_torch_step2.json.gz")
KINETO_CPU = os.path.join(FIX, "kineto", "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")
KINETO_NCCL = os.path.join(FIX, "kineto", "hta_nccl_parser_config_nccl_data.json.gz")
COMPARE_BASE = os.path.join(FIX, "kineto", "hta_trace_compare_base_base.json.gz")
COMPARE_TEST = os.path.join(FIX, "kineto", "hta_trace_compare_test_test.json.gz")
ASCEND = os.path.join(FIX, "ascend", "trace_view.json")
GRPO_RUN = os.path.join(GOLDEN, "grpo_tiny_step2")  # 4 discrete stages × 2 ranks, rlprof captures


def assert_equals_csv(df: "pd.DataFrame", path: str) -> None:
    """The frame holds exactly the CSV's columns, rows and values (reals bit for bit)."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    assert list(df.columns) == list(raw.columns), path
    assert len(df) == len(raw), path
    for c in df.columns:
        got, want = df[c], list(raw[c])
        if str(got.dtype) in ("int64", "Int64"):
            assert [None if pd.isna(v) else int(v) for v in got] == [int(w) if w else None for w in want], (path, c)
        elif str(got.dtype) == "float64":
            exp = np.array([float(w) if w else math.nan for w in want])
            np.testing.assert_array_equal(got.to_numpy(), exp, err_msg=f"{path}: {c}")
        else:
            assert ["" if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in got] == want, (path, c)


def per_input(df: "pd.DataFrame", name: str) -> "pd.DataFrame":
    return df[df["input"] == name].drop(columns="input").reset_index(drop=True)


def cli(rlprof_cli: str, *args: str) -> None:
    subprocess.run([rlprof_cli, *args], check=True, capture_output=True, text=True)


def check_run_against_cli(a: "ra.Analysis", out: str) -> None:
    """Every per-input table of every input, and the run view, equal the CLI's CSVs."""
    names = list(a.inputs.dropna(subset=["format"])["input"])
    assert names
    run_level = ("stage_across_ranks", "run_view", "run_view_long", "findings")
    assert set(run_level) <= set(a.table_names)
    per_input_tables = [t for t in a.table_names if t not in run_level]
    for name in names:
        for t in per_input_tables:
            assert_equals_csv(per_input(a.table(t), name), os.path.join(out, name, t + ".csv"))
    assert_equals_csv(a.run_view, os.path.join(out, "run_view.csv"))
    assert_equals_csv(a.findings, os.path.join(out, "findings.csv"))  # the advisor's (docs/advise.md)


@pytest.mark.parametrize("inputs", [[KINETO_GPU, KINETO_CPU], [ASCEND], [GRPO_RUN]],
                         ids=["kineto", "ascend", "rlprof_run"])
def test_frames_equal_the_csvs_of_rlprof_analyse(tmp_path, rlprof_cli, inputs):
    out = str(tmp_path / "cli")
    cli(rlprof_cli, "analyse", *inputs, "-o", out)
    a = ra.load(inputs)
    check_run_against_cli(a, out)
    # The named frames are those tables (plus a rank column, derived compute / communication).
    assert list(a.steps.columns[:2]) == ["input", "rank"]
    assert a.steps.drop(columns="rank").equals(a.table("step_trace_time"))
    sb = a.step_breakdown
    assert (sb["compute"] == sb["compute_only"] + sb["overlap"]).all()
    assert (sb["communication"] == sb["comm_only"] + sb["overlap"]).all()
    assert sb["idle"].dtype == "int64" and sb.attrs["units"]["idle"] == "ns"
    st = a.stages
    assert st.attrs["units"]["duration"] == "us" and st.attrs["units"]["duration_ns"] == "ns"
    # The table's own columns (exact start_ns included: the CSVs carry it too) are the CSV's.
    assert st[list(a.table("stage_time").columns)].equals(a.table("stage_time"))
    assert (st["duration_ns"] / 1e3 == st["duration"]).all()    # the µs column is ns / 1000
    assert (st["start_ns"] / 1e3 == st["start"]).all()
    kd = a.kernels
    assert kd[list(a.table("kernel_details").columns)].equals(a.table("kernel_details"))
    assert (kd["duration_ns"] / 1e3 == kd["Duration"]).all()
    for frame in (a.op_stats, a.comm_by_group, a.kernels, a.hta, a.gpu_timeline):
        assert "input" in frame.columns
    # summary.json is the CLI's, but for the output folder.
    import json
    with open(os.path.join(out, "summary.json")) as f:
        want = json.load(f)
    got = a.summary
    want.pop("output")
    assert got == want


def test_a_capture_recorded_by_the_runtime_matches_the_cli(tmp_path, rlprof_cli):
    cfg = {"rlprof": {"steps": [2, 3], "save_path": str(tmp_path / "caps"),
                      "roles": {"actor": {"ranks": [0], "discrete": False, "contents": ["cpu"]}}}}
    prof = rlprof.Profiler(cfg, role="actor", quiet=True)
    for s in (1, 2, 3):
        with prof.step(s):
            with rlprof.annotate("rollout_generate", role="actor"):
                sum(range(20000))
            with rlprof.annotate("actor_update", role="actor"):
                sum(range(40000))
    caps = prof.shutdown()
    assert len(caps) == 2
    run_dir = os.path.dirname(os.path.dirname(os.path.dirname(caps[0])))
    out = str(tmp_path / "cli")
    cli(rlprof_cli, "analyse", run_dir, "-o", out)
    a = ra.load(run_dir)
    check_run_against_cli(a, out)
    st = a.stages
    assert set(st["stage"]) >= {"rollout_generate", "actor_update"}
    assert sorted(set(st["step"])) == [2, 3]
    rv = a.run_view
    assert {"stage", "gap", "step_window"} <= set(rv["kind"])
    # The long form holds the wide table's per-rank values exactly (µs = ns / 1000).
    lv = a.run_view_long
    assert lv["value_ns"].dtype == "int64" and set(lv["rank"]) == {0}
    wide = rv.set_index(["step", "kind", "role", "stage"])["rank0"]
    for _, row in lv.iterrows():
        assert wide.loc[(row["step"], row["kind"], row["role"], row["stage"])] == row["value_ns"] / 1e3
    assert list(a.inputs["format"]) == ["rlprof", "rlprof"]


def test_options_mirror_the_cli(tmp_path, rlprof_cli):
    out = str(tmp_path / "cli")
    cli(rlprof_cli, "analyse", KINETO_NCCL, "-o", out, "--assign", "by_start", "--compat", "hta",
        "--jobs", "1")
    a = ra.load(KINETO_NCCL, assign="by_start", compat="hta", jobs=1)
    assert a.options == {"assign": "by_start", "compat": "hta", "step_marker": ""}
    check_run_against_cli(a, out)
    assert set(a.view("hta")) == {"hta_temporal_breakdown", "hta_idle_breakdown", "hta_kernel_type_breakdown"}
    assert list(a.view("rl")) == ["run_view"]
    # --step-marker: user ranges become the steps.
    legacy = os.path.join(GOLDEN, "torch113_legacy_gloo_ddp_rank0.json.gz")
    out2 = str(tmp_path / "cli2")
    cli(rlprof_cli, "analyse", legacy, "-o", out2, "--step-marker", "^rl/step$")
    b = ra.load(legacy, step_marker="^rl/step$")
    check_run_against_cli(b, out2)
    assert len(b.steps) > 1


def test_compare_and_cluster_equal_the_cli(tmp_path, rlprof_cli):
    out = str(tmp_path / "cmp")
    cli(rlprof_cli, "compare", COMPARE_BASE, COMPARE_TEST, "-o", out, "--top", "5")
    c = ra.compare(COMPARE_BASE, COMPARE_TEST, top=5)
    assert_equals_csv(c.steps, os.path.join(out, "compare_steps.csv"))
    assert_equals_csv(c.stages, os.path.join(out, "compare_stages.csv"))
    assert_equals_csv(c.ops, os.path.join(out, "compare_ops.csv"))
    assert len(c.ops) <= 5
    # Analysis objects are compared without analysing them again.
    base = ra.load(COMPARE_BASE)
    c2 = base.compare(ra.load(COMPARE_TEST), top=5)
    assert c2.ops.equals(c.ops) and c2.steps.equals(c.steps)

    out = str(tmp_path / "cluster")
    cli(rlprof_cli, "cluster", GRPO_RUN, "-o", out)
    k = ra.cluster(GRPO_RUN)
    assert_equals_csv(k.step_time, os.path.join(out, "cluster_step_trace_time.csv"))
    assert_equals_csv(k.balance, os.path.join(out, "cluster_balance.csv"))
    assert_equals_csv(k.slow_ranks, os.path.join(out, "slow_rank.csv"))
    assert_equals_csv(k.collectives, os.path.join(out, "collectives.csv"))
    assert set(k.step_time["rank"]) == {0, 1}


def test_a_real_h100_trace_of_the_grpo_example_has_every_device_op_torch_recorded(rlprof_cli):
    """issue 14's comparison reads torch.profiler's traces through rlprof.analysis: on a real GPU
    trace, every kernel, copy and memset torch wrote is there, with its time."""
    import json
    with gzip.open(GRPO_H100) as f:
        events = json.load(f)["traceEvents"]
    device = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    kernels = [e for e in device if e["cat"] == "kernel"]
    k = ra.load(GRPO_H100).kernels
    assert len(k) == len(device) == 3002
    assert k["duration_ns"].sum() / 1e3 == pytest.approx(sum(float(e["dur"]) for e in device), abs=0.01)
    assert set(k["Stream"]) == {f"{e['args']['device']}:{e['args']['stream']}" for e in device}
    # The step's computing time is its kernels' busy time (one stream: no overlap to remove).
    out = subprocess.run([rlprof_cli, "summary", GRPO_H100], capture_output=True, text=True, check=True).stdout
    row = next(line.split() for line in out.splitlines() if line.strip().startswith("0 "))
    assert float(row[1]) == pytest.approx(sum(float(e["dur"]) for e in kernels), abs=0.01)


def test_corrupt_and_unreadable_traces_give_diagnostics_not_exceptions(tmp_path):
    # Cut a real trace in the middle: the reader keeps what it could read and counts the rest.
    with gzip.open(KINETO_GPU, "rb") as f:
        data = f.read()
    (tmp_path / "cut.json").write_bytes(data[: len(data) * 2 // 3])
    (tmp_path / "other").mkdir()
    bad = tmp_path / "other" / "bad.json"  # named explicitly (a folder search passes over it)
    bad.write_bytes(b'this is not a trace')
    # Names that are not UTF-8: repaired and counted, never a UnicodeDecodeError.
    (tmp_path / "hostile.json").write_bytes(
        b'{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op\xff\xfe", "ts": 1, "dur": 2, '
        b'"pid": 1, "tid": 1}]}')
    a = ra.load([tmp_path / "cut.json", tmp_path / "hostile.json", bad])
    inp = a.inputs.set_index("path")
    assert len(inp) == 3, inp
    assert "not a JSON trace" in inp.loc[str(bad), "error"]
    assert pd.isna(inp.loc[str(tmp_path / "cut.json"), "error"])
    d = a.diagnostics
    run_level = d[d["input"] == ""].set_index("name")
    assert run_level.loc["unreadable_inputs", "count"] == 1
    assert run_level.loc["unreadable_inputs", "severity"] == "data_loss"
    cut = d[d["input"] == "cut.json"]
    assert len(cut) > 0 and (cut["count"] > 0).all()
    assert set(cut["severity"]) <= {"info", "warning", "error", "data_loss"}
    assert any("bad.json" in line for line in d.attrs["details"])
    # The per-input `diagnostics` table (analysis.db's) is another frame than the property.
    assert list(a.table("diagnostics").columns) == ["input", "name", "count"]
    assert "details" in a.diagnostics.attrs
    assert cut.set_index("name").loc["truncated_input", "severity"] == "data_loss"
    ops = a.op_stats
    assert len(ops[ops["input"] == "cut.json"]) > 0  # partial: what was read is analysed
    assert list(ops[ops["input"] == "hostile.json"]["name"].str[:2]) == ["op"]  # decoded, never raised
    assert d[(d["input"] == "hostile.json") & (d["name"] == "invalid_utf8_bytes")]["count"].tolist() == [2]


def test_progress_is_reported_per_input_and_a_raising_callback_does_not_stop_the_analysis():
    seen = []
    a = ra.load(GRPO_RUN, jobs=2, progress=lambda done, total: seen.append((done, total)))
    assert sorted(seen) == [(i, 8) for i in range(1, 9)]
    assert len(a.inputs) == 8

    def boom(done, total):
        raise RuntimeError("callback failed")

    hook, caught = sys.unraisablehook, []
    sys.unraisablehook = lambda u: caught.append(u.exc_value)
    try:
        b = ra.load(GRPO_RUN, progress=boom)
    finally:
        sys.unraisablehook = hook
    assert len(b.inputs) == 8 and b.inputs["error"].isna().all()
    assert len(caught) == 8 and all(isinstance(e, RuntimeError) for e in caught)


def test_usage_errors_raise():
    with pytest.raises(FileNotFoundError):
        ra.load(os.path.join(ROOT, "no", "such", "run"))
    with pytest.raises(ValueError):
        ra.load(KINETO_CPU, assign="nearest")
    with pytest.raises(ValueError):
        ra.load(KINETO_CPU, compat="nsight")
    with pytest.raises(ValueError):
        ra.load(KINETO_CPU, step_marker="(unclosed")
    with pytest.raises(ValueError):
        ra.load(KINETO_CPU, jobs=0)
    with pytest.raises(FileNotFoundError):
        ra.load(KINETO_CPU, rules="/no/such/rules.yaml")
    a = ra.load(KINETO_CPU)
    with pytest.raises(KeyError):
        a.table("nope")
    with pytest.raises(ValueError):
        a.view("nope")


def test_write_produces_the_cli_outputs(tmp_path, rlprof_cli):
    a = ra.load([KINETO_CPU, COMPARE_BASE])
    files = a.write(tmp_path / "py", title="two traces")
    assert sorted(os.path.basename(f) for f in files) == ["analysis.db", "findings.csv", "report.html",
                                                          "run_view.csv", "summary.json"]
    assert "two traces" in (tmp_path / "py" / "report.html").read_text()
    assert len(a.write(tmp_path / "noreport", report=False)) == 4
    check_run_against_cli(a, str(tmp_path / "py"))
    # A file name that is not UTF-8: analysed and written (U+FFFD in JSON), never an exception.
    odd = os.path.join(os.fsencode(str(tmp_path)), b"odd")
    os.makedirs(odd)
    shutil.copyfile(KINETO_CPU, os.path.join(odd, b"tr\xff.json.gz"))
    b = ra.load(odd)
    assert b.inputs["format"].tolist() == ["kineto"] and "\ufffd" in b.inputs["path"][0]
    b.write(os.path.join(odd, b"out"))
    assert os.path.exists(os.path.join(odd, b"out", b"summary.json"))
    (tmp_path / "file").write_text("x")
    with pytest.raises(OSError):
        a.write(tmp_path / "file" / "sub")
    with pytest.raises(ValueError):
        a.write(tmp_path / "x", export=["xml"])


def test_the_gil_is_released_while_analysing():
    """A Python thread keeps running while another analyses: the longest pause between its
    iterations is well below the one call's time (it would be all of it with the GIL held; a
    loaded machine can stall the loop for some tens of ms — the call takes ~230 ms here idle)."""
    from rlprof import _analysis
    paths = [os.fsencode(KINETO_NCCL), os.fsencode(os.path.join(FIX, "kineto", "hta_trace_diff_control_control.json.gz"))]
    _analysis.analyse(paths[:1], jobs=1)  # warm the page cache
    done = threading.Event()
    took = []

    def work():
        t0 = time.perf_counter()
        _analysis.analyse(paths, jobs=1)  # one call into C++
        took.append(time.perf_counter() - t0)
        done.set()

    worker = threading.Thread(target=work)
    worker.start()
    last, gap = time.perf_counter(), 0.0
    while not done.is_set():
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    worker.join()
    if took[0] < 0.05:
        pytest.skip(f"the analysis took {took[0]:.3f} s: too short to tell")
    assert gap < 0.6 * took[0], (gap, took[0])


def test_import_rlprof_does_not_import_pandas():
    code = ("import sys, rlprof; assert 'pandas' not in sys.modules; "
            "import rlprof.analysis; assert 'pandas' in sys.modules; "
            "assert rlprof.analysis.load is not None; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.path.join(BUILD, "python")})
    assert out.stdout.strip() == "ok"


def test_the_example_notebook_runs(tmp_path):
    ex = os.path.join(ROOT, "examples", "analysis_notebook.py")
    out = subprocess.run([sys.executable, ex, GRPO_RUN, COMPARE_BASE, COMPARE_TEST], check=True,
                         capture_output=True, text=True, cwd=str(tmp_path),
                         env={**os.environ, "PYTHONPATH": os.path.join(BUILD, "python")})
    assert "critical rank" in out.stdout


ASCEND_TEXT = os.path.join(ROOT, "test", "data", "ascend_text")


def test_ascend_text_folders_load_compare_and_cluster_like_the_cli(tmp_path, rlprof_cli):
    """torch_npu folders holding only text outputs (kernel_details.csv, communication.json):
    rlprof.analysis reads them as the CLI does; compared with the database of the same events,
    nothing differs."""
    run = os.path.join(ASCEND_TEXT, "multi_rank")
    out = str(tmp_path / "cli")
    cli(rlprof_cli, "analyse", run, "-o", out)
    a = ra.load(run)
    assert list(a.inputs["format"]) == ["ascend-text", "ascend-text"]
    assert list(a.inputs["rank"]) == [0, 1]
    check_run_against_cli(a, out)
    assert (a.steps["Computing"] > 0).all() and a.comm_by_group["ops"].sum() == 4

    out = str(tmp_path / "cluster")
    cli(rlprof_cli, "cluster", run, "-o", out)
    k = ra.cluster(a)
    assert_equals_csv(k.step_time, os.path.join(out, "cluster_step_trace_time.csv"))
    assert_equals_csv(k.collectives, os.path.join(out, "collectives.csv"))

    db = os.path.join(ROOT, "test", "data", "ascend_db", "multi_rank")
    out = str(tmp_path / "cmp")
    cli(rlprof_cli, "compare", db, run, "-o", out)
    c = ra.compare(db, run)
    assert_equals_csv(c.steps, os.path.join(out, "compare_steps.csv"))
    assert (c.steps["delta"] == 0).all(), c.steps       # every msprof column, the step window
    device = c.ops[(c.ops["type"] == "device") & (c.ops["change"] != "removed")]
    assert len(device) and (device["delta"] == 0).all()  # kernels of both: the same times
    # What the text outputs do not hold: host operators and CANN calls, memory copies.
    assert set(c.ops[c.ops["change"] == "removed"]["type"]) <= {"host", "device"}
    assert not (c.ops["change"] == "added").any()


def test_activity_lanes_are_spans_per_stream_and_thread(tmp_path):
    """load(activity=N): each CUDA stream's kernels and each host thread's outermost operators
    as at most N spans per lane; every device event is in its stream's lane exactly once (the
    spans' events add up to the stream's kernel_details rows), busy time never exceeds a span,
    and the report write() makes carries the lanes. Off by default, refused with ray=."""
    assert ra.load(KINETO_GPU).activity.empty
    a = ra.load(KINETO_GPU, activity=50)
    act = a.activity
    assert list(act.columns) == ["input", "rank", "lane", "device", "start_ns", "end_ns", "busy_ns", "events",
                                 "class", "longest", "longest_ns"]
    dev = act[act["device"] == 1]
    assert not dev.empty and not act[act["device"] == 0].empty
    assert dev.groupby("lane").size().max() <= 50
    assert (act["busy_ns"] <= act["end_ns"] - act["start_ns"]).all() and (act["busy_ns"] > 0).all()
    assert (act["longest_ns"] <= act["busy_ns"]).all()
    k = a.kernels
    per_stream = k.groupby("Stream").size()
    events = dev.groupby("lane")["events"].sum()
    assert sorted(events.tolist()) == sorted(per_stream.tolist())
    assert set(act["class"]) <= {"compute", "communication", "memcpy", "memset", "unclassified", "host"}
    a.write(tmp_path / "out")
    assert "device 0 stream 7" in (tmp_path / "out" / "report.html").read_text()   # the timeline's lanes
    with pytest.raises(ValueError):
        ra.load(KINETO_GPU, activity=-1)
    with pytest.raises(ValueError):
        ra.load(KINETO_GPU, activity=10, ray="auto")


def test_analysis_db_reads_back_every_table_with_pandas(tmp_path):
    # analysis.db stores kernel names once (kernel_details is a view over ids into `strings`):
    # what pandas reads by the table's name is the frame, columns, declared types and rows.
    import sqlite3

    a = ra.load([KINETO_GPU, COMPARE_BASE, KINETO_CPU])
    a.write(tmp_path / "o", report=False)
    con = sqlite3.connect(str(tmp_path / "o" / "analysis.db"))
    try:
        kinds = dict(con.execute("SELECT name, type FROM sqlite_master"))
        assert kinds["kernel_details"] == "view" and kinds["strings"] == "table"
        info = [(r[1], r[2]) for r in con.execute("PRAGMA table_info(kernel_details)")]
        assert info[:3] == [("input", "TEXT"), ("Step Id", "INTEGER"), ("Name", "TEXT")]
        for name in a.table_names:
            db = pd.read_sql(f'SELECT * FROM "{name}"', con)
            frame = a.table(name)
            assert list(db.columns) == list(frame.columns), name
            assert len(db) == len(frame), name
            if name == "kernel_details":
                assert len(db) > 100 and db["Name"].nunique() < len(db) / 2
            for col in frame.columns:
                x, y = db[col].tolist(), frame[col].tolist()
                for u, v in zip(x, y):
                    same = (u == v) or (pd.isna(u) and pd.isna(v))
                    assert same, (name, col, u, v)
    finally:
        con.close()
