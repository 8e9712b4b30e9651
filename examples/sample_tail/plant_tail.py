"""A rollout with a planted long tail, recorded through rlprof.sample: each RL step submits
`--samples` samples at once to `--replicas` replicas; a `--long-share` of them (all on replica
0) run `--long-factor` times longer than the rest. The sample times are planted (not measured),
so every tail figure has a known value; the script writes them to OUT/truth.json next to the
capture, and sleeps through each step so the step's own span holds its samples.

    PYTHONPATH=build/python .venv/bin/python examples/sample_tail/plant_tail.py --out out/tail
    build/bin/rlprof summary out/tail/profile --view samples
"""
import argparse
import json
import math
import os
import time

import rlprof


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="out/sample_tail")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--replicas", type=int, default=4)
    ap.add_argument("--long-share", type=float, default=0.05)
    ap.add_argument("--long-factor", type=float, default=8.0)
    ap.add_argument("--base-ms", type=float, default=20.0, help="a short sample's submit → end")
    ap.add_argument("--tokens", type=int, default=100, help="a short sample's completion tokens")
    ap.add_argument("--sample-rate", type=float, default=1.0)
    args = ap.parse_args()
    prof = rlprof.Profiler({"rlprof": {"steps": list(range(1, args.steps + 1)),
                                       "save_path": os.path.join(args.out, "profile"),
                                       "sample_rate": args.sample_rate,
                                       "roles": {"rollout": {"contents": ["cpu"]}}}},
                           role="rollout", rank=0, world_size=1)
    base = int(args.base_ms * 1e6)
    n_long = int(round(args.samples * args.long_share))
    ttft = base // 10       # submit → first token, every sample
    queue = base // 100     # submit → scheduled
    truth = {"steps": [], "samples": []}
    for step in range(1, args.steps + 1):
        outer0 = time.monotonic_ns()
        with prof.step(step):
            with rlprof.annotate("rollout_generate", role="rollout"):
                t0 = time.monotonic_ns() + 1_000_000
                kept = 0
                for i in range(args.samples):
                    long = i < n_long
                    dur = int(base * args.long_factor) if long else base
                    tokens = int(args.tokens * args.long_factor) if long else args.tokens
                    replica = 0 if long else i % args.replicas
                    sid = f"s{step}-{i}"
                    rec = {"id": sid, "step": step, "replica": replica, "submit": t0, "queued": t0,
                           "scheduled": t0 + queue, "first_token": t0 + ttft, "last_token": t0 + dur,
                           "completion_tokens": tokens, "prompt_tokens": 32, "long": long}
                    kept += rlprof.sample(sid, submit=t0, queued=t0, scheduled=t0 + queue, first_token=t0 + ttft,
                                          last_token=t0 + dur, prompt_tokens=32, completion_tokens=tokens,
                                          finish_reason="length" if long else "stop", replica=replica,
                                          group=f"g{step}-{i // 8}")
                    rec["kept"] = rlprof.sample_kept(sid)
                    truth["samples"].append(rec)
                # The step lasts as long as its longest sample (and a little more).
                end = t0 + int(base * args.long_factor) + 2_000_000
                while time.monotonic_ns() < end:
                    time.sleep(max(0.0, (end - time.monotonic_ns()) / 1e9))
        outer1 = time.monotonic_ns()
        truth["steps"].append({"step": step, "t0": t0, "outer_start": outer0, "outer_end": outer1,
                               "recorded": kept})
    prof.shutdown()
    n = args.samples
    short_end, long_end = base, int(base * args.long_factor)
    # The planted figures (µs; nearest-rank percentiles of the end times from the first submit).
    ends = sorted([long_end] * n_long + [short_end] * (n - n_long))
    rank = lambda p: ends[min(max(math.ceil(p / 100 * n - 1e-9), 1), n) - 1]
    tokens_rep = [0] * args.replicas
    for i in range(n):
        tokens_rep[0 if i < n_long else i % args.replicas] += (int(args.tokens * args.long_factor) if i < n_long else args.tokens)
    mean_tok = sum(tokens_rep) / args.replicas
    decode = long_end - ttft
    truth["planted"] = {
        "p90": rank(90) / 1e3, "p95": rank(95) / 1e3, "p100": rank(100) / 1e3,
        "tail": (rank(100) - rank(90)) / 1e3,
        # replicas other than 0 have no sample running once the short ones end
        "tail_idle": (args.replicas - 1) * (rank(100) - rank(90)) / 1e3 if n_long else 0.0,
        "ttft": ttft / 1e3, "queue": queue / 1e3,
        "tpot_short": (short_end - ttft) / (args.tokens - 1) / 1e3,
        "token_imbalance": max(tokens_rep) / mean_tok,
        "p95_saves": (rank(100) - rank(95)) / 1e3, "partial_saves": (rank(100) - rank(90)) / 1e3,
        "partial_carried": sum(1 for e in ends if e > rank(90)),
        "partial_carried_tokens": round(sum(int(args.tokens * args.long_factor) * (long_end - max(rank(90), ttft)) / decode
                                            for _ in range(n_long))) if rank(90) < long_end else 0,
    }
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "truth.json"), "w") as f:
        json.dump(truth, f, indent=1)
    print(json.dumps({"captures": prof.captures(), "planted": truth["planted"]}))


if __name__ == "__main__":
    main()
