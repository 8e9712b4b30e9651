#!/usr/bin/python3
"""Capture size of critical-path sampling against whole-stage captures of the same steps.

Runs the GRPO example (examples/grpo_tiny, one rank, CPU) twice with the same seeds: once with
the seeds' recipe of grpo_verl.yaml (decode window in rollout_generate, first micro-batch of
ref/actor_compute_log_prob, first mini-batch of actor_update) and once with every schedule
removed (each stage call captured whole), and prints the bytes written per stage (events.rlp +
manifest.json) and the ratio. The defaults scale the job to the seeds' numbers: 128 decode
iterations with the window [30, 70), 8 micro-batches per log-prob stage, 4 mini-batches of 2
micro-batches in the update.

    PYTHONPATH=build/python .venv/bin/python bench/sampling_size.py [--tokens 128 --window 30,70 ...]
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import sys
import tempfile
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "examples", "grpo_tiny"))
import grpo_tiny  # noqa: E402

CONFIG = os.path.join(ROOT, "examples", "grpo_tiny", "grpo_verl.yaml")
BLOCKS = ["actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"]
RLPROF = "actor_rollout_ref.{}.profiler.tool_config.rlprof"


def capture_bytes(captures: List[str]) -> Dict[str, int]:
    """Bytes on disk per stage (all parts and steps summed)."""
    out: Dict[str, int] = collections.Counter()
    for c in captures:
        with open(os.path.join(c, "manifest.json")) as f:
            stage = json.load(f)["stage"]
        out[stage] += sum(os.path.getsize(os.path.join(c, n)) for n in os.listdir(c))
    return out


def run(cfg: grpo_tiny.GrpoConfig, overrides: List[str], save: str) -> Dict[str, int]:
    ov = [f"global_profiler.save_path={save}"] + [f"{b}.profiler.ranks=[0]" for b in BLOCKS]
    res = grpo_tiny.train(cfg, config=CONFIG, overrides=ov + overrides, verbose=False)
    return capture_bytes(res["captures"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokens", type=int, default=128, help="decode iterations per rollout")
    ap.add_argument("--window", default="30,70", help="decode window start,end")
    ap.add_argument("--log-prob-micro-batches", type=int, default=8)
    ap.add_argument("--mini-batches", type=int, default=4)
    ap.add_argument("--micro-batches", type=int, default=2)
    ap.add_argument("--steps", type=int, default=3, help="steps run (2 and 3 are profiled)")
    args = ap.parse_args()
    start, end = (int(v) for v in args.window.split(","))
    cfg = dataclasses.replace(grpo_tiny.GrpoConfig(), steps=args.steps, max_new_tokens=args.tokens,
                              log_prob_micro_batches=args.log_prob_micro_batches,
                              mini_batches=args.mini_batches, micro_batches=args.micro_batches,
                              sft_steps=2)
    recipe = [f"{RLPROF.format('rollout')}.profile_token_start={start}",
              f"{RLPROF.format('rollout')}.profile_token_end={end}"]
    whole = [f"~{RLPROF.format('rollout')}.profile_token_start",
             f"~{RLPROF.format('rollout')}.profile_token_end",
             f"~{RLPROF.format('actor')}.schedule", f"~{RLPROF.format('ref')}.schedule"]
    with tempfile.TemporaryDirectory() as tmp:
        sampled = run(cfg, recipe, os.path.join(tmp, "recipe"))
        full = run(cfg, whole, os.path.join(tmp, "whole"))
    print(f"grpo_tiny, 1 rank, steps 2-3 profiled, contents cpu+ops; {args.tokens} decode "
          f"iterations (window [{start}, {end})), {args.log_prob_micro_batches} log-prob "
          f"micro-batches, {args.mini_batches}x{args.micro_batches} update micro-batches")
    print(f"{'stage':<24}{'whole stage':>14}{'recipe':>14}{'ratio':>8}")
    for stage in sorted(full):
        w, s = full[stage], sampled.get(stage, 0)
        print(f"{stage:<24}{w:>14,}{s:>14,}{(w / s if s else float('inf')):>7.1f}x")
    tw, ts = sum(full.values()), sum(sampled.values())
    print(f"{'total':<24}{tw:>14,}{ts:>14,}{tw / ts:>7.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
