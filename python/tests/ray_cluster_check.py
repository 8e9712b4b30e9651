"""Run by test_ray_analysis.py under .venv-integ's Python (Ray 2.60.0): a Ray test cluster of
simulated nodes on this machine (ray.cluster_utils.Cluster), each holding its own captures
(RLPROF_CAPTURE_ROOTS in the node's environment), analysed with rlprof.distributed; prints one
JSON document of what the test checks.

    python ray_cluster_check.py ROOT RLPROF_BIN   (ROOT/<node>/… holds each node's captures)
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import ray
from ray.cluster_utils import Cluster

from rlprof import _analysis, distributed

ROOT, RLPROF = sys.argv[1], sys.argv[2]
NODES = sorted(d for d in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, d)))


def tables(run) -> dict:
    """Every table of a run, the inputs, diagnostics and summary.json, comparable with ==."""
    out = {t: run.table(t) for t in run.table_names()}
    out["#inputs"] = run.inputs()
    out["#diagnostics"] = run.diagnostics()
    out["#summary"] = json.loads(run.summary_json())
    out["#run_view_long"] = run.run_view_long()
    return out


def main() -> None:
    t0 = time.monotonic()
    # Fast failure detection: a removed node is known dead within a few seconds.
    cluster = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "resources": {"driver": 1},
        # The head holds no captures (its own empty folder): only the nodes that do may analyse.
        "env_vars": {"RLPROF_CAPTURE_ROOTS": os.path.join(ROOT, "..", "head")},
        "_system_config": {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                           "health_check_initial_delay_ms": 0}})
    nodes = {}
    for name in NODES:
        nodes[name] = cluster.add_node(num_cpus=1, resources={name: 1},
                                       env_vars={"RLPROF_CAPTURE_ROOTS": os.path.join(ROOT, name)})
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, logging_level="ERROR", log_to_driver=False)
    node_id = {name: n.node_id for name, n in nodes.items()}
    report = {"nodes": NODES, "start_s": time.monotonic() - t0}

    # 1. Distributed = local, exactly; each input analysed on the node that holds it.
    local = _analysis.analyse([ROOT.encode()])
    t1 = time.monotonic()
    r = distributed.analyse([ROOT])
    report["analyse_s"] = time.monotonic() - t1
    report["equal"] = tables(r.run) == tables(local)
    report["differs"] = [k for k, v in tables(r.run).items() if tables(local).get(k) != v]
    report["placement"] = {os.path.relpath(i, ROOT): n[:8] for i, n in r.placement.items()}
    report["node_ids"] = {k: v[:8] for k, v in node_id.items()}
    report["placed_right"] = all(
        r.placement[i] == node_id[os.path.relpath(i, ROOT).split(os.sep)[0]] for i in r.placement)
    report["inputs"] = len(r.placement)
    report["result_bytes"] = r.result_bytes
    report["trace_bytes"] = sum(os.path.getsize(os.path.join(d, f))
                                for d, _, fs in os.walk(ROOT) for f in fs)
    report["cluster_equal"] = _analysis.cluster(r.run) == _analysis.cluster(local)

    # 2. The CLI: `rlprof analyse ROOT --ray ADDRESS` (C++ → python -m rlprof) writes what the
    # local command writes.
    env = dict(os.environ, RLPROF_PYTHON=sys.executable)
    cli = subprocess.run([RLPROF, "analyse", ROOT, "-o", os.path.join(ROOT, "..", "out-ray"), "--json",
                          "--ray", cluster.address], env=env, capture_output=True, text=True, timeout=120)
    loc = subprocess.run([RLPROF, "analyse", ROOT, "-o", os.path.join(ROOT, "..", "out-local"), "--json"],
                         capture_output=True, text=True, timeout=120)
    report["cli_rc"] = [cli.returncode, loc.returncode]
    report["cli_err"] = cli.stderr[-2000:]
    try:
        a, b = json.loads(cli.stdout), json.loads(loc.stdout)
        a.pop("output"), b.pop("output")
        report["cli_equal"] = a == b
    except ValueError:
        report["cli_equal"] = False
    with open(os.path.join(ROOT, "..", "out-ray", "run_view.csv")) as f1, \
            open(os.path.join(ROOT, "..", "out-local", "run_view.csv")) as f2:
        report["cli_run_view_equal"] = f1.read() == f2.read()

    # 3. A node killed mid-analysis: its inputs are lost and counted, the rest is exact.
    victim = NODES[-1]
    started = os.path.join(ROOT, "..", "started")
    os.makedirs(started, exist_ok=True)
    victim_root = os.path.join(ROOT, victim)

    def hook(path: bytes) -> None:  # runs on the nodes: the victim's tasks hang until it dies
        if os.fsdecode(path).startswith(victim_root + os.sep):
            open(os.path.join(started, str(os.getpid())), "w").close()
            time.sleep(120)

    def killer() -> None:
        deadline = time.monotonic() + 60
        while not os.listdir(started) and time.monotonic() < deadline:
            time.sleep(0.05)
        cluster.remove_node(nodes[victim], allow_graceful=False)

    k = threading.Thread(target=killer)
    k.start()
    t2 = time.monotonic()
    lost = distributed.analyse([ROOT], _task_hook=hook, timeout_s=90)
    report["kill_s"] = time.monotonic() - t2
    k.join()
    inp = dict(zip(lost.run.inputs()["columns"], lost.run.inputs()["data"]))
    d = lost.run.diagnostics()
    dc = dict(zip(d["columns"], d["data"]))
    counts = {n: c for i, n, c in zip(dc["input"], dc["name"], _ints(dc["count"])) if i == ""}
    victims = [p for p in inp["path"] if p.startswith(victim_root + os.sep)]
    report["victim_inputs"] = len(victims)
    report["ray_node_lost"] = counts.get("ray_node_lost", 0)
    report["lost_errors"] = [e for e in inp["error"] if e is not None]
    # What survived equals the local analysis of the survivors.
    survivors = [os.path.join(ROOT, n) for n in NODES if n != victim]
    local_rest = _analysis.analyse([p.encode() for p in survivors])
    a = lost.run.table("stage_time")
    b = local_rest.table("stage_time")
    report["survivors_equal"] = a["data"][1:] == b["data"][1:] and len(a["data"][0]) == len(b["data"][0])
    report["total_s"] = time.monotonic() - t0
    print("RLPROF_REPORT " + json.dumps(report), flush=True)
    ray.shutdown()
    cluster.shutdown()


def _ints(col):
    import struct
    if isinstance(col, (bytes, bytearray)):
        return list(struct.unpack(f"={len(col) // 8}q", bytes(col)))
    return list(col)


if __name__ == "__main__":
    main()
