// Loading a profiler config into a validated Plan: the entry point of src/config.
//
//   LoadOptions opts;
//   opts.world_size = 8;                                  // enables rank checks
//   auto plan = LoadPlan("grpo.yaml", {"global_profiler.steps=[2,3]"}, opts);
//   if (!plan.ok()) { std::cerr << plan.status().message(); }   // every error, one per line
//
// Dialect detection: `global_profiler` ⇒ verl Gen 3; `trainer.profile_steps` ⇒ verl Gen 1/2;
// `profiler_config.integrated` ⇒ MindSpeed-RL; `rlprof` ⇒ rlprof's own block.
// Thread-safety: reentrant.
#ifndef RLPROF_SRC_CONFIG_LOADER_H_
#define RLPROF_SRC_CONFIG_LOADER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "rlprof/config/plan.h"
#include "src/base/status.h"

namespace rlprof::config {

struct LoadOptions {
  int64_t world_size = 0;    // 0 = unknown: rank checks are skipped
  int64_t total_steps = 0;   // 0 = unknown: step-range checks are skipped
  int64_t replica_size = 0;  // rollout replica size (Agent Loop); 0 = unknown
};

base::StatusOr<Plan> LoadPlan(const std::string& path, const std::vector<std::string>& overrides,
                              const LoadOptions& options);
base::StatusOr<Plan> LoadPlanFromString(const std::string& yaml, const std::string& name,
                                        const std::vector<std::string>& overrides,
                                        const LoadOptions& options);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_LOADER_H_
