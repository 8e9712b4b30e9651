"""verl's profiler config as verl resolved it, for every process of the job.

verl users give their settings on the training command line (Hydra overrides) or in their own
YAML; verl merges them into one config in the main process and hands each worker its role's
`ProfilerConfig`. rlprof takes that resolved config, so nothing has to be repeated for rlprof:

* In the main process, when verl starts its Ray cluster (`ray.init` inside verl's `run_ppo`,
  which every verl entry point calls: main_ppo, the one-step-off and fully-async recipes), the
  `ray.init` patch (rlprof.integrations.ray) finds verl's config in its caller's frames, takes
  the parts rlprof's verl dialect reads (`global_profiler`, each role's `profiler` block and
  the trainer's step count), resolved, and
  - puts them in the environment as RLPROF_VERL_CONFIG (JSON), which every Ray worker, rollout
    server and vLLM engine process of the job inherits (the cluster's processes are started
    after it), and every rlprof Profiler of the job is made from it: the same plan everywhere,
    equal to `rlprof plan` of the file below;
  - writes it as `verl_config.json` into the run directory (`<save_path>/<run id>/`), so
    `rlprof plan RUN/verl_config.json` prints the plan of what ran;
  - when `rlprof run --config FILE` was given too, compares the file (with its KEY=VALUE
    overrides) with verl's config and prints one warning naming the keys that disagree: verl's
    value is what runs.
* Nothing happens when no profiler block of the config names `tool: rlprof`.
"""
from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, Iterator, List, Optional, Tuple

ENV = "RLPROF_VERL_CONFIG"
FILE_NAME = "verl_config.json"

# Where rlprof's verl dialect reads profiler settings (src/config/verl_schema.cc).
_ROLE_PATHS = (("actor_rollout_ref", "actor"), ("actor_rollout_ref", "ref"),
               ("actor_rollout_ref", "rollout"), ("critic",), ("reward_model",),
               ("reward", "reward_model"))


def _plain(obj: Any) -> Any:
    from rlprof.integrations.verl import _plain as plain
    return plain(obj)


def _get(tree: Any, path: Tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return None
        tree = tree[key]
    return tree


def _set(tree: Dict[str, Any], path: Tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        tree = tree.setdefault(key, {})
    tree[path[-1]] = value


def _strip(obj: Any) -> Any:
    """Without Hydra's `_target_` keys (rlprof's loader names them as unknown)."""
    if isinstance(obj, dict):
        return {k: _strip(v) for k, v in obj.items() if k != "_target_"}
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    return obj


def profiler_part(config: Any) -> Optional[Dict[str, Any]]:
    """The parts of a verl trainer config that rlprof's verl dialect reads, resolved as verl
    resolves them; None when no block asks for rlprof (or the object is not a verl config)."""
    tree = _resolved(config)
    if not isinstance(tree, dict) or "global_profiler" not in tree:
        return None
    out: Dict[str, Any] = {"global_profiler": _strip(tree.get("global_profiler") or {})}
    tools = [out["global_profiler"].get("tool")]
    for path in _ROLE_PATHS:
        block = _get(tree, path + ("profiler",))
        if isinstance(block, dict):
            block = _strip(block)
            _set(out, path + ("profiler",), block)
            tools.append(block.get("tool"))
    _inherit_rollout_block(out)
    reward = tree.get("reward")  # verl >= 0.9: its reward loop's worker count (the plan's ranks)
    if isinstance(reward, dict) and isinstance(reward.get("num_workers"), int):
        out.setdefault("reward", {})["num_workers"] = reward["num_workers"]
    rm = reward.get("reward_model") if isinstance(reward, dict) else None
    if isinstance(rm, dict) and rm.get("enable") is True:  # served: its replicas (the plan's ranks)
        keep = {k: rm[k] for k in ("enable", "enable_resource_pool", "n_gpus_per_node", "nnodes")
                if rm.get(k) is not None}
        ro = rm.get("rollout") if isinstance(rm.get("rollout"), dict) else {}
        par = {k: ro[k] for k in ("tensor_model_parallel_size", "data_parallel_size",
                                  "pipeline_model_parallel_size") if isinstance(ro.get(k), int)}
        if par:
            keep["rollout"] = par
        out.setdefault("reward", {}).setdefault("reward_model", {}).update(keep)
    trainer = tree.get("trainer")
    if isinstance(trainer, dict):
        keep = {k: trainer[k] for k in ("total_training_steps", "total_epochs", "n_gpus_per_node",
                                         "nnodes") if trainer.get(k) is not None}
        if keep:
            out["trainer"] = keep
    return out if "rlprof" in tools else None


def _inherit_rollout_block(part: Dict[str, Any]) -> None:
    """verl's generated config makes the rollout's torch/npu tool blocks follow the actor's
    (`${oc.select:actor_rollout_ref.actor.profiler.tool_config.torch.discrete,...}`) but has no
    such line for rlprof: rlprof applies the same rule to its block (each key the rollout's
    own block leaves unset comes from the actor's)."""
    actor = _get(part, ("actor_rollout_ref", "actor", "profiler", "tool_config", "rlprof"))
    rollout = _get(part, ("actor_rollout_ref", "rollout", "profiler"))
    if not isinstance(actor, dict) or not isinstance(rollout, dict):
        return
    tc = rollout.get("tool_config")
    if not isinstance(tc, dict):
        tc = rollout["tool_config"] = {}
    mine = tc.get("rlprof") if isinstance(tc.get("rlprof"), dict) else {}
    merged = {k: v for k, v in actor.items() if k in ("discrete", "contents", "level")}
    merged.update({k: v for k, v in mine.items() if v is not None})
    tc["rlprof"] = merged


def _resolved(config: Any) -> Any:
    try:
        from omegaconf import DictConfig, OmegaConf
        if isinstance(config, DictConfig):
            try:
                return OmegaConf.to_container(config, resolve=True)
            except Exception:  # an interpolation elsewhere that does not resolve here
                return OmegaConf.to_container(config, resolve=False)
    except ImportError:
        pass
    return _plain(config)


def find_in_frames(frame: Any, depth: int = 12) -> Any:
    """A verl trainer config among the locals of `frame` and its callers (the `config` that
    verl's run_ppo holds when it calls ray.init)."""
    for _ in range(depth):
        if frame is None:
            return None
        cand = frame.f_locals.get("config")
        if cand is not None and _looks_like_verl(cand):
            return cand
        frame = frame.f_back
    return None


def _looks_like_verl(obj: Any) -> bool:
    try:
        return "global_profiler" in obj and "actor_rollout_ref" in obj
    except Exception:
        return False


def resolved_from_env() -> Optional[Dict[str, Any]]:
    text = os.environ.get(ENV)
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def publish(config: Any) -> Optional[Dict[str, Any]]:
    """Puts verl's resolved profiler config in this process's environment (for the processes it
    starts) and the run directory; compares it with RLPROF_CONFIG. Never raises."""
    try:
        part = profiler_part(config)
    except Exception as e:  # never stop verl
        sys.stderr.write(f"rlprof: warning: cannot read verl's profiler config ({e!r}); each "
                         "worker uses its own role's block\n")
        return None
    if part is None:
        return None
    if os.environ.get("RLPROF_CONFIG"):
        _merge_file(part, os.environ["RLPROF_CONFIG"])
    text = json.dumps(part, sort_keys=True)
    os.environ[ENV] = text
    _write_record(part, text)
    return part


def _write_record(part: Dict[str, Any], text: str) -> None:
    save = (part.get("global_profiler") or {}).get("save_path") or "outputs/rlprof"
    run_id = os.environ.get("RLPROF_RUN_ID")
    if not run_id:
        return
    path = os.path.join(str(save), run_id, FILE_NAME)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(json.dumps(part, indent=2, sort_keys=True) + "\n")
    except OSError as e:  # the captures' own writer reports an unwritable save_path
        sys.stderr.write(f"rlprof: warning: cannot write {path} ({e.strerror}); the plan of this "
                         "run is in the environment only\n")


def _flatten(tree: Any, prefix: str = "") -> Iterator[Tuple[str, Any]]:
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, tree


def _load_file(path: str, overrides: List[str]) -> Dict[str, Any]:
    import yaml
    with open(path) as f:
        tree = yaml.safe_load(f) or {}
    for word in overrides:
        key, _, value = word.partition("=")
        key = key.lstrip("+~")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError:
            parsed = value
        _set(tree, tuple(key.split(".")), parsed)
    return tree


def disagreements(verl_part: Dict[str, Any], file_tree: Dict[str, Any]) -> List[str]:
    """`key: file X, verl Y` for every profiler key the file sets that verl resolved
    otherwise."""
    mine = dict(_flatten(verl_part))
    out = []
    roots = ["global_profiler"] + [".".join(p + ("profiler",)) for p in _ROLE_PATHS]
    for key, value in _flatten(file_tree):
        if not any(key == r or key.startswith(r + ".") for r in roots):
            continue
        theirs = mine.get(key)
        if theirs != value and not (theirs is None and value in ([], {}, None)):
            out.append(f"{key}: {json.dumps(value)} in the file, {json.dumps(theirs)} in verl's")
    return out


def _rlprof_only(key: str) -> bool:
    """Keys verl does not read (rlprof's own tool block): the file may add them."""
    return ".tool_config.rlprof." in key or ".global_tool_config.rlprof." in key


def merge_rlprof_keys(part: Dict[str, Any], file_tree: Dict[str, Any]) -> None:
    """Adds the file's rlprof-only keys (tool_config.rlprof.*, global_tool_config.rlprof.*)
    that verl's config does not set."""
    mine = dict(_flatten(part))
    roots = ["global_profiler"] + [".".join(p + ("profiler",)) for p in _ROLE_PATHS]
    for key, value in _flatten(file_tree):
        if (_rlprof_only("." + key) and mine.get(key) is None and
                any(key.startswith(r + ".") for r in roots)):
            _set(part, tuple(key.split(".")), value)


def _merge_file(part: Dict[str, Any], path: str) -> None:
    overrides = [w for w in os.environ.get("RLPROF_OVERRIDES", "").splitlines() if w.strip()]
    try:
        tree = _load_file(path, overrides)
    except Exception as e:
        sys.stderr.write(f"rlprof: warning: cannot compare {path} with verl's config ({e}); "
                         "verl's config decides\n")
        return
    if not isinstance(tree, dict):
        tree = {}
    merge_rlprof_keys(part, tree)
    diff = disagreements(part, tree)
    if diff:
        sys.stderr.write(
            f"rlprof: warning: --config {path} and verl's own config disagree on "
            f"{len(diff)} key(s); verl's values are what runs and what rlprof records "
            f"(the plan: rlprof plan <save_path>/<run>/{FILE_NAME}):\n" +
            "".join(f"  {d}\n" for d in diff))
