// The body shared by the config fuzz targets (yaml_config, hydra_overrides): a config goes
// through config::LoadPlanFromString (YAML, overrides, interpolation, dialect detection,
// schemas, whole-plan validation) and, when valid, through everything `rlprof plan` derives
// from the Plan (JSON, normalised YAML, the capture enumeration and its size model). An error
// Status is fine; a crash or a sanitizer report is a finding.
#ifndef RLPROF_TEST_FUZZ_CONFIG_FUZZ_UTIL_H_
#define RLPROF_TEST_FUZZ_CONFIG_FUZZ_UTIL_H_

#include <string>
#include <vector>

#include "src/config/captures.h"
#include "src/config/loader.h"
#include "src/config/plan_json.h"

namespace rlprof::fuzz {

inline void LoadConfigInput(const std::string& yaml, const std::vector<std::string>& overrides) {
  config::LoadOptions opts;
  opts.world_size = 8;  // enables the rank checks
  opts.total_steps = 20;
  auto plan = config::LoadPlanFromString(yaml, "fuzz.yaml", overrides, opts);
  if (!plan.ok()) return;
  (void)config::PlanToJson(*plan).dump();
  (void)config::PlanToVerlYaml(*plan);
  (void)config::CaptureSummaryToJson(config::EnumerateCaptures(*plan, opts)).dump();
}

}  // namespace rlprof::fuzz

#endif  // RLPROF_TEST_FUZZ_CONFIG_FUZZ_UTIL_H_
