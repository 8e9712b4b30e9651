"""Runs msprof-analyze's own step_trace_time code on an Ascend profiler database and prints the
result as JSON. Executed by python/tests/test_peers_msprof.py with the peers environment's
interpreter (.venv-peers: msprof-analyze 26.2.0 from PyPI), never imported by rlprof.

  whole DB   msprof-analyze's MsprofStepTraceTimeDBAdapter (cluster_analyse, the step_trace_time
             of a database: compute tasks ⋈ TASK, COMMUNICATION_OP, merged and overlapped by its
             RangeCaculator) → [[step, Computing, Communication(Not Overlapped), Overlapped,
             Communication, Free, Stage, Bubble, Comm(Not Overlapped and Exclude Receive),
             Preparing]] in µs.
  steps DB   per step of STEP_TIME: msprof-analyze's own step attribution (the SQL of
             cluster_time_summary's MemoryAndDispatchTimeExport: a task or HCCL operator belongs to
             the step holding the start of the CANN call that launched it), its intervals merged
             and overlapped by RangeCaculator → {step: [Computing, Communication,
             Communication(Not Overlapped), Overlapped]} in µs.
"""
import json
import sys

from msprof_analyze.cluster_analyse.analysis.msprof_step_trace_time_adapter import MsprofStepTraceTimeDBAdapter
from msprof_analyze.cluster_analyse.common_func.time_range_calculator import (CommunicationTimeRange,
                                                                             RangeCaculator)
from msprof_analyze.prof_common.constant import Constant
from msprof_analyze.prof_exports.cluster_time_summary_export import MemoryAndDispatchTimeExport


def whole(db):
    return MsprofStepTraceTimeDBAdapter({Constant.PROFILER_DB_PATH: db}).generate_step_trace_time_data()


def steps(db):
    params = {Constant.START_NS: 0, Constant.END_NS: 2 ** 63 - 1}
    df = MemoryAndDispatchTimeExport(db, "cluster_time_summary", params, step_exits=True).read_export_db()
    if df is None:
        raise SystemExit("msprof-analyze could not read " + db)
    out = {}
    for step, g in df.groupby("step"):
        comp = [RangeCaculator.generate_time_range(int(r.start), int(r.end))
                for r in g.itertuples() if r.type == 0]
        comm = [RangeCaculator.generate_time_range(int(r.start), int(r.end), class_range=CommunicationTimeRange)
                for r in g.itertuples() if r.type == 1]
        comp = RangeCaculator.merge_continuous_intervals(comp)
        comm = RangeCaculator.merge_continuous_intervals(comm)
        computing = sum(r.end_ts - r.start_ts for r in comp)
        communication = sum(r.end_ts - r.start_ts for r in comm)
        pure, _free = RangeCaculator.compute_pipeline_overlap(comm, comp)
        not_overlapped = sum(r.end_ts - r.start_ts for r in pure)
        us = Constant.NS_TO_US
        out[int(step)] = [computing / us, communication / us, not_overlapped / us,
                          (communication - not_overlapped) / us]
    return out


if __name__ == "__main__":
    mode, db = sys.argv[1], sys.argv[2]
    print(json.dumps(whole(db) if mode == "whole" else steps(db)))
