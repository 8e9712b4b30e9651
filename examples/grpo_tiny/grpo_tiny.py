#!/usr/bin/env python3
"""GRPO on a tiny transformer, on CPU (or GPUs: --device cuda), over N ranks (torch.distributed gloo; NCCL on GPUs), profiled by rlprof.

    .venv/bin/python examples/grpo_tiny/grpo_tiny.py --ranks 2 --steps 8            # grpo_verl.yaml
    .venv/bin/python examples/grpo_tiny/grpo_tiny.py --config grpo_mindspeed.yaml
    .venv/bin/python examples/grpo_tiny/grpo_tiny.py --no-profile

One RL step, as verl runs it on a fused actor/rollout/ref worker (each stage annotated):
  weight_sync             actor weights -> rollout engine copy
  rollout_generate        G samples per prompt, autoregressive with a KV cache
                          (one rlprof sub_step("decode") per generated token)
  reward                  verifiable: the exact sum of two digits
  ref_compute_log_prob    log-probs of the frozen reference policy  } in micro-batches
  actor_compute_log_prob  "old" log-probs of the current policy      } (sub_step("micro_batch"))
  actor_update            clipped GRPO objective + KL to the reference, over mini-batches of
                          micro-batches (sub_step("micro_batch")); DDP all-reduces gradients
The policy starts from a short supervised warm-up (RL post-training starts from an SFT
model); the mean reward per step is printed and rises.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import gc
import json
import os
import socket
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rlprof  # noqa: E402
from model import (EOS, PROMPT_LEN, TinyGPT, KVCache, answer_tokens, encode_prompt,  # noqa: E402
                   response_mask, reward, token_log_probs)

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclasses.dataclass
class GrpoConfig:
    steps: int = 8
    group: int = 8             # G samples per prompt
    max_new_tokens: int = 6    # decode iterations per rollout (fixed: masked after EOS)
    mini_batches: int = 4
    micro_batches: int = 2     # per mini-batch, in actor_update
    log_prob_micro_batches: int = 4  # forward passes of each log-prob stage
    lr: float = 3e-3
    clip: float = 0.2
    kl_coef: float = 0.02
    sft_steps: int = 15
    max_digit: int = 3         # the addition table a+b, a and b in [0, max_digit], split over ranks
    seed: int = 1234
    device: str = "cpu"        # or "cuda": each rank on GPU rank % device_count
    straggler_ms: float = 0.0  # planted (issue 34): the last rank sleeps this long in each stage
                               # that has no collective (weight_sync, rollout_generate, both log-probs)
    imbalance_ms: float = 0.0  # planted (issue 34): in step s, rank s % world generates this much
                               # longer (a longer batch: the slow rank changes every step)


_planted_s = 0.0  # this process's planted sleep per stage (train() sets it on the last rank)
_planted_gen_s = 0.0  # this step's planted extra generation time (train() sets it per step)


def _planted() -> None:
    if _planted_s > 0:
        time.sleep(_planted_s)


def rank_device(cfg: GrpoConfig, rank: int) -> torch.device:
    """The rank's device: the CPU, or GPU rank % device_count (made current)."""
    if cfg.device == "cpu":
        return torch.device("cpu")
    if cfg.device != "cuda":
        raise ValueError(f"--device {cfg.device!r}: expected cpu or cuda")
    if not torch.cuda.is_available():
        raise RuntimeError("--device cuda: torch sees no CUDA device")
    dev = torch.device("cuda", rank % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    return dev


def dist_backend(cfg: GrpoConfig, world: int) -> str:
    """NCCL where every rank has a GPU of its own, else gloo (which also reduces CUDA tensors)."""
    if cfg.device == "cuda" and torch.cuda.is_available() and world <= torch.cuda.device_count():
        return "nccl"
    return "gloo"


# ---- stages ----

@rlprof.annotate("weight_sync", role="rollout")
def weight_sync(actor: torch.nn.Module, rollout_model: torch.nn.Module) -> None:
    _planted()
    with torch.no_grad():
        for dst, src in zip(rollout_model.parameters(), actor.parameters()):
            dst.copy_(src)


@rlprof.annotate("rollout_generate", role="rollout")
def rollout_generate(model: TinyGPT, prompts: torch.Tensor, cfg: GrpoConfig,
                     gen: torch.Generator) -> torch.Tensor:
    """(P*G, PROMPT_LEN + max_new_tokens) sequences: G sampled answers per prompt."""
    _planted()
    if _planted_gen_s > 0:
        time.sleep(_planted_gen_s)
    with torch.no_grad():
        idx = prompts.repeat_interleave(cfg.group, dim=0)
        cache = KVCache(len(model.blocks))
        logits = model(idx, cache)[:, -1]
        out = []
        for t in range(cfg.max_new_tokens):
            rlprof.counter("decode_iteration", float(t))
            tok = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)
            out.append(tok)
            if t + 1 < cfg.max_new_tokens:
                logits = model(tok, cache)[:, -1]
            rlprof.sub_step("decode")  # one decode iteration finished
        return torch.cat([idx] + out, dim=1)


def micro_batched_log_probs(model: torch.nn.Module, seqs: torch.Tensor, n: int) -> torch.Tensor:
    """token_log_probs in n forward passes (as verl's compute_log_prob does with
    log_prob_micro_batch_size), one rlprof sub_step("micro_batch") after each."""
    out = []
    with torch.no_grad():
        for part in torch.chunk(seqs, n):
            out.append(token_log_probs(model, part))
            rlprof.sub_step("micro_batch")
    return torch.cat(out)


@rlprof.annotate("ref_compute_log_prob", role="ref")
def ref_compute_log_prob(ref: TinyGPT, seqs: torch.Tensor, cfg: GrpoConfig) -> torch.Tensor:
    _planted()
    return micro_batched_log_probs(ref, seqs, cfg.log_prob_micro_batches)


@rlprof.annotate("actor_compute_log_prob", role="actor")
def actor_compute_log_prob(actor: torch.nn.Module, seqs: torch.Tensor,
                           cfg: GrpoConfig) -> torch.Tensor:
    _planted()  # (DDP's forward has no collective: the model has no buffers to broadcast)
    return micro_batched_log_probs(actor, seqs, cfg.log_prob_micro_batches)


def table_share(cfg: GrpoConfig, rank: int, world: int) -> List[Tuple[int, int]]:
    """This rank's prompts: every world-th fact of the (shuffled) addition table."""
    facts = [(a, b) for a in range(cfg.max_digit + 1) for b in range(cfg.max_digit + 1)]
    order = torch.randperm(len(facts), generator=torch.Generator().manual_seed(cfg.seed))
    return [facts[i] for i in order.tolist()][rank::world]


def grpo_advantages(rewards: torch.Tensor, group: int) -> torch.Tensor:
    r = rewards.view(-1, group)
    return ((r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-6)).view(-1)


@rlprof.annotate("actor_update", role="actor")
def actor_update(actor: torch.nn.Module, opt: torch.optim.Optimizer, seqs: torch.Tensor,
                 old_lp: torch.Tensor, ref_lp: torch.Tensor, adv: torch.Tensor,
                 cfg: GrpoConfig) -> Dict[str, float]:
    mask = response_mask(seqs[:, PROMPT_LEN:])
    n = seqs.shape[0]
    mini = n // cfg.mini_batches
    micro = mini // cfg.micro_batches
    kl_sum, loss_sum = 0.0, 0.0
    for m in range(cfg.mini_batches):
        opt.zero_grad(set_to_none=True)
        for u in range(cfg.micro_batches):
            sl = slice(m * mini + u * micro, m * mini + (u + 1) * micro)
            last = u == cfg.micro_batches - 1
            sync = contextlib.nullcontext() if last or not isinstance(actor, DDP) else actor.no_sync()
            with sync, rlprof.annotate("forward_backward"):
                lp = token_log_probs(actor, seqs[sl])
                ratio = torch.exp(lp - old_lp[sl])
                a = adv[sl, None]
                pg = -torch.min(ratio * a, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * a)
                d = ref_lp[sl] - lp
                kl = torch.exp(d) - d - 1  # k3 estimator of KL(policy || ref)
                mk = mask[sl]
                loss = ((pg + cfg.kl_coef * kl) * mk).sum() / mk.sum().clamp(min=1)
                (loss / cfg.micro_batches).backward()
            kl_sum += float((kl * mk).sum() / mk.sum().clamp(min=1))
            loss_sum += float(loss)
            rlprof.sub_step("micro_batch")
        opt.step()
        rlprof.sub_step("mini_batch")
    steps = cfg.mini_batches * cfg.micro_batches
    return {"loss": loss_sum / steps, "kl": kl_sum / steps}


def sft_warmup(policy: TinyGPT, cfg: GrpoConfig) -> torch.optim.Optimizer:
    """A short supervised warm-up on the addition table (not profiled). Returns its Adam, whose
    moment estimates the RL phase keeps (a fresh Adam's first steps are lr-sized in every
    weight, which on noisy policy gradients undoes the warm-up)."""
    pairs = [(a, b) for a in range(cfg.max_digit + 1) for b in range(cfg.max_digit + 1)]
    device = next(policy.parameters()).device
    width = PROMPT_LEN + cfg.max_new_tokens
    rows = []
    for a, b in pairs:
        r = encode_prompt(a, b) + answer_tokens(a, b)
        rows.append(r + [EOS] * (width - len(r)))
    data = torch.tensor(rows, device=device)
    mask = response_mask(data[:, PROMPT_LEN:])
    opt = torch.optim.Adam(policy.parameters(), lr=3e-3)
    for _ in range(cfg.sft_steps):
        lp = token_log_probs(policy, data)
        loss = -(lp * mask).sum() / mask.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    for group in opt.param_groups:
        group["lr"] = cfg.lr
    return opt


# ---- the training loop of one rank ----

def train(cfg: GrpoConfig, rank: int = 0, world: int = 1, config: Optional[str] = None,
          overrides: Sequence[str] = (), mode: str = "rlprof", trace_dir: str = "",
          torch_steps: Sequence[int] = (2, 3), verbose: bool = True,
          around_step: Optional[Callable[[int], Any]] = None,
          torch_cpu: bool = True) -> Dict[str, Any]:
    """Runs cfg.steps GRPO steps. mode: rlprof (profiled by `config`), off (no profiler),
    torch (torch.profiler.profile on `torch_steps`, traces under trace_dir) or rlprof+torch
    (both: torch.profiler opens before rlprof's step window, to check how they share CUPTI).
    around_step(step), when given, is a context manager entered around each step's window
    (bench/cost.py); torch_cpu=False gives torch.profiler the CUDA activity alone. Returns rewards, step times and this rank's capture directories."""
    global _planted_s, _planted_gen_s
    _planted_s = cfg.straggler_ms / 1000 if world > 1 and rank == world - 1 else 0.0
    device = rank_device(cfg, rank)
    torch.manual_seed(cfg.seed)
    policy = TinyGPT(max_len=PROMPT_LEN + cfg.max_new_tokens).to(device)
    opt = sft_warmup(policy, cfg)
    ref = copy.deepcopy(policy).eval()
    rollout_model = copy.deepcopy(policy).eval()
    if world > 1:
        actor = DDP(policy, device_ids=[device.index] if device.type == "cuda" else None)
    else:
        actor = policy
    prof = None
    if mode in ("rlprof", "rlprof+torch") and config:
        prof = rlprof.Profiler(config, overrides=overrides, roles=["actor", "rollout", "ref"],
                               quiet=not verbose)
    gen = torch.Generator(device=device).manual_seed(cfg.seed * 1000 + rank)
    cuda = device.type == "cuda"
    rewards_per_step: List[float] = []
    step_times: List[float] = []  # wall time of each step, profiler work included
    cpu_times: List[float] = []   # CPU time of the process (all threads) in each step
    body_times: List[float] = []  # the same without torch.profiler's exit / export
    thread_times: List[float] = []  # CPU time of the training thread in each step
    for step in range(1, cfg.steps + 1):
        t0, c0, h0 = time.perf_counter(), time.process_time(), time.thread_time()
        around = around_step(step) if around_step is not None else contextlib.nullcontext()
        around.__enter__()
        tprof = None
        if mode in ("torch", "rlprof+torch") and step in torch_steps:
            activities = [torch.profiler.ProfilerActivity.CPU] if torch_cpu or not cuda else []
            if cuda:  # the same activities as rlprof's device capture: kernels, copies, launches
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            tprof = torch.profiler.profile(activities=activities)
            tprof.__enter__()
        _planted_gen_s = cfg.imbalance_ms / 1000 if world > 1 and step % world == rank else 0.0
        with (prof.step(step) if prof is not None else contextlib.nullcontext()):
            weight_sync(policy, rollout_model)
            pairs = table_share(cfg, rank, world)
            prompts = torch.tensor([encode_prompt(a, b) for a, b in pairs], device=device)
            seqs = rollout_generate(rollout_model, prompts, cfg, gen)
            with rlprof.annotate("reward"):
                responses = seqs[:, PROMPT_LEN:].tolist()
                rewards = torch.tensor([reward(*pairs[i // cfg.group], responses[i])
                                        for i in range(len(responses))], device=device)
            ref_lp = ref_compute_log_prob(ref, seqs, cfg)
            old_lp = actor_compute_log_prob(actor, seqs, cfg)
            adv = grpo_advantages(rewards, cfg.group)
            stats = actor_update(actor, opt, seqs, old_lp, ref_lp, adv, cfg)
            if cuda:  # the step's GPU work inside its window and its time
                torch.cuda.synchronize(device)
        body_times.append(time.process_time() - c0)
        if tprof is not None:
            tprof.__exit__(None, None, None)  # torch collects and post-processes here
            if trace_dir:
                tprof.export_chrome_trace(os.path.join(trace_dir, f"torch_step{step}_rank{rank}.json"))
        around.__exit__(None, None, None)
        step_times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
        thread_times.append(time.thread_time() - h0)
        mean = rewards.mean()
        if world > 1:
            dist.all_reduce(mean)
            mean /= world
        rewards_per_step.append(float(mean))
        if verbose and rank == 0:
            print(f"step {step}: mean reward {float(mean):.3f}  kl {stats['kl']:.4f}  "
                  f"loss {stats['loss']:+.4f}  ({step_times[-1] * 1000:.0f} ms)", flush=True)
    captures: List[str] = []
    result: Dict[str, Any] = {"rewards": rewards_per_step, "step_times": step_times,
                              "cpu_times": cpu_times, "body_times": body_times,
                              "thread_times": thread_times}
    if prof is not None:
        captures = prof.shutdown()
        result.update(run_dir=prof.run_dir, run_id=prof.run_id, clock_offset_ns=prof.clock_offset_ns)
    result["captures"] = captures
    return result


# ---- launcher ----

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, cfg: GrpoConfig, kwargs: Dict[str, Any],
            summary: str) -> None:
    """One rank. port 0: the launcher (torchrun) already set the rendezvous environment."""
    if port:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                          WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
    torch.set_num_threads(1)
    if cfg.device == "cuda":
        rank_device(cfg, rank)  # before the process group: NCCL binds the current device
    dist.init_process_group(dist_backend(cfg, world), rank=rank, world_size=world)
    try:
        result = train(cfg, rank, world, **kwargs)
        results: List[Any] = [None] * world
        dist.all_gather_object(results, result)
        if rank == 0 and summary:
            with open(summary, "w") as f:
                json.dump({"config": dataclasses.asdict(cfg), "ranks": results}, f, indent=1)
        # torch 2.x gloo: a worker thread can drop the last reference to a finished collective
        # (its tensors hold Python objects) while the interpreter finalizes; taking the GIL
        # then ends that thread and the process aborts ("terminate called without an active
        # exception", pytorch/pytorch#190489). A barrier lets the workers finish with every
        # earlier collective while the interpreter is alive; collecting drops the DDP model's
        # reference, so destroying the group joins the workers here.
        dist.barrier()
    finally:
        gc.collect()
        dist.destroy_process_group()


def launched_by_torchrun() -> bool:
    return "TORCHELASTIC_RUN_ID" in os.environ and "RANK" in os.environ


def launch(cfg: GrpoConfig, ranks: int, summary: str = "", **kwargs: Any) -> int:
    """Runs `ranks` processes (mp.spawn) over gloo; rank 0 writes `summary` (JSON). Under
    torchrun this process is one rank of
    the launcher's world instead. Returns the number of ranks."""
    if launched_by_torchrun():
        world = int(os.environ["WORLD_SIZE"])
        _worker(int(os.environ["RANK"]), world, 0, cfg, kwargs, summary)
        return world
    mp.spawn(_worker, args=(ranks, _free_port(), cfg, kwargs, summary), nprocs=ranks, join=True)
    return ranks


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--config", default=os.path.join(HERE, "grpo_verl.yaml"),
                    help="profiler config (verl, MindSpeed-RL or rlprof YAML)")
    ap.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--torch-profiler", action="store_true",
                    help="torch.profiler.profile on steps 2 and 3 instead of rlprof")
    ap.add_argument("--summary", default="", help="write rewards, step times, captures (JSON)")
    ap.add_argument("--small", action="store_true", help="a smaller problem (tests)")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="where the models run (cuda: GPU rank %% device_count; NCCL when each "
                         "rank has a GPU, else gloo)")
    ap.add_argument("--straggler-ms", type=float, default=0.0,
                    help="planted: the last rank sleeps this long in each stage without a collective "
                         "(4 a step: a straggler costing 4x this a step)")
    ap.add_argument("--imbalance-ms", type=float, default=0.0,
                    help="planted: in step s, rank s %% ranks generates this much longer (data-parallel "
                         "imbalance: the step waits for the slow rank at the update)")
    args = ap.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: torch sees no CUDA device")
    cfg = GrpoConfig(steps=args.steps, device=args.device, straggler_ms=args.straggler_ms,
                     imbalance_ms=args.imbalance_ms)
    if args.small:
        cfg = dataclasses.replace(cfg, max_digit=2, group=4, sft_steps=20)
    mode = "off" if args.no_profile else "torch" if args.torch_profiler else "rlprof"
    t0 = time.time()
    ranks = launch(cfg, args.ranks, summary=args.summary, config=os.path.abspath(args.config),
                   overrides=args.override, mode=mode, trace_dir=os.getcwd())
    if not launched_by_torchrun() or os.environ.get("RANK") == "0":
        print(f"{ranks} ranks x {cfg.steps} steps in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
