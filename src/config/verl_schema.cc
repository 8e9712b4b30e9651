// verl Gen 3: `global_profiler` + per-role `profiler` blocks (config-schemas.md §2, §4).
#include <algorithm>

#include "src/base/strings.h"
#include "src/config/schemas.h"

namespace rlprof::config {

namespace {

struct RoleBlockSpec {
  const char* role;
  KeyPath path;  // path of the `profiler` block
};

const std::vector<RoleBlockSpec>& RoleBlocks() {
  static const std::vector<RoleBlockSpec> v = {
      {"actor", {"actor_rollout_ref", "actor", "profiler"}},
      {"rollout", {"actor_rollout_ref", "rollout", "profiler"}},
      {"ref", {"actor_rollout_ref", "ref", "profiler"}},
      {"critic", {"critic", "profiler"}},
      {"reward", {"reward_model", "profiler"}},
  };
  return v;
}

// What one role block says, before inheritance and defaults.
struct RawRole {
  bool present = false;
  std::optional<std::string> tool;
  std::optional<bool> enable, all_ranks, discrete, analysis;
  std::optional<std::vector<int64_t>> ranks;
  std::optional<std::vector<std::string>> contents;  // in the tool's own vocabulary
  std::optional<std::string> level;
  std::optional<std::vector<Schedule>> schedules;
  std::optional<int64_t> token_start, token_end;
  RlprofRoleExtras extras;
  std::string block_path;
  Ref block;
};

Tool ToolFromName(const std::string& s) {
  if (s == "nsys") return Tool::kNsys;
  if (s == "npu") return Tool::kNpu;
  if (s == "torch") return Tool::kTorch;
  if (s == "torch_memory") return Tool::kTorchMemory;
  if (s == "precision_debugger") return Tool::kPrecisionDebugger;
  if (s == "rlprof") return Tool::kRlprof;
  return Tool::kNone;
}

void ParseToolConfig(ParseContext& ctx, const Ref& tc, const std::string& tool, RawRole& raw,
                     std::optional<bool> global_nsys_discrete) {
  Reader& rd = ctx.rd;
  Doc& doc = ctx.doc;
  if (tc.null() || !rd.IsBlock(tc)) {
    // verl's role YAML interpolates tool_config.nsys.discrete from the global one.
    if (tool == "nsys") raw.discrete = global_nsys_discrete;
    return;
  }
  rd.CheckKeys(tc, {"nsys", "npu", "torch", "torch_memory", "precision_debugger", "rlprof"});
  // Every tool's sub-block is validated (a typo in an unused one is still a typo).
  Ref nsys = doc.Child(tc, "nsys");
  if (rd.IsBlock(nsys)) rd.CheckKeys(nsys, {"discrete", "name"});
  Ref npu = doc.Child(tc, "npu");
  if (rd.IsBlock(npu))
    rd.CheckKeys(npu, {"contents", "level", "analysis", "discrete", "profile_token_start",
                       "profile_token_end", "name"});
  Ref torch = doc.Child(tc, "torch");
  if (rd.IsBlock(torch))
    rd.CheckKeys(torch, {"contents", "discrete", "profile_token_start", "profile_token_end",
                         "schedule", "step_start", "step_end", "manual_save", "name"});
  Ref mem = doc.Child(tc, "torch_memory");
  if (rd.IsBlock(mem))
    rd.CheckKeys(mem, {"trace_alloc_max_entries", "stack_depth", "memory_snapshot_num_steps"});
  raw.extras = ParseRlprofRoleExtras(ctx, doc.Child(tc, "rlprof"), {});

  if (tool == "nsys") {
    raw.discrete = rd.Bool(nsys, "discrete");
    if (!raw.discrete) raw.discrete = global_nsys_discrete;
  } else if (tool == "npu") {
    raw.contents = rd.EnumList(npu, "contents", {"npu", "cpu", "memory", "shapes", "module", "stack"});
    raw.level = rd.Enum(npu, "level", KnownLevels());
    raw.analysis = rd.Bool(npu, "analysis");
    raw.discrete = rd.Bool(npu, "discrete");
    raw.token_start = rd.Int(npu, "profile_token_start", 0);
    raw.token_end = rd.Int(npu, "profile_token_end", 1);
  } else if (tool == "torch") {
    raw.contents = rd.EnumList(torch, "contents", {"cuda", "cpu", "memory", "shapes", "stack"});
    raw.discrete = rd.Bool(torch, "discrete");
    raw.token_start = rd.Int(torch, "profile_token_start", 0);
    raw.token_end = rd.Int(torch, "profile_token_end", 1);
    // verl's schedule counts update mini-batches (config-schemas.md §4.3).
    raw.schedules = ParseSchedules(ctx, doc.Child(torch, "schedule"), false, SubStepKind::kMiniBatch);
  } else if (tool == "torch_memory") {
    rd.Int(mem, "trace_alloc_max_entries", 1);
    rd.Int(mem, "stack_depth", 1);
    rd.Int(mem, "memory_snapshot_num_steps", 1);
  } else {
    // Validate the other blocks' values too, without using them.
    rd.Bool(nsys, "discrete");
    rd.EnumList(npu, "contents", {"npu", "cpu", "memory", "shapes", "module", "stack"});
    rd.Enum(npu, "level", KnownLevels());
    rd.EnumList(torch, "contents", {"cuda", "cpu", "memory", "shapes", "stack"});
  }
  // tool_config.rlprof applies to every tool and wins over the tool's own block.
  if (raw.extras.discrete) raw.discrete = raw.extras.discrete;
  if (raw.extras.level) raw.level = raw.extras.level;
  if (raw.extras.schedules) raw.schedules = raw.extras.schedules;
  if (raw.extras.token_start) raw.token_start = raw.extras.token_start;
  if (raw.extras.token_end) raw.token_end = raw.extras.token_end;
}

// Maps a tool's contents words onto rlprof's Contents (docs/config.md, "contents").
Contents MapContents(Tool tool, const RawRole& raw, const std::string& level) {
  Contents c;
  std::vector<std::string> words = raw.contents.value_or(std::vector<std::string>{});
  auto has = [&](const char* w) { return std::find(words.begin(), words.end(), w) != words.end(); };
  switch (tool) {
    case Tool::kRlprof:
      c = NativeContentsFrom(raw.extras.contents.value_or(std::vector<std::string>{}));
      return c;
    case Tool::kNsys:
      c.cpu = true;
      c.device = true;
      break;
    case Tool::kNpu:
      // Current verl: CPU always, NPU only when listed; operators unless level_none.
      c.cpu = true;
      c.device = has("npu");
      c.ops = level != "level_none";
      c.memory = has("memory");
      c.shapes = has("shapes");
      c.module = has("module");
      c.stack = has("stack");
      break;
    case Tool::kTorch:
      // Empty means everything (CPU + CUDA), as upstream.
      c.cpu = true;
      c.ops = true;
      c.device = words.empty() || has("cuda");
      c.memory = has("memory");
      c.shapes = has("shapes");
      c.stack = has("stack");
      break;
    case Tool::kTorchMemory:
      c.cpu = true;
      c.memory = true;
      break;
    default:
      break;
  }
  // tool_config.rlprof.contents adds to what the tool implies.
  if (raw.extras.contents) {
    Contents x = NativeContentsFrom(*raw.extras.contents);
    c.cpu |= x.cpu;
    c.device |= x.device;
    c.ops |= x.ops;
    c.shapes |= x.shapes;
    c.memory |= x.memory;
    c.stack |= x.stack;
    c.module |= x.module;
  }
  return c;
}

std::string IntsText(const std::vector<int64_t>& v) {
  std::vector<std::string> parts;
  for (int64_t x : v) parts.push_back(std::to_string(x));
  return "[" + base::Join(parts, ", ") + "]";
}

std::string WordsText(const std::vector<std::string>& v, const char* empty) {
  return v.empty() ? empty : "[" + base::Join(v, ", ") + "]";
}

// What `ref` sets differently from `actor`, as "key: ref value (actor: actor value)".
std::vector<std::string> RoleDifferences(const RolePlan& ref, const RolePlan& actor) {
  std::vector<std::string> d;
  auto add = [&](const std::string& key, const std::string& r, const std::string& a) {
    if (r != a) d.push_back(key + ": " + r + " (actor: " + a + ")");
  };
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  add("enable", b(ref.enabled), b(actor.enabled));
  if (!d.empty()) return d;  // one side is off: its other settings do not matter
  add("all_ranks", b(ref.all_ranks), b(actor.all_ranks));
  if (!ref.all_ranks && !actor.all_ranks) add("ranks", IntsText(ref.ranks), IntsText(actor.ranks));
  add("discrete", b(ref.mode == CaptureMode::kDiscrete), b(actor.mode == CaptureMode::kDiscrete));
  // A ref allow-list of its own is kept (RefFollowsActor); "all" follows the actor's list.
  if (ref.stages.empty()) add("stages", "all", WordsText(actor.stages, "all"));
  add("contents", WordsText(ref.contents.Names(), "[]"), WordsText(actor.contents.Names(), "[]"));
  add("level", ref.level, actor.level);
  add("ops_sampling", base::FormatShare(ref.ops_sampling), base::FormatShare(actor.ops_sampling));
  // Schedules are kept per block (RefFollowsActor): each samples its own stages in the one
  // process, so a ref schedule is not a difference the actor block overrides.
  return d;
}

// verl's fused ActorRolloutRefWorker builds its one profiler from actor.profiler when it
// hosts the actor (verl/workers/fsdp_workers.py, megatron_workers.py, engine_workers.py:
// `if self._is_actor: config.actor.profiler elif self._is_rollout: ... else: ref`), so a ref
// block never decides there. Unless `combine` is set, the ref follows the actor block and a
// note names what its own block said differently.
void RefFollowsActor(Plan& plan, bool ref_block_present) {
  RolePlan* actor = nullptr;
  RolePlan* ref = nullptr;
  for (auto& r : plan.roles) {
    if (r.role == "actor") actor = &r;
    if (r.role == "ref") ref = &r;
  }
  if (!actor || !ref || !ref_block_present) return;
  std::vector<std::string> diffs = RoleDifferences(*ref, *actor);
  // tool_config.rlprof.stages is rlprof's own key, which verl has not: verl captures every
  // annotated stage of the process, ref stages included. A ref block's allow-list therefore
  // keeps naming which ref stages to capture (the union unites it with the actor's).
  std::vector<std::string> own_stages = ref->enabled && actor->enabled ? ref->stages
                                                                       : std::vector<std::string>{};
  // Schedules likewise: the actor's sample the stages they name in the one process already
  // (docs/capture-windows.md, "Schedules"), and a ref block's own schedules sample its stages.
  const bool keep_own = ref->enabled && actor->enabled;
  std::vector<Schedule> own_schedules = keep_own ? ref->schedules : std::vector<Schedule>{};
  std::optional<int64_t> own_token_start = keep_own ? ref->token_start : std::nullopt;
  std::optional<int64_t> own_token_end = keep_own ? ref->token_end : std::nullopt;
  if (diffs.empty()) return;
  plan.notes.push_back(ref->block_path + " is ignored where it differs from the actor block (" +
                       base::Join(diffs, "; ") +
                       "): verl's fused actor_rollout_ref worker reads actor_rollout_ref.actor."
                       "profiler only, so the ref stages follow it (set "
                       "global_tool_config.rlprof.combine to choose otherwise)");
  std::string path = ref->block_path;
  // What was said about the ref block's own ranks no longer applies.
  std::erase_if(plan.warnings, [&](const std::string& w) { return w.rfind(path + ":", 0) == 0; });
  *ref = *actor;
  ref->role = "ref";
  ref->block_path = path;
  if (!own_stages.empty()) ref->stages = own_stages;
  ref->schedules = std::move(own_schedules);
  ref->token_start = own_token_start;
  ref->token_end = own_token_end;
}

void ReportRoleName(ParseContext& ctx, const Ref& where, const std::string& name,
                    const std::vector<std::string>& roles, const std::string& prefix) {
  std::string blocks = "role blocks: actor_rollout_ref.{actor,rollout,ref}.profiler, "
                       "critic.profiler, reward_model.profiler";
  std::string hint = base::NearestWord(name, roles);
  if (!hint.empty()) {
    ctx.doc.Error(where, "unknown role '" + name + "': its profiler block is never read; did "
                         "you mean '" + hint + "'? (" + blocks + ")");
  } else {
    ctx.plan.warnings.push_back(prefix + name + ".profiler is not a role block verl reads (" +
                                blocks + "); it is ignored");
  }
}

}  // namespace

void CheckVerlRoleBlockNames(ParseContext& ctx, const std::vector<KeyPath>& role_parents) {
  Doc& doc = ctx.doc;
  Ref root = doc.Root();
  auto has_profiler = [&](const Ref& r) {
    return r.present() && r.node.IsMap() && doc.Child(r, "profiler").present();
  };
  const std::vector<std::string> top = {"actor_rollout_ref", "critic", "reward_model"};
  const std::vector<std::string> fused = {"actor", "rollout", "ref"};
  for (const std::string& key : doc.Keys(root)) {
    Ref blk = doc.Child(root, key);
    if (key == "actor_rollout_ref") {
      for (const std::string& c : doc.Keys(blk)) {
        if (std::find(fused.begin(), fused.end(), c) != fused.end()) continue;
        Ref cb = doc.Child(blk, c);
        if (has_profiler(cb)) ReportRoleName(ctx, cb, c, fused, "actor_rollout_ref.");
      }
    } else if (std::find(top.begin(), top.end(), key) == top.end()) {
      if (has_profiler(blk)) {
        ReportRoleName(ctx, blk, key, top, "");
        continue;
      }
      // A misspelt actor_rollout_ref holds its profiler blocks one level down.
      bool nested = false;
      for (const std::string& c : doc.Keys(blk)) nested |= has_profiler(doc.Child(blk, c));
      if (nested && base::NearestWord(key, {"actor_rollout_ref"}) == "actor_rollout_ref")
        doc.Error(blk, "unknown key: its role blocks are never read; did you mean "
                       "'actor_rollout_ref'?");
    }
  }
  // A misspelt `profiler` key leaves its role silently off.
  for (const KeyPath& parent : role_parents) {
    Ref p = doc.Get(parent);
    for (const std::string& k : doc.Keys(p))
      if (k != "profiler" && base::NearestWord(k, {"profiler"}) == "profiler")
        doc.Error(doc.Child(p, k), "unknown key; did you mean 'profiler'? (the role's profiler "
                                   "block is read from " + JoinPath(parent) + ".profiler)");
  }
}

// global_profiler.global_tool_config: checks its blocks and reads rlprof's globals; returns
// nsys.discrete (verl applies it to every role).
std::optional<bool> ParseGlobalToolConfig(ParseContext& ctx, const Ref& gp) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Ref gtc = doc.Child(gp, "global_tool_config");
  std::optional<bool> nsys_discrete;
  if (rd.IsBlock(gtc)) {
    rd.CheckKeys(gtc, {"nsys", "torch_memory", "precision_debugger", "rlprof", "npu", "torch"});
    Ref nsys = doc.Child(gtc, "nsys");
    if (rd.IsBlock(nsys)) {
      rd.CheckKeys(nsys, {"discrete", "controller_nsight_options", "worker_nsight_options"});
      nsys_discrete = rd.Bool(nsys, "discrete");
    }
    Ref mem = doc.Child(gtc, "torch_memory");
    if (rd.IsBlock(mem)) {
      rd.CheckKeys(mem, {"trace_alloc_max_entries", "stack_depth", "memory_snapshot_num_steps", "context",
                         "stacks", "kw_args"});
      rd.Int(mem, "trace_alloc_max_entries", 1);
      rd.Int(mem, "stack_depth", 1);
    }
    Ref pd = doc.Child(gtc, "precision_debugger");
    if (rd.IsBlock(pd)) {
      rd.CheckKeys(pd, {"config_path", "steps", "stages", "strict"});
      ParseStages(ctx, pd, "stages");
    }
    ParseRlprofGlobals(ctx, doc.Child(gtc, "rlprof"), {});
  }
  return nsys_discrete;
}

// Each role block as written (the rollout's unset fields come from the actor's, as verl's
// role YAML interpolates them).
std::vector<RawRole> ParseRawRoles(ParseContext& ctx, const std::optional<std::string>& tool,
                                   std::optional<bool> nsys_discrete) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  const std::string tool_name = tool.value_or("");
  std::vector<RawRole> raws;
  for (const auto& spec : RoleBlocks()) {
    RawRole raw;
    raw.block_path = JoinPath(spec.path);
    raw.block = doc.Get(spec.path);
    raw.present = raw.block.present() && !raw.block.null();
    if (raw.present && rd.IsBlock(raw.block)) {
      rd.CheckKeys(raw.block, {"tool", "enable", "all_ranks", "ranks", "save_path", "tool_config",
                               "global_tool_config", "relocate_results", "finish_hook_cmd",
                               "finish_hook_all_ranks", "finish_hook_ranks"});
      raw.tool = rd.Enum(raw.block, "tool", KnownTools());
      raw.enable = rd.Bool(raw.block, "enable");
      raw.all_ranks = rd.Bool(raw.block, "all_ranks");
      raw.ranks = rd.IntList(raw.block, "ranks", 0);
      rd.String(raw.block, "save_path");
      std::string role_tool = raw.tool.value_or(tool_name);
      if (raw.tool && tool && *raw.tool != *tool)
        plan.warnings.push_back(raw.block_path + ".tool is '" + *raw.tool +
                                "' but global_profiler.tool is '" + *tool +
                                "': rlprof uses the global tool for every role");
      ParseToolConfig(ctx, doc.Child(raw.block, "tool_config"), tool_name, raw, nsys_discrete);
    } else if (!raw.present) {
      raw.discrete = nsys_discrete;  // nsys discrete is effectively global
    }
    raws.push_back(std::move(raw));
  }
  // Rollout inherits every unset field from the actor block (verl's role YAML interpolates them).
  RawRole& actor = raws[0];
  RawRole& rollout = raws[1];
  if (!rollout.enable) rollout.enable = actor.enable;
  if (!rollout.all_ranks) rollout.all_ranks = actor.all_ranks;
  if (!rollout.ranks) rollout.ranks = actor.ranks;
  if (!rollout.discrete) rollout.discrete = actor.discrete;
  if (!rollout.contents) rollout.contents = actor.contents;
  if (!rollout.level) rollout.level = actor.level;
  if (!rollout.extras.stages) rollout.extras.stages = actor.extras.stages;
  if (!rollout.extras.contents) rollout.extras.contents = actor.extras.contents;
  if (!rollout.extras.ops_sampling) rollout.extras.ops_sampling = actor.extras.ops_sampling;
  return raws;
}

// A role's plan from its block, by verl Gen 3's rules.
RolePlan RolePlanOf(ParseContext& ctx, const std::string& role, RawRole& raw,
                    const std::string& tool_name) {
  Doc& doc = ctx.doc;
  Plan& plan = ctx.plan;
  RolePlan r;
  r.role = role;
  r.block_path = raw.block_path;
  r.enabled = raw.enable.value_or(false);
  r.all_ranks = raw.all_ranks.value_or(false);
  r.ranks = raw.ranks.value_or(std::vector<int64_t>{});
  if (r.enabled && !r.all_ranks && r.ranks.empty()) {
    r.ranks = {0};
    plan.warnings.push_back(raw.block_path + ": enable with empty ranks profiles rank 0 only "
                            "(verl Gen 3 rule)");
  }
  std::sort(r.ranks.begin(), r.ranks.end());
  r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
  r.mode = raw.discrete.value_or(false) ? CaptureMode::kDiscrete : CaptureMode::kEndToEnd;
  if (plan.tool == Tool::kTorchMemory) r.mode = CaptureMode::kEndToEnd;
  r.level = raw.level.value_or("level0");
  r.contents = MapContents(plan.tool, raw, r.level);
  if (raw.schedules) r.schedules = *raw.schedules;
  r.stages = raw.extras.stages.value_or(std::vector<std::string>{});
  r.token_start = raw.token_start;
  r.token_end = raw.token_end;
  r.ops_sampling = raw.extras.ops_sampling.value_or(1.0);
  if (r.role == "rollout") {
    r.ranks_are_replica_owners = true;
    if (r.token_start || r.token_end) {
      // A token window is a schedule over decode iterations.
      int64_t start = r.token_start.value_or(0);
      if (r.token_end && *r.token_end <= start)
        doc.Error(doc.Child(doc.Child(doc.Child(raw.block, "tool_config"), tool_name),
                            "profile_token_end"),
                  "profile_token_end (" + std::to_string(*r.token_end) +
                      ") must be greater than profile_token_start (" + std::to_string(start) + ")");
    }
  }
  return r;
}

// What the rest of verl's config says about the job's processes: the reward loop's workers, a
// served reward model's replicas, the single controller.
void ParseVerlJob(ParseContext& ctx) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  // verl >= 0.9 scores in its reward loop's workers (reward.num_workers of them; the reward
  // model, when there is one, is served by rollout servers): the reward block selects those.
  if (Ref reward = doc.Get({"reward"}); reward.present() && reward.node.IsMap())
    if (auto n = rd.Int(reward, "num_workers", 1)) plan.reward_loop_workers = *n;
  // ... and serves a reward model, when enabled, on rollout servers of its own: replicas of
  // rollout tp x dp x pp GPUs (verl's defaults 2, 1, 1) in its own pool (enable_resource_pool:
  // its n_gpus_per_node x nnodes) or the trainer's (RewardModelManager, verl 0.9.1).
  if (Ref rm = doc.Get({"reward", "reward_model"}); rm.present() && rm.node.IsMap()) {
    if (rd.Bool(rm, "enable").value_or(false)) {
      plan.reward_model_served = true;
      Ref ro = doc.Child(rm, "rollout");
      int64_t size = 1;
      for (auto [key, dflt] : {std::pair<const char*, int64_t>{"tensor_model_parallel_size", 2},
                               {"data_parallel_size", 1},
                               {"pipeline_model_parallel_size", 1}})
        size *= (ro.present() && ro.node.IsMap() ? rd.Int(ro, key, 1) : std::nullopt).value_or(dflt);
      plan.reward_model_replica_size = size;
      auto gpus = [&](const Ref& block) -> int64_t {
        if (!block.present() || !block.node.IsMap()) return 0;
        auto per_node = rd.Int(block, "n_gpus_per_node", 1);
        auto nodes = rd.Int(block, "nnodes", 0);
        return per_node && nodes ? *per_node * *nodes : 0;
      };
      plan.reward_model_pool = rd.Bool(rm, "enable_resource_pool").value_or(false)
                                   ? gpus(rm)
                                   : gpus(doc.Get({"trainer"}));
    }
  }
  // verl's single controller (the TaskRunner process running RayPPOTrainer.fit) starts and
  // stops every worker group's profiler and times the step's stages (marked_timer: gen, reward,
  // old_log_prob, adv, update_actor, ...). With tool rlprof it records them too, on every step
  // verl profiles: one capture a step window, rank 0, markers only (docs/integrations.md,
  // "The controller lane"). verl's nsys tool profiles the controller likewise. Only in verl's
  // own trainer config (it has a `trainer` block; rlprof's record of verl's resolved config,
  // RUN/verl_config.json, keeps it): a verl-format profiler config driving another loop
  // (examples/grpo_tiny, examples/verl_ray) has no verl controller.
  const bool verl_trainer = doc.Get({"trainer"}).present() && doc.Get({"trainer"}).node.IsMap();
  if (plan.tool == Tool::kRlprof && plan.steps.kind != StepSelection::Kind::kNone && verl_trainer) {
    RolePlan c;
    c.role = "controller";
    c.block_path = "global_profiler (controller)";
    c.enabled = true;
    c.ranks = {0};
    c.mode = CaptureMode::kEndToEnd;
    c.level = "level0";
    c.contents.cpu = true;
    plan.roles.push_back(std::move(c));
  }
}

void ParseVerlGen3(ParseContext& ctx) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  plan.dialect = Dialect::kVerlGen3;

  Ref gp = doc.Get({"global_profiler"});
  if (!rd.IsBlock(gp)) return;
  rd.CheckKeys(gp, {"tool", "steps", "profile_continuous_steps", "save_path", "relocate_results",
                    "finish_hook_cmd", "finish_hook_all_ranks", "finish_hook_ranks",
                    "global_tool_config"});
  const std::optional<bool> nsys_discrete = ParseGlobalToolConfig(ctx, gp);
  std::optional<std::string> tool = rd.Enum(gp, "tool", KnownTools());
  plan.tool = tool ? ToolFromName(*tool) : Tool::kNone;
  plan.steps = ParseSteps(ctx, doc.Child(gp, "steps"));
  plan.continuous_steps = rd.Bool(gp, "profile_continuous_steps").value_or(false);
  if (auto sp = rd.String(gp, "save_path")) plan.save_path = *sp;
  rd.Bool(gp, "relocate_results");
  rd.String(gp, "finish_hook_cmd");
  rd.Bool(gp, "finish_hook_all_ranks");
  rd.IntList(gp, "finish_hook_ranks", 0);

  if (gp.present() && !tool && plan.steps.kind == StepSelection::Kind::kNone)
    plan.notes.push_back("profiling is off: global_profiler.tool and global_profiler.steps are "
                         "null (verl's defaults); set both to profile");
  if (!tool && plan.steps.kind != StepSelection::Kind::kNone)
    plan.warnings.push_back("global_profiler.tool is null: verl profiles nothing; set tool "
                            "(nsys, npu, torch, torch_memory or rlprof)");
  if (plan.tool == Tool::kPrecisionDebugger)
    plan.warnings.push_back("tool precision_debugger is msprobe's tensor dump, not a profiler: "
                            "rlprof captures nothing for it");

  const std::string tool_name = tool.value_or("");
  std::vector<RawRole> raws = ParseRawRoles(ctx, tool, nsys_discrete);
  for (size_t i = 0; i < raws.size(); ++i)
    plan.roles.push_back(RolePlanOf(ctx, RoleBlocks()[i].role, raws[i], tool_name));
  if (!doc.Get({"global_profiler", "global_tool_config", "rlprof", "combine"}).present())
    RefFollowsActor(plan, raws[2].present);
  ParseVerlJob(ctx);
  std::vector<KeyPath> parents;
  for (const auto& spec : RoleBlocks())
    parents.emplace_back(spec.path.begin(), spec.path.end() - 1);
  CheckVerlRoleBlockNames(ctx, parents);
}

}  // namespace rlprof::config
