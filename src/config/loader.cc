#include "src/config/loader.h"

#include <algorithm>
#include <sstream>

#include "src/base/strings.h"
#include "src/config/plan_json.h"
#include "src/config/schemas.h"
#include "src/config/yaml_doc.h"

namespace rlprof::config {

namespace {

// The key a role-level message points at: `<block>.<key>` as found in the file.
Ref RoleKey(Doc& doc, const RolePlan& r, const std::string& key) {
  std::string path = r.block_path;
  if (size_t sp = path.find(' '); sp != std::string::npos) path.resize(sp);  // "x (actor)"
  KeyPath kp = base::Split(path, '.');
  if (!key.empty()) kp.push_back(key);
  Ref ref = doc.Get(kp);
  ref.path = kp;
  return ref;
}

// Checks that need the whole plan (and the command-line facts in LoadOptions).
void ValidatePlan(Doc& doc, Plan& plan, const LoadOptions& opt) {
  // A ranks entry at or past `limit` is an error: "<what> N does not exist: <limit_name> is L (<what>s 0..L-1)".
  auto check_ranks = [&](const RolePlan& r, int64_t limit, const std::string& what,
                         const std::string& limit_name) {
    for (int64_t rank : r.ranks)
      if (!r.all_ranks && rank >= limit)
        doc.Error(RoleKey(doc, r, "ranks"),
                  what + " " + std::to_string(rank) + " does not exist: " + limit_name + " is " +
                      std::to_string(limit) + " (" + (what == "rank" ? "ranks" : what == "reward model replica" ? "replicas" : "workers") + " 0.." +
                      std::to_string(limit - 1) + ")");
  };
  for (const auto& r : plan.roles) {
    if (!r.enabled) continue;
    if (r.role == "reward" && plan.reward_loop_workers > 0) {
      // verl >= 0.9: the reward block's ranks are the reward loop's worker indices (and the
      // served reward model's replica ranks, when it has more replicas than workers).
      const int64_t replicas = plan.RewardModelReplicas(opt.world_size);
      if (replicas > plan.reward_loop_workers)
        check_ranks(r, replicas, "reward model replica", "the reward model's replica count");
      else
        check_ranks(r, plan.reward_loop_workers, "reward loop worker", "reward.num_workers");
      continue;
    }
    if (opt.world_size > 0 && !r.ranks_are_replica_owners)
      check_ranks(r, opt.world_size, "rank", "the world size");
    if (opt.world_size > 0 && r.ranks_are_replica_owners)
      for (int64_t rank : r.ranks)
        if (!r.all_ranks && rank >= opt.world_size)
          plan.warnings.push_back(r.block_path + ".ranks: rank " + std::to_string(rank) +
                                  " is past the last GPU (world size " +
                                  std::to_string(opt.world_size) + "); it is ignored");
  }
  // Colocated actor / rollout / ref (verl's fused worker) must agree on discrete under an
  // explicit union (verl Gen 3 otherwise lets the actor block decide: verl_schema.cc). verl
  // Gen 1 OR-ed the blocks' discrete flags itself, so there it is a note.
  if ((plan.dialect == Dialect::kVerlGen3 || plan.dialect == Dialect::kVerlGen1) &&
      plan.combine == CombinePolicy::kUnion) {
    const RolePlan* first = nullptr;
    for (const char* name : {"actor", "ref"}) {
      const RolePlan* r = plan.FindRole(name);
      if (!r || !r->enabled) continue;
      if (!first) {
        first = r;
      } else if (r->mode != first->mode && plan.dialect == Dialect::kVerlGen1) {
        plan.notes.push_back(first->block_path + " is " + CaptureModeName(first->mode) + " but " +
                             r->block_path + " is " + CaptureModeName(r->mode) +
                             ": the fused actor_rollout_ref worker captures discretely (verl "
                             "Gen 1 unites the blocks it hosts)");
      } else if (r->mode != first->mode) {
        doc.Error(RoleKey(doc, *r, ""),
                  std::string("colocated roles disagree on discrete: ") + first->block_path +
                      " is " + CaptureModeName(first->mode) + " but " + r->block_path + " is " +
                      CaptureModeName(r->mode) +
                      "; they share one process (actor_rollout_ref), so set the same value, or "
                      "drop combine: union (verl's rule: the actor block decides), or choose "
                      "combine: priority");
      }
    }
  }
  // Explicit semantics, printed.
  if (plan.continuous_steps) {
    for (const auto& r : plan.roles)
      if (r.enabled && r.mode == CaptureMode::kDiscrete && plan.dialect != Dialect::kMindSpeedRl)
        plan.warnings.push_back("profile_continuous_steps has no effect on " + r.block_path +
                                ": it is discrete (one capture per stage call)");
  }
  if (plan.dialect == Dialect::kVerlGen3) {
    const RolePlan* ro = plan.FindRole("rollout");
    // (rlprof itself records the replicas in both modes: python/rlprof/integrations/verl_rollout.py)
    if (ro && ro->enabled && ro->mode != CaptureMode::kDiscrete && plan.tool != Tool::kRlprof)
      plan.warnings.push_back("rollout is only captured in discrete mode: the Agent-Loop rollout "
                              "servers are not profiled with discrete: false");
    if (plan.combine == CombinePolicy::kUnion) {
      const RolePlan* a = plan.FindRole("actor");
      const RolePlan* rf = plan.FindRole("ref");
      if (rf && rf->enabled && (!a || !a->enabled))
        plan.warnings.push_back("union policy: " + rf->block_path +
                                " profiles the fused actor_rollout_ref worker although the actor "
                                "block is off (verl itself would ignore it: combine: priority)");
    } else {
      for (const char* name : {"rollout", "ref"}) {
        const RolePlan* r = plan.FindRole(name);
        if (r && r->enabled && name == std::string("ref"))
          plan.warnings.push_back("priority policy: " + r->block_path +
                                  " is ignored in the fused actor_rollout_ref worker (the actor "
                                  "block decides)");
      }
    }
  }
  if (plan.save_path.empty())
    plan.warnings.push_back("save_path is empty: captures would land in the working directory");
  if (opt.total_steps > 0) {
    std::vector<int64_t> late;
    if (plan.steps.kind == StepSelection::Kind::kList)
      for (int64_t s : plan.steps.list)
        if (s > opt.total_steps) late.push_back(s);
    if (plan.steps.kind == StepSelection::Kind::kRange && plan.steps.end - 1 > opt.total_steps)
      for (int64_t s = std::max(plan.steps.start, opt.total_steps + 1); s < plan.steps.end; ++s)
        late.push_back(s);
    if (!late.empty()) {
      std::vector<std::string> parts;
      for (int64_t s : late) parts.push_back(std::to_string(s));
      plan.warnings.push_back("steps [" + base::Join(parts, ", ") + "] never run: the job has " +
                              std::to_string(opt.total_steps) + " steps");
    }
  }
  bool any_enabled = std::any_of(plan.roles.begin(), plan.roles.end(),
                                 [](const RolePlan& r) { return r.enabled; });
  if (plan.steps.kind == StepSelection::Kind::kNone && any_enabled)
    plan.warnings.push_back("no step is selected: nothing will be captured");
  else if (plan.steps.kind != StepSelection::Kind::kNone && !any_enabled && plan.tool != Tool::kNone)
    plan.warnings.push_back("profiling enabled for steps " + plan.steps.ToString() +
                            " but no role is enabled: nothing will be captured");
}

// A config without any profiler block. A misspelt top-level profiler key is an error (it
// would silently turn profiling off); a training config of a known framework loads with
// profiling off, as the framework itself would run it; anything else is not a config rlprof
// knows.
base::Status ParseWithoutProfilerBlock(ParseContext& ctx) {
  Doc& doc = ctx.doc;
  Ref root = doc.Root();
  const std::vector<std::string> kBlocks = {"global_profiler", "profiler_config", "rlprof"};
  for (const std::string& key : doc.Keys(root))
    if (std::string hint = base::NearestWord(key, kBlocks); !hint.empty())
      return base::InvalidArgument(doc.Where(doc.Child(root, key)) + ": unknown top-level key '" +
                                   key + "'; did you mean '" + hint + "'? (no profiler block "
                                   "found otherwise)");
  Ref trainer = doc.Child(root, "trainer");
  for (const std::string& key : doc.Keys(trainer))
    if (base::NearestWord(key, {"profile_steps"}) == "profile_steps")
      return base::InvalidArgument(doc.Where(doc.Child(trainer, key)) + ": unknown key 'trainer." +
                                   key + "'; did you mean 'trainer.profile_steps'?");
  auto has = [&](const char* k) { return doc.Child(root, k).present(); };
  if (has("megatron_training") || (has("actor_config") && has("rl_config"))) {
    ParseMindSpeed(ctx);  // notes that profiling is off
    return base::Status::Ok();
  }
  if (has("actor_rollout_ref")) {
    ParseVerlGen3(ctx);
    ctx.plan.notes.insert(ctx.plan.notes.begin(),
                          "no global_profiler block: profiling is off, as in verl (global_profiler"
                          ".steps defaults to null); add global_profiler with tool and steps to "
                          "profile");
    return base::Status::Ok();
  }
  return base::InvalidArgument(
      doc.file() + ": no profiler configuration found; expected one of: global_profiler "
      "(verl), trainer.profile_steps (verl, legacy), profiler_config.integrated (MindSpeed-RL), "
      "rlprof (rlprof's own block); a verl (actor_rollout_ref) or MindSpeed-RL "
      "(megatron_training) training config without one loads with profiling off");
}

// Every error of the document in one message, "N errors in FILE:" then one per line.
base::Status ErrorsStatus(const Doc& doc) {
  std::ostringstream msg;
  size_t n = doc.errors().size();
  msg << n << (n == 1 ? " error" : " errors") << " in " << doc.file() << ":";
  for (const auto& e : doc.errors()) msg << "\n  " << e.Format();
  return base::InvalidArgument(msg.str());
}

// A fatal problem; errors found before it (keys given twice) are reported with it.
base::Status Fatal(Doc& doc, const base::Status& status) {
  if (doc.errors().empty()) return status;
  doc.Error("", "", status.message());
  return ErrorsStatus(doc);
}

}  // namespace

base::StatusOr<Plan> LoadPlanFromDoc(Doc& doc, const std::vector<std::string>& overrides,
                                     const LoadOptions& options) {
  if (auto st = doc.ApplyOverrides(overrides); !st.ok()) return Fatal(doc, st);
  Plan plan;
  plan.config_path = doc.file();
  Reader rd(doc);
  ParseContext ctx{doc, rd, plan, KnownStages()};
  const YAML::Node& root = doc.root();
  bool has_native = root["rlprof"].IsDefined();
  bool has_gen3 = root["global_profiler"].IsDefined();
  bool has_ms = root["profiler_config"].IsDefined();
  bool has_legacy = root["trainer"].IsDefined() && root["trainer"].IsMap() &&
                    root["trainer"]["profile_steps"].IsDefined();
  int dialects = int(has_native) + int(has_gen3) + int(has_ms) + int(has_legacy && !has_gen3);
  if (dialects > 1) {
    std::vector<std::string> found;
    if (has_native) found.push_back("rlprof");
    if (has_gen3) found.push_back("global_profiler");
    if (has_ms) found.push_back("profiler_config");
    if (has_legacy && !has_gen3) found.push_back("trainer.profile_steps");
    return Fatal(doc, base::InvalidArgument(doc.file() + ": several profiler configs in one "
                                            "file (" + base::Join(found, ", ") + "); keep one"));
  }
  if (has_native) ParseNative(ctx);
  else if (has_gen3) ParseVerlGen3(ctx);
  else if (has_ms) ParseMindSpeed(ctx);
  else if (has_legacy) ParseVerlLegacy(ctx);
  else if (auto st = ParseWithoutProfilerBlock(ctx); !st.ok()) return Fatal(doc, st);
  if (doc.errors().empty()) {
    std::vector<std::string> custom(ctx.stage_vocabulary.begin() + KnownStages().size(),
                                    ctx.stage_vocabulary.end());
    NormaliseStages(plan, custom);
    ValidatePlan(doc, plan, options);
  }
  if (!doc.errors().empty()) return ErrorsStatus(doc);
  for (const auto& w : doc.warnings()) plan.warnings.push_back(w);
  plan.resolved_yaml = PlanToVerlYaml(plan);
  return plan;
}

base::StatusOr<Plan> LoadPlan(const std::string& path, const std::vector<std::string>& overrides,
                              const LoadOptions& options) {
  Doc doc;
  RLPROF_RETURN_IF_ERROR(doc.LoadFile(path));
  return LoadPlanFromDoc(doc, overrides, options);
}

base::StatusOr<Plan> LoadPlanFromString(const std::string& yaml, const std::string& name,
                                        const std::vector<std::string>& overrides,
                                        const LoadOptions& options) {
  Doc doc;
  RLPROF_RETURN_IF_ERROR(doc.LoadString(yaml, name));
  return LoadPlanFromDoc(doc, overrides, options);
}

}  // namespace rlprof::config
