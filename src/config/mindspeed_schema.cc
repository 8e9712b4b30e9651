// MindSpeed-RL `profiler_config.integrated` (config-schemas.md §5).
#include <algorithm>

#include "src/base/time_math.h"
#include "src/config/schemas.h"

namespace rlprof::config {

namespace {

// profile_step_start / profile_step_end: the steps [start, end) (DPO: start..end). Returns
// whether this is DPO (megatron_training.stage: dpo).
bool ParseMindSpeedSteps(ParseContext& ctx, const Ref& b, bool profile) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  int64_t start = rd.Int(b, "profile_step_start").value_or(1);
  int64_t end = rd.Int(b, "profile_step_end").value_or(2);
  bool steps_ok = true;
  if (start < 1) {
    doc.Error(doc.Child(b, "profile_step_start"),
              "step " + std::to_string(start) + " never runs: iterations are 1-based");
    steps_ok = false;
  } else if (end <= start) {
    doc.Error(doc.Child(b, "profile_step_end"),
              "profile_step_end (" + std::to_string(end) + ") must be greater than "
              "profile_step_start (" + std::to_string(start) + "); the end is exclusive");
    steps_ok = false;
  }
  // DPO (cli/train_dpo.py, `megatron_training.stage: dpo`) copies the profile* keys onto
  // Megatron's arguments and uses Megatron's profiler, which warms up one extra step: it
  // collects end − start + 1 iterations, steps start..end (config-schemas.md §5, §7).
  Ref trainer_stage = doc.Get({"megatron_training", "stage"});
  const bool dpo = trainer_stage.present() && trainer_stage.node.IsScalar() &&
                   trainer_stage.node.Scalar() == "dpo";
  if (profile && steps_ok) {
    plan.steps.kind = StepSelection::Kind::kRange;
    plan.steps.start = start;
    plan.steps.end = dpo ? base::SatAdd(end, 1) : end;
    if (dpo)
      plan.notes.push_back("DPO (megatron_training.stage: dpo): Megatron's profiler warms up one "
                           "extra step and collects profile_step_end - profile_step_start + 1 "
                           "iterations: steps " + std::to_string(start) + ".." +
                           std::to_string(end));
  }
  return dpo;
}

// profile_ranks: 'all' (or null) or a list.
void ParseMindSpeedRanks(ParseContext& ctx, const Ref& b, RolePlan& r) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Ref ranks = doc.Child(b, "profile_ranks");
  if (ranks.null() || (ranks.node.IsScalar() && ranks.node.Scalar() == "all")) {
    r.all_ranks = true;
  } else if (ranks.node.IsSequence()) {
    r.ranks = rd.IntList(b, "profile_ranks", 0).value_or(std::vector<int64_t>{});
  } else {
    std::string hint = ranks.node.IsScalar() && ranks.node.Scalar().find(',') != std::string::npos
                           ? " (write a YAML list such as [" + ranks.node.Scalar() + "]; "
                             "MindSpeed-RL would match no rank)"
                           : "";
    doc.Error(ranks, "expected 'all' or a list of ranks, got " + Describe(ranks.node) + hint);
  }
}

// stage: one integrated window (all) or per-stage windows.
void ParseMindSpeedStages(ParseContext& ctx, const Ref& b, bool dpo, RolePlan& r) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  // stage: all ⇒ one integrated window over [start, end); else per-stage windows.
  Ref stage = doc.Child(b, "stage");
  std::vector<std::string> vocab = {"all", "actor_generate", "actor_compute_log_prob",
                                    "reference_compute_log_prob", "critic_compute_values",
                                    "actor_update", "critic_update", "actor_image_embeds"};
  std::vector<std::string> stages;
  bool all = true;
  if (!stage.null()) {
    if (stage.node.IsScalar()) {
      if (auto s = rd.AsEnum(stage, vocab)) {
        if (*s != "all") {
          all = false;
          stages = {*s};
        }
      }
    } else if (auto list = rd.EnumList(b, "stage", vocab)) {
      if (std::find(list->begin(), list->end(), "all") == list->end()) {
        all = false;
        stages = *list;
      }
    }
  }
  if (dpo && !all) {
    // Megatron's profiler has no RL stages: one window over the iterations, whatever `stage`.
    plan.warnings.push_back(doc.Where(stage) + ": stage: DPO (megatron_training.stage: dpo) "
                            "profiles whole iterations with Megatron's profiler; the stage list "
                            "is ignored, as in MindSpeed-RL");
    all = true;
    stages.clear();
  }
  if (all) {
    r.mode = CaptureMode::kEndToEnd;
    plan.continuous_steps = true;
    bool ppo = doc.Get({"rl_config", "adv_estimator"}).present() &&
               doc.Get({"rl_config", "adv_estimator"}).node.IsScalar() &&
               doc.Get({"rl_config", "adv_estimator"}).node.Scalar() == "gae";
    if (ppo || doc.Get({"critic_config"}).present())
      plan.warnings.push_back("stage: all with a critic (PPO): actor and critic share a card and "
                              "would each build an integrated profiler; list the stages instead");
  } else {
    r.mode = CaptureMode::kDiscrete;
    r.stages = stages;
  }
}

}  // namespace

void ParseMindSpeed(ParseContext& ctx) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  plan.dialect = Dialect::kMindSpeedRl;
  plan.tool = Tool::kNpu;
  plan.save_path = "./profiler_data";

  Ref pc = doc.Get({"profiler_config"});
  if (!pc.present()) {
    // MindSpeed-RL builds its profiler only from profiler_config.integrated; without the
    // block nothing is profiled (none of its shipped configs has one).
    RolePlan off;
    off.role = "*";
    off.block_path = "profiler_config.integrated";
    off.contents.ops = off.contents.device = true;
    plan.roles.push_back(off);
    plan.notes.push_back("no profiler_config block: profiling is off, as in MindSpeed-RL; add "
                         "profiler_config.integrated with profile: true to profile");
    return;
  }
  if (!rd.IsBlock(pc)) return;
  rd.CheckKeys(pc, {"integrated", "rlprof"});
  ParseRlprofGlobals(ctx, doc.Child(pc, "rlprof"), {});
  Ref b = doc.Child(pc, "integrated");
  if (!rd.IsBlock(b) || b.null()) return;
  rd.CheckKeys(b, {"profile", "mstx", "stage", "profile_save_path", "profile_export_type",
                   "profile_step_start", "profile_step_end", "profile_level",
                   "profile_with_memory", "profile_record_shapes", "profile_with_cpu",
                   "profile_with_npu", "profile_with_module", "profile_analysis",
                   "profile_ranks"});
  bool profile = rd.Bool(b, "profile").value_or(false);
  bool mstx = rd.Bool(b, "mstx").value_or(false);
  Ref save = doc.Child(b, "profile_save_path");
  if (auto sp = rd.String(b, "profile_save_path")) {
    if (sp->empty())
      plan.warnings.push_back(doc.Where(save) + ": profile_save_path is empty: MindSpeed-RL would "
                              "write into the worker's working directory; rlprof uses "
                              "./profiler_data");
    else plan.save_path = *sp;
  }
  if (auto t = rd.Enum(b, "profile_export_type", {"text", "db"}))
    plan.exports = {*t == "db" ? ExportFormat::kSqlite : ExportFormat::kChromeJson};
  const bool dpo = ParseMindSpeedSteps(ctx, b, profile);
  std::string level = rd.Enum(b, "profile_level", KnownLevels()).value_or("level0");

  RolePlan r;
  r.role = "*";
  r.block_path = "profiler_config.integrated";
  r.enabled = profile;
  r.level = level;
  ParseMindSpeedRanks(ctx, b, r);
  ParseMindSpeedStages(ctx, b, dpo, r);
  bool with_cpu = rd.Bool(b, "profile_with_cpu").value_or(true);
  bool with_npu = rd.Bool(b, "profile_with_npu").value_or(true);
  r.contents.cpu = with_cpu;
  r.contents.device = with_npu && level != "level_none" && !mstx;
  r.contents.ops = with_cpu && level != "level_none" && !mstx;
  r.contents.memory = rd.Bool(b, "profile_with_memory").value_or(false);
  r.contents.shapes = rd.Bool(b, "profile_record_shapes").value_or(false);
  r.contents.module = rd.Bool(b, "profile_with_module").value_or(false);
  rd.Bool(b, "profile_analysis");
  if (mstx)
    plan.warnings.push_back("mstx: lightweight mode: markers only (host ranges and communication "
                            "markers), no operator or kernel activity");
  plan.roles.push_back(std::move(r));
}

}  // namespace rlprof::config
