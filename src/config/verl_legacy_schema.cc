// verl Gen 1 / Gen 2: trainer.profile_steps and {discrete, all_ranks, ranks} role blocks
// (config-schemas.md §3). Translated to Gen 3 semantics, keeping "empty ranks = none".
#include <algorithm>

#include "src/config/schemas.h"

namespace rlprof::config {

void ParseVerlLegacy(ParseContext& ctx) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  Ref trainer = doc.Get({"trainer"});
  bool gen2 = doc.Get({"actor_rollout_ref", "profiler"}).present();
  plan.dialect = gen2 ? Dialect::kVerlGen2 : Dialect::kVerlGen1;

  plan.steps = ParseSteps(ctx, doc.Child(trainer, "profile_steps"));
  plan.continuous_steps = rd.Bool(trainer, "profile_continuous_steps").value_or(false);
  bool nsight = doc.Child(trainer, "controller_nsight_options").present() ||
                doc.Child(trainer, "worker_nsight_options").present();
  Ref npu = doc.Child(trainer, "npu_profile");
  std::vector<std::string> npu_stages;
  std::string level = "level0";
  Contents npu_contents;
  if (!npu.null() && rd.IsBlock(npu)) {
    rd.CheckKeys(npu, {"options"});
    Ref opt = doc.Child(npu, "options");
    if (rd.IsBlock(opt)) {
      rd.CheckKeys(opt, {"save_path", "roles", "level", "with_memory", "record_shapes", "with_npu",
                         "with_cpu", "with_module", "with_stack", "analysis"});
      if (auto sp = rd.String(opt, "save_path")) plan.save_path = *sp;
      else plan.save_path = "./profiler_data";
      std::vector<std::string> vocab = {"all", "rollout_generate", "actor_compute_log_prob",
                                        "actor_update", "ref_compute_log_prob"};
      if (auto roles = rd.EnumList(opt, "roles", vocab))
        if (std::find(roles->begin(), roles->end(), "all") == roles->end()) npu_stages = *roles;
      level = rd.Enum(opt, "level", KnownLevels()).value_or("level1");
      npu_contents.cpu = rd.Bool(opt, "with_cpu").value_or(true);
      npu_contents.device = rd.Bool(opt, "with_npu").value_or(true);
      npu_contents.memory = rd.Bool(opt, "with_memory").value_or(false);
      npu_contents.shapes = rd.Bool(opt, "record_shapes").value_or(false);
      npu_contents.module = rd.Bool(opt, "with_module").value_or(false);
      npu_contents.stack = rd.Bool(opt, "with_stack").value_or(false);
      npu_contents.ops = level != "level_none";
      rd.Bool(opt, "analysis");
    }
  }
  plan.tool = (!nsight && !npu.null()) ? Tool::kNpu : Tool::kNsys;

  struct Spec {
    const char* role;
    KeyPath path;
  };
  std::vector<Spec> specs;
  if (gen2) {
    specs = {{"actor", {"actor_rollout_ref", "profiler"}}};
  } else {
    specs = {{"actor", {"actor_rollout_ref", "actor", "profiler"}},
             {"rollout", {"actor_rollout_ref", "rollout", "profiler"}},
             {"ref", {"actor_rollout_ref", "ref", "profiler"}}};
  }
  specs.push_back({"critic", {"critic", "profiler"}});
  specs.push_back({"reward", {"reward_model", "profiler"}});
  for (const auto& spec : specs) {
    Ref blk = doc.Get(spec.path);
    RolePlan r;
    r.role = spec.role;
    r.block_path = JoinPath(spec.path);
    if (!blk.null() && rd.IsBlock(blk)) {
      rd.CheckKeys(blk, {"discrete", "all_ranks", "ranks"});
      bool discrete = rd.Bool(blk, "discrete").value_or(false);
      r.all_ranks = rd.Bool(blk, "all_ranks").value_or(false);
      r.ranks = rd.IntList(blk, "ranks", 0).value_or(std::vector<int64_t>{});
      std::sort(r.ranks.begin(), r.ranks.end());
      r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
      // Legacy rule: empty ranks with all_ranks false profiles no rank.
      r.enabled = r.all_ranks || !r.ranks.empty();
      if (!r.enabled)
        plan.warnings.push_back(r.block_path + ": ranks is empty and all_ranks is false: this role "
                                "is not profiled (verl Gen 1/2 rule)");
      r.mode = discrete ? CaptureMode::kDiscrete : CaptureMode::kEndToEnd;
    }
    if (plan.tool == Tool::kNpu) {
      r.contents = npu_contents;
      r.level = level;
      if (r.mode == CaptureMode::kDiscrete) r.stages = npu_stages;
      else if (!npu_stages.empty() && r.enabled)
        plan.warnings.push_back("trainer.npu_profile.options.roles filters stages in discrete "
                                "mode only; " + r.block_path + " is end-to-end");
    } else {
      r.contents.cpu = true;
      r.contents.device = true;
    }
    if (gen2) {
      // The single fused block serves actor, rollout and ref alike.
      for (const char* role : {"actor", "rollout", "ref"}) {
        if (spec.path.size() == 2 && spec.path[0] == "actor_rollout_ref") {
          RolePlan copy = r;
          copy.role = role;
          copy.block_path = r.block_path + " (" + role + ")";
          plan.roles.push_back(copy);
        }
      }
      if (spec.path[0] == "actor_rollout_ref") continue;
    }
    plan.roles.push_back(std::move(r));
  }
  std::vector<KeyPath> parents;
  for (const auto& spec : specs) parents.emplace_back(spec.path.begin(), spec.path.end() - 1);
  CheckVerlRoleBlockNames(ctx, parents);
}

}  // namespace rlprof::config
