"""Writes sessions-r0.jsonl: synthetic AReaL session-trace records in the exact layout AReaL's
SessionTracer writes (see README.md). Values are made up; rerun to regenerate."""
import json

BASE = 1763012345.0  # time.time() seconds (AReaL stamps wall clock)


def ts(offset):
    return BASE + offset


def record(task, sid, status, submit, finalized=None, reason=None, phases=None):
    # Key order and omissions as SessionRecord.to_dict: None-valued fields left out.
    d = {"task_id": task, "session_id": sid, "rank": 0, "role": "rollout", "status": status}
    if reason is not None:
        d["reason"] = reason
    d["submit_ts"] = ts(submit)
    if finalized is not None:
        d["finalized_ts"] = ts(finalized)
        d["total_s"] = d["finalized_ts"] - d["submit_ts"]
    spans = {k: [{"start_ts": ts(a), "end_ts": None if b is None else ts(b)} for a, b in v]
             for k, v in (phases or {}).items()}
    for name in ("generate", "reward", "toolcall"):
        done = [s["end_ts"] - s["start_ts"] for s in spans.get(name, []) if s["end_ts"] is not None]
        if done:
            d[name + "_s"] = sum(done)
    if spans:
        d["phases"] = spans
    return d


rows = [
    # task 0: two samples (GRPO group of 2), accepted.
    record(0, 0, "accepted", 0.0, 2.5, phases={"generate": [(0.01, 2.0)], "reward": [(2.0, 2.25)]}),
    record(0, 1, "accepted", 0.0, 2.5, phases={"generate": [(0.02, 1.5)], "reward": [(1.5, 1.75)]}),
    # task 1: filtered by should_accept_fn.
    record(1, 2, "rejected", 0.5, 3.0, reason="rejected",
           phases={"generate": [(0.5, 2.75)], "reward": [(2.75, 3.0)]}),
    record(1, 3, "rejected", 0.5, 3.0, reason="rejected",
           phases={"generate": [(0.5, 2.5)], "reward": [(2.5, 2.75)]}),
    # task 2: multi-turn agent: generate, toolcall, generate, reward; the long tail.
    record(2, 4, "accepted", 1.0, 10.0,
           phases={"generate": [(1.0, 3.0), (4.5, 9.5)], "reward": [(9.5, 10.0)], "toolcall": [(3.0, 4.5)]}),
    record(2, 5, "accepted", 1.0, 10.0, phases={"generate": [(1.0, 4.0)], "reward": [(4.0, 4.5)]}),
    # task 3: the workflow raised.
    record(3, 6, "failed", 1.5, 5.0, reason="workflow_exception", phases={"generate": [(1.5, 5.0)]}),
    # task 4: still generating when the executor was destroyed (flush(force=True)).
    record(4, 7, "pending", 9.0, phases={"generate": [(9.0, None)]}),
]
with open("sessions-r0.jsonl", "w", encoding="utf-8") as f:
    for r in rows:
        f.write(json.dumps(r, ensure_ascii=False) + "\n")
