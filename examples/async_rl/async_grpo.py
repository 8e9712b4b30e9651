#!/usr/bin/env python3
"""Asynchronous GRPO on CPU: rollout workers and trainer ranks in processes of their own, profiled
by rlprof, with its own ground truth (issue 32).

    .venv/bin/python examples/async_rl/async_grpo.py --mode fully_async --out out/async
    .venv/bin/python examples/async_rl/async_grpo.py --mode one_step_off --updates 8
    .venv/bin/python examples/async_rl/async_grpo.py --mode sync --no-profile

The processes (one gloo world): trainer ranks 0..T-1 (DDP over their own group) and rollout
workers T..T+R-1. Rollout workers generate G answers per prompt with the tiny policy of
examples/grpo_tiny (a "group", one queue item) and put them on a bounded sample queue; trainers
take `groups` groups each per update, drop the too stale ones, and run a GRPO update (group-
normalised advantages, importance ratio to the behaviour policy, clipped). Every `publish_every`
updates trainer rank 0 publishes the weights to every rollout worker by a real transfer: one
flat buffer broadcast over a process group of rank 0 and the rollout workers (the weight sync).

Weight versions: the trainers' version is the number of updates done; a rollout worker
generates with the last version it loaded (0: the initial policy). A group made with version v
is consumed at trainer version u with staleness u - v. The staleness bound S: a rollout worker
does not start a group that would be consumed more than S versions after its weights (it waits
for newer weights); groups that end up staler anyway (trainers take groups in queue order) are
dropped at consumption.

Modes:
  sync           S = 0, publish every update: generation and training alternate (lock-step)
  one_step_off   S = 1, publish every update: generation of batch n+1 overlaps training on n
  fully_async    S = --max-staleness (default 2), publish every --publish-every updates (2)
  --partial-rollout (fully_async): a sync requested while a group is being generated interrupts
                 it between tokens (phase drain: its tokens so far are kept), the new weights
                 are loaded, and the group goes on with them (phase resume: the prompt and the
                 tokens so far prefilled again); the group's version is the oldest that made any
                 of its tokens. --generate-delay-ms spreads its delay over the tokens (a slower
                 decode), which makes interruptions likely.

The weight sync, as each side sees it (phases as in checkpoint-engine-like syncs):
  trainer 0: gather (flatten parameters into the buffer), wait (for every rollout worker to
             join: their drain), transfer (the broadcast; bytes), then the version is published
  rollout:   drain (from the request to joining: the group in progress finishes first), wait,
             transfer, load (copy into the model)

Ground truth: each process writes <out>/truth/<role><index>.jsonl, one JSON object a line:
{"kind", "start_ns", "end_ns", ...} on CLOCK_MONOTONIC (time.monotonic_ns, rlprof's clock), for
every interval it spends: rollout_generate, wait/weights, wait/queue_full (rollout);
wait/samples, actor_update (trainer); sync/<phase>; one "consume" record per group a trainer
takes (its version, staleness, kept or dropped); one "publish" record per version trainer 0
publishes (the instant the rollout workers may load it). rlprof records the same intervals under the
same names (stages, and rlprof.rl's wait/ and sync/ ranges) and the versions and staleness as
rlprof.rl's counters, without reading this file.
"""
from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import queue as queue_mod
import socket
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "grpo_tiny"))
import rlprof  # noqa: E402
import rlprof.rl as rl  # noqa: E402
from model import PROMPT_LEN, KVCache, TinyGPT, encode_prompt, response_mask, reward, token_log_probs  # noqa: E402

MODES = ("sync", "one_step_off", "fully_async")
POLL_S = 0.002  # how often a waiting process looks at the shared state again


@dataclasses.dataclass
class AsyncConfig:
    mode: str = "fully_async"
    trainers: int = 2
    rollout_workers: int = 2
    updates: int = 8
    groups: int = 2            # groups each trainer takes per update
    group: int = 8             # G answers per prompt (one group)
    max_new_tokens: int = 6
    max_staleness: int = 2     # fully_async only (sync: 0, one_step_off: 1)
    publish_every: int = 2     # fully_async only (others: 1)
    queue_max: int = 4         # groups the sample queue holds
    lr: float = 3e-3
    clip: float = 0.2
    max_digit: int = 3
    seed: int = 1234
    out: str = "out/async"
    profile: bool = True
    # Planted slowness (ms added to each call), to make a run train-bound or rollout-bound.
    train_delay_ms: float = 0.0
    generate_delay_ms: float = 0.0
    # Partial rollout (fully_async): a sync requested mid-group interrupts its generation (drain),
    # the new weights are loaded, and the group goes on with them (resume: the prefix re-prefilled).
    partial_rollout: bool = False

    def staleness(self) -> int:
        return {"sync": 0, "one_step_off": 1}.get(self.mode, self.max_staleness)

    def every(self) -> int:
        return self.publish_every if self.mode == "fully_async" else 1

    def groups_per_update(self) -> int:
        return self.trainers * self.groups


class Truth:
    """The process's own record of where its time went (ground truth for rlprof's analysis)."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.f = open(path, "w")

    def add(self, kind: str, start_ns: int, end_ns: int, **fields: Any) -> None:
        self.f.write(json.dumps({"kind": kind, "start_ns": start_ns, "end_ns": end_ns, **fields}) + "\n")

    def close(self) -> None:
        self.f.close()


class Span:
    """An interval recorded twice: as rlprof records it (`inner`: an rlprof.rl range or a stage)
    and as a ground-truth record of the same name. rlprof reads its clock somewhere inside the
    inner context's enter and exit, so the record brackets it: start_ns / end_ns just inside them,
    outer_start_ns / outer_end_ns just outside (a process descheduled in between, on a loaded
    machine, widens the bracket instead of making the truth disagree)."""

    def __init__(self, truth: Truth, kind: str, inner: Any, **fields: Any) -> None:
        self.truth, self.kind, self.inner, self.fields = truth, kind, inner, fields

    def __enter__(self) -> "Span":
        self.outer = time.monotonic_ns()
        self.inner.__enter__()
        self.start = time.monotonic_ns()
        return self

    def __exit__(self, *exc: Any) -> None:
        end = time.monotonic_ns()
        self.inner.__exit__(*exc)
        self.truth.add(self.kind, self.start, end, outer_start_ns=self.outer, outer_end_ns=time.monotonic_ns(),
                       **self.fields)


def phase(truth: Truth, name: str, version: int, nbytes: Optional[int] = None) -> Span:
    fields: Dict[str, Any] = {"version": version}
    if nbytes is not None:
        fields["bytes"] = nbytes
    return Span(truth, "sync/" + name, rl.sync_phase(name, version=version, nbytes=nbytes), **fields)


@dataclasses.dataclass
class Shared:
    """What the processes share besides the process groups."""
    samples: Any          # mp.Queue of groups
    reserved: Any         # mp.Value: groups reserved by rollout workers so far
    published: Any        # mp.Value: the last version published (rollout workers may load it)
    requested: Any        # mp.Value: the version trainer 0 is publishing (sync requested)
    stop: Any             # mp.Value: trainers done so far


def flat_params(model: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.parameters()])


def load_flat(model: torch.nn.Module, flat: torch.Tensor) -> None:
    with torch.no_grad():
        at = 0
        for p in model.parameters():
            n = p.numel()
            p.copy_(flat[at:at + n].view_as(p))
            at += n


def generate_group(model: TinyGPT, a: int, b: int, cfg: AsyncConfig, gen: torch.Generator,
                   interrupt: Optional[Any] = None, stamps: Optional[List[int]] = None) -> Dict[str, Any]:
    """G answers to a+b= with the behaviour policy's log-probs and rewards. `interrupt()` (partial
    rollout) is asked between tokens: when it syncs the weights it returns a resume context, and
    the group goes on with the new weights over its prefix."""
    with torch.no_grad():
        idx = torch.tensor([encode_prompt(a, b)] * cfg.group)
        cache = KVCache(len(model.blocks))
        logits = model(idx, cache)[:, -1]
        out = []
        for t in range(cfg.max_new_tokens):
            tok = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=gen)
            out.append(tok)
            if stamps is not None and t == 0:
                stamps.append(time.monotonic_ns())  # the first token
            if cfg.generate_delay_ms > 0:  # planted: a slower decode, spread over the tokens
                time.sleep(cfg.generate_delay_ms / 1e3 / cfg.max_new_tokens)
            if t + 1 < cfg.max_new_tokens:
                resume = interrupt() if interrupt is not None else None
                if resume is not None:
                    with resume:  # the new weights' cache over the prompt and the tokens so far
                        cache = KVCache(len(model.blocks))
                        logits = model(torch.cat([idx] + out, dim=1), cache)[:, -1]
                    continue
                logits = model(tok, cache)[:, -1]
        if stamps is not None:
            stamps.append(time.monotonic_ns())  # the last token
        seqs = torch.cat([idx] + out, dim=1)
        old_lp = token_log_probs(model, seqs)
    rewards = [reward(a, b, seqs[i, PROMPT_LEN:].tolist()) for i in range(cfg.group)]
    return {"seqs": seqs, "old_lp": old_lp, "rewards": torch.tensor(rewards)}


# ---- the weight sync ------------------------------------------------------------------------

def sync_as_trainer(model: torch.nn.Module, version: int, group: Any, sh: Shared, truth: Truth) -> None:
    with Span(truth, "weight_sync", rlprof.annotate("weight_sync", role="actor"), version=version):
        with phase(truth, "gather", version):
            buf = flat_params(model)
        sh.requested.value = version
        with phase(truth, "wait", version):
            dist.barrier(group=group)  # every rollout worker has drained and joined
        with phase(truth, "transfer", version, buf.numel() * buf.element_size()):
            dist.broadcast(buf, src=0, group=group)
        sh.published.value = version
        now = time.monotonic_ns()
        rl.published(version)
        truth.add("publish", now, time.monotonic_ns(), version=version)  # brackets rlprof's stamp


def sync_as_rollout(model: TinyGPT, version: int, group: Any, requested_ns: int, truth: Truth,
                    drained: bool = False) -> None:
    """Joins trainer 0's broadcast of `version` (requested at `requested_ns`)."""
    # Draining (finishing the group in progress) began at the request: recorded here, as
    # trainer 0 requested it, and as a ground-truth record of the same interval — unless the
    # caller drained itself (partial rollout: its own sync/drain phase, recorded by rlprof too).
    if not drained:  # (`request`: not a phase the process recorded — it learns of the request late)
        truth.add("sync/drain", requested_ns, time.monotonic_ns(), version=version, request=True)
    with Span(truth, "weight_sync", rlprof.annotate("weight_sync", role="rollout"), version=version):
        buf = flat_params(model)
        with phase(truth, "wait", version):
            dist.barrier(group=group)
        with phase(truth, "transfer", version, buf.numel() * buf.element_size()):
            dist.broadcast(buf, src=0, group=group)
        with phase(truth, "load", version):
            load_flat(model, buf)
        rl.weight_version(version)


# ---- the two roles --------------------------------------------------------------------------

def rollout_loop(cfg: AsyncConfig, index: int, group: Any, sh: Shared, prof: Optional[rlprof.Profiler]) -> None:
    truth = Truth(os.path.join(cfg.out, "truth", f"rollout{index}.jsonl"))
    torch.manual_seed(cfg.seed)
    model = TinyGPT()  # the trainers broadcast version 0 before anything is generated
    version, seen_request, request_ns = -1, -1, 0
    gen = torch.Generator().manual_seed(cfg.seed + 100 + index)
    facts = [(a, b) for a in range(cfg.max_digit + 1) for b in range(cfg.max_digit + 1)]

    def service_sync() -> bool:
        """Joins a requested sync; False when the trainers are done."""
        nonlocal version, seen_request, request_ns
        req = sh.requested.value
        if req > version:
            if req != seen_request:
                seen_request, request_ns = req, time.monotonic_ns()
            sync_as_rollout(model, req, group, request_ns, truth)
            version = req
        return sh.stop.value < cfg.trainers

    def interrupt() -> Any:
        """Partial rollout: a requested sync stops the group in progress (drain), loads the new
        weights, and hands back the resume phase to run the rest of the group under."""
        nonlocal version, seen_request
        req = sh.requested.value
        if req <= version or sh.stop.value >= cfg.trainers:
            return None
        seen_request = req
        with phase(truth, "drain", req):  # the group's state is kept: its tokens so far
            pass
        sync_as_rollout(model, req, group, time.monotonic_ns(), truth, drained=True)
        version = req
        return phase(truth, "resume", req)

    step = 0
    while sh.stop.value < cfg.trainers:
        step += 1
        with (prof.step(step) if prof else _null()):
            if not service_sync():
                break
            with sh.reserved.get_lock():
                slot = sh.reserved.value
                sh.reserved.value += 1
            # The update that will consume this group, and the weights it may be made with.
            needed = max(0, slot // cfg.groups_per_update() - cfg.staleness())
            if version < needed:
                with Span(truth, "wait/weights", rl.wait("weights"), version=version, needed=needed):
                    while version < needed and service_sync():
                        time.sleep(POLL_S)
            if sh.stop.value >= cfg.trainers:
                break
            a, b = facts[slot % len(facts)]
            with Span(truth, "rollout_generate", rlprof.annotate("rollout_generate", role="rollout"),
                      version=version, slot=slot):
                first = version  # a partial rollout may finish the group with newer weights
                submit, stamps = time.monotonic_ns(), []
                made = generate_group(model, a, b, cfg, gen, interrupt if cfg.partial_rollout else None, stamps)
            tokens = int(made["seqs"].shape[0] * (made["seqs"].shape[1] - PROMPT_LEN))  # the answers' tokens
            rl.generated(1, tokens=tokens)  # one group: the unit the queue holds
            # The group's life (docs/samples.md): what the trainers do with it is its use (take).
            rlprof.sample(f"slot{slot}", submit=submit, first_token=stamps[0], last_token=stamps[-1],
                          prompt_tokens=cfg.group * PROMPT_LEN, completion_tokens=tokens, finish_reason="length",
                          version=(first, version), replica=index)
            now = time.monotonic_ns()
            truth.add("generated", now, now, groups=1, tokens=tokens)
            # Its version is the oldest weights that made any of its tokens (staleness: conservative).
            made.update(slot=slot, version=first, version_end=version, worker=index, made_ns=time.monotonic_ns())
            if not put(made, sh, truth, service_sync):
                break
    truth.close()
    sh.samples.cancel_join_thread()  # unconsumed groups must not hold the exit


def put(item: Dict[str, Any], sh: Shared, truth: Truth, service_sync: Any) -> bool:
    """Puts a group on the queue; a full queue is waited out (serving syncs meanwhile)."""
    try:
        sh.samples.put_nowait(item)
        rl.queue_depth(sh.samples.qsize())
        return True
    except queue_mod.Full:
        pass
    with Span(truth, "wait/queue_full", rl.wait("queue_full"), slot=item["slot"]):
        while True:
            try:
                sh.samples.put(item, timeout=POLL_S)
                rl.queue_depth(sh.samples.qsize())
                return True
            except queue_mod.Full:
                if not service_sync():
                    return False


def trainer_loop(cfg: AsyncConfig, rank: int, group: Any, train_group: Any, sh: Shared,
                 prof: Optional[rlprof.Profiler]) -> Dict[str, Any]:
    truth = Truth(os.path.join(cfg.out, "truth", f"trainer{rank}.jsonl"))
    torch.manual_seed(cfg.seed)
    policy = TinyGPT()
    actor = DDP(policy, process_group=train_group) if cfg.trainers > 1 else policy
    opt = torch.optim.AdamW(actor.parameters(), lr=cfg.lr)
    kept = dropped = 0
    rewards: List[float] = []
    for u in range(1, cfg.updates + 1):
        with (prof.step(u) if prof else _null()):
            if u == 1 and rank == 0:
                sync_as_trainer(policy, 0, group, sh, truth)  # version 0: the initial policy
            batch = take(cfg, u - 1, sh, truth)  # trainer version u-1 consumes
            good = [g for g in batch if (u - 1) - g["version"] <= cfg.staleness()]
            kept += len(good)
            dropped += len(batch) - len(good)
            with Span(truth, "actor_update", rlprof.annotate("actor_update", role="actor"), version=u - 1):
                r = update(actor, opt, good, cfg)
                if cfg.train_delay_ms > 0:
                    time.sleep(cfg.train_delay_ms / 1e3)
            rewards.append(r)
            rl.trainer_version(u)
            if rank == 0 and u % cfg.every() == 0 and u < cfg.updates:
                sync_as_trainer(policy, u, group, sh, truth)
    with sh.stop.get_lock():
        sh.stop.value += 1  # the rollout workers stop when every trainer is done
    truth.close()
    return {"rank": rank, "kept": kept, "dropped": dropped, "reward": rewards}


def take(cfg: AsyncConfig, version: int, sh: Shared, truth: Truth) -> List[Dict[str, Any]]:
    """This trainer's groups for one update; waiting for them is starvation."""
    out = []
    for _ in range(cfg.groups):
        with Span(truth, "wait/samples", rl.wait("samples")):
            item = sh.samples.get()
        rl.queue_depth(sh.samples.qsize())
        got = time.monotonic_ns()
        truth.add("consume", got, got, slot=item["slot"], worker=item["worker"], made_version=item["version"],
                  version=version, staleness=version - item["version"],
                  kept=version - item["version"] <= cfg.staleness(), made_ns=item["made_ns"])
        rl.consumed(version - item["version"])
        # What became of the group: update version+1 trains on it, or it is too stale.
        rlprof.sample_use(f"slot{item['slot']}", "consumed" if version - item["version"] <= cfg.staleness() else "stale",
                          step=version + 1, version=version)
        out.append(item)
    return out


def update(actor: torch.nn.Module, opt: torch.optim.Optimizer, groups: List[Dict[str, Any]],
           cfg: AsyncConfig) -> float:
    """One GRPO update over the kept groups (an empty one still joins DDP's all-reduce)."""
    opt.zero_grad(set_to_none=True)
    if groups:
        seqs = torch.cat([g["seqs"] for g in groups])
        old_lp = torch.cat([g["old_lp"] for g in groups])
        r = torch.stack([g["rewards"] for g in groups])
        adv = ((r - r.mean(dim=1, keepdim=True)) / (r.std(dim=1, keepdim=True) + 1e-6)).view(-1, 1)
        lp = token_log_probs(actor, seqs)
        ratio = torch.exp(lp - old_lp)
        pg = -torch.min(ratio * adv, ratio.clamp(1 - cfg.clip, 1 + cfg.clip) * adv)
        mask = response_mask(seqs[:, PROMPT_LEN:])
        loss = (pg * mask).sum() / mask.sum().clamp(min=1)
        mean_reward = float(r.mean())
    else:
        loss = sum(p.sum() * 0.0 for p in actor.parameters())
        mean_reward = float("nan")
    loss.backward()
    opt.step()
    return mean_reward


class _null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# ---- processes ------------------------------------------------------------------------------

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def config_for(cfg: AsyncConfig) -> Dict[str, Any]:
    """rlprof's own block: every step of every process, one end-to-end window per process."""
    return {"rlprof": {"steps": "all", "continuous_steps": True, "save_path": os.path.join(cfg.out, "profile"),
                       "roles": {"actor": {"all_ranks": True, "contents": ["cpu"]},
                                 "rollout": {"all_ranks": True, "contents": ["cpu"]}}}}


def _worker(rank: int, cfg: AsyncConfig, port: int, sh: Shared, summary: str) -> None:
    world = cfg.trainers + cfg.rollout_workers
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    trainers = list(range(cfg.trainers))
    # Every rank makes every group (torch.distributed's rule), in the same order.
    train_group = dist.new_group(trainers) if cfg.trainers > 1 else None
    sync_group = dist.new_group([0] + list(range(cfg.trainers, world)))
    role = "actor" if rank < cfg.trainers else "rollout"
    prof = rlprof.Profiler(config_for(cfg), role=role, quiet=True) if cfg.profile else None
    result: Dict[str, Any] = {}
    try:
        if rank < cfg.trainers:
            result = trainer_loop(cfg, rank, sync_group, train_group, sh, prof)
        else:
            rollout_loop(cfg, rank - cfg.trainers, sync_group, sh, prof)
        if prof is not None:
            prof.shutdown()
        results: List[Any] = [None] * world
        dist.all_gather_object(results, result)
        if rank == 0 and summary:
            with open(summary, "w") as f:
                json.dump({"config": dataclasses.asdict(cfg), "trainers": results[:cfg.trainers],
                           "run_dir": prof.run_dir if prof is not None else None}, f, indent=1)
        dist.barrier()
    finally:
        gc.collect()
        dist.destroy_process_group()


def launch(cfg: AsyncConfig) -> Dict[str, Any]:
    if cfg.mode not in MODES:
        raise ValueError(f"mode {cfg.mode!r}: one of {', '.join(MODES)}")
    if cfg.staleness() < cfg.every() - 1:
        raise ValueError(f"max_staleness {cfg.staleness()} < publish_every - 1 ({cfg.every() - 1}): "
                         "the trainers would wait for groups no rollout worker may make")
    os.makedirs(os.path.join(cfg.out, "truth"), exist_ok=True)
    ctx = mp.get_context("spawn")
    sh = Shared(samples=ctx.Queue(maxsize=cfg.queue_max), reserved=ctx.Value("i", 0),
                published=ctx.Value("i", -1), requested=ctx.Value("i", -1), stop=ctx.Value("i", 0))
    summary = os.path.join(cfg.out, "summary.json")
    mp.start_processes(_worker, args=(cfg, _free_port(), sh, summary), nprocs=cfg.trainers + cfg.rollout_workers,
                       join=True, start_method="spawn")
    with open(summary) as f:
        return json.load(f)


def main(argv: Optional[Sequence[str]] = None) -> int:
    d = AsyncConfig()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=MODES, default=d.mode)
    ap.add_argument("--trainers", type=int, default=d.trainers)
    ap.add_argument("--rollout-workers", type=int, default=d.rollout_workers)
    ap.add_argument("--updates", type=int, default=d.updates)
    ap.add_argument("--groups", type=int, default=d.groups, help="groups each trainer takes per update")
    ap.add_argument("--max-staleness", type=int, default=d.max_staleness)
    ap.add_argument("--publish-every", type=int, default=d.publish_every)
    ap.add_argument("--queue-max", type=int, default=d.queue_max)
    ap.add_argument("--out", default=d.out)
    ap.add_argument("--train-delay-ms", type=float, default=0.0, help="planted: added to every update")
    ap.add_argument("--generate-delay-ms", type=float, default=0.0, help="planted: added to every group generated")
    ap.add_argument("--partial-rollout", action="store_true",
                    help="fully_async: a sync interrupts the group in progress, which resumes with the new weights")
    ap.add_argument("--no-profile", dest="profile", action="store_false")
    a = ap.parse_args(argv)
    cfg = AsyncConfig(mode=a.mode, trainers=a.trainers, rollout_workers=a.rollout_workers, updates=a.updates,
                      groups=a.groups, max_staleness=a.max_staleness, publish_every=a.publish_every,
                      queue_max=a.queue_max, out=a.out, profile=a.profile, train_delay_ms=a.train_delay_ms,
                      generate_delay_ms=a.generate_delay_ms, partial_rollout=a.partial_rollout)
    s = launch(cfg)
    kept = sum(t["kept"] for t in s["trainers"])
    dropped = sum(t["dropped"] for t in s["trainers"])
    print(f"{cfg.mode}: {cfg.updates} updates on {cfg.trainers} trainers, {cfg.rollout_workers} rollout workers; "
          f"groups kept {kept}, dropped as stale {dropped}; truth in {cfg.out}/truth"
          + (f"; profile in {s['run_dir']}" if s.get("run_dir") else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
