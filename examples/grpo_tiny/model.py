"""A tiny decoder-only transformer (GPT-style) with a KV cache, and the digit-arithmetic task.

Tokens: '0'..'9', '+', '=', EOS, PAD. A prompt is "a+b=" (a, b single digits); the answer is
the decimal sum followed by EOS. The reward is verifiable: 1 for the exact answer.
"""
from __future__ import annotations

import math
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

VOCAB = [str(d) for d in range(10)] + ["+", "=", "<eos>", "<pad>"]
PLUS, EQUALS, EOS, PAD = 10, 11, 12, 13
PROMPT_LEN = 4


def encode_prompt(a: int, b: int) -> List[int]:
    return [a, PLUS, b, EQUALS]


def answer_tokens(a: int, b: int) -> List[int]:
    return [int(c) for c in str(a + b)] + [EOS]


def reward(a: int, b: int, response: List[int]) -> float:
    """1.0 when the response up to EOS spells a + b exactly, else 0."""
    out = []
    for t in response:
        if t == EOS:
            return 1.0 if out == answer_tokens(a, b)[:-1] else 0.0
        out.append(t)
    return 0.0  # no EOS: unfinished answer


class KVCache:
    """Per-layer keys and values of the tokens seen so far: (B, heads, T, head_dim)."""

    def __init__(self, layers: int) -> None:
        self.k: List[Optional[torch.Tensor]] = [None] * layers
        self.v: List[Optional[torch.Tensor]] = [None] * layers

    def length(self) -> int:
        return 0 if self.k[0] is None else self.k[0].shape[2]


class Block(nn.Module):
    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor, cache: Optional[KVCache], layer: int) -> torch.Tensor:
        B, T, D = x.shape
        h, hd = self.heads, D // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(D, dim=-1)
        q, k, v = (t.view(B, T, h, hd).transpose(1, 2) for t in (q, k, v))
        past = 0
        if cache is not None:
            if cache.k[layer] is not None:
                past = cache.k[layer].shape[2]
                k = torch.cat([cache.k[layer], k], dim=2)
                v = torch.cat([cache.v[layer], v], dim=2)
            cache.k[layer], cache.v[layer] = k, v
        att = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        if T > 1:  # causal: query i sees keys up to past + i
            mask = torch.ones(T, past + T, dtype=torch.bool, device=x.device).tril(diagonal=past)
            att = att.masked_fill(~mask, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, D))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    def __init__(self, d: int = 64, heads: int = 4, layers: int = 2, max_len: int = 16) -> None:
        super().__init__()
        self.tok = nn.Embedding(len(VOCAB), d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.head = nn.Linear(d, len(VOCAB))

    def forward(self, idx: torch.Tensor, cache: Optional[KVCache] = None) -> torch.Tensor:
        """Logits (B, T, vocab) for tokens `idx` (B, T) following the cached ones."""
        start = cache.length() if cache is not None else 0
        pos = torch.arange(start, start + idx.shape[1], device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for i, blk in enumerate(self.blocks):
            x = blk(x, cache, i)
        return self.head(self.ln_f(x))


def token_log_probs(model: nn.Module, seqs: torch.Tensor) -> torch.Tensor:
    """log p(seqs[:, t] | seqs[:, :t]) of the response tokens: (B, T - PROMPT_LEN)."""
    logits = model(seqs[:, :-1])[:, PROMPT_LEN - 1:]
    return torch.log_softmax(logits, dim=-1).gather(-1, seqs[:, PROMPT_LEN:, None]).squeeze(-1)


def response_mask(responses: torch.Tensor) -> torch.Tensor:
    """1 for response tokens up to and including the first EOS, 0 after it."""
    is_eos = (responses == EOS).int()
    after = (is_eos.cumsum(dim=1) - is_eos) > 0
    return (~after).float()


def sample_tables(rng: torch.Generator, n: int, max_digit: int = 9) -> List[Tuple[int, int]]:
    ab = torch.randint(0, max_digit + 1, (n, 2), generator=rng)
    return [(int(a), int(b)) for a, b in ab]
