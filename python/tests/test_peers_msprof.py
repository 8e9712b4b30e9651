"""rlprof's msprof view against msprof-analyze itself, side by side (issue 11).

msprof-analyze 26.2.0 from PyPI runs in the peers environment (.venv-peers, made by scripts/setup
from scripts/peers-requirements.txt; RLPROF_SKIP_PEERS=1 skips it and these tests skip):
  - its cluster analysis itself (`python -m msprof_analyze.cluster_analyse.cluster_analysis`, what
    `msprof-analyze cluster` runs; the `msprof-analyze` command only adds a click front end) on a
    folder of two `msprof --type=db` collections in CANN's PROF_* layout: its ClusterStepTraceTime
    rows equal `rlprof cluster --json`'s cluster_step_trace_time, to the nanosecond;
and, for the databases its cluster front end does not take (torch_npu's, whose per-step numbers it
reads from torch_npu's own analysis.db), the layer that computes the numbers
(python/tests/peers/msprof_driver.py):
  - MsprofStepTraceTimeDBAdapter, msprof-analyze's step_trace_time of a profiler database, on
    every whole-trace fixture: all ten columns equal `rlprof summary --view msprof --json`, to
    the nanosecond (µs with three decimals);
  - per step of a database with STEP_TIME: msprof-analyze's own step attribution (the SQL of its
    cluster_time_summary recipe: work belongs to the step holding its CANN launch) merged and
    overlapped by its RangeCaculator, against `--assign by_launch`: Computing, Communication,
    Communication(Not Overlapped), Overlapped equal.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEERS_PY = os.path.join(ROOT, ".venv-peers", "bin", "python")
DRIVER = os.path.join(ROOT, "python", "tests", "peers", "msprof_driver.py")
DATA = os.path.join(ROOT, "test", "data", "ascend_db")

needs_peers = pytest.mark.skipif(not os.access(PEERS_PY, os.X_OK),
                                 reason=".venv-peers (msprof-analyze) is not set up: scripts/setup")

CLUSTER = "msprof_cluster"
WHOLE = [
    "one_rank/msprof_20251126094000.db",
    "msprof_cluster/PROF_000001_20251126094000123_ABCDEFGH0/msprof_20251126094000.db",
    "msprof_cluster/PROF_000002_20251126094000123_ABCDEFGH1/msprof_20251126094000.db",
    "multi_rank/node-a_41000_20251126094000123_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db",
    "multi_rank/node-a_41001_20251126094000123_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db",
]
COLUMNS = ["Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
           "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]


def ns(us: float) -> int:
    """µs (float, three decimals) → integer ns: the comparison is exact."""
    return round(us * 1000)


def peer(mode: str, db: str, tmp_path) -> object:
    # msprof-analyze opens databases read-write: give it a copy, never the repository's file.
    copy = tmp_path / os.path.basename(db)
    shutil.copyfile(os.path.join(DATA, db), copy)
    r = subprocess.run([PEERS_PY, DRIVER, mode, str(copy)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def rlprof_msprof(cli: str, path: str, *extra: str) -> list:
    r = subprocess.run([cli, "summary", os.path.join(DATA, path), "--view", "msprof", "--json", *extra],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert len(out["inputs"]) == 1, out["inputs"]
    t = out["inputs"][0]["tables"]["step_trace_time"]
    names = [c["name"] for c in t["columns"]]
    return [dict(zip(names, row)) for row in t["rows"]]


@needs_peers
@pytest.mark.parametrize("db", WHOLE)
def test_step_trace_time_of_a_database_equals_msprof_analyze(rlprof_cli, db, tmp_path):
    theirs = peer("whole", db, tmp_path)
    assert len(theirs) == 1 and theirs[0][0] is None  # one whole-trace row, no step id
    ours = rlprof_msprof(rlprof_cli, db)
    assert len(ours) == 1
    for k, col in enumerate(COLUMNS):
        assert ns(ours[0][col]) == ns(theirs[0][k + 1]), (col, ours[0][col], theirs[0][k + 1])
    assert ours[0]["Computing"] > 0 and ours[0]["Overlapped"] > 0 and ours[0]["Free"] > 0


@needs_peers
def test_cluster_step_trace_time_equals_msprof_analyze_cluster(rlprof_cli, tmp_path):
    import sqlite3
    folder = tmp_path / "cluster"
    shutil.copytree(os.path.join(DATA, CLUSTER), folder)
    # --force: skip its owner / permission checks of the (copied) files.
    r = subprocess.run([PEERS_PY, "-m", "msprof_analyze.cluster_analyse.cluster_analysis", "-d", str(folder),
                        "-m", "communication_time", "--force"], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    db = sqlite3.connect(str(folder / "cluster_analysis_output" / "cluster_analysis.db"))
    cur = db.execute("SELECT * FROM ClusterStepTraceTime WHERE type = 'rank'")
    names = [d[0] for d in cur.description]
    theirs = {int(row["index"]): row for row in (dict(zip(names, v)) for v in cur.fetchall())}
    db.close()
    assert sorted(theirs) == [0, 1]
    out = subprocess.run([rlprof_cli, "cluster", os.path.join(DATA, CLUSTER), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    t = json.loads(out.stdout)["cluster_step_trace_time"]
    cols = [c["name"] for c in t["columns"]]
    ours = {row["rank"]: row for row in (dict(zip(cols, v)) for v in t["rows"])}
    assert sorted(ours) == [0, 1]
    pairs = {"Computing": "computing", "Communication(Not Overlapped)": "communication_not_overlapped",
             "Overlapped": "overlapped", "Free": "free", "Bubble": "bubble", "Stage": "stage"}
    for rank in (0, 1):
        assert theirs[rank]["step"] is None and ours[rank]["step"] == 0  # one whole-trace row
        for mine, peer_col in pairs.items():
            assert ns(ours[rank][mine]) == ns(theirs[rank][peer_col]), (rank, mine)
    assert ours[1]["Bubble"] > 0 and ours[0]["Bubble"] == 0  # rank 1 receives


@needs_peers
def test_per_step_attribution_by_launch_equals_msprof_analyze(rlprof_cli, tmp_path):
    db = "steps/ascend_pytorch_profiler_0.db"
    theirs = {int(k): v for k, v in peer("steps", db, tmp_path).items()}
    ours = {row["Step"]: row for row in rlprof_msprof(rlprof_cli, db, "--assign", "by_launch")}
    assert sorted(theirs) == sorted(ours) == [1, 2, 3]
    for step, (computing, communication, not_overlapped, overlapped) in theirs.items():
        row = ours[step]
        assert ns(row["Computing"]) == ns(computing), step
        assert ns(row["Communication"]) == ns(communication), step
        assert ns(row["Communication(Not Overlapped)"]) == ns(not_overlapped), step
        assert ns(row["Overlapped"]) == ns(overlapped), step


@needs_peers
@pytest.mark.parametrize("db", ["corrupt/ascend_pytorch_profiler_2.db", "corrupt/ascend_pytorch_profiler_3.db"])
def test_damaged_databases_break_msprof_analyze_but_not_rlprof(rlprof_cli, db, tmp_path):
    copy = tmp_path / os.path.basename(db)
    shutil.copyfile(os.path.join(DATA, db), copy)
    r = subprocess.run([PEERS_PY, DRIVER, "whole", str(copy)], capture_output=True, text=True, timeout=120)
    assert r.returncode != 0  # msprof-analyze raises (TypeError) on both
    r = subprocess.run([rlprof_cli, "summary", os.path.join(DATA, db), "--view", "msprof", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    diag = out["inputs"][0]["diagnostics"]
    assert any(k.startswith("ascend_db_") for k in diag), diag
    assert out["inputs"][0]["tables"]["step_trace_time"]["rows"]


# --- torch_npu text folders (ASCEND_PROFILER_OUTPUT with kernel_details.csv, communication.json,
# communication_matrix.json, step_trace_time.csv; no .db, no trace_view.json): test/data/ascend_text,
# the events of the ascend_db fixtures written in that layout by its make_fixtures.py.
#   - msprof-analyze's cluster analysis in text mode (the same entry point, data type "text":
#     PytorchDataPreprocessor, StepTraceTimeAnalysis reading step_trace_time.csv,
#     CommunicationAnalysis reading communication.json) against `rlprof cluster` / `analyse`,
#     which compute everything from kernel_details.csv and communication.json;
#   - msprof-analyze's step_trace_time of the database of the same events (live, the deepest
#     layer that computes: in text mode msprof-analyze only gathers torch_npu's own CSV) against
#     `rlprof summary --view msprof` of the text folder.
TEXT = os.path.join(ROOT, "test", "data", "ascend_text")
TEXT_RANKS = ["node-a_41000_20251126094000123_ascend_pt", "node-a_41001_20251126094000123_ascend_pt"]


def msprof_cluster_text(folder, tmp_path):
    r = subprocess.run([PEERS_PY, "-m", "msprof_analyze.cluster_analyse.cluster_analysis", "-d", str(folder),
                        "-m", "communication_time", "--force"], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path)
    return r


@needs_peers
def test_cluster_of_text_folders_equals_msprof_analyze_text_mode(rlprof_cli, tmp_path):
    import csv
    folder = tmp_path / "cluster"
    shutil.copytree(os.path.join(TEXT, "multi_rank"), folder)
    r = msprof_cluster_text(folder, tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "data type: text" in r.stdout + r.stderr
    out_dir = folder / "cluster_analysis_output"
    with open(out_dir / "cluster_step_trace_time.csv") as f:
        theirs = {int(row["Index"]): row for row in csv.DictReader(f) if row["Type"] == "rank"}
    assert sorted(theirs) == [0, 1]
    out = subprocess.run([rlprof_cli, "cluster", os.path.join(TEXT, "multi_rank"), "--json"], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    t = report["cluster_step_trace_time"]
    cols = [c["name"] for c in t["columns"]]
    ours = {row["rank"]: row for row in (dict(zip(cols, v)) for v in t["rows"])}
    assert sorted(ours) == [0, 1]
    for rank in (0, 1):
        assert theirs[rank]["Step"] == "" and ours[rank]["step"] == 0  # one whole-trace row
        for col in ["Computing", "Communication(Not Overlapped)", "Overlapped", "Free", "Bubble", "Stage"]:
            assert ns(ours[rank][col]) == ns(float(theirs[rank][col])), (rank, col)
    assert ours[1]["Bubble"] > 0 and ours[0]["Bubble"] == 0  # rank 1 receives

    # Their communication analysis (cluster_communication.json): per group and rank the summed
    # elapse time of its operators ("Total Op Info@<group>") = rlprof's comm_by_group.
    comm = json.load(open(out_dir / "cluster_communication.json"))
    an = tmp_path / "analysis"
    r = subprocess.run([rlprof_cli, "analyse", os.path.join(TEXT, "multi_rank"), "-o", str(an)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    mine = {}
    for rank, name in enumerate(TEXT_RANKS):
        with open(an / name / "comm_by_group.csv") as f:
            for row in csv.DictReader(f):
                mine[(row["group"], int(row["rank"]))] = (int(row["ops"]), ns(float(row["communication"])))
    seen = 0
    for ranks, steps in comm.items():
        for op, per_rank in steps["step"].items():
            group = op.split("@")[-1]
            if op.startswith("Total Op Info@"):
                for rank, info in per_rank.items():
                    elapse_ns = round(info["Communication Time Info"]["Elapse Time(ms)"] * 1e6)
                    assert mine[(group, int(rank))][1] == elapse_ns, (group, rank)
                    seen += 1
            else:
                for rank in per_rank:
                    assert (group, int(rank)) in mine, (group, rank)
    assert seen == 4  # two groups × two ranks
    # Per collective across ranks: the longest elapse time; the start skew to their precision
    # (they write the µs start of a double, rounded to 0.1 µs).
    coll = report["collectives"]
    cols = [c["name"] for c in coll["columns"]]
    for row in (dict(zip(cols, v)) for v in coll["rows"]):
        theirs_op = comm["(0, 1)"]["step"][row["name"] + "@" + row["group"]]
        elapse = [v["Communication Time Info"]["Elapse Time(ms)"] * 1000 for v in theirs_op.values()]
        starts = [v["Communication Time Info"]["Start Timestamp(us)"] for v in theirs_op.values()]
        assert ns(row["max_duration"]) == round(max(elapse) * 1000)
        assert abs(row["start_skew"] - (max(starts) - min(starts))) <= 0.5
    # Their communication groups (communication_group.json) are rlprof's groups with their ranks.
    groups = json.load(open(out_dir / "communication_group.json"))["comm_group_parallel_info"]
    assert {(g["group_name"], tuple(g["rank_set"])) for g in groups} == \
        {(g, tuple(sorted(r for (g2, r) in mine if g2 == g))) for (g, _) in mine}


@needs_peers
@pytest.mark.parametrize("rank", [0, 1])
def test_text_folder_equals_msprof_analyze_on_the_database_of_the_same_events(rlprof_cli, rank, tmp_path):
    name = TEXT_RANKS[rank]
    theirs = peer("whole", f"multi_rank/{name}/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_{rank}.db", tmp_path)
    r = subprocess.run([rlprof_cli, "summary", os.path.join(TEXT, "multi_rank", name), "--view", "msprof", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["inputs"][0]
    assert out["format"] == "ascend-text" and not out["diagnostics"]
    t = out["tables"]["step_trace_time"]
    ours = dict(zip([c["name"] for c in t["columns"]], t["rows"][0]))
    for k, col in enumerate(COLUMNS):
        assert ns(ours[col]) == ns(theirs[0][k + 1]), (col, ours[col], theirs[0][k + 1])


@needs_peers
def test_text_steps_equal_msprof_analyze_by_launch_on_the_database(rlprof_cli, tmp_path):
    theirs = {int(k): v for k, v in peer("steps", "steps/ascend_pytorch_profiler_0.db", tmp_path).items()}
    r = subprocess.run([rlprof_cli, "summary", os.path.join(TEXT, "steps"), "--view", "msprof", "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    t = json.loads(r.stdout)["inputs"][0]["tables"]["step_trace_time"]
    names = [c["name"] for c in t["columns"]]
    ours = {row["Step"]: row for row in (dict(zip(names, v)) for v in t["rows"])}
    assert sorted(theirs) == sorted(ours) == [1, 2, 3]
    for step, (computing, communication, not_overlapped, overlapped) in theirs.items():
        assert ns(ours[step]["Computing"]) == ns(computing), step
        assert ns(ours[step]["Communication"]) == ns(communication), step
        assert ns(ours[step]["Communication(Not Overlapped)"]) == ns(not_overlapped), step
        assert ns(ours[step]["Overlapped"]) == ns(overlapped), step


@needs_peers
def test_a_cut_communication_json_breaks_msprof_analyze_but_not_rlprof(rlprof_cli, tmp_path):
    folder = tmp_path / "cluster"
    shutil.copytree(os.path.join(TEXT, "damaged"), folder)
    shutil.copytree(os.path.join(TEXT, "multi_rank", TEXT_RANKS[1]), folder / TEXT_RANKS[1])
    r = msprof_cluster_text(folder, tmp_path)
    assert r.returncode != 0 and "communication.json" in r.stderr  # JSONDecodeError → RuntimeError
    out = subprocess.run([rlprof_cli, "cluster", str(folder), "--json"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert len(report["cluster_step_trace_time"]["rows"]) == 2
    assert {"ascend_text_bad_row", "ascend_text_corrupt"} <= set(report["diagnostics"]), report["diagnostics"]
