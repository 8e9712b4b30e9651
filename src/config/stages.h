// The stage vocabulary: every RL stage rlprof knows, under the names verl, MindSpeed-RL and
// rlprof give it, with the role that owns it and the sub-steps its inner loops run. The plan,
// the runtime (stage allow-lists, scope names, schedules) and the analysis all go through it,
// so `stage: [actor_generate]` in a MindSpeed-RL config selects the `rollout_generate` stage
// that verl-shaped code annotates, and both are captured under one scope name.
//
//   CanonicalStage("reference_compute_log_prob")  // "ref_compute_log_prob"
//   SameStage("actor_generate", "rollout_generate")  // true
//   StageRunsUnit("actor_update", SubStepKind::kMiniBatch)  // true
//
// Canonical names are verl's (the names most code annotates); docs/config.md lists the table.
// Thread-safety: pure functions over a static table.
#ifndef RLPROF_SRC_CONFIG_STAGES_H_
#define RLPROF_SRC_CONFIG_STAGES_H_

#include <string>
#include <string_view>
#include <vector>

#include "rlprof/config/plan.h"

namespace rlprof::config {

struct StageInfo {
  std::string name;                  // canonical (rlprof / verl) name
  std::string role;                  // owning RL role: actor, rollout, ref, critic, reward
  std::vector<std::string> aliases;  // the names other frameworks give it
  // Frameworks whose own code annotates the stage: "verl", "MindSpeed-RL", "rlprof" (rlprof's
  // example and integrations only).
  std::vector<std::string> emitted_by;
  // The sub-steps the stage's loops run, as the known hooks report them (rlprof.sub_step in
  // the verl adapter and the GRPO example): a schedule of another unit never advances in it.
  std::vector<SubStepKind> units;
};

const std::vector<StageInfo>& StageTable();
// The entry for a canonical name or an alias; nullptr for an unknown (custom) stage.
const StageInfo* FindStage(std::string_view name);
// Alias -> canonical name; an unknown name is returned unchanged.
std::string CanonicalStage(std::string_view name);
bool SameStage(std::string_view a, std::string_view b);
// Whether sub-steps of `unit` happen inside the stage. Unknown stages may run anything
// (true) except kStep: a step never advances inside a stage.
bool StageRunsUnit(std::string_view stage, SubStepKind unit);
// The owning role of a known stage ("" for custom stages).
std::string StageRole(std::string_view stage);
// The units a known stage runs, as text ("decode", "mini_batch, micro_batch", "none").
std::string StageUnitsText(std::string_view stage);
// True when `names` (canonical or aliases) contains a name for the same stage as `stage`.
bool StageListContains(const std::vector<std::string>& names, std::string_view stage);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_STAGES_H_
