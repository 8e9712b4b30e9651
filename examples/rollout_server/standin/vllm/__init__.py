"""A minimal stand-in for vLLM's model-execution layer (NOT vLLM): the module paths, class and
method names and the SchedulerOutput fields rlprof's hook reads are vLLM 0.33.0's
(vllm/v1/worker/gpu_model_runner.py, gpu_worker.py, core/sched/output.py). vLLM 0.33.0 from
PyPI pins torch==2.14.0 (a CUDA build), so it cannot be installed over this project's torch
2.13.0+cpu; see docs/integrations.md."""
