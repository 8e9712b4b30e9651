"""Writes a tiny random-weights Qwen2 causal LM and a byte-level BPE tokenizer into OUT, offline.

No download: the tokenizer is trained here on a made-up arithmetic corpus, the model's weights are
random (seeded). verl and vLLM load OUT as they load any Hugging Face model folder.

    python make_model.py OUT            # the policy: a causal LM
    python make_model.py OUT --reward   # a reward model: the same body with a score head
                                        # (Qwen2ForSequenceClassification, one label), which
                                        # verl serves through vLLM's /classify endpoint
"""
import json
import os
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM,
                          Qwen2ForSequenceClassification)

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}")


def corpus():
    for a in range(64):
        for b in range(0, 64, 5):
            yield (f"Question: what is {a} plus {b}? Let's think step by step and output the final "
                   f"answer after \"####\". #### {a + b}")
            yield f"{a} + {b} = {a + b}. So the answer is {a + b}."


def tokenizer(out: str) -> PreTrainedTokenizerFast:
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus(), trainers.BpeTrainer(
        vocab_size=512, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    bpe.post_processor = processors.ByteLevel(trim_offsets=False)
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>",
                                  pad_token="<|endoftext|>", bos_token=None)
    tok.chat_template = CHAT_TEMPLATE
    tok.model_max_length = 2048
    tok.save_pretrained(out)
    return tok


def main() -> None:
    out = sys.argv[1]
    reward = "--reward" in sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    tok = tokenizer(out)
    eos, pad = tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")
    cfg = Qwen2Config(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, head_dim=64,
                      max_position_embeddings=1024, tie_word_embeddings=False,
                      torch_dtype="bfloat16", eos_token_id=eos, pad_token_id=pad, bos_token_id=None,
                      num_labels=1)
    torch.manual_seed(1 if reward else 0)
    if reward:
        model = Qwen2ForSequenceClassification(cfg).to(torch.bfloat16)
    else:
        model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
        model.generation_config.eos_token_id = eos
        model.generation_config.pad_token_id = pad
    model.save_pretrained(out)
    print(json.dumps({"model": out, "params": sum(p.numel() for p in model.parameters()),
                      "vocab": len(tok)}))


if __name__ == "__main__":
    main()
