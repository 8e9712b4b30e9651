#!/usr/bin/env python3
"""Builds the Ascend profiler database fixtures (test/data/ascend_db/, see PROVENANCE.md).

The tables and columns follow the schema msprof-analyze 26.2.0 queries (its cluster_analyse
step_trace_time adapter, cluster_time_summary exports and compare_tools DB parser) and the CANN
documentation of msprof_{timestamp}.db / ascend_pytorch_profiler_{rank}.db: times are int64 ns of
local Unix time, every name is an id into STRING_IDS. The contents are synthetic but shaped like a
torch_npu run: PyTorch operators (PYTORCH_API) launch CANN calls (CANN_API, joined through
CONNECTION_IDS) that put tasks on device streams (TASK; compute tasks in COMPUTE_TASK_INFO,
HCCL tasks in COMMUNICATION_TASK_INFO) and HCCL operators (COMMUNICATION_OP); the device lags the
host by a growing queue. Deterministic: run it again and the files are byte-identical.

  python3 test/data/ascend_db/make_fixtures.py      # rewrites the fixtures beside this script
"""
import json
import os
import random
import shutil
import sqlite3
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1764150000_000_000_000  # 2025-11-26 09:40 UTC, ns

SCHEMA = {
    "STRING_IDS": "id INTEGER PRIMARY KEY, value TEXT",
    "ENUM_API_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "ENUM_HCCL_DATA_TYPE": "id INTEGER PRIMARY KEY, name TEXT",
    "META_DATA": "name TEXT, value TEXT",
    "SESSION_TIME_INFO": "startTimeNs INTEGER, endTimeNs INTEGER",
    "HOST_INFO": "hostUid TEXT, hostName TEXT",
    "NPU_INFO": "id INTEGER, name TEXT",
    "RANK_DEVICE_MAP": "rankId INTEGER, deviceId INTEGER",
    "PYTORCH_API": "startNs INTEGER, endNs INTEGER, globalTid INTEGER, connectionId INTEGER, "
                   "name INTEGER, sequenceNumber INTEGER, fwdThreadId INTEGER, inputDtypes INTEGER, "
                   "inputShapes INTEGER, callchainId INTEGER, type INTEGER",
    "CONNECTION_IDS": "id INTEGER, connectionId INTEGER",
    "CANN_API": "startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER, "
                "connectionId INTEGER PRIMARY KEY, name INTEGER",
    "TASK": "startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER, "
            "globalTaskId INTEGER PRIMARY KEY, globalPid INTEGER, taskType INTEGER, contextId INTEGER, "
            "streamId INTEGER, taskId INTEGER, modelId INTEGER",
    "COMPUTE_TASK_INFO": "name INTEGER, globalTaskId INTEGER PRIMARY KEY, blockDim INTEGER, "
                         "mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER, "
                         "inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, "
                         "outputDataTypes INTEGER, outputShapes INTEGER, attrInfo INTEGER, "
                         "opState INTEGER, hf32Eligible INTEGER",
    "COMMUNICATION_OP": "opName INTEGER, startNs INTEGER, endNs INTEGER, connectionId INTEGER, "
                        "groupName INTEGER, opId INTEGER PRIMARY KEY, relay INTEGER, retry INTEGER, "
                        "dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, waitNs INTEGER",
    "COMMUNICATION_TASK_INFO": "name INTEGER, globalTaskId INTEGER, taskType INTEGER, planeId INTEGER, "
                               "groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER, "
                               "dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, "
                               "linkType INTEGER, opId INTEGER, isMaster INTEGER, bandwidth NUMERIC",
    "STEP_TIME": "id INTEGER, startNs INTEGER, endNs INTEGER",
    "MSTX_EVENTS": "startNs INTEGER, endNs INTEGER, eventType INTEGER, rangeId INTEGER, "
                   "category INTEGER, message INTEGER, globalTid INTEGER, endGlobalTid INTEGER, "
                   "domainId INTEGER, connectionId INTEGER",
}
API_TYPES = {20000: "acl", 15000: "model", 10000: "node", 5500: "communication", 5000: "runtime",
             50001: "op", 50002: "queue", 50003: "trace", 50004: "mstx"}
HCCL_TYPES = {0: "INT8", 1: "INT16", 2: "INT32", 3: "FP16", 4: "FP32", 5: "INT64", 6: "UINT64",
              7: "UINT8", 8: "UINT16", 9: "UINT32", 10: "FP64", 11: "BFP16", 12: "INT128"}
GROUP = "10.170.22.9%enp189s0f0_60000_0_1764149999123456"
PP_GROUP = "10.170.22.9%enp189s0f0_60001_0_1764149999123999"


class Db:
    def __init__(self, path, tables):
        if os.path.exists(path):
            os.remove(path)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.path = path
        self.c = sqlite3.connect(path)
        for t in tables:
            self.c.execute(f"CREATE TABLE {t} ({SCHEMA[t]})")
        if "ENUM_API_TYPE" in tables:
            self.c.executemany("INSERT INTO ENUM_API_TYPE VALUES (?,?)", sorted(API_TYPES.items()))
        if "ENUM_HCCL_DATA_TYPE" in tables:
            self.c.executemany("INSERT INTO ENUM_HCCL_DATA_TYPE VALUES (?,?)", sorted(HCCL_TYPES.items()))
        self.ids = {}
        self.task_id = 0
        self.conn_id = 0

    def s(self, text):
        if text not in self.ids:
            self.ids[text] = len(self.ids)
            self.c.execute("INSERT INTO STRING_IDS VALUES (?,?)", (self.ids[text], text))
        return self.ids[text]

    def row(self, table, *values):
        self.c.execute(f"INSERT INTO {table} VALUES ({','.join('?' * len(values))})", values)

    def close(self):
        self.c.commit()
        self.c.execute("VACUUM")
        self.c.close()


ALL = list(SCHEMA)
MSPROF = [t for t in ALL if t not in ("PYTORCH_API", "CONNECTION_IDS", "STEP_TIME")]

# (PyTorch operator, CANN call, device op, task type, op type, shapes, mean device µs)
OPS = [
    ("aten::mm", "aclnnMm", "MatMulV2", "AI_CORE", "MatMulV2", "4096,4096;4096,11008", 180),
    ("aten::add", "aclnnAdd", "Add", "AI_VECTOR_CORE", "Add", "4096,11008;4096,11008", 35),
    ("aten::gelu", "aclnnGelu", "Gelu", "AI_VECTOR_CORE", "Gelu", "4096,11008", 40),
    ("npu::npu_fusion_attention", "aclnnFlashAttentionScore", "FlashAttentionScore", "MIX_AIC",
     "FlashAttentionScore", "1,32,4096,128", 260),
    ("aten::nonzero", "aclnnNonzero", "NonZero", "AI_CPU", "NonZero", "4096", 55),
]


class Rank:
    """One rank's host thread and device: emits operators, launches and device work."""

    def __init__(self, db, rank, seed, pytorch=True):
        self.db, self.rank, self.pytorch = db, rank, pytorch
        self.rnd = random.Random(seed)
        self.pid = 41000 + rank
        self.gtid = (self.pid << 32) | (self.pid + 7)
        self.host = T0 + 2_000_000 + rank * 3_100  # ns; ranks are a little apart
        self.dev = self.host + 40_000                # device queue: the device runs behind
        self.seq = 0
        self.op_index = {}  # per group: HCCL names an operator by its index in the group

    def us(self, mean):
        return int(mean * 1000 * self.rnd.uniform(0.85, 1.15))

    def api(self, name, dur, api_type=10000):
        """A CANN call at the host's time; the host thread is back when it returns."""
        self.db.conn_id += 1
        cid = self.db.conn_id
        self.db.row("CANN_API", self.host, self.host + dur, api_type, self.gtid, cid, self.db.s(name))
        self.api_end = self.host + dur
        return cid

    def task(self, cid, start, end, stream, task_type):
        self.db.task_id += 1
        g = self.db.task_id
        self.db.row("TASK", start, end, self.rank, cid, g, self.pid, self.db.s(task_type), 0, stream,
                    g % 65536, 4294967295)
        return g

    def torch_op(self, name, shapes, body):
        """A PyTorch operator around the CANN calls `body` makes (connection ids joined)."""
        start = self.host
        self.host += self.us(6)
        first = self.db.conn_id + 1
        body()
        self.host += self.us(4)
        if self.pytorch:
            self.seq += 1
            link = self.seq + 100000 * (self.rank + 1)
            for cid in range(first, self.db.conn_id + 1):
                self.db.row("CONNECTION_IDS", link, cid)
            self.db.row("PYTORCH_API", start, self.host, self.gtid, link, self.db.s(name), self.seq,
                        0, self.db.s("BFloat16;BFloat16"), self.db.s(shapes), None, 50001)

    def compute(self, k):
        torch, cann, op, ttype, optype, shapes, mean = OPS[k]

        def body():
            cid = self.api(cann, self.us(9))
            start = max(self.dev, self.host + 5_000)
            end = start + self.us(mean)
            g = self.task(cid, start, end, 2, ttype)
            self.db.row("COMPUTE_TASK_INFO", self.db.s(op), g, 24, 0, self.db.s(ttype), self.db.s(optype),
                        self.db.s("ND;ND"), self.db.s("DT_BF16;DT_BF16"), self.db.s(shapes), self.db.s("ND"),
                        self.db.s("DT_BF16"), self.db.s(shapes.split(";")[0]), None, self.db.s("static"), 0)
            self.dev = end + self.us(2)
            self.host = self.api_end
        self.torch_op(torch, shapes, body)

    def memcpy(self, size):
        def body():
            cid = self.api("aclrtMemcpyAsync", self.us(12), 5000)
            start = max(self.dev, self.host + 4_000)
            end = start + size // 20  # ~20 GB/s
            self.task(cid, start, end, 2, "MEMCPY_ASYNC")
            self.dev = end + self.us(1)
            self.host = self.api_end
        self.torch_op("aten::copy_", str(size // 2), body)

    def hccl(self, op_type, group, count, overlap_kernels=0, torch_name="c10d::allreduce_"):
        """An HCCL operator on the HCCL stream; `overlap_kernels` compute ops run beside it."""
        state = {}

        def body():
            cid = self.api("HcclAllReduce" if "allReduce" in op_type else
                           "HcclSend" if "send" in op_type else "HcclRecv", self.us(15), 5500)
            start = max(self.dev, self.host + 6_000)
            dur = self.us(120 if "allReduce" in op_type else 90)
            end = start + dur
            n = self.op_index[group] = self.op_index.get(group, 0) + 1
            self.db.row("COMMUNICATION_OP", self.db.s(f"{op_type}_{n}_0_1"), start, end, cid,
                        self.db.s(group), cid, 0, 0, 11, self.db.s("MESH-RING"), count,
                        self.db.s(op_type), 0)
            # The HCCL tasks that make it up, on the communication stream.
            t = start
            for name, ttype, frac in (("Notify_Wait", "NOTIFY_WAIT", 0.3), ("Memcpy", "SDMA", 0.4),
                                      ("Reduce_Inline", "REDUCE_INLINE", 0.2), ("Notify_Record", "NOTIFY_RECORD", 0.1)):
                e = t + int(dur * frac)
                g = self.task(cid, t, e, 8, ttype)
                self.db.row("COMMUNICATION_TASK_INFO", self.db.s(name), g, self.db.s(ttype), 0, self.db.s(group),
                            1, 0, self.rank, 1 - self.rank, 0, count * 2, 11, 0, cid, 1, 18.5)
                t = e
            self.host = self.api_end
            state["start"], state["end"] = start, end
        self.torch_op(torch_name, str(count), body)
        if overlap_kernels:
            # Compute launched right after runs beside the collective on the compute stream.
            self.dev = state["start"] + self.us(10)
            for k in range(overlap_kernels):
                self.compute(k % 2)
        self.dev = max(self.dev, state["end"] + self.us(3))

    def gap(self, us):
        self.host += us * 1000

    def idle(self, us):
        self.dev += us * 1000


def step_body(r, pp):
    """One training step: H2D copy, layers, a gradient all-reduce overlapping the tail."""
    r.memcpy(2_000_000)
    for layer in range(3):
        r.compute(3)
        r.compute(0)
        r.compute(2)
        r.compute(1)
        if layer == 1:
            r.compute(4)
    if pp == "send":
        r.hccl("hcom_send_", PP_GROUP, 262144, torch_name="c10d::send")
    elif pp == "recv":
        r.idle(60)
        r.hccl("hcom_receive_", PP_GROUP, 262144, torch_name="c10d::recv_")
    r.compute(0)
    r.hccl("hcom_allReduce_", GROUP, 8388608, overlap_kernels=3)
    r.idle(35)
    r.compute(1)


def common_rows(db, rank, host_name, world):
    db.row("META_DATA", "SCHEMA_VERSION", "1.1.3")
    db.row("META_DATA", "distributed_args",
           json.dumps({"world_size": world, "rank": rank, "tensor_model_parallel_size": 1,
                       "pipeline_model_parallel_size": world, "data_parallel_size": 1}))
    db.row("HOST_INFO", "a3f09c1e", host_name)
    db.row("NPU_INFO", rank, "Ascend910B2")
    db.row("RANK_DEVICE_MAP", rank, rank)


def make_rank_db(path, rank, world, steps, seed, tables=ALL, step_table=True, pp=None, mstx=False):
    db = Db(path, tables)
    pytorch = "PYTORCH_API" in tables
    r = Rank(db, rank, seed, pytorch=pytorch)
    common_rows(db, rank, "node-a" if rank < 8 else "node-b", world)
    for n in range(1, steps + 1):
        h0 = r.host
        r.gap(3)
        s0 = r.host
        step_body(r, pp)
        if mstx:
            # MindSpeed-RL marks its stages with mstx ranges (eventType 2 = start/end range).
            db.row("MSTX_EVENTS", s0, r.host, 2, n, None, db.s("actor_update"), r.gtid, r.gtid, 0, None)
        r.gap(30)
        h1 = r.host
        if steps > 1 or step_table:
            if pytorch:
                db.row("PYTORCH_API", h0, h1, r.gtid, None, db.s(f"ProfilerStep#{n}"), None, 0, None, None,
                       None, 50003)
            if step_table:
                db.row("STEP_TIME", n, h0, h1)
        r.gap(200)
    db.row("SESSION_TIME_INFO", T0, r.host + 1_000_000)
    db.close()


def main():
    out = HERE
    for d in ("one_rank", "multi_rank", "msprof_cluster", "steps", "corrupt", "folder"):
        shutil.rmtree(os.path.join(out, d), ignore_errors=True)
    # 1. msprof --type=db of one process, no PyTorch layer and no steps (whole trace).
    make_rank_db(os.path.join(out, "one_rank", "msprof_20251126094000.db"), 0, 1, 2, seed=11,
                 tables=MSPROF, step_table=False)
    # 2. Two pipeline ranks of a torch_npu run (profile_export_type: db), communication on both,
    #    in the ASCEND_PROFILER_OUTPUT layout with profiler_info_{rank}.json beside it.
    for rank, pp in ((0, "send"), (1, "recv")):
        root = os.path.join(out, "multi_rank", f"node-a_{41000 + rank}_20251126094000123_ascend_pt")
        make_rank_db(os.path.join(root, "ASCEND_PROFILER_OUTPUT", f"ascend_pytorch_profiler_{rank}.db"),
                     rank, 2, 1, seed=20 + rank, step_table=False, pp=pp)
        with open(os.path.join(root, f"profiler_info_{rank}.json"), "w") as f:
            json.dump({"config": {"common_config": {"activities": ["CPU", "NPU"]}, "experimental_config":
                       {"export_type": ["db"]}}, "start_info": {"collectionTimeBegin": T0 // 1000},
                       "end_info": {}, "torch_npu_version": "2.7.1", "rank_id": rank}, f, indent=1)
    # 2b. The same two ranks as `msprof --type=db` collections (no PyTorch layer), in CANN's
    #     layout: PROF_*/msprof_{timestamp}.db with device_{id}/info.json.{id} holding the rank,
    #     which msprof-analyze's cluster analysis reads as it is.
    for rank, pp in ((0, "send"), (1, "recv")):
        root = os.path.join(out, "msprof_cluster", f"PROF_00000{rank + 1}_20251126094000123_ABCDEFGH{rank}")
        make_rank_db(os.path.join(root, "msprof_20251126094000.db"), rank, 2, 1, seed=40 + rank,
                     tables=MSPROF, step_table=False, pp=pp)
        os.makedirs(os.path.join(root, f"device_{rank}"))
        with open(os.path.join(root, f"device_{rank}", f"info.json.{rank}"), "w") as f:
            json.dump({"rank_id": rank, "hostUid": "a3f09c1e", "hostname": "node-a", "devices": str(rank),
                       "platform_version": "5"}, f, indent=1)
    # 3. Three steps (STEP_TIME and ProfilerStep#N), an mstx stage range.
    make_rank_db(os.path.join(out, "steps", "ascend_pytorch_profiler_0.db"), 0, 1, 3, seed=31, mstx=True)
    # 4. Corrupt inputs: a truncated copy of (3) (a killed writer) and one with broken rows.
    src = os.path.join(out, "steps", "ascend_pytorch_profiler_0.db")
    os.makedirs(os.path.join(out, "corrupt"), exist_ok=True)
    data = open(src, "rb").read()
    with open(os.path.join(out, "corrupt", "ascend_pytorch_profiler_2.db"), "wb") as f:
        # Cut in the middle of the 16th 4 KiB page: TASK, COMPUTE_TASK_INFO and COMMUNICATION_OP
        # survive, the HCCL task details, STEP_TIME and MSTX_EVENTS behind them do not.
        f.write(data[: 15 * 4096 + 1000])
    bad = os.path.join(out, "corrupt", "ascend_pytorch_profiler_3.db")
    shutil.copyfile(src, bad)
    c = sqlite3.connect(bad)
    c.execute("UPDATE TASK SET endNs = startNs - 5000 WHERE globalTaskId = 3")     # ends before it starts
    c.execute("UPDATE TASK SET startNs = NULL WHERE globalTaskId = 5")             # no start
    c.execute("UPDATE COMPUTE_TASK_INFO SET name = 999999 WHERE globalTaskId = 7")  # dangling string id
    c.execute("UPDATE COMMUNICATION_OP SET endNs = NULL WHERE opId = (SELECT MIN(opId) FROM COMMUNICATION_OP)")
    c.execute("DROP TABLE CANN_API")                                               # launches lost
    c.commit()
    c.execute("VACUUM")
    c.close()
    # 5. The text layout of a torch_npu run (ASCEND_PROFILER_OUTPUT with trace_view.json,
    #    kernel_details.csv, ...): copied from the real sample in test/data/fixtures/ascend.
    fx = os.path.join(out, "..", "fixtures", "ascend")
    root = os.path.join(out, "folder", "worker0_12345_20251126094000123_ascend_pt")
    os.makedirs(os.path.join(root, "ASCEND_PROFILER_OUTPUT"))
    for n in ("trace_view.json", "kernel_details.csv"):  # links, not copies: one file in the repository
        os.symlink(os.path.relpath(os.path.join(fx, n), os.path.join(root, "ASCEND_PROFILER_OUTPUT")),
                   os.path.join(root, "ASCEND_PROFILER_OUTPUT", n))
    with open(os.path.join(root, "profiler_info_5.json"), "w") as f:
        json.dump({"rank_id": 5, "torch_npu_version": "2.7.1"}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
