"""Writes train.parquet and test.parquet (verl's gsm8k layout: data_source, prompt, ability,
reward_model, extra_info) with small made-up addition questions into OUT.

    python make_data.py OUT [--train N] [--test N]
"""
import argparse
import os
import random

import pandas as pd

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'


def frame(n: int, split: str, rng: random.Random) -> pd.DataFrame:
    rows = []
    for i in range(n):
        a, b = rng.randint(1, 50), rng.randint(1, 50)
        rows.append({
            "data_source": "openai/gsm8k",  # verl's rule reward for gsm8k scores "#### N"
            "prompt": [{"role": "user", "content": f"Question: what is {a} plus {b}? {INSTRUCTION}"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": str(a + b)},
            "extra_info": {"split": split, "index": i, "answer": f"#### {a + b}",
                           "question": f"what is {a} plus {b}?"},
        })
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--train", type=int, default=32)
    ap.add_argument("--test", type=int, default=4)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rng = random.Random(0)
    frame(args.train, "train", rng).to_parquet(os.path.join(args.out, "train.parquet"))
    frame(args.test, "test", rng).to_parquet(os.path.join(args.out, "test.parquet"))


if __name__ == "__main__":
    main()
