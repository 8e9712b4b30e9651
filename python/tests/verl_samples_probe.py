"""Run by test_verl_samples.py under .venv-integ (verl 0.9.1): rlprof's verl trajectory hooks on
verl's own classes, recorded into a real rlprof capture in this process.

- a tool call through verl's real ToolAgentLoop._call_tool (its unknown-tool path: a tiny model
  never asks for a tool), inside a trajectory: its name, start and end are the trajectory's;
- verl's real LLMServerClient._vllm_request_id gives the trajectory's id inside one, verl's fresh
  uuid outside, and verl's own id under full_determinism;
- a generation's output (verl's DataProto with the columns the agent loop makes) recorded by the
  controller's hook: the loop's side of each trajectory, the stamps column dropped; then the
  trainer's use of the batch.
Prints a JSON line with what it saw."""
import asyncio
import json
import sys
import time
import types

import numpy as np
import rlprof
from omegaconf import OmegaConf

import verl.experimental.agent_loop.tool_agent_loop as tal
import verl.workers.rollout.llm_server as ls
from verl.protocol import DataProto
from rlprof.integrations import verl_samples

out_dir = sys.argv[1]
verl_samples.patch_tool_agent_loop(tal)
verl_samples.patch_llm_client(ls)
seen = {}

prof = rlprof.Profiler({"rlprof": {"steps": [4], "save_path": out_dir,
                                   "roles": {"controller": {"contents": ["cpu"]}}}},
                       role="controller", rank=0, world_size=1)
with prof.step(4):
    # The agent loop worker's side of two trajectories.
    loop = object.__new__(tal.ToolAgentLoop)
    loop.tools = {}
    client = object.__new__(ls.LLMServerClient)
    client.config = OmegaConf.create({"actor_rollout_ref": {"rollout": {"full_determinism": False}}})
    stamps, ids = [], []
    for k in range(2):
        t = verl_samples._Trajectory(verl_samples._mint({"step": 4, "sample_index": 7, "rollout_n": k,
                                                         "validate": False}))
        token = verl_samples._current.set(t)
        t0 = time.monotonic_ns()
        seen.setdefault("request_ids", []).append(client._vllm_request_id("verl-req"))
        call = types.SimpleNamespace(name="search", arguments="{}")
        resp = asyncio.run(loop._call_tool(call, {}, types.SimpleNamespace()))
        seen["tool_text"] = getattr(resp[0], "text", None)
        time.sleep(0.002)
        r0 = time.monotonic_ns()
        t.reward = (r0, r0 + 1_000_000)
        verl_samples._current.reset(token)
        stamps.append((t0, time.monotonic_ns() + 2_000_000, tuple(t.tools), t.reward))
        ids.append(t.id)
    seen["outside"] = client._vllm_request_id("verl-req")
    client.config.actor_rollout_ref.rollout.full_determinism = True
    t = verl_samples._Trajectory("x")
    token = verl_samples._current.set(t)
    seen["determinism"] = client._vllm_request_id("det-3")
    verl_samples._current.reset(token)
    # The controller's side: the generation's columns, then the trainer's use.
    prompts = DataProto.from_dict(non_tensors={"uid": np.array(["u-a", "u-a"], dtype=object)},
                                  meta_info={"validate": False})
    col = np.empty(2, dtype=object)
    col[:] = stamps
    output = DataProto.from_dict(non_tensors={
        "rlprof_sample": np.array(ids, dtype=object), "rlprof_stamps": col,
        "min_global_steps": np.array([4, 4], dtype=object), "max_global_steps": np.array([4, 4], dtype=object)})
    seen["recorded"] = verl_samples.record_generation(prompts, output)
    seen["columns"] = sorted(output.non_tensor_batch)
    seen["consumed"] = verl_samples.record_consumed(output, 4)
    seen["ids"] = ids
    seen["tools"] = [[(n, b - a) for n, a, b in s[2]] for s in stamps]
    # verl's v1 ReplayBuffer evicting two groups: one too stale, one filtered by DAPO's filter_groups;
    # their trajectories' tags are what the v1 worker's queue puts carry (rlprof_sample, rlprof_stamps).
    from collections import Counter
    import verl.trainer.ppo.v1.replay_buffer as rb
    verl_samples.patch_replay_buffer(rb)
    rb.tq = types.SimpleNamespace(kv_clear=lambda **kw: None)  # no TransferQueue server here: its clear stood in
    buf = rb.ReplayBuffer("sync", OmegaConf.create({}), None, "drop", OmegaConf.create({}))
    evicted = {}
    for uid, n in (("ua", 2), ("ub", 2)):
        for k in range(n):
            tid = verl_samples._mint({"step": 4, "sample_index": uid, "rollout_n": k, "validate": False})
            t0 = time.monotonic_ns()
            buf.partitions["train"][f"{uid}_{k}_0"] = {"status": "success", "min_global_steps": 2, "max_global_steps": 3,
                                                      "rlprof_sample": tid, "rlprof_stamps": [t0, t0 + 5_000_000, [], None]}
            buf.finished_keys["train"].add(uid)
            evicted[tid] = uid
    buf._evict_terminal_groups(4, "train", ({"ua"}, {"ub"}, set(), Counter()))
    seen["evicted"] = evicted
    seen["left"] = sorted(buf.partitions["train"])
prof.stop()
prof.flush()
print(json.dumps(seen))
