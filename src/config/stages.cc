#include "src/config/stages.h"

#include <algorithm>

#include "src/config/schemas.h"

namespace rlprof::config {

const std::vector<StageInfo>& StageTable() {
  using K = SubStepKind;
  static const std::vector<StageInfo> v = {
      // Aliases include verl's trainer timer names (timing_s/gen, old_log_prob, ref, values,
      // update_actor, update_critic, update_weights, reward): marked_timer ranges of those names
      // are these stages, and configs may name them either way.
      {"rollout_generate", "rollout", {"actor_generate", "generate_sequences", "gen"},
       {"verl", "MindSpeed-RL", "rlprof"}, {K::kDecode}},
      {"actor_compute_log_prob", "actor", {"old_log_prob"}, {"verl", "MindSpeed-RL", "rlprof"}, {K::kMicroBatch}},
      {"ref_compute_log_prob", "ref", {"reference_compute_log_prob", "ref"},
       {"verl", "MindSpeed-RL", "rlprof"}, {K::kMicroBatch}},
      {"actor_update", "actor", {"update_actor"}, {"verl", "MindSpeed-RL", "rlprof"},
       {K::kMiniBatch, K::kMicroBatch}},
      {"compute_values", "critic", {"critic_compute_values", "values"}, {"verl", "MindSpeed-RL"},
       {K::kMicroBatch}},
      {"critic_update", "critic", {"update_critic"}, {"verl", "MindSpeed-RL"}, {K::kMiniBatch, K::kMicroBatch}},
      {"compute_rm_score", "reward", {"reward"}, {"verl"}, {K::kMicroBatch}},
      // verl engine workers: inner stages of actor_update (nested: they open no window of their own
      // inside an open one).
      {"train_batch", "actor", {}, {"verl"}, {K::kMiniBatch, K::kMicroBatch}},
      {"forward_backward", "actor", {}, {"verl"}, {}},
      {"actor_image_embeds", "actor", {}, {"MindSpeed-RL"}, {K::kMicroBatch}},
      // Weight resharding / sync between actor and rollout: annotated by rlprof's example.
      {"weight_sync", "rollout", {"update_weights"}, {"rlprof"}, {}},
      // verl's controller computes the advantages itself (timing_s/adv): a stage of its lane.
      {"compute_advantage", "controller", {"adv"}, {"verl"}, {}},
  };
  return v;
}

const StageInfo* FindStage(std::string_view name) {
  for (const StageInfo& s : StageTable()) {
    if (s.name == name) return &s;
    if (std::find(s.aliases.begin(), s.aliases.end(), name) != s.aliases.end()) return &s;
  }
  return nullptr;
}

std::string CanonicalStage(std::string_view name) {
  const StageInfo* s = FindStage(name);
  return s != nullptr ? s->name : std::string(name);
}

bool SameStage(std::string_view a, std::string_view b) {
  return a == b || CanonicalStage(a) == CanonicalStage(b);
}

bool StageRunsUnit(std::string_view stage, SubStepKind unit) {
  if (unit == SubStepKind::kStep) return false;
  const StageInfo* s = FindStage(stage);
  if (s == nullptr) return true;
  return std::find(s->units.begin(), s->units.end(), unit) != s->units.end();
}

std::string StageRole(std::string_view stage) {
  const StageInfo* s = FindStage(stage);
  return s != nullptr ? s->role : std::string();
}

std::string StageUnitsText(std::string_view stage) {
  const StageInfo* s = FindStage(stage);
  if (s == nullptr) return "any";
  if (s->units.empty()) return "none";
  std::string out;
  for (SubStepKind k : s->units) {
    if (!out.empty()) out += ", ";
    out += SubStepKindName(k);
  }
  return out;
}

bool StageListContains(const std::vector<std::string>& names, std::string_view stage) {
  const std::string c = CanonicalStage(stage);
  return std::any_of(names.begin(), names.end(),
                     [&](const std::string& n) { return n == stage || CanonicalStage(n) == c; });
}

}  // namespace rlprof::config

// ---- plan normalisation (declared in schemas.h) ----
namespace rlprof::config {

namespace {

const char* FrameworkOf(Dialect d) {
  switch (d) {
    case Dialect::kVerlGen1:
    case Dialect::kVerlGen2:
    case Dialect::kVerlGen3: return "verl";
    case Dialect::kMindSpeedRl: return "MindSpeed-RL";
    case Dialect::kNative: return nullptr;  // rlprof's own block: any code
  }
  return nullptr;
}

void Canonicalise(std::vector<std::string>& names, std::vector<std::string>& mentioned) {
  std::vector<std::string> out;
  for (const std::string& n : names) {
    mentioned.push_back(n);
    std::string c = CanonicalStage(n);
    if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(std::move(c));
  }
  names = std::move(out);
}

}  // namespace

void NormaliseStages(Plan& plan, const std::vector<std::string>& custom_stages) {
  std::vector<std::string> mentioned;
  for (RolePlan& r : plan.roles) {
    Canonicalise(r.stages, mentioned);
    for (Schedule& s : r.schedules) {
      if (s.stage.empty()) continue;
      mentioned.push_back(s.stage);
      s.stage = CanonicalStage(s.stage);
    }
  }
  std::vector<std::string> seen;
  const char* framework = FrameworkOf(plan.dialect);
  for (const std::string& name : mentioned) {
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) continue;
    seen.push_back(name);
    const StageInfo* info = FindStage(name);
    if (info == nullptr) {
      const bool custom =
          std::find(custom_stages.begin(), custom_stages.end(), name) != custom_stages.end();
      plan.warnings.push_back("stage " + name + (custom ? " (custom_stages)" : "") +
                              " is not emitted by any known annotation: it is captured only "
                              "where your code annotates it (rlprof.annotate(\"" + name +
                              "\", role=...))");
      continue;
    }
    if (info->name != name)
      plan.notes.push_back("stage " + name + " is rlprof's " + info->name +
                           " (the same stage; code annotating either name is captured, under "
                           "scope " + info->name + ")");
    if (framework != nullptr && std::find(info->emitted_by.begin(), info->emitted_by.end(),
                                          framework) == info->emitted_by.end()) {
      std::string by;
      for (const std::string& f : info->emitted_by) by += (by.empty() ? "" : ", ") + f;
      plan.warnings.push_back("stage " + name + " is not annotated by " + framework +
                              "'s own code (only by " + by +
                              "): it is captured only where your code annotates it");
    }
  }
}

}  // namespace rlprof::config
