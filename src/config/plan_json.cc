#include "src/config/plan_json.h"

#include <yaml-cpp/yaml.h>

namespace rlprof::config {

nlohmann::ordered_json ScheduleToJson(const Schedule& s) {
  if (!s.enabled()) return nullptr;
  nlohmann::ordered_json j;
  if (!s.stage.empty()) j["stage"] = s.stage;
  j["unit"] = SubStepKindName(s.unit);
  j["skip_first"] = s.skip_first;
  j["wait"] = s.wait;
  j["warmup"] = s.warmup;
  j["active"] = s.active;
  j["repeat"] = s.repeat;
  return j;
}

nlohmann::ordered_json StageScheduleToJson(const StageSchedule& s) {
  nlohmann::ordered_json j = ScheduleToJson(s.schedule);
  if (j.is_null()) return j;
  j["role"] = s.role;
  j["from"] = s.token_window ? s.block + " (token window)" : s.block;
  return j;
}

nlohmann::ordered_json RolePlanToJson(const RolePlan& r) {
  nlohmann::ordered_json j;
  j["role"] = r.role;
  j["block"] = r.block_path;
  j["enabled"] = r.enabled;
  j["all_ranks"] = r.all_ranks;
  j["ranks"] = r.ranks;
  if (r.ranks_are_replica_owners) j["ranks_are_replica_owners"] = true;
  j["mode"] = CaptureModeName(r.mode);
  j["stages"] = r.stages;
  j["contents"] = r.contents.Names();
  j["level"] = r.level;
  if (r.ops_sampling < 1) j["ops_sampling"] = r.ops_sampling;
  nlohmann::ordered_json schedules = nlohmann::ordered_json::array();
  for (const Schedule& s : r.schedules) schedules.push_back(ScheduleToJson(s));
  j["schedules"] = schedules;
  if (r.token_start || r.token_end)
    j["token_window"] = {{"start", r.token_start.value_or(0)},
                         {"end", r.token_end ? nlohmann::ordered_json(*r.token_end) : nullptr}};
  return j;
}

nlohmann::ordered_json PlanToJson(const Plan& p) {
  nlohmann::ordered_json j;
  j["config"] = p.config_path;
  j["dialect"] = DialectName(p.dialect);
  j["tool"] = ToolName(p.tool);
  nlohmann::ordered_json steps;
  steps["kind"] = p.steps.kind == StepSelection::Kind::kList    ? "list"
                  : p.steps.kind == StepSelection::Kind::kRange ? "range"
                  : p.steps.kind == StepSelection::Kind::kAll   ? "all"
                                                                : "none";
  if (p.steps.kind == StepSelection::Kind::kList) steps["list"] = p.steps.list;
  if (p.steps.kind == StepSelection::Kind::kRange) {
    steps["start"] = p.steps.start;
    steps["end"] = p.steps.end;
  }
  steps["text"] = p.steps.ToString();
  j["steps"] = steps;
  j["continuous_steps"] = p.continuous_steps;
  j["save_path"] = p.save_path;
  std::vector<std::string> ex;
  for (auto f : p.exports) ex.push_back(format::ExportFormatConfigWord(f));
  j["exports"] = ex;
  j["combine"] = CombinePolicyName(p.combine);
  j["budget"] = {{"max_bytes", p.budget.max_bytes}, {"max_events", p.budget.max_events}};
  j["buffer"] = {{"events_per_thread", p.buffer_events_per_thread},
                 {"policy", p.buffer_policy == BufferPolicy::kDrop ? "drop" : "flush"}};
  j["flush_interval_s"] = p.flush_interval_s;
  j["backstop_s"] = p.backstop_s;
  j["memory_interval_s"] = p.memory_interval_s;
  j["sample_rate"] = p.sample_rate;
  nlohmann::ordered_json roles = nlohmann::ordered_json::array();
  for (const auto& r : p.roles) roles.push_back(RolePlanToJson(r));
  j["roles"] = roles;
  j["warnings"] = p.warnings;
  return j;
}

std::string PlanToVerlYaml(const Plan& p) {
  YAML::Emitter e;
  e << YAML::BeginMap;
  e << YAML::Key << "global_profiler" << YAML::Value << YAML::BeginMap;
  e << YAML::Key << "tool" << YAML::Value;
  if (p.tool == Tool::kNone) e << YAML::Null;
  else e << ToolName(p.tool);
  e << YAML::Key << "steps" << YAML::Value;
  std::vector<int64_t> steps = p.steps.Expand(0);
  if (p.steps.kind == StepSelection::Kind::kNone) e << YAML::Null;
  else if (p.steps.kind == StepSelection::Kind::kAll) e << "all";
  else e << YAML::Flow << steps;
  e << YAML::Key << "profile_continuous_steps" << YAML::Value << p.continuous_steps;
  e << YAML::Key << "save_path" << YAML::Value << p.save_path;
  e << YAML::EndMap;
  // Enabled role blocks, nested where verl keeps them; other roles under `roles`.
  auto emit_block = [&](const RolePlan& r) {
    e << YAML::Key << "profiler" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "enable" << YAML::Value << r.enabled;
    e << YAML::Key << "all_ranks" << YAML::Value << r.all_ranks;
    e << YAML::Key << "ranks" << YAML::Value << YAML::Flow << r.ranks;
    e << YAML::Key << "tool_config" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "rlprof" << YAML::Value << YAML::BeginMap;
    e << YAML::Key << "discrete" << YAML::Value << (r.mode == CaptureMode::kDiscrete);
    e << YAML::Key << "contents" << YAML::Value << YAML::Flow << r.contents.Names();
    e << YAML::Key << "level" << YAML::Value << r.level;
    if (r.ops_sampling < 1) e << YAML::Key << "ops_sampling" << YAML::Value << r.ops_sampling;
    if (!r.stages.empty()) e << YAML::Key << "stages" << YAML::Value << YAML::Flow << r.stages;
    auto emit_schedule = [&](const Schedule& s) {
      e << YAML::Flow << YAML::BeginMap;
      if (!s.stage.empty()) e << YAML::Key << "stage" << YAML::Value << s.stage;
      e << YAML::Key << "unit" << YAML::Value << SubStepKindName(s.unit);
      e << YAML::Key << "skip_first" << YAML::Value << s.skip_first;
      e << YAML::Key << "wait" << YAML::Value << s.wait;
      e << YAML::Key << "warmup" << YAML::Value << s.warmup;
      e << YAML::Key << "active" << YAML::Value << s.active;
      e << YAML::Key << "repeat" << YAML::Value << s.repeat;
      e << YAML::EndMap;
    };
    if (r.schedules.size() == 1 && r.schedules[0].stage.empty()) {
      e << YAML::Key << "schedule" << YAML::Value;
      emit_schedule(r.schedules[0]);
    } else if (!r.schedules.empty()) {
      e << YAML::Key << "schedule" << YAML::Value << YAML::BeginSeq;
      for (const Schedule& s : r.schedules) emit_schedule(s);
      e << YAML::EndSeq;
    }
    if (r.token_start) e << YAML::Key << "profile_token_start" << YAML::Value << *r.token_start;
    if (r.token_end) e << YAML::Key << "profile_token_end" << YAML::Value << *r.token_end;
    e << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  };
  std::vector<const RolePlan*> fused, other;
  for (const auto& r : p.roles) {
    if (!r.enabled) continue;
    // verl's controller lane has no block of its own: global_profiler (tool rlprof, steps) says it.
    if (r.role == "controller" && p.dialect != Dialect::kNative) continue;
    bool in_fused = r.role == "actor" || r.role == "rollout" || r.role == "ref";
    (in_fused && p.dialect != Dialect::kNative ? fused : other).push_back(&r);
  }
  if (!fused.empty()) {
    e << YAML::Key << "actor_rollout_ref" << YAML::Value << YAML::BeginMap;
    for (const RolePlan* r : fused) {
      e << YAML::Key << r->role << YAML::Value << YAML::BeginMap;
      emit_block(*r);
      e << YAML::EndMap;
    }
    e << YAML::EndMap;
  }
  for (const RolePlan* r : other) {
    std::string key = r->role == "*" ? "all_workers" : r->role == "reward" && p.dialect != Dialect::kNative ? "reward_model" : r->role;
    e << YAML::Key << key << YAML::Value << YAML::BeginMap;
    emit_block(*r);
    e << YAML::EndMap;
  }
  e << YAML::EndMap;
  return std::string(e.c_str()) + "\n";
}

}  // namespace rlprof::config
