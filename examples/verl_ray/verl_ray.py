"""A verl-shaped RL job on CPU: verl's own single controller (RayWorkerGroup over a 2-worker
RayResourcePool) drives a fused actor/rollout/ref worker that builds verl's DistProfiler from
its `actor.profiler` block exactly as verl's workers do (omega_conf_to_dataclass), decorates its
stages with `@DistProfiler.annotate`, times inner work with `marked_timer`, advances the
profiler once per update mini-batch, and is started/stopped by the trainer's `start_profile` /
`stop_profile` on the steps `global_profiler.steps` lists. Nothing here mentions rlprof: run it
through the launcher and `global_profiler.tool: rlprof` records.

    rlprof run --config examples/verl_ray/verl_ray.yaml -- python examples/verl_ray/verl_ray.py

Needs verl and ray (scripts/setup makes .venv-integ with both). The model is a few matmuls.
"""
import os
import sys

import ray
import torch
from omegaconf import OmegaConf

from verl.single_controller.base import Worker
from verl.single_controller.base.decorator import Dispatch, register
from verl.single_controller.ray import RayClassWithInitArgs, RayResourcePool, RayWorkerGroup
from verl.utils.config import omega_conf_to_dataclass
from verl.utils.profiler import (DistProfiler, DistProfilerExtension, ProfilerConfig, mark_annotate,
                                 mark_end_range, mark_start_range, marked_timer)

HERE = os.path.dirname(os.path.abspath(__file__))
MINI_BATCHES = 3
DECODE_TOKENS = 4


class ActorRolloutRefWorker(Worker, DistProfilerExtension):
    def __init__(self, config):
        Worker.__init__(self)
        self.config = config
        prof_cfg = config.actor_rollout_ref.actor.profiler
        profiler_config = omega_conf_to_dataclass(prof_cfg, dataclass_type=ProfilerConfig)
        DistProfilerExtension.__init__(
            self, DistProfiler(rank=self.rank, config=profiler_config,
                               save_file_prefix="actor_rollout_ref"))
        torch.manual_seed(self.rank)
        self.w = torch.randn(16, 16)

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    @DistProfiler.annotate(color="red", role="rollout_generate")
    def generate_sequences(self):
        rid = mark_start_range(message="prepare_prompts")
        x = torch.randn(4, 16)
        mark_end_range(rid)
        for _ in range(DECODE_TOKENS):
            x = self._decode(x)
        return float(x.sum())

    @mark_annotate(message="decode_token")
    def _decode(self, x):
        return torch.tanh(x @ self.w)

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    @DistProfiler.annotate(color="olive", role="ref_compute_log_prob")
    def compute_ref_log_prob(self):
        return float((torch.randn(4, 16) @ self.w).logsumexp(-1).sum())

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    @DistProfiler.annotate(color="blue", role="actor_compute_log_prob")
    def compute_log_prob(self):
        return float((torch.randn(4, 16) @ self.w).logsumexp(-1).sum())

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    @DistProfiler.annotate(color="red", role="actor_update")
    def update_actor(self):
        timing = {}
        for _ in range(MINI_BATCHES):
            with marked_timer("forward_backward", timing):
                loss = (torch.randn(4, 16) @ self.w).pow(2).mean()
            self.profiler.step()  # verl: once per update mini-batch
        return float(loss)


def main(argv):
    cfg_path = os.environ.get("VERL_RAY_CONFIG", os.path.join(HERE, "verl_ray.yaml"))
    config = OmegaConf.load(cfg_path)
    for o in argv:
        config.merge_with_dotlist([o])
    OmegaConf.resolve(config)  # as verl's main_ppo does
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    pool = RayResourcePool(process_on_nodes=[2], use_gpu=False, max_colocate_count=1)
    wg = RayWorkerGroup(resource_pool=pool,
                        ray_cls_with_init=RayClassWithInitArgs(ray.remote(ActorRolloutRefWorker), config=config),
                        device_name="cpu")
    steps = set(config.global_profiler.steps or [])
    for step in range(1, 5):
        timing = {}
        with marked_timer("step", timing):
            profiled = step in steps
            if profiled:
                wg.start_profile(role="train", profile_step=step)
            with marked_timer("gen", timing):
                wg.generate_sequences()
            wg.compute_ref_log_prob()
            wg.compute_log_prob()
            wg.update_actor()
            if profiled:
                wg.stop_profile(run_command=step == max(steps))
    ray.shutdown()
    print("verl_ray: done")


if __name__ == "__main__":
    main(sys.argv[1:])
