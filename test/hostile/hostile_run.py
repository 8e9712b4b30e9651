#!/usr/bin/env python3
"""The hostile-input run of issue 35: every class of input the audit found that hung, killed or
silently emptied rlprof, built on the spot in a scratch folder, through every command, view
and export of an rlprof binary. Passes when no run ends by a signal, none runs past its
deadline (300 s by default: a hang is forever, while the slowest legitimate run, 1.5 s
alone, took 27 s beside a loaded CI run and a verl job — the deadline must not be a timing
assumption that load breaks), none prints a sanitizer report, and every input that lost data
names the loss in the command's output (its diagnostics).

    test/hostile/hostile_run.py --rlprof build/bin/rlprof                # the release build
    test/hostile/hostile_run.py --rlprof build-asan/bin/rlprof                   # ASan + UBSan

ctest runs it on the release build (`hostile_run`); docs/reliability.md lists the classes and
where each is tested. Needs python3 only (sqlite3 is in its standard library).
"""
import argparse
import gzip
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "test", "data")


def kineto(rank=0, steps=(1,), extra=None, world=None):
    """A small Kineto trace: ProfilerStep#k ranges around an op and a kernel per step."""
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}]
    t = 100
    for s in steps:
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{s}", "pid": 1, "tid": 1,
                   "ts": t, "dur": 100})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 10, "dur": 20})
        ev.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": t + 20, "dur": 30,
                   "args": {"device": 0, "stream": 7}})
        t += 200
    doc = {"schemaVersion": 1, "traceEvents": ev}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": world if world else 1, "backend": "nccl"}
    if extra:
        doc.update(extra)
    return doc


class Case:
    def __init__(self, name, path, loss=(), refused=False, commands="all", expect=()):
        self.name, self.path, self.loss, self.refused, self.commands = name, path, tuple(loss), refused, commands
        self.expect = tuple(expect)  # text some command's output must hold (what was read)


def build_cases(d):
    """Writes every hostile input below `d`; returns the cases."""
    cases = []

    def mk(*parts):
        p = os.path.join(d, *parts)
        os.makedirs(p, exist_ok=True)
        return p

    def write(path, data, mode="w"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, mode) as f:
            f.write(data)
        return path

    # -- Stuck or killed --------------------------------------------------------------------
    for name in ("trace.json", "trace.json.gz", "ascend_pytorch_profiler_0.db"):
        p = os.path.join(mk("fifo_file"), name)
        os.mkfifo(p)
        cases.append(Case("fifo " + name, p, refused=True))
    p = mk("fifo_manifest")
    os.mkfifo(os.path.join(p, "manifest.json"))
    cases.append(Case("fifo manifest.json", p))
    p = mk("fifo_events")
    write(os.path.join(p, "manifest.json"), json.dumps({"format": "rlprof-capture", "format_version": 1}))
    os.mkfifo(os.path.join(p, "events.rlp"))
    cases.append(Case("fifo events.rlp", p))
    p = mk("fifo_ascend", "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT")
    os.mkfifo(os.path.join(p, "kernel_details.csv"))
    os.mkfifo(os.path.join(p, "communication.json"))
    cases.append(Case("fifo Ascend text files", os.path.dirname(p)))
    for dev in ("/dev/zero", "/dev/urandom"):
        p = mk("link_" + os.path.basename(dev))
        os.symlink(dev, os.path.join(p, "manifest.json"))
        os.symlink(dev, os.path.join(p, "events.rlp"))
        cases.append(Case("links to " + dev, p))
    p = mk("sparse")
    for f in ("manifest.json", "events.rlp"):
        with open(os.path.join(p, f), "wb") as fh:
            fh.truncate(3 << 30)  # 3 GiB, no block allocated
    cases.append(Case("sparse 3 GiB manifest and events", p))
    p = mk("deep_manifest")
    write(os.path.join(p, "manifest.json"),
          '{"format":"rlprof-capture","format_version":1,"config":' + "[" * 100000 + "]" * 100000 + "}")
    cases.append(Case("manifest config 100,000 levels deep", p, loss=("manifest_problems",)))
    p = mk("symlink_loop")
    os.symlink("manifest.json", os.path.join(p, "manifest.json"))
    os.symlink("b", os.path.join(p, "a"))
    os.symlink("a", os.path.join(p, "b"))
    cases.append(Case("manifest a symlink loop", p))
    cases.append(Case("rank INT64_MAX", write(os.path.join(d, "rank_max.json"),
                                              json.dumps(kineto(rank=2 ** 63 - 1)))))
    many = mk("ranks_2000")
    for r in range(2000):
        write(os.path.join(many, f"rank{r:04d}.json"), json.dumps(kineto(rank=r, world=2000)))
    cases.append(Case("2,000 ranks", many, commands="run"))

    # -- Lost without a word ----------------------------------------------------------------
    dup = '{"traceEvents":[{"ph":"X","pid":1,"tid":1,"ts":1,"dur":2,"name":"a"}],"traceEvents":[]}'
    cases.append(Case("traceEvents twice", write(os.path.join(d, "dup_keys.json"), dup),
                      loss=("duplicate_trace_events",)))
    header = "Step Id,Name,Accelerator Core,Start Time(us),Duration(us)\n"
    rows = "1,MatMulOne,AI_CORE,10,2\n1,AddTwo,AI_VECTOR_CORE,20,3\n"

    def ascend_text(name, csv=None, comm=None):
        out = mk("ascend_" + name, "rank0_ascend_pt", "ASCEND_PROFILER_OUTPUT")
        if csv is not None:
            write(os.path.join(out, "kernel_details.csv"), csv)
        if comm is not None:
            write(os.path.join(out, "communication.json"), comm)
        return os.path.dirname(out)

    cases.append(Case("kernel_details.csv cut mid-row", ascend_text("cut", header + rows + "1,Mul,AI_CORE,30,"),
                      loss=("ascend_text_bad_row",)))
    cases.append(Case("kernel_details.csv with CR line ends",
                      ascend_text("cr", (header + rows).replace("\n", "\r"), "{}"), expect=("MatMulOne", "AddTwo")))
    cases.append(Case("kernel_details.csv header only", ascend_text("header", header), loss=("ascend_text_empty",)))
    for what, text in (("null", "null"), ("a list", "[1, 2]"), ("a string", '"x"')):
        cases.append(Case("communication.json " + what, ascend_text("comm_" + what.replace(" ", "_"), header + rows, text),
                          loss=("ascend_text_corrupt",)))
    src_db = os.path.join(DATA, "ascend_db", "one_rank", "msprof_20251126094000.db")
    for what, sql in (("without TASK", "DROP TABLE TASK"),
                      ("TASK a failing view", "ALTER TABLE TASK RENAME TO TASK_OLD; "
                                              "CREATE VIEW TASK AS SELECT * FROM NO_SUCH_TABLE")):
        p = os.path.join(mk("db_" + what.split()[0] + "_" + what.split()[-1]), "msprof_20251126094000.db")
        shutil.copy(src_db, p)
        con = sqlite3.connect(p)
        con.executescript(sql)
        con.close()
        cases.append(Case("Ascend DB " + what, p,
                          loss=("ascend_db_missing_table" if what.startswith("without") else "ascend_db_corrupt",)))
    p = mk("bad_manifest")
    write(os.path.join(p, "manifest.json"), json.dumps({
        "format": "rlprof-capture", "format_version": 1, "identity": {"rank": 1.5, "pid": -3},
        "counts": {"events": -1, "dropped_events": 4, "dropped_write_error": 2}, "complete": False}))
    cases.append(Case("manifest of wrong types, with losses", p,
                      loss=("manifest_problems", "dropped_events", "events_lost_write_error", "capture_incomplete")))
    dups = mk("dup_ranks")
    for i in range(4):
        write(os.path.join(dups, f"node{i}.json"), json.dumps(kineto(rank=0)))
    cases.append(Case("four traces claiming rank 0", dups, loss=("duplicate_rank_inputs",), commands="cluster"))
    p = os.path.join(mk("wal"), "msprof_20251126094000.db")
    shutil.copy(src_db, p)
    con = sqlite3.connect(p)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    cases.append(Case("Ascend DB in WAL mode (nothing written beside it)", p, commands="readonly"))
    return cases


CONFIGS = {
    "steps [2, null]": ("global_profiler: {tool: torch, steps: [2, null]}\n", "null in a list of steps"),
    "ranks [null]": ("global_profiler: {tool: torch, steps: [1]}\n"
                     "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [null]}}}\n", "null in a list of ranks"),
    "quoted rank": ("global_profiler: {tool: torch, steps: [1]}\n"
                    "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0, \"1\"]}}}\n", "quoted string"),
    "NUL in save_path": ("global_profiler: {tool: torch, steps: [1], save_path: \"/tmp/a\\0b\"}\n", "NUL byte"),
}
CONFIG_TAIL = "actor_rollout_ref: {actor: {profiler: {enable: true, ranks: [0]}}}\n"


def commands(case, out):
    p = case.path
    every = [["summary", p], ["summary", p, "--view", "all", "--json"], ["summary", p, "--view", "rl"],
             ["summary", p, "--view", "ranges"], ["summary", p, "--view", "kernels"],
             ["analyse", p, "-o", out + "/an"],
             ["export", p, "-o", out + "/x.json"], ["export", p, "-o", out + "/x.pftrace"],
             ["export", p, "-o", out + "/x.db"], ["report", p, "-o", out + "/r.html"],
             ["compare", p, p], ["cluster", p]]
    if case.commands == "run":
        return [["analyse", p, "-o", out + "/an"], ["summary", p, "--view", "rl"]]
    if case.commands == "cluster":
        return [["cluster", p], ["summary", p]]
    if case.commands == "readonly":
        return [["summary", p], ["analyse", p, "-o", out + "/an"], ["export", p, "-o", out + "/x.json"]]
    return every


SANITIZER = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer")


def run(rlprof, args, deadline):
    t0 = time.monotonic()
    try:
        p = subprocess.run([rlprof] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=deadline)
    except subprocess.TimeoutExpired:
        return None, "", time.monotonic() - t0
    text = (p.stdout + p.stderr).decode("utf-8", "replace")
    return p.returncode, text, time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rlprof", required=True, help="the rlprof binary to run")
    ap.add_argument("--deadline", type=float, default=300.0,
                    help="seconds one command may take (default 300: only a hang exceeds it)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    a = ap.parse_args()
    rlprof = os.path.abspath(a.rlprof)
    scratch = tempfile.mkdtemp(prefix="rlprof-hostile-")
    failures, runs, slowest = [], 0, (0.0, "")
    try:
        cases = build_cases(os.path.join(scratch, "in"))
        for case in cases:
            said_loss = {name: False for name in case.loss}
            for i, args in enumerate(commands(case, os.path.join(scratch, "out", str(runs)))):
                before = sorted(os.listdir(os.path.dirname(case.path))) if case.commands == "readonly" else None
                rc, text, took = run(rlprof, args, a.deadline)
                runs += 1
                slowest = max(slowest, (took, " ".join(args[:1]) + " on " + case.name))
                what = f"{case.name}: rlprof {' '.join(args)}"
                if rc is None:
                    failures.append(f"{what}: still running after {a.deadline:.0f} s (killed)")
                    continue
                if rc < 0 or rc >= 128:
                    failures.append(f"{what}: ended by signal {-rc if rc < 0 else rc - 128}\n{text[-2000:]}")
                elif rc not in (0, 2, 3):
                    failures.append(f"{what}: exit {rc}\n{text[-1000:]}")
                if any(s in text for s in SANITIZER):
                    failures.append(f"{what}: sanitizer report\n{text[-3000:]}")
                if case.refused and args[0] == "summary" and rc != 2:
                    failures.append(f"{what}: expected a refusal (exit 2), got {rc}")
                expect_seen = getattr(case, "seen", set())
                case.seen = expect_seen | {e for e in case.expect if e in text}
                for name in said_loss:
                    if name in text:
                        said_loss[name] = True
                    elif case.commands == "all" and args[0] in ("summary", "export") and rc == 0 and \
                            "--json" not in args:
                        failures.append(f"{what}: exit 0 without naming {name}\n{text[-1500:]}")
                if before is not None and sorted(os.listdir(os.path.dirname(case.path))) != before:
                    failures.append(f"{what}: wrote beside its input: {sorted(os.listdir(os.path.dirname(case.path)))}")
            for name, said in said_loss.items():
                if not said:
                    failures.append(f"{case.name}: no command named {name}")
            for e in case.expect:
                if e not in getattr(case, "seen", set()):
                    failures.append(f"{case.name}: no command's output holds {e!r} (data not read)")
        cfg_dir = os.path.join(scratch, "configs")
        os.makedirs(cfg_dir)
        for name, (text, expect) in CONFIGS.items():
            path = os.path.join(cfg_dir, name.replace(" ", "_").replace(",", "") + ".yaml")
            with open(path, "w") as f:
                f.write(text if "actor_rollout_ref" in text else text + CONFIG_TAIL)
            rc, out, _ = run(rlprof, ["plan", path], a.deadline)
            runs += 1
            if rc in (None, 0) or (rc is not None and (rc < 0 or rc >= 128)) or expect not in out or \
                    os.path.basename(path) + ":" not in out:
                failures.append(f"config {name}: rlprof plan exit {rc}, expected an error naming the file, line and "
                                f"'{expect}'\n{out[-1500:]}")
        print(f"hostile run: {len(cases)} inputs and {len(CONFIGS)} configs, {runs} command runs; slowest "
              f"{slowest[0]:.1f} s ({slowest[1]}); deadline {a.deadline:.0f} s")
    finally:
        if a.keep:
            print("kept", scratch)
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    if failures:
        print(f"hostile run: {len(failures)} FAILED")
        for f in failures:
            print("  - " + f.replace("\n", "\n    "))
        return 1
    print("hostile run: no signal, no hang, no sanitizer report; every loss named")
    return 0


if __name__ == "__main__":
    sys.exit(main())
