#include "src/config/captures.h"

#include <algorithm>
#include <map>
#include <set>

#include "src/base/strings.h"
#include "src/config/plan_json.h"
#include "src/config/schemas.h"
#include "src/config/stages.h"

namespace rlprof::config {

namespace {

// Share of an RL step's wall time spent in each stage (GRPO on a colocated worker); the
// model behind estimated sizes of discrete captures.
double StageShare(const std::string& stage) {
  static const std::map<std::string, double> kShare = {
      {"rollout_generate", 0.50}, {"actor_generate", 0.50},
      {"actor_update", 0.25},     {"critic_update", 0.20},
      {"actor_compute_log_prob", 0.08}, {"ref_compute_log_prob", 0.08},
      {"reference_compute_log_prob", 0.08}, {"compute_values", 0.08},
      {"critic_compute_values", 0.08}, {"compute_rm_score", 0.05},
      {"weight_sync", 0.03}};
  auto it = kShare.find(stage);
  return it == kShare.end() ? 0.05 : it->second;
}

double LevelFactor(const std::string& level) {
  if (level == "level_none") return 0.0;
  if (level == "level1") return 1.3;
  if (level == "level2") return 1.6;
  return 1.0;
}

// The sub-steps of `unit` one call of a stage (or one step window) runs, if known.
int64_t AssumedCount(const EstimateModel& model, SubStepKind unit) {
  auto it = model.sub_steps.find(unit);
  return it == model.sub_steps.end() ? -1 : it->second;
}

// The share of a stage call's events one period holds (the size model of docs/config.md).
double PeriodShare(const Schedule& s, const SamplePeriod& p, int64_t count) {
  if (count == 0) return 1.0;  // nothing ran: the capture is the whole (short) stage
  if (count > 0) return std::min(1.0, std::max<double>(p.size, 0.5) / static_cast<double>(count));
  // Unknown count: assume the stage runs exactly the listed cycles.
  const double len = static_cast<double>(s.wait + s.warmup) + static_cast<double>(s.active);
  const double total = static_cast<double>(s.skip_first) + len * std::max<int64_t>(1, s.repeat);
  return total > 0 ? std::min(1.0, static_cast<double>(p.size) / total) : 1.0;
}

struct Group {
  std::string key;
  ProcessPlan proc;
  std::vector<int64_t> ranks;
  bool all = false;
};

std::string ProcKey(const ProcessPlan& p) {
  if (!p.enabled) return "";
  std::string k = CaptureModeName(p.mode);
  for (const auto& s : p.stages) k += "|s:" + s;
  for (const auto& c : p.contents.Names()) k += "|c:" + c;
  for (const auto& r : p.roles) k += "|r:" + r;
  k += "|l:" + p.level;
  for (const auto& sc : p.schedules) k += "|" + StageScheduleToJson(sc).dump();
  return k;
}

void AddOnce(std::vector<std::string>& out, std::string w) {
  if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
}

std::string Describe(const StageSchedule& s) {
  std::string d = s.token_window ? "the token window of " + s.block
                                 : "the " + std::string(SubStepKindName(s.schedule.unit)) +
                                       " schedule of " + s.block;
  if (!s.schedule.stage.empty()) d += " for " + s.schedule.stage;
  return d;
}

// Every schedule of a worker's process either applies to a captured stage (or its step
// window) or is reported with the reason it cannot. `scopes`: the discrete stages captured
// (empty in end-to-end mode).
void CheckSchedules(const std::string& worker, const ProcessPlan& proc,
                    const std::vector<std::string>& scopes, std::vector<std::string>& warnings) {
  const bool discrete = proc.mode == CaptureMode::kDiscrete;
  auto used_by = [&](const StageSchedule* s) {
    std::vector<std::string> stages;
    if (!discrete) return stages;
    for (const std::string& st : scopes) {
      std::string role = StageRole(st);
      if (role.empty()) role = proc.roles.front();
      if (proc.ScheduleFor(role, st) == s) stages.push_back(st);
    }
    return stages;
  };
  for (const StageSchedule& s : proc.schedules) {
    const std::string what = Describe(s);
    const std::string unit = SubStepKindName(s.schedule.unit);
    if (!discrete) {
      if (!s.schedule.stage.empty()) {
        AddOnce(warnings, what + " does not apply on " + worker +
                              ": it is end-to-end (one capture per step); a stage schedule "
                              "needs discrete: true");
      } else if (proc.StepSchedule() != &s) {
        AddOnce(warnings, what + " does not apply on " + worker + ": its step window follows " +
                              Describe(*proc.StepSchedule()) + " (one schedule per step window)");
      }
      continue;
    }
    if (s.schedule.unit == SubStepKind::kStep) {
      AddOnce(warnings, what + " does not apply on " + worker +
                            ": a step never advances inside a stage (unit step samples "
                            "end-to-end continuous windows)");
      continue;
    }
    std::vector<std::string> stages = used_by(&s);
    if (!s.schedule.stage.empty()) {
      if (stages.empty()) {
        AddOnce(warnings, what + " does not apply on " + worker + ": stage " + s.schedule.stage +
                              " is not captured there (captured: " +
                              (scopes.empty() ? std::string("none") : base::Join(scopes, ", ")) + ")");
      } else if (FindStage(s.schedule.stage) != nullptr &&
                 !StageRunsUnit(s.schedule.stage, s.schedule.unit)) {
        const bool records = ActionAt(s.schedule, 0) != ScheduleAction::kNone &&
                             ActionAt(s.schedule, 0) != ScheduleAction::kWarmup;
        AddOnce(warnings, what + ": the known hooks never count " + unit + " inside " +
                              s.schedule.stage + " (it runs: " + StageUnitsText(s.schedule.stage) +
                              "), so its counter stays at 0 and it records " +
                              (records ? "the whole stage" : "nothing"));
      }
      continue;
    }
    if (!stages.empty()) continue;
    // A role-wide schedule that no captured stage follows: say why.
    std::vector<std::string> own, runs;
    for (const std::string& st : scopes) {
      std::string owner = StageRole(st);
      if (s.role != "*" && !owner.empty() && owner != s.role) continue;
      own.push_back(st);
      if (StageRunsUnit(st, s.schedule.unit)) runs.push_back(st);
    }
    std::string why;
    if (own.empty()) {
      why = "no stage of role " + s.role + " is captured there";
    } else if (runs.empty()) {
      why = "no captured stage of role " + s.role + " runs " + unit + " sub-steps (";
      for (size_t i = 0; i < own.size(); ++i)
        why += (i ? "; " : "") + own[i] + " runs " + StageUnitsText(own[i]);
      why += "); name a stage or pick its unit";
    } else {
      why = "every stage of role " + s.role + " that runs " + unit + " (" + base::Join(runs, ", ") +
            ") follows another schedule";
    }
    AddOnce(warnings, what + " does not apply on " + worker + ": " + why);
  }
}

}  // namespace

std::string RankListToString(const std::vector<int64_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out.empty() ? "none" : out;
}

double EventsPerSecond(Tool tool, const Contents& c, const std::string& level,
                       double ops_sampling) {
  double eps = 20.0;  // step / stage / sub-step markers
  if (c.cpu) eps += 200.0;
  double lf = (tool == Tool::kNpu) ? LevelFactor(level) : 1.0;
  if (c.ops)
    eps += 20000.0 * (tool == Tool::kNpu ? std::max(lf, 0.0) : 1.0) *
           (ops_sampling > 0 && ops_sampling < 1 ? ops_sampling : 1.0);
  if (c.device) eps += 15000.0 * lf;
  if (c.memory) eps += 100.0;
  if (c.module) eps += 500.0;
  return eps;
}

uint64_t BytesPerEvent(const Contents& c, const std::vector<ExportFormat>& exports) {
  double b = 5.0;  // events.rlp, format version 2: columnar chunks, 3.4–4.8 B an event measured
  if (c.shapes) b += 6.0;
  if (c.stack) b += 24.0;
  for (auto f : exports) {
    if (f == ExportFormat::kChromeJson) b += 30.0;     // Chrome JSON, gzip
    if (f == ExportFormat::kSqlite) b += 60.0;       // SQLite rows + indexes
    if (f == ExportFormat::kPftrace) b += 12.0;  // Perfetto protobuf, interned names
  }
  return static_cast<uint64_t>(b + 0.5);
}

namespace {

// A kind of process of the job and the roles it hosts: its captures are enumerated together.
struct Worker {
  std::string name;
  std::vector<std::string> roles;
  bool replicas = false;  // ranks are rollout replica ranks
  bool single = false;    // one process (verl's controller), whatever the world size
  int64_t count = 0;      // > 0: that many processes, ranks 0..count-1, whatever the world size
};

// A step window: one step, or a run of steps in a profile_continuous_steps run.
struct Window {
  std::vector<int64_t> steps;
  std::string label;
};

// Which kinds of process the plan's dialect has, and which roles share one.
std::vector<Worker> WorkersOf(const Plan& plan, const LoadOptions& opt) {
  std::vector<Worker> workers;
  if (plan.dialect == Dialect::kMindSpeedRl) {
    workers.push_back({"all workers", {"*"}});
  } else if (plan.dialect == Dialect::kNative) {
    for (const auto& r : plan.roles) workers.push_back({r.role, {r.role}});
  } else {
    // verl maps the critic to the actor/rollout/ref worker's resource pool ("global_pool",
    // unconditionally in 0.9.1's trainer) and builds one colocated process per pool
    // (create_colocated_worker_cls): the critic's stages are recorded in that process's
    // captures, under role critic (docs/integrations.md, "Colocated workers"). A reward model
    // with a pool of its own (reward_model.enable_resource_pool) stays a worker of its own.
    // (A critic whose block is off records nothing there: the worker then lists the three.)
    Worker fused{"actor_rollout_ref", {"actor", "rollout", "ref"}};
    if (const RolePlan* critic = plan.FindRole("critic"); critic != nullptr && critic->enabled)
      fused.roles.push_back("critic");
    workers.push_back(fused);
    // verl >= 0.9 has no reward-model worker: its reward loop's workers score (one process
    // each, numbered 0..num_workers-1 whatever the world size), recorded with tool rlprof.
    if (plan.reward_loop_workers > 0) {
      if (plan.tool == Tool::kRlprof) {
        Worker loop{"reward loop", {"reward"}};
        loop.count = plan.reward_loop_workers;
        workers.push_back(loop);
        // A served reward model's engines (rank = the reward model's replica rank).
        if (int64_t n = plan.RewardModelReplicas(opt.world_size); n > 0) {
          Worker servers{"reward model servers", {"reward"}};
          servers.count = n;
          workers.push_back(servers);
        }
      }
    } else {
      workers.push_back({"reward_model", {"reward"}});
    }
    // verl >= 0.9 generates in Agent-Loop rollout servers (vLLM/SGLang engines in processes of
    // their own). With tool rlprof, rlprof records each selected replica's generation there,
    // end-to-end too: one capture per step and replica besides the trainer worker's. (A
    // discrete rollout_generate capture is listed under the fused worker: same step, scope and
    // rank, written by the replica.)
    const RolePlan* ro = plan.FindRole("rollout");
    if (plan.dialect == Dialect::kVerlGen3 && plan.tool == Tool::kRlprof && ro != nullptr &&
        ro->enabled && ro->mode != CaptureMode::kDiscrete)
      workers.push_back({"rollout replicas", {"rollout"}, true});
    // verl's single controller: one process whatever the world size (verl_schema.cc).
    if (const RolePlan* c = plan.FindRole("controller"); c != nullptr && c->enabled)
      workers.push_back({"controller", {"controller"}, false, true});
  }

  return workers;
}

// The step windows: each selected step, or each run of consecutive steps when continuous; a
// symbolic "all" when every step is selected and the run's length is unknown.
std::vector<Window> WindowsOf(const Plan& plan, bool symbolic_all, const std::vector<int64_t>& steps) {
  std::vector<Window> windows;
  if (symbolic_all) windows.push_back({{}, "all"});
  for (size_t i = 0; i < steps.size();) {
    size_t j = i;
    if (plan.continuous_steps)
      while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    Window w;
    w.steps.assign(steps.begin() + i, steps.begin() + j + 1);
    w.label = j > i ? std::to_string(steps[i]) + "-" + std::to_string(steps[j]) : std::to_string(steps[i]);
    windows.push_back(w);
    i = j + 1;
  }
  return windows;
}

// The worker's processes, grouped by what they record (one group per distinct process plan);
// an all_ranks group stands for every rank when the world size is unknown.
std::vector<Group> GroupsOf(const Plan& plan, const LoadOptions& opt, const Worker& wk) {
  // Candidate ranks: every rank when the world size is known, else the named ones plus a
  // sentinel that only all_ranks blocks select.
  std::vector<int64_t> cands;
  bool any_all = false;
  if (wk.single) {
    cands = {0};
  } else if (wk.count > 0) {
    for (int64_t r = 0; r < wk.count; ++r) cands.push_back(r);
  } else if (opt.world_size > 0) {
    const int64_t n = wk.replicas ? std::max<int64_t>(1, opt.world_size / std::max<int64_t>(1, opt.replica_size))
                                  : opt.world_size;
    for (int64_t r = 0; r < n; ++r) cands.push_back(r);
  } else {
    std::set<int64_t> s;
    for (const auto& role : wk.roles) {
      const RolePlan* rp = plan.FindRole(role);
      if (!rp) continue;
      any_all |= rp->all_ranks && rp->enabled;
      s.insert(rp->ranks.begin(), rp->ranks.end());
    }
    cands.assign(s.begin(), s.end());
  }
  std::vector<Group> groups;
  auto add = [&](int64_t rank, bool all) {
    ProcessPlan p = ResolveForProcess(plan, wk.roles, rank);
    std::string key = ProcKey(p);
    if (key.empty()) return;
    for (auto& g : groups)
      if (g.key == key && g.all == all) {
        g.ranks.push_back(rank);
        return;
      }
    groups.push_back({key, p, {rank}, all});
  };
  for (int64_t r : cands) add(r, false);
  if (any_all) add(INT64_MAX, true);
  return groups;
}

// A group's capture scopes: its stages in discrete mode (none: one step-window scope).
std::vector<std::string> ScopesOf(const Plan& plan, const Worker& wk, const Group& g,
                                  std::vector<std::string>& notes) {
  std::vector<std::string> scopes;
  if (g.proc.mode != CaptureMode::kDiscrete) return scopes;
  if (!g.proc.stages.empty()) {
    scopes = g.proc.stages;
  } else {
    // Every stage of every role the process hosts is annotated in it (verl: "ref
    // follows the actor block in the fused worker").
    for (const auto& role : wk.roles)
      for (const auto& s : DefaultStagesOfRole(role, plan.dialect))
        if (std::find(scopes.begin(), scopes.end(), s) == scopes.end()) scopes.push_back(s);
  }
  if (scopes.empty()) scopes.push_back("<each annotated stage>");
  if (g.proc.stages.empty())
    AddOnce(notes, "discrete without a stage allow-list on " + wk.name +
                       ": any other annotated stage (e.g. weight_sync) also gets its own "
                       "capture; list stages (tool_config.rlprof.stages) to pin them");
  return scopes;
}

// What one group of processes records, and how its captures are sized.
struct GroupPlan {
  const Plan& plan;
  const EstimateModel& model;
  const Worker& wk;
  const Group& g;
  std::vector<std::string> scopes;
  double eps = 0;       // events per second (the size model)
  uint64_t bpe = 0;     // bytes per event
  int64_t nranks = 0;   // processes in the group, -1 = every rank of an unknown world
  std::string ranks;    // as printed
  bool symbolic_all = false;

  // The schedule each scope follows (discrete: per stage; end-to-end: the step window's).
  const StageSchedule* ScheduleOf(const std::string& scope) const {
    if (g.proc.mode != CaptureMode::kDiscrete) return g.proc.StepSchedule();
    std::string role = StageRole(scope);
    if (role.empty()) role = g.proc.roles.front();
    return g.proc.ScheduleFor(role, scope);
  }
};

// The rows of one scope in one step window: one capture, or one per active period of its
// schedule (docs/capture-windows.md).
void AddCaptureRows(const GroupPlan& gp, const Window& w, const std::string& scope,
                    std::vector<CaptureRow>& rows) {
  const Plan& plan = gp.plan;
  const ProcessPlan& proc = gp.g.proc;
  CaptureRow row;
  row.worker = gp.wk.name;
  row.roles = proc.roles;
  row.steps = w.label;
  row.windows = 1;
  row.scope = scope;
  row.ranks = gp.ranks;
  row.rank_count = gp.nranks;
  row.mode = proc.mode;
  row.contents = proc.contents;
  row.level = proc.level;
  const StageSchedule* ss = gp.ScheduleOf(scope);
  if (ss != nullptr) {
    row.schedule = ss->schedule;
    row.schedule_from = ss->block;
    if (ss->token_window) {
      const RolePlan* rp = plan.FindRole(ss->role);
      row.token_window = "[" + std::to_string(rp ? rp->token_start.value_or(0) : 0) + ", " +
                         (rp && rp->token_end ? std::to_string(*rp->token_end) : "end") + ")";
    }
  }
  int64_t first_step = w.steps.empty() ? 0 : w.steps.front();
  double seconds = gp.model.step_seconds * std::max<size_t>(1, w.steps.size());
  if (scope != "e2e" && scope.rfind("steps", 0) != 0) seconds = gp.model.step_seconds * StageShare(scope);
  const double events = gp.eps * seconds;
  auto finish = [&](CaptureRow r, double share) {
    r.directory = plan.save_path + "/<run_id>/step" +
                  (first_step ? std::to_string(first_step) : std::string("<N>")) + "/" + r.scope +
                  "/rank<R>-<host>-<pid>/";
    double ev = events * share;
    if (plan.budget.max_events > 0) ev = std::min<double>(ev, plan.budget.max_events);
    r.events_per_capture = static_cast<uint64_t>(ev);
    r.bytes_per_capture = r.events_per_capture * gp.bpe;
    if (plan.budget.max_bytes > 0)
      r.bytes_per_capture = std::min<uint64_t>(r.bytes_per_capture, plan.budget.max_bytes);
    r.captures = (gp.nranks < 0 || gp.symbolic_all) ? -1 : gp.nranks;
    rows.push_back(std::move(r));
  };
  if (ss == nullptr) {
    finish(row, 1.0);
    return;
  }
  const Schedule& sc = ss->schedule;
  int64_t count = AssumedCount(gp.model, sc.unit);
  if (sc.unit == SubStepKind::kStep)
    count = proc.mode == CaptureMode::kDiscrete ? 0 : static_cast<int64_t>(w.steps.size());
  bool more = false;
  std::vector<SamplePeriod> periods = SchedulePeriods(sc, count, &more);
  const bool parts = sc.repeat != 1;
  for (size_t i = 0; i < periods.size(); ++i) {
    CaptureRow r = row;
    r.sampled = true;
    r.sub_first = periods[i].first;
    r.sub_count = periods[i].size;
    r.sub_complete = periods[i].complete;
    r.sub_steps = PeriodText(sc.unit, periods[i]);
    if (sc.unit == SubStepKind::kStep && !w.steps.empty()) {
      r.sub_steps = "steps " + std::to_string(w.steps.front() + periods[i].first) +
                    (periods[i].size > 1 ? "-" + std::to_string(w.steps.front() + periods[i].first +
                                                                 periods[i].size - 1)
                                         : std::string());
      first_step = w.steps.front() + periods[i].first;
    }
    if (parts) r.scope = scope + ".part" + std::to_string(i + 1);
    bool unknown = more && i + 1 == periods.size() && sc.repeat == 0;
    if (unknown) r.sub_steps += ", then every " + std::to_string(sc.wait + sc.warmup + sc.active);
    finish(r, PeriodShare(sc, periods[i], count));
    if (unknown) rows.back().captures = -1;
  }
}

// What each stage of the group records (the "Sampling" table of rlprof plan).
void AddSamplingRows(const GroupPlan& gp, std::vector<SamplingRow>& out) {
  std::vector<std::string> scopes = gp.scopes;
  if (scopes.empty()) scopes.push_back("");
  for (const std::string& scope : scopes) {
    SamplingRow sr;
    sr.worker = gp.wk.name;
    sr.ranks = gp.ranks;
    sr.stage = scope;
    const StageSchedule* ss = gp.ScheduleOf(scope);
    double seconds = scope.empty() ? gp.model.step_seconds : gp.model.step_seconds * StageShare(scope);
    sr.bytes_whole = static_cast<uint64_t>(gp.eps * seconds) * gp.bpe;
    sr.bytes_sampled = sr.bytes_whole;
    if (ss != nullptr) {
      sr.schedule = ss->schedule;
      sr.from = ss->block;
      sr.token_window = ss->token_window;
      sr.count = AssumedCount(gp.model, ss->schedule.unit);
      if (ss->schedule.unit == SubStepKind::kStep) sr.count = scope.empty() ? -1 : 0;
      sr.periods = SchedulePeriods(ss->schedule, sr.count, &sr.more);
      double share = 0;
      for (const auto& p : sr.periods) share += PeriodShare(ss->schedule, p, sr.count);
      sr.bytes_sampled = static_cast<uint64_t>(static_cast<double>(sr.bytes_whole) * std::min(1.0, share));
    }
    out.push_back(std::move(sr));
  }
}

// nsys: rlprof starts / stops the CUDA profiler at each window of the process, so the exact
// capture-range-end is the number of its windows (`rows`: the group's). verl's default
// repeat-shutdown count is 6 × len(steps), right only by luck. An Agent-Loop rollout (verl
// Gen 3: rollout ranks own replicas) generates in the rollout servers, not in this trainer
// process: its stage windows are no range here.
NsysRanges NsysRangesOf(const GroupPlan& gp, size_t nsteps, const CaptureRow* rows, size_t n) {
  const Plan& plan = gp.plan;
  NsysRanges nr;
  nr.worker = gp.wk.name;
  nr.ranks = gp.ranks;
  nr.mode = gp.g.proc.mode;
  nr.continuous = plan.continuous_steps && gp.g.proc.mode != CaptureMode::kDiscrete;
  nr.verl_default = 6 * static_cast<int64_t>(nsteps);
  const RolePlan* ro = plan.FindRole("rollout");
  const bool agent_loop = ro != nullptr && ro->ranks_are_replica_owners;
  for (size_t i = 0; i < n; ++i) {
    const CaptureRow& r = rows[i];
    const std::string stage = r.scope.substr(0, r.scope.find(".part"));
    if (agent_loop && gp.g.proc.mode == CaptureMode::kDiscrete && StageRole(stage) == "rollout") {
      if (std::find(nr.excluded.begin(), nr.excluded.end(), stage) == nr.excluded.end())
        nr.excluded.push_back(stage);
      continue;
    }
    if (gp.symbolic_all || stage == "<each annotated stage>" ||
        r.sub_steps.find(", then every") != std::string::npos)
      nr.ranges = -1;
    if (nr.ranges >= 0) ++nr.ranges;
  }
  return nr;
}

// The totals, what the torch contents record, and which Agent-Loop replicas are traced.
void FinishSummary(const Plan& plan, const LoadOptions& opt, bool any_memory, bool any_stack,
                   bool any_module, CaptureSummary& sum) {
  // What the torch contents record, and where they cannot be honoured (said again, once, at
  // the window that asks for them, and in manifest.json sources.torch_*; docs/config.md).
  if (any_memory)
    sum.notes.push_back(
        "memory: PyTorch allocator events (size, device, operator) and allocated/reserved "
        "counters per device; CUDA memory history snapshots only where CUDA is available "
        "(on a CPU-only machine: CPU allocator events, and 'not honoured: memory' in the capture)");
  if (any_stack)
    sum.notes.push_back(
        "stack: Python call stacks of operators launched from Python threads (operators on "
        "torch's autograd / worker threads have none); implies ops");
  if (any_module)
    sum.notes.push_back(
        "module: nn.Module forwards as ranges via torch's global module hooks (a torch "
        "without them: 'not honoured: module' in the capture)");
  sum.total_captures = 0;
  for (const auto& r : sum.rows) {
    if (r.captures < 0) {
      sum.total_captures = -1;
    } else if (sum.total_captures >= 0) {
      sum.total_captures += r.captures;
    }
    if (r.captures > 0) sum.total_bytes += r.bytes_per_capture * static_cast<uint64_t>(r.captures);
  }
  // Agent-Loop rollout: global GPU ranks map to replicas.
  if (const RolePlan* ro = plan.FindRole("rollout"); ro && ro->enabled && ro->ranks_are_replica_owners &&
                                                      ro->mode == CaptureMode::kDiscrete) {
    if (opt.replica_size > 0) {
      std::set<int64_t> reps;
      for (int64_t r : ro->ranks) reps.insert(r / opt.replica_size);
      for (int64_t rep : reps)
        sum.notes.push_back("Agent-Loop rollout: replica " + std::to_string(rep) + " (GPUs " +
                            std::to_string(rep * opt.replica_size) + "-" +
                            std::to_string(rep * opt.replica_size + opt.replica_size - 1) +
                            ") is traced by its engine");
    } else {
      sum.notes.push_back("Agent-Loop rollout ranks " + RankListToString(ro->ranks) +
                          " are global GPU ranks; pass --replica-size to see which replicas "
                          "are traced");
    }
  }
}

}  // namespace

CaptureSummary EnumerateCaptures(const Plan& plan, const LoadOptions& opt,
                                 const EstimateModel& model) {
  CaptureSummary sum;
  sum.notes = plan.notes;
  if (!plan.profiling_enabled()) return sum;
  const bool symbolic_all = plan.steps.kind == StepSelection::Kind::kAll && opt.total_steps <= 0;
  const std::vector<int64_t> steps = plan.steps.Expand(opt.total_steps);
  const std::vector<Window> windows = WindowsOf(plan, symbolic_all, steps);
  bool any_memory = false, any_stack = false, any_module = false;
  for (const Worker& wk : WorkersOf(plan, opt)) {
    for (const Group& g : GroupsOf(plan, opt, wk)) {
      GroupPlan gp{plan, model, wk, g, {}, 0, 0, 0, {}, false};
      gp.scopes = ScopesOf(plan, wk, g, sum.notes);
      gp.eps = EventsPerSecond(plan.tool, g.proc.contents, g.proc.level, g.proc.ops_sampling);
      gp.bpe = BytesPerEvent(g.proc.contents, plan.exports);
      gp.nranks = g.all ? (opt.world_size > 0 ? opt.world_size : -1) : static_cast<int64_t>(g.ranks.size());
      gp.ranks = g.all && opt.world_size <= 0 ? "all" : RankListToString(g.ranks);
      gp.symbolic_all = symbolic_all;
      any_memory |= g.proc.contents.memory;
      any_stack |= g.proc.contents.stack;
      any_module |= g.proc.contents.module;
      const size_t rows_before = sum.rows.size();
      for (const Window& w : windows) {
        const bool continuous_run = w.steps.size() > 1;
        const std::vector<std::string> row_scopes =
            gp.scopes.empty()
                ? std::vector<std::string>{continuous_run ? "steps" + w.label : std::string("e2e")}
                : gp.scopes;
        for (const std::string& scope : row_scopes) AddCaptureRows(gp, w, scope, sum.rows);
      }
      AddSamplingRows(gp, sum.sampling);
      CheckSchedules(wk.name, g.proc, gp.scopes, sum.warnings);
      if (plan.tool == Tool::kNsys)
        sum.nsys.push_back(NsysRangesOf(gp, steps.size(), sum.rows.data() + rows_before,
                                        sum.rows.size() - rows_before));
    }
  }
  FinishSummary(plan, opt, any_memory, any_stack, any_module, sum);
  return sum;
}

std::string NsysRanges::CaptureRangeEnd(bool shutdown) const {
  if (ranges < 0) return "";
  return std::string(shutdown ? "repeat-shutdown:" : "repeat:") + std::to_string(ranges);
}

std::string NsysRanges::Command() const {
  if (ranges < 0) return "";
  return "nsys profile --capture-range=cudaProfilerApi --capture-range-end=" + CaptureRangeEnd(true) +
         " -o " + worker + "_%p <command>";
}

nlohmann::ordered_json CaptureSummaryToJson(const CaptureSummary& s) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& r : s.rows) {
    nlohmann::ordered_json j;
    j["worker"] = r.worker;
    j["roles"] = r.roles;
    j["steps"] = r.steps;
    j["scope"] = r.scope;
    j["ranks"] = r.ranks;
    j["rank_count"] = r.rank_count < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.rank_count);
    j["mode"] = CaptureModeName(r.mode);
    j["contents"] = r.contents.Names();
    j["level"] = r.level;
    j["schedule"] = ScheduleToJson(r.schedule);
    j["schedule_from"] = r.schedule_from.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.schedule_from);
    if (r.sampled)
      j["sub_steps"] = {{"unit", SubStepKindName(r.schedule.unit)}, {"first", r.sub_first},
                        {"count", r.sub_count}, {"complete", r.sub_complete}, {"text", r.sub_steps}};
    else
      j["sub_steps"] = nullptr;
    j["token_window"] = r.token_window.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.token_window);
    j["directory"] = r.directory;
    j["est_events_per_capture"] = r.events_per_capture;
    j["est_bytes_per_capture"] = r.bytes_per_capture;
    j["captures"] = r.captures < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.captures);
    rows.push_back(j);
  }
  nlohmann::ordered_json out;
  out["captures"] = rows;
  out["total_captures"] = s.total_captures < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s.total_captures);
  out["est_total_bytes"] = s.total_bytes;
  out["notes"] = s.notes;
  nlohmann::ordered_json sampling = nlohmann::ordered_json::array();
  for (const auto& r : s.sampling) {
    nlohmann::ordered_json j;
    j["worker"] = r.worker;
    j["ranks"] = r.ranks;
    j["stage"] = r.stage.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.stage);
    j["schedule"] = ScheduleToJson(r.schedule);
    j["from"] = r.from.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.from);
    j["token_window"] = r.token_window;
    j["sub_steps_per_call"] = r.count < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(r.count);
    nlohmann::ordered_json periods = nlohmann::ordered_json::array();
    for (const auto& p : r.periods)
      periods.push_back({{"first", p.first}, {"count", p.size}, {"complete", p.complete}});
    j["periods"] = periods;
    j["more_periods"] = r.more;
    j["est_bytes_whole_call"] = r.bytes_whole;
    j["est_bytes_sampled_call"] = r.bytes_sampled;
    sampling.push_back(std::move(j));
  }
  out["sampling"] = sampling;
  out["schedule_warnings"] = s.warnings;
  if (!s.nsys.empty()) {
    nlohmann::ordered_json ns = nlohmann::ordered_json::array();
    for (const auto& n : s.nsys) {
      nlohmann::ordered_json j;
      j["worker"] = n.worker;
      j["ranks"] = n.ranks;
      j["mode"] = CaptureModeName(n.mode);
      j["continuous"] = n.continuous;
      j["capture_ranges"] = n.ranges < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(n.ranges);
      j["capture_range"] = "cudaProfilerApi";
      j["capture_range_end"] = n.ranges < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(n.CaptureRangeEnd(true));
      j["capture_range_end_keep_running"] = n.ranges < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(n.CaptureRangeEnd(false));
      j["command"] = n.ranges < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(n.Command());
      j["verl_default_capture_ranges"] = n.verl_default;
      j["not_in_this_process"] = n.excluded;
      ns.push_back(std::move(j));
    }
    out["nsys"] = std::move(ns);
  }
  return out;
}

}  // namespace rlprof::config
