// rlprof's own `rlprof:` block (docs/config.md, "The rlprof block").
#include <algorithm>

#include "src/base/strings.h"
#include "src/config/schemas.h"

namespace rlprof::config {

void ParseNative(ParseContext& ctx) {
  Doc& doc = ctx.doc;
  Reader& rd = ctx.rd;
  Plan& plan = ctx.plan;
  plan.dialect = Dialect::kNative;
  plan.tool = Tool::kRlprof;
  Ref b = doc.Get({"rlprof"});
  if (!rd.IsBlock(b) || b.null()) return;
  ParseRlprofGlobals(ctx, b, {"enable", "steps", "continuous_steps", "save_path", "roles"});
  bool enable = rd.Bool(b, "enable").value_or(true);
  plan.steps = ParseSteps(ctx, doc.Child(b, "steps"));
  if (!enable) plan.steps = StepSelection{};
  plan.continuous_steps = rd.Bool(b, "continuous_steps").value_or(false);
  if (auto sp = rd.String(b, "save_path")) plan.save_path = *sp;
  Ref roles = doc.Child(b, "roles");
  if (roles.null()) {
    doc.Error(b, "the rlprof block needs a 'roles' mapping (e.g. roles: {actor: {enable: true}})");
    return;
  }
  if (!rd.IsBlock(roles)) return;
  for (const std::string& name : doc.Keys(roles)) {
    Ref blk = doc.Child(roles, name);
    if (!rd.IsBlock(blk)) continue;
    // Any name is a role (a process lists its roles in RLPROF_ROLES), so an unconventional
    // one is only warned about; one edit away from a conventional name is most likely a typo.
    static const std::vector<std::string> kConventional = {"actor", "rollout", "ref", "critic",
                                                           "reward"};
    if (std::find(kConventional.begin(), kConventional.end(), name) == kConventional.end())
      if (std::string hint = base::NearestWord(name, kConventional); !hint.empty())
        plan.warnings.push_back(doc.Where(blk) + ": " + JoinPath(blk.path) + ": role '" + name +
                                "' is not a conventional role name; did you mean '" + hint +
                                "'? (only processes whose RLPROF_ROLES lists '" + name +
                                "' use this block)");
    RlprofRoleExtras x = ParseRlprofRoleExtras(ctx, blk, {"enable", "all_ranks", "ranks"});
    RolePlan r;
    r.role = name;
    r.block_path = JoinPath(blk.path);
    r.enabled = rd.Bool(blk, "enable").value_or(true);
    r.all_ranks = rd.Bool(blk, "all_ranks").value_or(false);
    r.ranks = rd.IntList(blk, "ranks", 0).value_or(std::vector<int64_t>{});
    std::sort(r.ranks.begin(), r.ranks.end());
    r.ranks.erase(std::unique(r.ranks.begin(), r.ranks.end()), r.ranks.end());
    if (r.enabled && !r.all_ranks && r.ranks.empty()) {
      r.ranks = {0};
      plan.warnings.push_back(r.block_path + ": no ranks given: rank 0 only");
    }
    r.mode = x.discrete.value_or(false) ? CaptureMode::kDiscrete : CaptureMode::kEndToEnd;
    r.contents = NativeContentsFrom(x.contents.value_or(std::vector<std::string>{}));
    r.level = x.level.value_or("level0");
    r.stages = x.stages.value_or(std::vector<std::string>{});
    if (x.schedules) r.schedules = *x.schedules;
    r.token_start = x.token_start;
    r.token_end = x.token_end;
    r.ops_sampling = x.ops_sampling.value_or(1.0);
    if (r.token_end && *r.token_end <= r.token_start.value_or(0))
      doc.Error(doc.Child(blk, "profile_token_end"),
                "profile_token_end (" + std::to_string(*r.token_end) +
                    ") must be greater than profile_token_start (" +
                    std::to_string(r.token_start.value_or(0)) + ")");
    if (name == "rollout") r.ranks_are_replica_owners = false;
    plan.roles.push_back(std::move(r));
  }
}

}  // namespace rlprof::config
