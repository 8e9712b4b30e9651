// Vocabularies and the pieces of schema every dialect shares.
#include <algorithm>

#include "src/base/strings.h"
#include "src/config/schemas.h"
#include "src/config/stages.h"
#include "src/format/export.h"

namespace rlprof::config {

const std::vector<std::string>& KnownTools() {
  static const std::vector<std::string> v = {"nsys", "npu", "torch", "torch_memory",
                                             "precision_debugger", "rlprof"};
  return v;
}

const std::vector<std::string>& KnownLevels() {
  static const std::vector<std::string> v = {"level_none", "level0", "level1", "level2"};
  return v;
}

const std::vector<std::string>& KnownStages() {
  static const std::vector<std::string> v = {
      // verl workers and engine workers
      "rollout_generate", "actor_compute_log_prob", "ref_compute_log_prob", "actor_update",
      "compute_values", "critic_update", "compute_rm_score", "train_batch", "forward_backward",
      // MindSpeed-RL
      "actor_generate", "reference_compute_log_prob", "critic_compute_values",
      "actor_image_embeds",
      // rlprof's own (weight resharding / sync between actor and rollout)
      "weight_sync"};
  return v;
}

const std::vector<std::string>& NativeContents() {
  static const std::vector<std::string> v = {"cpu",    "device", "ops",   "shapes",
                                             "memory", "stack",  "module"};
  return v;
}

const std::vector<std::string>& ScheduleUnits() {
  static const std::vector<std::string> v = {"step", "decode", "micro_batch", "mini_batch"};
  return v;
}

std::vector<std::string> DefaultStagesOfRole(const std::string& role, Dialect dialect) {
  if (dialect == Dialect::kMindSpeedRl) {
    // MindSpeed-RL's actor_generate / reference_compute_log_prob, by their canonical names.
    return {"rollout_generate", "actor_compute_log_prob", "ref_compute_log_prob",
            "actor_update"};
  }
  if (role == "actor") return {"actor_compute_log_prob", "actor_update"};
  if (role == "rollout") return {"rollout_generate"};
  if (role == "ref") return {"ref_compute_log_prob"};
  if (role == "critic") return {"compute_values", "critic_update"};
  if (role == "reward") return {"compute_rm_score"};
  return {};
}

namespace {
SubStepKind UnitFromName(const std::string& s) {
  if (s == "step") return SubStepKind::kStep;
  if (s == "decode") return SubStepKind::kDecode;
  if (s == "micro_batch") return SubStepKind::kMicroBatch;
  return SubStepKind::kMiniBatch;
}
}  // namespace

void ParseRlprofGlobals(ParseContext& ctx, const Ref& block,
                        const std::vector<std::string>& extra_allowed) {
  Reader& rd = ctx.rd;
  if (!block.present() || !rd.IsBlock(block) || block.null()) return;
  std::vector<std::string> keys = {"export",          "combine",    "budget",
                                   "buffer",          "flush_interval_s", "backstop_s", "memory_interval_s",
                                   "sample_rate",     "custom_stages"};
  keys.insert(keys.end(), extra_allowed.begin(), extra_allowed.end());
  rd.CheckKeys(block, keys);
  Plan& p = ctx.plan;
  if (auto ex = rd.EnumList(block, "export", {"text", "db", "pftrace"})) {
    p.exports.clear();
    for (const auto& e : *ex) {
      ExportFormat f = *format::ParseExportFormat(e);  // one of the words EnumList allowed
      if (std::find(p.exports.begin(), p.exports.end(), f) == p.exports.end()) p.exports.push_back(f);
    }
  }
  if (auto c = rd.Enum(block, "combine", {"union", "priority"}))
    p.combine = *c == "priority" ? CombinePolicy::kPriority : CombinePolicy::kUnion;
  Ref budget = ctx.doc.Child(block, "budget");
  if (rd.IsBlock(budget)) {
    rd.CheckKeys(budget, {"max_bytes", "max_events"});
    if (auto b = rd.Bytes(budget, "max_bytes")) p.budget.max_bytes = *b;
    if (auto e = rd.Int(budget, "max_events", 0)) p.budget.max_events = static_cast<uint64_t>(*e);
  }
  Ref buffer = ctx.doc.Child(block, "buffer");
  if (rd.IsBlock(buffer)) {
    rd.CheckKeys(buffer, {"events_per_thread", "policy"});
    if (auto n = rd.Int(buffer, "events_per_thread", 1024))
      p.buffer_events_per_thread = static_cast<uint64_t>(*n);
    if (auto pol = rd.Enum(buffer, "policy", {"drop", "flush"}))
      p.buffer_policy = *pol == "drop" ? BufferPolicy::kDrop : BufferPolicy::kFlush;
  }
  if (auto f = rd.Number(block, "flush_interval_s", 0.001)) p.flush_interval_s = *f;
  if (auto b = rd.Number(block, "backstop_s", 0.001)) p.backstop_s = *b;
  if (auto m = rd.Number(block, "memory_interval_s", 0)) p.memory_interval_s = *m;
  if (auto r = rd.Number(block, "sample_rate", 0)) {
    if (*r > 1) ctx.doc.Error(ctx.doc.Child(block, "sample_rate"),
                              "expected a share of samples from 0 to 1, got " + std::to_string(*r));
    else p.sample_rate = *r;
  }
  Ref custom = ctx.doc.Child(block, "custom_stages");
  if (!custom.null()) {
    if (!custom.node.IsSequence()) {
      ctx.doc.Error(custom, "expected a list of stage names, got " + Describe(custom.node));
    } else {
      for (size_t i = 0; i < custom.node.size(); ++i)
        if (custom.node[i].IsScalar()) ctx.stage_vocabulary.push_back(custom.node[i].Scalar());
    }
  }
}

std::optional<Schedule> ParseSchedule(ParseContext& ctx, const Ref& block, bool allow_rlprof_keys,
                                      SubStepKind default_unit) {
  Reader& rd = ctx.rd;
  if (block.null() || !rd.IsBlock(block)) return std::nullopt;
  std::vector<std::string> keys = {"skip_first", "wait", "warmup", "active", "repeat"};
  if (allow_rlprof_keys) {
    keys.push_back("unit");
    keys.push_back("stage");
  }
  rd.CheckKeys(block, keys);
  Schedule s;
  s.unit = default_unit;
  if (allow_rlprof_keys) {
    if (auto u = rd.Enum(block, "unit", ScheduleUnits())) s.unit = UnitFromName(*u);
    if (auto st = rd.Enum(block, "stage", ctx.stage_vocabulary)) s.stage = *st;
  }
  s.skip_first = rd.Int(block, "skip_first", 0).value_or(0);
  s.wait = rd.Int(block, "wait", 0).value_or(0);
  s.warmup = rd.Int(block, "warmup", 0).value_or(0);
  s.active = rd.Int(block, "active", 0).value_or(0);
  s.repeat = rd.Int(block, "repeat", 0).value_or(0);
  if (s.active == 0 && (s.skip_first > 0 || s.wait > 0 || s.warmup > 0 || s.repeat > 0))
    ctx.doc.Error(ctx.doc.Child(block, "active"),
                  "must be > 0 when skip_first, wait, warmup or repeat is set (active: 0 "
                  "disables the schedule)");
  return s;
}

std::optional<std::vector<Schedule>> ParseSchedules(ParseContext& ctx, const Ref& r,
                                                    bool allow_rlprof_keys,
                                                    SubStepKind default_unit) {
  if (r.null()) return std::nullopt;
  std::vector<Schedule> out;
  if (!allow_rlprof_keys || !r.node.IsSequence()) {
    if (auto s = ParseSchedule(ctx, r, allow_rlprof_keys, default_unit); s && s->enabled())
      out.push_back(*s);
    return out;
  }
  for (size_t i = 0; i < r.node.size(); ++i) {
    Ref e = Element(r, i);
    if (!e.node.IsMap()) {
      ctx.doc.Error(e, "expected a schedule mapping {stage, unit, skip_first, wait, warmup, "
                       "active, repeat}, got " + Describe(e.node));
      continue;
    }
    auto s = ParseSchedule(ctx, e, true, default_unit);
    if (!s || !s->enabled()) continue;
    for (const Schedule& prev : out) {
      const bool same_stage = !s->stage.empty() && !prev.stage.empty() &&
                              CanonicalStage(prev.stage) == CanonicalStage(s->stage);
      const bool same_wide = s->stage.empty() && prev.stage.empty() && prev.unit == s->unit;
      if (same_stage || same_wide) {
        ctx.doc.Error(e, same_stage ? "stage " + s->stage + " already has a schedule in this list"
                                    : std::string("a role-wide schedule of unit ") +
                                          SubStepKindName(s->unit) +
                                          " is already in this list (name a stage)");
        break;
      }
    }
    out.push_back(*s);
  }
  return out;
}

StepSelection ParseSteps(ParseContext& ctx, const Ref& r) {
  StepSelection s;
  if (r.null()) return s;
  if (r.node.IsScalar()) {
    if (r.node.Scalar() == "all") {
      s.kind = StepSelection::Kind::kAll;
      return s;
    }
    std::string extra;
    if (r.node.Scalar().find(',') != std::string::npos)
      extra = " (write a YAML list such as [" + r.node.Scalar() + "], not a string)";
    ctx.doc.Error(r, "expected a list of steps, 'all', {start, end} or null, got " +
                         Describe(r.node) + extra);
    return s;
  }
  if (r.node.IsMap()) {
    ctx.rd.CheckKeys(r, {"start", "end"});
    auto start = ctx.rd.Int(r, "start");
    auto end = ctx.rd.Int(r, "end");
    if (!start || !end) {
      if (!ctx.doc.Child(r, "start").present() || !ctx.doc.Child(r, "end").present())
        ctx.doc.Error(r, "a step range needs both start and end (end exclusive)");
      return s;
    }
    if (*start < 1) {
      ctx.doc.Error(ctx.doc.Child(r, "start"), "step " + std::to_string(*start) +
                                                   " never runs: steps are 1-based");
      return s;
    }
    if (*end <= *start) {
      ctx.doc.Error(ctx.doc.Child(r, "end"), "end (" + std::to_string(*end) +
                                                 ") must be greater than start (" +
                                                 std::to_string(*start) + "); end is exclusive");
      return s;
    }
    s.kind = StepSelection::Kind::kRange;
    s.start = *start;
    s.end = *end;
    return s;
  }
  // A list; each element checked on its own for precise messages.
  std::vector<int64_t> values;
  bool ok = true;
  for (size_t i = 0; i < r.node.size(); ++i) {
    Ref e = Element(r, i);
    auto v = ctx.rd.AsListInt(e, INT64_MIN, "step");
    if (!v) {
      ok = false;
      continue;
    }
    if (*v < 1) {
      ctx.doc.Error(e, "step " + std::to_string(*v) +
                           " never runs: steps are 1-based (the first RL step is 1)");
      ok = false;
      continue;
    }
    values.push_back(*v);
  }
  if (!ok) return s;
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  s.kind = values.empty() ? StepSelection::Kind::kNone : StepSelection::Kind::kList;
  s.list = values;
  return s;
}

std::optional<std::vector<std::string>> ParseStages(ParseContext& ctx, const Ref& block,
                                                    const std::string& key) {
  Ref r = ctx.doc.Child(block, key);
  if (r.null()) return std::nullopt;
  if (r.node.IsScalar()) {
    if (r.node.Scalar() == "all") return std::vector<std::string>{};
    if (auto v = ctx.rd.AsEnum(r, ctx.stage_vocabulary)) return std::vector<std::string>{*v};
    return std::nullopt;
  }
  auto list = ctx.rd.EnumList(block, key, ctx.stage_vocabulary);
  return list;
}

Contents NativeContentsFrom(const std::vector<std::string>& words) {
  Contents c;
  c.cpu = false;
  if (words.empty()) {
    c.cpu = true;
    return c;
  }
  for (const auto& w : words) {
    if (w == "cpu") c.cpu = true;
    else if (w == "device") c.device = true;
    else if (w == "ops") c.ops = true;
    else if (w == "shapes") c.shapes = c.ops = true;
    else if (w == "memory") c.memory = true;
    else if (w == "stack") c.stack = true;
    else if (w == "module") c.module = true;
  }
  return c;
}

RlprofRoleExtras ParseRlprofRoleExtras(ParseContext& ctx, const Ref& block,
                                       const std::vector<std::string>& extra_allowed) {
  RlprofRoleExtras x;
  Reader& rd = ctx.rd;
  if (block.null() || !rd.IsBlock(block)) return x;
  std::vector<std::string> keys = {"discrete", "contents", "level", "stages", "schedule",
                                   "profile_token_start", "profile_token_end", "ops_sampling"};
  keys.insert(keys.end(), extra_allowed.begin(), extra_allowed.end());
  rd.CheckKeys(block, keys);
  x.discrete = rd.Bool(block, "discrete");
  x.contents = rd.EnumList(block, "contents", NativeContents());
  x.level = rd.Enum(block, "level", KnownLevels());
  x.stages = ParseStages(ctx, block, "stages");
  x.schedules = ParseSchedules(ctx, ctx.doc.Child(block, "schedule"), true, SubStepKind::kMiniBatch);
  x.token_start = rd.Int(block, "profile_token_start", 0);
  x.token_end = rd.Int(block, "profile_token_end", 1);
  if (auto r = rd.Number(block, "ops_sampling")) {
    const Ref at = ctx.doc.Child(block, "ops_sampling");
    if (*r > 0 && *r <= 1)
      x.ops_sampling = *r;
    else
      ctx.doc.Error(at, "expected the share of operator calls to record, more than 0 and at most "
                        "1 (0.1: one in ten; 1: every one), got " + Describe(at.node));
  }
  return x;
}

}  // namespace rlprof::config
