"""Example code, not part of rlprof: what verl 0.9.1 needs to train on a machine without a GPU.

verl loads this module through its own plugin hook (`VERL_USE_EXTERNAL_MODULES=verl_cpu_platform`)
and selects the platform it registers with `VERL_PLATFORM=cpu`. No file of verl or vLLM is edited;
everything here goes through verl's public plugin API or wraps a function after its module is
imported. rlprof itself needs none of it: on a GPU machine the job runs without this file.

What it provides:
1. A `cpu` platform (verl.plugin.platform.PlatformRegistry): device "cpu", gloo, and the
   torch.cuda-style memory/RNG calls verl makes on its device module as harmless CPU answers.
2. verl joins backends as "cpu:gloo,<device>:<backend>"; for device "cpu" that names cpu twice,
   which torch.distributed rejects: the duplicate is dropped.
3. `Tensor.pin_memory` without an accelerator returns the tensor (FSDP2's CPU offload of the
   reference model pins host memory).
4. Weight sync trainer -> vLLM on the CPU backend:
   a. verl's shared-memory transfer hands each weight over as a view of the shm buffer, which
      `.to("cpu")` does not copy, so closing the buffer fails; the receiver clones on CPU.
   b. vLLM's CPU backend repacks linear weights after loading; verl's in-place reload is wrapped
      in vLLM's own layer-wise reload (restore the checkpoint layout, reload, repack).
5. The critic (PPO with GAE): verl's value-head loader asks for flash_attention_2, which needs
   a GPU; on a CPU the same model is loaded with PyTorch's sdpa attention.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.util
import sys
from types import ModuleType
from typing import Any, Callable, Dict, Optional

import torch
import torch.distributed as dist
from verl.plugin.platform.platform_base import PlatformBase
from verl.plugin.platform.platform_manager import PlatformRegistry


def _host_memory() -> tuple:
    import psutil
    vm = psutil.virtual_memory()
    return vm.available, vm.total


class CpuDeviceModule(ModuleType):
    """What verl calls on `get_torch_device()`: torch.cpu, plus CUDA-style calls answered for
    the host (memory figures 0 or the machine's, RNG from torch's CPU generator)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(torch.cpu, name)

    def memory_allocated(self, *a: Any, **k: Any) -> int:
        return 0

    memory_reserved = max_memory_allocated = max_memory_reserved = memory_allocated

    def empty_cache(self, *a: Any, **k: Any) -> None:
        return None

    reset_peak_memory_stats = reset_accumulated_memory_stats = ipc_collect = empty_cache
    set_per_process_memory_fraction = set_device = empty_cache

    def mem_get_info(self, *a: Any, **k: Any) -> tuple:
        return _host_memory()

    def get_rng_state(self, *a: Any, **k: Any) -> torch.Tensor:
        return torch.get_rng_state()

    def set_rng_state(self, state: torch.Tensor, *a: Any, **k: Any) -> None:
        torch.set_rng_state(state)

    def get_device_name(self, *a: Any, **k: Any) -> str:
        return "cpu"

    def get_device_properties(self, *a: Any, **k: Any) -> Any:
        return type("CpuProperties", (), {"name": "cpu", "total_memory": _host_memory()[1]})()


DEVICE_MODULE = CpuDeviceModule("verl_cpu_device")


@PlatformRegistry.register(platform="cpu")
class CpuPlatform(PlatformBase):
    device_name = property(lambda self: "cpu")
    vendor_name = property(lambda self: "cpu")
    device_module = property(lambda self: DEVICE_MODULE)

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check: bool = False) -> bool:
        return True

    def current_device(self) -> torch.device:
        return torch.device("cpu")  # verl calls tensor.to(current_device()); an int means cuda:N

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index: int) -> None:
        return None

    def synchronize(self, device_index: Optional[int] = None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    manual_seed_all = manual_seed

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0) -> tuple:
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"

    def ray_resource_name(self) -> str:
        return "GPU"  # Ray is started with num_gpus=N placeholders (run.sh)

    def ray_noset_envvars(self) -> list:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False  # verl then syncs weights through shared memory

    @contextlib.contextmanager
    def nvtx_range(self, msg: str) -> Any:
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def cudart(self) -> Any:
        return None


# 2. "cpu:gloo,cpu:gloo" -> "gloo"
_init_process_group = dist.init_process_group


@functools.wraps(_init_process_group)
def init_process_group(*args: Any, **kwargs: Any) -> Any:
    backend = kwargs.get("backend")
    if isinstance(backend, str) and "," in backend:
        unique = list(dict.fromkeys(part.strip() for part in backend.split(",")))
        kwargs["backend"] = "gloo" if unique == ["cpu:gloo"] else ",".join(unique)
    return _init_process_group(*args, **kwargs)


dist.init_process_group = init_process_group

# 3. nothing to pin without an accelerator
if not torch.cuda.is_available():
    torch.Tensor.pin_memory = lambda self, *a, **k: self


# 4. patches applied when verl imports the modules they change
def _clone_shm_weights(module: ModuleType) -> None:
    cls = module.BucketedWeightReceiver
    receive = cls.receive_weights

    @functools.wraps(receive)
    def receive_weights(self: Any, on_bucket_received: Callable[..., Any]) -> Any:
        def on_bucket(weights: Any, is_last: bool) -> Any:
            if getattr(self, "use_shm", False):
                weights = [(name, t.clone()) for name, t in weights]
            return on_bucket_received(weights, is_last)
        return receive(self, on_bucket)

    cls.receive_weights = receive_weights


def _reload_layerwise(module: ModuleType) -> None:
    cls = module.vLLMColocateWorkerExtension
    update = cls.update_weights_from_ipc

    @functools.wraps(update)
    def update_weights_from_ipc(self: Any, *args: Any, **kwargs: Any) -> Any:
        from vllm.platforms import current_platform
        if not current_platform.is_cpu():
            return update(self, *args, **kwargs)
        from vllm.model_executor.model_loader.reload import (finalize_layerwise_reload,
                                                             initialize_layerwise_reload)
        models = list(self._iter_all_models())
        for m in models:
            initialize_layerwise_reload(m)
        try:
            return update(self, *args, **kwargs)
        finally:
            for m in models:
                finalize_layerwise_reload(m, self.model_runner.model_config)

    cls.update_weights_from_ipc = update_weights_from_ipc


def _value_head_with_sdpa(module: ModuleType) -> None:
    load = module.load_valuehead_model

    @functools.wraps(load)
    def load_valuehead_model(local_path: str, torch_dtype: Any, model_config: Any,
                             trust_remote_code: bool) -> Any:
        if torch.cuda.is_available():
            return load(local_path, torch_dtype, model_config, trust_remote_code)
        from transformers import AutoModelForTokenClassification
        return AutoModelForTokenClassification.from_pretrained(
            local_path, torch_dtype=torch_dtype, config=model_config, attn_implementation="sdpa",
            trust_remote_code=trust_remote_code)

    module.load_valuehead_model = load_valuehead_model


AFTER_IMPORT: Dict[str, Callable[[ModuleType], None]] = {
    "verl.utils.model": _value_head_with_sdpa,
    "verl.workers.rollout.vllm_rollout.bucketed_weight_transfer": _clone_shm_weights,
    "verl.workers.rollout.vllm_rollout.utils": _reload_layerwise,
}


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs AFTER_IMPORT[name] right after the module `name` has executed."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        patch = AFTER_IMPORT.pop(name, None)
        if patch is None:
            return None
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module: ModuleType) -> None:
            execute(module)
            patch(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


for _name in list(AFTER_IMPORT):
    if _name in sys.modules:
        AFTER_IMPORT.pop(_name)(sys.modules[_name])
sys.meta_path.insert(0, _AfterImport())
