// Serialisations of a Plan: JSON (for `rlprof plan --json` and capture manifests) and the
// normalised verl Gen 3 YAML that `rlprof plan` prints for every dialect.
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_CONFIG_PLAN_JSON_H_
#define RLPROF_SRC_CONFIG_PLAN_JSON_H_

#include <string>

#include <nlohmann/json.hpp>

#include "rlprof/config/plan.h"

namespace rlprof::config {

nlohmann::ordered_json PlanToJson(const Plan& plan);
nlohmann::ordered_json RolePlanToJson(const RolePlan& role);
nlohmann::ordered_json ScheduleToJson(const Schedule& s);
nlohmann::ordered_json StageScheduleToJson(const StageSchedule& s);
std::string PlanToVerlYaml(const Plan& plan);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_PLAN_JSON_H_
