// Fuzz target: Hydra overrides (key=value, +key=value, ++key=value, ~key; YAML values;
// OmegaConf interpolations) applied by config::LoadPlanFromString to a valid config. The input
// is one override per line; its first byte (mod 4) picks the base config among four
// dialects (copies of examples/configs). Seeds: test/fuzz/corpus/hydra_overrides (the
// overrides of test/golden/config_errors and a few valid ones); dictionary:
// test/fuzz/dict/yaml.dict.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "test/fuzz/config_fuzz_util.h"

namespace {

constexpr const char* kBases[4] = {
    // examples/configs/verl_e2e.yaml
    R"yaml(# verl Gen 3 — end-to-end: one window per profiled step, every actor rank, whole step in one trace
global_profiler:
  tool: npu                 # or torch / nsys / rlprof
  steps: [1, 2, 5]
  save_path: ./outputs/profile
actor_rollout_ref:
  actor:
    profiler:
      enable: true
      all_ranks: true
      tool_config:
        npu:
          discrete: false   # end-to-end
          contents: [npu, cpu]
          level: level0
          analysis: false   # parse offline
)yaml",
    // examples/configs/verl_legacy.yaml
    R"yaml(# verl Gen 1/2 — the same intent as verl_discrete_rank0.yaml in legacy keys
trainer:
  profile_steps: [1, 2, 5]
  profile_continuous_steps: false
actor_rollout_ref:
  profiler:               # Gen 2 single block (Gen 1: actor/rollout/ref sub-blocks)
    discrete: true
    all_ranks: false
    ranks: [0]
critic:
  profiler:
    discrete: true
    all_ranks: false
    ranks: []             # legacy: empty ⇒ this role is NOT profiled
)yaml",
    // examples/configs/mindspeed_stages.yaml
    R"yaml(# MindSpeed-RL — stage mode: one capture per listed stage call, iterations 2 and 3, ranks 0 and 1
profiler_config:
  integrated:
    profile: true
    mstx: false
    stage: [actor_update, reference_compute_log_prob]
    profile_save_path: ./profiler_data
    profile_export_type: text
    profile_step_start: 2
    profile_step_end: 4      # exclusive ⇒ iterations 2 and 3
    profile_level: level1
    profile_with_cpu: true
    profile_with_npu: true
    profile_with_memory: true
    profile_record_shapes: true
    profile_ranks: [0, 1]
)yaml",
    // examples/configs/rlprof_native.yaml
    R"yaml(# rlprof's own block, for a plain PyTorch loop (see docs/config.md)
rlprof:
  steps: [2, 3]
  save_path: ./outputs/profile
  export: [text, pftrace]
  budget: {max_bytes: 512MiB}
  roles:
    actor:
      ranks: [0, 1]
      discrete: true
      stages: [actor_compute_log_prob, actor_update]
      contents: [cpu, ops, shapes, memory]
      schedule: {unit: micro_batch, wait: 1, active: 2, repeat: 1}
    rollout:
      ranks: [0, 1]
      discrete: true
      contents: [cpu, ops]
      schedule: {unit: decode, wait: 2, active: 4, repeat: 1}
)yaml",
};

constexpr size_t kMaxOverrides = 32;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::string> overrides;
  while (!in.empty() && overrides.size() < kMaxOverrides) {
    size_t eol = in.find('\n');
    overrides.emplace_back(in.substr(0, eol));
    in = eol == std::string_view::npos ? std::string_view() : in.substr(eol + 1);
  }
  rlprof::fuzz::LoadConfigInput(kBases[data[0] % 4], overrides);
  return 0;
}
