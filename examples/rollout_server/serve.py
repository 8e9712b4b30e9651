"""A rollout server's engine loop over a tiny random-weights model (no download): per RL step
the trainer calls profile(True) on the worker (verl's start_profile), the scheduler runs one
prefill step for a batch of requests and then one decode step per new token, and profile(False)
ends the step. The engine code is examples/rollout_server/standin/vllm: vLLM's module, class
and method names (vLLM itself does not install over this project's torch; see
docs/integrations.md). Nothing here mentions rlprof: through the launcher, rlprof's hook wraps
GPUModelRunner.execute_model and counts the decode steps for the config's decode schedule.

    rlprof run --config examples/rollout_server/rollout.yaml -- python examples/rollout_server/serve.py
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "standin"))

import torch  # noqa: E402

from vllm.v1.core.sched.output import SchedulerOutput  # noqa: E402
from vllm.v1.worker.gpu_model_runner import GPUModelRunner  # noqa: E402
from vllm.v1.worker.gpu_worker import Worker  # noqa: E402

VOCAB, HIDDEN, PROMPT, NEW_TOKENS, REQUESTS, STEPS = 64, 32, 8, 10, 4, 2


class TinyLM(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(VOCAB, HIDDEN)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.GELU(),
                                       torch.nn.Linear(HIDDEN, VOCAB))
        self.tokens = None

    @torch.no_grad()
    def forward(self, so: SchedulerOutput) -> torch.Tensor:
        if so.scheduled_new_reqs:
            self.tokens = torch.randint(0, VOCAB, (REQUESTS, PROMPT))
        logits = self.mlp(self.emb(self.tokens).mean(1))
        nxt = logits.argmax(-1, keepdim=True)
        self.tokens = torch.cat([self.tokens, nxt], 1)
        return nxt


def main() -> None:
    worker = Worker(GPUModelRunner(TinyLM()))
    reqs = [f"req{i}" for i in range(REQUESTS)]
    for _ in range(STEPS):
        worker.profile(True)
        worker.execute_model(SchedulerOutput(reqs, {r: PROMPT for r in reqs}, PROMPT * REQUESTS))
        for _ in range(NEW_TOKENS - 1):
            worker.execute_model(SchedulerOutput([], {r: 1 for r in reqs}, REQUESTS))
        worker.profile(False)
    print("rollout_server: done")


if __name__ == "__main__":
    main()
