#include "rlprof/config/plan.h"

#include "src/config/sampling.h"
#include "src/config/schemas.h"
#include "src/config/stages.h"

#include <algorithm>
#include <set>

namespace rlprof::config {

const char* DialectName(Dialect d) {
  switch (d) {
    case Dialect::kVerlGen1: return "verl-gen1";
    case Dialect::kVerlGen2: return "verl-gen2";
    case Dialect::kVerlGen3: return "verl-gen3";
    case Dialect::kMindSpeedRl: return "mindspeed-rl";
    case Dialect::kNative: return "rlprof";
  }
  return "?";
}

const char* ToolName(Tool t) {
  switch (t) {
    case Tool::kNone: return "none";
    case Tool::kRlprof: return "rlprof";
    case Tool::kNsys: return "nsys";
    case Tool::kNpu: return "npu";
    case Tool::kTorch: return "torch";
    case Tool::kTorchMemory: return "torch_memory";
    case Tool::kPrecisionDebugger: return "precision_debugger";
  }
  return "?";
}

const char* CaptureModeName(CaptureMode m) {
  return m == CaptureMode::kDiscrete ? "discrete" : "e2e";
}

const char* SubStepKindName(SubStepKind k) {
  switch (k) {
    case SubStepKind::kStep: return "step";
    case SubStepKind::kDecode: return "decode";
    case SubStepKind::kMicroBatch: return "micro_batch";
    case SubStepKind::kMiniBatch: return "mini_batch";
  }
  return "?";
}

const char* CombinePolicyName(CombinePolicy p) {
  return p == CombinePolicy::kPriority ? "priority" : "union";
}

std::vector<std::string> Contents::Names() const {
  std::vector<std::string> out;
  if (cpu) out.push_back("cpu");
  if (device) out.push_back("device");
  if (ops) out.push_back("ops");
  if (shapes) out.push_back("shapes");
  if (memory) out.push_back("memory");
  if (stack) out.push_back("stack");
  if (module) out.push_back("module");
  return out;
}

bool StepSelection::Contains(int64_t step) const {
  switch (kind) {
    case Kind::kNone: return false;
    case Kind::kAll: return step >= 1;
    case Kind::kRange: return step >= start && step < end;
    case Kind::kList: return std::binary_search(list.begin(), list.end(), step);
  }
  return false;
}

std::vector<int64_t> StepSelection::Expand(int64_t total_steps) const {
  std::vector<int64_t> out;
  switch (kind) {
    case Kind::kNone: break;
    case Kind::kList:
      for (int64_t s : list)
        if (total_steps <= 0 || s <= total_steps) out.push_back(s);
      break;
    case Kind::kRange:
      for (int64_t s = start; s < end && (total_steps <= 0 || s <= total_steps); ++s) out.push_back(s);
      break;
    case Kind::kAll:
      for (int64_t s = 1; s <= total_steps; ++s) out.push_back(s);
      break;
  }
  return out;
}

std::string StepSelection::ToString() const {
  switch (kind) {
    case Kind::kNone: return "none";
    case Kind::kAll: return "all";
    case Kind::kRange: return "[" + std::to_string(start) + ", " + std::to_string(end) + ")";
    case Kind::kList: {
      std::string s = "[";
      for (size_t i = 0; i < list.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(list[i]);
      }
      return s + "]";
    }
  }
  return "?";
}

bool RolePlan::RankSelected(int64_t rank) const {
  if (!enabled) return false;
  if (all_ranks) return true;
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

bool RolePlan::StageSelected(std::string_view stage) const {
  return stages.empty() || StageListContains(stages, stage);
}

bool ProcessPlan::StageSelected(std::string_view stage) const {
  return stages.empty() || StageListContains(stages, stage);
}

const StageSchedule* ProcessPlan::ScheduleFor(std::string_view role, std::string_view stage) const {
  const std::string c = CanonicalStage(stage);
  for (const StageSchedule& s : schedules)
    if (!s.schedule.stage.empty() && CanonicalStage(s.schedule.stage) == c) return &s;
  const std::string owner = StageRole(c);
  for (bool token : {true, false}) {
    for (const StageSchedule& s : schedules) {
      if (!s.schedule.stage.empty() || s.token_window != token) continue;
      const bool role_matches = s.role == "*" || s.role == role || (!owner.empty() && s.role == owner);
      if (role_matches && StageRunsUnit(c, s.schedule.unit)) return &s;
    }
  }
  return nullptr;
}

const StageSchedule* ProcessPlan::StepSchedule() const {
  for (bool token : {false, true})
    for (const StageSchedule& s : schedules)
      if (s.schedule.stage.empty() && s.token_window == token) return &s;
  return nullptr;
}

const RolePlan* Plan::FindRole(const std::string& role) const {
  for (const auto& r : roles)
    if (r.role == role) return &r;
  return nullptr;
}

bool Plan::profiling_enabled() const {
  if (tool == Tool::kNone || tool == Tool::kPrecisionDebugger) return false;
  if (steps.kind == StepSelection::Kind::kNone) return false;
  for (const auto& r : roles)
    if (r.enabled) return true;
  return false;
}

namespace {

// A role's schedules as the process sees them: its token window (a decode schedule) first,
// then its schedules in config order.
void AddSchedules(ProcessPlan& p, const RolePlan& r) {
  if (r.token_start || r.token_end) {
    StageSchedule t;
    t.role = r.role;
    t.block = r.block_path;
    t.schedule = TokenWindowSchedule(r.token_start, r.token_end);
    t.token_window = true;
    if (t.schedule.enabled()) p.schedules.push_back(std::move(t));
  }
  for (const Schedule& s : r.schedules) {
    if (!s.enabled()) continue;
    StageSchedule e;
    e.role = r.role;
    e.block = r.block_path;
    e.schedule = s;
    e.schedule.stage = CanonicalStage(s.stage);
    p.schedules.push_back(std::move(e));
  }
}

void MergeInto(ProcessPlan& p, const RolePlan& r, bool first) {
  AddSchedules(p, r);
  if (first) {
    p.mode = r.mode;
    p.stages = r.stages;
    p.contents = r.contents;
    p.level = r.level;
    p.ops_sampling = r.ops_sampling;
    return;
  }
  // Union: discrete if any block is discrete; stage allow-lists unite (an empty list means
  // every stage and absorbs the others); contents OR-ed; every role keeps its schedules.
  if (r.mode == CaptureMode::kDiscrete) p.mode = CaptureMode::kDiscrete;
  if (p.stages.empty() || r.stages.empty()) {
    p.stages.clear();
  } else {
    std::set<std::string> s(p.stages.begin(), p.stages.end());
    s.insert(r.stages.begin(), r.stages.end());
    p.stages.assign(s.begin(), s.end());
  }
  // ops_sampling: the denser share of the blocks that record operators (a block without them
  // says nothing about their share).
  if (r.contents.RecordsOperators())
    p.ops_sampling = p.contents.RecordsOperators() ? std::max(p.ops_sampling, r.ops_sampling)
                                                   : r.ops_sampling;
  p.contents.cpu |= r.contents.cpu;
  p.contents.device |= r.contents.device;
  p.contents.ops |= r.contents.ops;
  p.contents.shapes |= r.contents.shapes;
  p.contents.memory |= r.contents.memory;
  p.contents.stack |= r.contents.stack;
  p.contents.module |= r.contents.module;
}

}  // namespace

ProcessPlan ResolveForProcess(const Plan& plan, const std::vector<std::string>& roles,
                              int64_t rank) {
  ProcessPlan p;
  if (!plan.profiling_enabled()) return p;
  // The blocks of the roles this process hosts, in the order given (priority order).
  std::vector<const RolePlan*> blocks;
  for (const auto& name : roles)
    if (const RolePlan* r = plan.FindRole(name)) blocks.push_back(r);
  // A "*" block (MindSpeed-RL's single integrated config) serves every role.
  if (blocks.empty())
    if (const RolePlan* any = plan.FindRole("*")) blocks.push_back(any);
  if (plan.combine == CombinePolicy::kPriority) {
    // verl Gen 3: the first hosted role that has a block decides alone (actor, else rollout,
    // else ref), even when it is disabled.
    if (blocks.empty()) return p;
    const RolePlan* chosen = blocks.front();
    for (size_t i = 1; i < blocks.size(); ++i)
      if (blocks[i]->enabled)
        p.warnings.push_back("priority policy: block " + blocks[i]->block_path +
                             " is ignored in favour of " + chosen->block_path);
    if (!chosen->RankSelected(rank)) return p;
    p.enabled = true;
    p.roles.push_back(chosen->role);
    MergeInto(p, *chosen, true);
    return p;
  }
  bool first = true;
  for (const RolePlan* r : blocks) {
    if (!r->RankSelected(rank)) continue;
    p.enabled = true;
    p.roles.push_back(r->role);
    MergeInto(p, *r, first);
    first = false;
  }
  // When only some hosted roles select this rank (e.g. a rollout-only rank of the fused verl
  // worker), capture only their stages: each selecting role contributes its allow-list, or its
  // default stages; the ref's stages follow the actor. Unknown defaults keep "every stage".
  if (p.enabled && p.roles.size() < blocks.size() && p.mode == CaptureMode::kDiscrete &&
      plan.dialect != Dialect::kNative && plan.dialect != Dialect::kMindSpeedRl) {
    std::set<std::string> stages;
    bool every = false;
    for (const auto& role : p.roles) {
      const RolePlan* r = plan.FindRole(role);
      std::vector<std::string> own = r->stages.empty() ? DefaultStagesOfRole(role, plan.dialect) : r->stages;
      if (own.empty()) every = true;
      stages.insert(own.begin(), own.end());
      if (role == "actor" && r->stages.empty())
        for (const auto& s : DefaultStagesOfRole("ref", plan.dialect)) stages.insert(s);
    }
    if (!every) p.stages.assign(stages.begin(), stages.end());
  }
  return p;
}

}  // namespace rlprof::config
