"""The cost of each sample's record (issue 33; docs/performance.md, "Samples"): the time of one
rlprof.sample call (outside a window, inside one) against an empty Python function taking the
same arguments, measured in the same run, and the bytes a sample adds to the capture (realistic
records: uuid ids, distinct times and counts), against a capture of the same steps without them.

    PYTHONPATH=build/python .venv/bin/python bench/sample_cost.py [--samples 20000]
"""
import argparse
import glob
import json
import os
import random
import shutil
import tempfile
import time
import uuid

import rlprof


def noop(id, *, submit=None, queued=None, scheduled=None, first_token=None, last_token=None, end=None,
         prompt_tokens=None, completion_tokens=None, cached_tokens=None, preemptions=None, finish_reason=None,
         group=None, version=None, replica=None, tools=(), reward=None, spans=()):
    return False


def records(n, seed=0):
    rnd = random.Random(seed)
    t = time.monotonic_ns()
    out = []
    for i in range(n):
        s = t + rnd.randrange(0, 10**9)
        q = s + rnd.randrange(0, 10**5)
        f = q + rnd.randrange(10**6, 10**8)
        last = f + rnd.randrange(10**6, 10**9)
        out.append((uuid.uuid4().hex, dict(submit=s, queued=s, scheduled=q, first_token=f, last_token=last,
                                            prompt_tokens=rnd.randrange(64, 2048), completion_tokens=rnd.randrange(1, 4096),
                                            cached_tokens=rnd.randrange(0, 64), preemptions=0, finish_reason="stop",
                                            group=f"g{i // 8}", version=3, replica=i % 8)))
    return out


def per_call(fn, recs, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for sid, kw in recs:
            fn(sid, **kw)
        best = min(best, (time.perf_counter_ns() - t0) / len(recs))
    return best


def capture_bytes(save):
    return sum(os.path.getsize(f) for f in glob.glob(os.path.join(save, "**", "events.rlp"), recursive=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=20000)
    args = ap.parse_args()
    recs = records(args.samples)
    base = per_call(noop, recs)
    off = per_call(rlprof.sample, recs)
    tmp = tempfile.mkdtemp(prefix="rlprof-sample-cost-")
    sizes = {}
    on = None
    try:
        for which in ("without", "with"):
            save = os.path.join(tmp, which)
            prof = rlprof.Profiler({"rlprof": {"steps": [1], "save_path": save, "roles": {"rollout": {"contents": ["cpu"]}}}},
                                   role="rollout", rank=0, world_size=1, quiet=True)
            with prof.step(1):
                with rlprof.annotate("rollout_generate", role="rollout"):
                    if which == "with":
                        t0 = time.perf_counter_ns()
                        for sid, kw in recs:
                            rlprof.sample(sid, **kw)
                        on = (time.perf_counter_ns() - t0) / len(recs)
            prof.shutdown()
            sizes[which] = capture_bytes(save)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    per_sample = (sizes["with"] - sizes["without"]) / args.samples
    print(json.dumps({"samples": args.samples, "noop_ns": round(base, 1), "outside_window_ns": round(off, 1),
                      "recorded_ns": round(on, 1), "recorded_over_noop": round(on / base, 2),
                      "bytes_per_sample": round(per_sample, 1)}))
    print(f"rlprof.sample: {on / 1e3:.2f} µs a record ({on / base:.1f}× an empty Python call with the same "
          f"arguments, {base:.0f} ns); {off:.0f} ns outside a window; {per_sample:.1f} B a sample in the capture")


if __name__ == "__main__":
    main()
