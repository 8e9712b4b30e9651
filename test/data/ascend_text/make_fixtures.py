#!/usr/bin/env python3
"""Builds the torch_npu text-layout fixtures (test/data/ascend_text/, see PROVENANCE.md).

Each fixture is the `ASCEND_PROFILER_OUTPUT` text layout that torch_npu writes with
`export_type: text` (trace_view.json left out, as users delete it to save space) for the SAME
events as a database fixture of test/data/ascend_db (made by its make_fixtures.py): the device
work of the database written as torch_npu's text files, so that rlprof's result on the text
folder can be checked against msprof-analyze's on the database.

  kernel_details.csv        TASK ⋈ COMPUTE_TASK_INFO, one row per compute task, torch_npu's
                            columns (the set msprof-analyze 26.2.0's KernelDetailsBean and
                            advisor CsvTitleV2 read, and the real sample in
                            test/data/fixtures/ascend/kernel_details.csv): "Start Time(us)" as a
                            quoted string with a trailing tab, µs with three decimals; "Step Id"
                            is the step holding the CANN launch (omitted without steps)
  communication.json        {"step<N>"|"step": {"collective"|"p2p": {"<opName>@<group>":
                            {"Communication Time Info": {...}, "Communication Bandwidth Info":
                            {...}}, "Total Op Info": {...}}}} (the layout of torch_npu's
                            CommunicationParser) from COMMUNICATION_OP / COMMUNICATION_TASK_INFO; times are
                            written as exact decimal text (see PROVENANCE.md for the double-rounded
                            variant)
  communication_matrix.json per step and op, "src-dst" links with transport, size and time
  step_trace_time.csv       the whole-trace row from msprof-analyze's own
                            MsprofStepTraceTimeDBAdapter run on the database; per-step rows from
                            its by-launch attribution (python/tests/peers/msprof_driver.py steps)
  profiler_info_{rank}.json beside ASCEND_PROFILER_OUTPUT (the rank msprof-analyze reads)

Needs msprof-analyze (the project's peers venv):
  .venv-peers/bin/python test/data/ascend_text/make_fixtures.py
Deterministic: run it again and the files are byte-identical.
"""
import csv
import json
import os
import shutil
import sqlite3
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DB = os.path.join(HERE, "..", "ascend_db")
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "python", "tests", "peers"))

KERNEL_COLUMNS = [
    "Step Id", "Model ID", "Task ID", "Stream ID", "Name", "Type", "OP State", "Accelerator Core",
    "Start Time(us)", "Duration(us)", "Wait Time(us)", "Block Dim", "Mix Block Dim", "HF32 Eligible",
    "Input Shapes", "Input Data Types", "Input Formats", "Output Shapes", "Output Data Types",
    "Output Formats", "Context ID", "aicore_time(us)", "aiv_time(us)"]
STEP_COLUMNS = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing"]
P2P = ("hcom_send", "hcom_receive", "hcom_batchsendrecv")


def us(ns):
    """int ns → µs text with three decimals, exact."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    return f"{sign}{ns // 1000}.{ns % 1000:03d}"


def ms(ns):
    """int ns → ms text with six decimals, exact."""
    return f"{ns // 1_000_000}.{ns % 1_000_000:06d}"


class Source:
    """The events of one database fixture."""

    def __init__(self, path):
        self.c = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        self.s = dict(self.c.execute("SELECT id, value FROM STRING_IDS"))
        self.steps = self.c.execute("SELECT id, startNs, endNs FROM STEP_TIME ORDER BY id").fetchall() \
            if self.has("STEP_TIME") else []
        self.launch = dict(self.c.execute("SELECT connectionId, startNs FROM CANN_API"))

    def has(self, table):
        return self.c.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (table,)).fetchone() is not None

    def step_of(self, connection):
        """msprof-analyze's attribution: the step whose window holds the CANN launch's start."""
        t = self.launch.get(connection)
        for n, s, e in self.steps:
            if t is not None and s <= t <= e:
                return n
        return None

    def kernels(self):
        rows = self.c.execute(
            "SELECT t.startNs, t.endNs, t.streamId, t.taskId, t.modelId, t.connectionId, t.contextId, i.name, "
            "i.opType, i.opState, i.taskType, i.blockDim, i.mixBlockDim, i.hf32Eligible, i.inputShapes, "
            "i.inputDataTypes, i.inputFormats, i.outputShapes, i.outputDataTypes, i.outputFormats "
            "FROM TASK t JOIN COMPUTE_TASK_INFO i ON t.globalTaskId = i.globalTaskId "
            "ORDER BY t.startNs, t.globalTaskId").fetchall()
        out, last_end = [], {}
        for (s, e, stream, task, model, conn, ctx, name, optype, state, ttype, bd, mbd, hf32,
             ish, idt, ifm, osh, odt, ofm) in rows:
            wait = max(0, s - last_end[stream]) if stream in last_end else 0
            last_end[stream] = e
            core = self.s[ttype]
            out.append({
                "Step Id": self.step_of(conn), "Model ID": model, "Task ID": task, "Stream ID": stream,
                "Name": self.s[name], "Type": self.s[optype], "OP State": self.s[state],
                "Accelerator Core": core, "Start Time(us)": us(s) + "\t", "Duration(us)": us(e - s),
                "Wait Time(us)": us(wait), "Block Dim": bd, "Mix Block Dim": mbd,
                "HF32 Eligible": "YES" if hf32 else "NO", "Input Shapes": f'"{self.s[ish]}"',
                "Input Data Types": self.s[idt], "Input Formats": self.s[ifm],
                "Output Shapes": f'"{self.s[osh]}"', "Output Data Types": self.s[odt],
                "Output Formats": self.s[ofm], "Context ID": "N/A" if not ctx else ctx,
                "aicore_time(us)": us(e - s) if core in ("AI_CORE", "MIX_AIC") else "0",
                "aiv_time(us)": us(e - s) if core in ("AI_VECTOR_CORE", "MIX_AIV") else "0"})
        return out

    def comm_ops(self):
        ops = self.c.execute(
            "SELECT opId, opName, startNs, endNs, connectionId, groupName, count, opType, waitNs "
            "FROM COMMUNICATION_OP ORDER BY startNs").fetchall()
        tasks = {}
        for op, size, tt, src, dst, bw, s, e in self.c.execute(
                "SELECT i.opId, i.size, i.taskType, i.srcRank, i.dstRank, i.bandwidth, t.startNs, t.endNs "
                "FROM COMMUNICATION_TASK_INFO i JOIN TASK t ON t.globalTaskId = i.globalTaskId"):
            tasks.setdefault(op, []).append((size, self.s[tt], src, dst, bw, s, e))
        out = []
        for op, name, s, e, conn, group, count, optype, wait in ops:
            out.append({"name": f"{self.s[name]}@{self.s[group]}", "type": self.s[optype], "start": s,
                        "end": e, "step": self.step_of(conn), "bytes": int(count) * 2,  # BF16
                        "wait": wait or 0, "tasks": tasks.get(op, [])})
        return out


def write_kernels(path, rows, with_step):
    cols = KERNEL_COLUMNS if with_step else KERNEL_COLUMNS[1:]
    def cell(v):
        # Quoted when it holds a comma, a quote or a tab (torch_npu quotes its tab-ended start
        # times, "1764150000002141.079\t"); shapes come pre-quoted ("4096,4096" → """4096,4096""").
        v = "" if v is None else str(v)
        return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in ',"\t') else v
    with open(path, "w", newline="") as f:
        f.write(",".join(cols) + "\n")
        for r in rows:
            f.write(",".join(cell(r[c]) for c in cols) + "\n")


def step_key(step):
    return "step" if step is None else f"step{step}"


def communication_json(ops):
    """Exact decimal text, written by hand: json.dumps would round the µs start to a double."""
    steps = {}
    for o in ops:
        kind = "p2p" if o["type"].startswith(P2P) else "collective"
        steps.setdefault(step_key(o["step"]), {"collective": {}, "p2p": {}})[kind][o["name"]] = o
    parts = []
    for sk, kinds in steps.items():
        kp = []
        for kind in ("collective", "p2p"):
            op_parts = []
            for name, o in kinds[kind].items():
                dur = o["end"] - o["start"]
                transit = sum(t[6] - t[5] for t in o["tasks"] if t[1] == "SDMA")
                wait = sum(t[6] - t[5] for t in o["tasks"] if t[1] == "NOTIFY_WAIT")
                size_mb = o["bytes"] / 1e6
                bw = round(size_mb / (transit / 1e6), 4)  # MB per ms = GB/s if transit else 0
                ratio = round(wait / (wait + transit), 4) if wait + transit else 0
                time_info = (f'"Start Timestamp(us)": {us(o["start"])}, "Elapse Time(ms)": {ms(dur)}, '
                             f'"Transit Time(ms)": {ms(transit)}, "Wait Time(ms)": {ms(wait)}, '
                             f'"Synchronization Time(ms)": {ms(wait)}, "Idle Time(ms)": {ms(dur - transit - wait)}, '
                             f'"Wait Time Ratio": {ratio}, "Synchronization Time Ratio": {ratio}')
                link = (f'"Transit Size(MB)": {size_mb!r}, "Transit Time(ms)": {ms(transit)}, "Bandwidth(GB/s)": {bw}, '
                        f'"Large Packet Ratio": 0.0, "Size Distribution": {{"{size_mb!r}": [1, {ms(transit)}]}}')
                empty = ('"Transit Size(MB)": 0, "Transit Time(ms)": 0, "Bandwidth(GB/s)": 0, '
                         '"Large Packet Ratio": 0, "Size Distribution": {}')
                bw_info = f'"RDMA": {{{empty}}}, "HCCS": {{{link}}}, "PCIE": {{{empty}}}, "SDMA": {{{link}}}'
                op_parts.append(f'{json.dumps(name)}: {{"Communication Time Info": {{{time_info}}}, '
                                f'"Communication Bandwidth Info": {{{bw_info}}}}}')
            if kinds[kind]:
                # torch_npu appends the kind's totals (times summed, no start): readers skip it.
                ops_k = list(kinds[kind].values())
                total = sum(o["end"] - o["start"] for o in ops_k)
                size = sum(o["bytes"] for o in ops_k) / 1e6
                op_parts.append(f'"Total Op Info": {{"Communication Time Info": {{"Elapse Time(ms)": {ms(total)}}}, '
                                f'"Communication Bandwidth Info": {{"SDMA": {{"Transit Size(MB)": {size!r}}}}}}}')
            kp.append(f'"{kind}": {{' + ", ".join(op_parts) + "}")
        parts.append(f'{json.dumps(sk)}: {{' + ", ".join(kp) + "}")
    return "{" + ",\n".join(parts) + "}\n"


def communication_matrix(ops, rank):
    out = {}
    for o in ops:
        kind = "p2p" if o["type"].startswith(P2P) else "collective"
        links = out.setdefault(step_key(o["step"]), {"collective": {}, "p2p": {}})[kind].setdefault(o["name"], {})
        for size, tt, src, dst, bw, s, e in o["tasks"]:
            if tt != "SDMA":
                continue
            links[f"{src}-{dst}"] = {"Transport Type": "HCCS", "Transit Size(MB)": size / 1e6,
                                     "Transit Time(ms)": (e - s) / 1e6, "Bandwidth(GB/s)": bw,
                                     "op_name": o["name"].split("@")[0]}
    return out


def step_trace_rows(db_path):
    """msprof-analyze's numbers for the database of the same events (run on a copy: it opens it
    read-write)."""
    import msprof_driver
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(db_path))
        shutil.copyfile(db_path, copy)
        whole = msprof_driver.whole(copy)
        per_step = msprof_driver.steps(copy) if Source(db_path).steps else {}
    return whole, per_step


def step_trace_csv(path, src, db_path, kernels, ops):
    whole, per_step = step_trace_rows(db_path)
    rows = []
    if not per_step:
        rows.append(["" if whole[0][0] is None else whole[0][0]] + [round(v, 3) for v in whole[0][1:]])
    else:
        # Computing, Communication, Not Overlapped, Overlapped from msprof-analyze's by-launch
        # attribution; Stage is the step's device span, Free what it leaves, Bubble its receives.
        for step, (computing, communication, not_overlapped, overlapped) in sorted(per_step.items()):
            mine = [(int(k["Start Time(us)"].replace(".", "").strip()),
                     int(k["Duration(us)"].replace(".", ""))) for k in kernels if k["Step Id"] == step]
            spans = [(s, s + d) for s, d in mine] + [(o["start"], o["end"]) for o in ops if o["step"] == step]
            stage = (max(e for _, e in spans) - min(s for s, _ in spans)) / 1000
            bubble = sum(o["end"] - o["start"] for o in ops if o["step"] == step and "receive" in o["type"]) / 1000
            free = stage - computing - not_overlapped
            rows.append([step, computing, not_overlapped, overlapped, communication, free, stage, bubble,
                         not_overlapped - bubble, 0])
        rows = [[r[0]] + [round(v, 3) for v in r[1:]] for r in rows]
    with open(path, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(STEP_COLUMNS)
        w.writerows(rows)


def make_folder(root, db_path, rank):
    src = Source(db_path)
    out = os.path.join(root, "ASCEND_PROFILER_OUTPUT")
    os.makedirs(out)
    kernels = src.kernels()
    ops = src.comm_ops()
    write_kernels(os.path.join(out, "kernel_details.csv"), kernels, with_step=bool(src.steps))
    with open(os.path.join(out, "communication.json"), "w") as f:
        f.write(communication_json(ops))
    with open(os.path.join(out, "communication_matrix.json"), "w") as f:
        json.dump(communication_matrix(ops, rank), f, indent=1)
    step_trace_csv(os.path.join(out, "step_trace_time.csv"), src, db_path, kernels, ops)
    with open(os.path.join(root, f"profiler_info_{rank}.json"), "w") as f:
        json.dump({"config": {"common_config": {"activities": ["CPU", "NPU"]}, "experimental_config":
                   {"export_type": ["text"]}}, "end_info": {}, "torch_npu_version": "2.7.1", "rank_id": rank},
                  f, indent=1)
    return out


def main():
    for d in ("multi_rank", "steps", "damaged", "double_times"):
        shutil.rmtree(os.path.join(HERE, d), ignore_errors=True)
    # 1. The two pipeline ranks of ascend_db/multi_rank (whole trace, send/receive and all-reduce):
    #    what `rlprof cluster` and msprof-analyze's cluster analysis (text mode) read.
    for rank in (0, 1):
        name = f"node-a_{41000 + rank}_20251126094000123_ascend_pt"
        make_folder(os.path.join(HERE, "multi_rank", name),
                    os.path.join(DB, "multi_rank", name, "ASCEND_PROFILER_OUTPUT", f"ascend_pytorch_profiler_{rank}.db"),
                    rank)
    # 2. The three steps of ascend_db/steps: "Step Id" in kernel_details.csv, "step<N>" keys.
    make_folder(os.path.join(HERE, "steps", "node-a_42000_20251126094000123_ascend_pt"),
                os.path.join(DB, "steps", "ascend_pytorch_profiler_0.db"), 0)
    # 3. Damaged: rank 0 of (1) with bad kernel rows, a cut communication.json, no step_trace_time.csv.
    good = os.path.join(HERE, "multi_rank", "node-a_41000_20251126094000123_ascend_pt")
    bad = os.path.join(HERE, "damaged", "node-a_41002_20251126094000123_ascend_pt")
    shutil.copytree(good, bad)
    os.rename(os.path.join(bad, "profiler_info_0.json"), os.path.join(bad, "profiler_info_2.json"))
    out = os.path.join(bad, "ASCEND_PROFILER_OUTPUT")
    os.remove(os.path.join(out, "step_trace_time.csv"))
    os.remove(os.path.join(out, "communication_matrix.json"))
    lines = open(os.path.join(out, "kernel_details.csv")).read().splitlines(keepends=True)
    def field(k, col, value):  # the first nine columns hold no commas
        parts = lines[k].split(",", 9)
        parts[col] = value
        lines[k] = ",".join(parts)
    field(2, 7, '"not a time"')                                              # start unreadable
    lines[4] = ",".join(lines[4].split(",")[:5]) + "\n"                       # row cut short
    field(6, 8, "-5.000")                                                    # negative duration
    lines.insert(8, '3,4294967295,9,"unterminated quote\n')                  # a broken quoted field
    with open(os.path.join(out, "kernel_details.csv"), "w") as f:
        f.writelines(lines)
    text = open(os.path.join(out, "communication.json")).read()
    with open(os.path.join(out, "communication.json"), "w") as f:
        f.write(text[: len(text) * 2 // 3])                                   # a killed writer
    # 4. The communication.json torch_npu's Python really writes: json.dump of doubles, the µs
    #    start rounded to 0.25 µs steps at today's epoch (the disagreement class: sub-µs loss).
    src = os.path.join(HERE, "multi_rank", "node-a_41001_20251126094000123_ascend_pt")
    dst = os.path.join(HERE, "double_times", "node-a_41001_20251126094000123_ascend_pt")
    shutil.copytree(src, dst)
    path = os.path.join(dst, "ASCEND_PROFILER_OUTPUT", "communication.json")
    with open(path) as f:
        data = json.load(f)
    with open(path, "w") as f:
        json.dump(data, f)


if __name__ == "__main__":
    sys.exit(main())
