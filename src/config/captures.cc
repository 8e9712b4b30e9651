#include "src/config/captures.h"

#include <algorithm>
#include <map>
#include <set>

#include "src/config/plan_json.h"
#include "src/config/schemas.h"

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

// Fraction of a window a schedule records.
double ScheduleFraction(const Schedule& s, const std::string& scope) {
  if (!s.enabled()) return 1.0;
  // A schedule counts one kind of sub-step; it thins only the stage that runs them.
  bool decode_stage = scope == "rollout_generate" || scope == "actor_generate";
  bool update_stage = scope.find("_update") != std::string::npos;
  bool applies = s.unit == SubStepKind::kStep ? (scope == "e2e" || scope.rfind("steps", 0) == 0)
                 : s.unit == SubStepKind::kDecode ? decode_stage || scope == "e2e"
                                                  : update_stage || scope == "e2e";
  if (!applies) return 1.0;
  double cycle = static_cast<double>(s.wait + s.warmup + s.active);
  double frac = s.active / cycle;
  return std::min(1.0, frac);
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
  k += "|l:" + p.level + "|" + ScheduleToJson(p.schedule).dump();
  return k;
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

double EventsPerSecond(Tool tool, const Contents& c, const std::string& level) {
  double eps = 20.0;  // step / stage / sub-step markers
  if (c.cpu) eps += 200.0;
  double lf = (tool == Tool::kNpu) ? LevelFactor(level) : 1.0;
  if (c.ops) eps += 20000.0 * (tool == Tool::kNpu ? std::max(lf, 0.0) : 1.0);
  if (c.device) eps += 15000.0 * lf;
  if (c.memory) eps += 100.0;
  if (c.module) eps += 500.0;
  return eps;
}

uint64_t BytesPerEvent(const Contents& c, const std::vector<ExportFormat>& exports) {
  double b = 13.0;  // events.rlp: 32-byte records, zstd ≈ 2.5×
  if (c.shapes) b += 6.0;
  if (c.stack) b += 24.0;
  for (auto f : exports) {
    if (f == ExportFormat::kText) b += 30.0;     // Chrome JSON, gzip
    if (f == ExportFormat::kDb) b += 60.0;       // SQLite rows + indexes
    if (f == ExportFormat::kPftrace) b += 12.0;  // Perfetto protobuf, interned names
  }
  return static_cast<uint64_t>(b + 0.5);
}

CaptureSummary EnumerateCaptures(const Plan& plan, const LoadOptions& opt,
                                 const EstimateModel& model) {
  CaptureSummary sum;
  sum.notes = plan.notes;
  if (!plan.profiling_enabled()) return sum;

  // Workers: which roles share a process.
  struct Worker {
    std::string name;
    std::vector<std::string> roles;
  };
  std::vector<Worker> workers;
  if (plan.dialect == Dialect::kMindSpeedRl) {
    workers.push_back({"all workers", {"*"}});
  } else if (plan.dialect == Dialect::kNative) {
    for (const auto& r : plan.roles) workers.push_back({r.role, {r.role}});
  } else {
    workers.push_back({"actor_rollout_ref", {"actor", "rollout", "ref"}});
    workers.push_back({"critic", {"critic"}});
    workers.push_back({"reward_model", {"reward"}});
  }

  // Step windows.
  struct Window {
    std::vector<int64_t> steps;
    std::string label;
  };
  std::vector<Window> windows;
  bool symbolic_all = plan.steps.kind == StepSelection::Kind::kAll && opt.total_steps <= 0;
  std::vector<int64_t> steps = plan.steps.Expand(opt.total_steps);
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

  for (const Worker& wk : workers) {
    // Candidate ranks: every rank when the world size is known, else the named ones plus a
    // sentinel that only all_ranks blocks select.
    std::vector<int64_t> cands;
    bool any_all = false;
    if (opt.world_size > 0) {
      for (int64_t r = 0; r < opt.world_size; ++r) cands.push_back(r);
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

    for (const Group& g : groups) {
      std::vector<std::string> scopes;
      if (g.proc.mode == CaptureMode::kDiscrete) {
        std::vector<std::string> stages;
        if (!g.proc.stages.empty()) {
          stages = g.proc.stages;
        } else {
          // Every stage of every role the process hosts is annotated in it (verl: "ref
          // follows the actor block in the fused worker").
          for (const auto& role : wk.roles)
            for (const auto& s : DefaultStagesOfRole(role, plan.dialect))
              if (std::find(stages.begin(), stages.end(), s) == stages.end()) stages.push_back(s);
        }
        if (stages.empty()) stages.push_back("<each annotated stage>");
        scopes = stages;
        if (g.proc.stages.empty()) {
          std::string note = "discrete without a stage allow-list on " + wk.name +
                             ": any other annotated stage (e.g. weight_sync) also gets its own "
                             "capture; list stages (tool_config.rlprof.stages) to pin them";
          if (std::find(sum.notes.begin(), sum.notes.end(), note) == sum.notes.end())
            sum.notes.push_back(note);
        }
      }
      const RolePlan* first_role = plan.FindRole(g.proc.roles.front());
      Tool tool = plan.tool;
      double eps = EventsPerSecond(tool, g.proc.contents, g.proc.level);
      uint64_t bpe = BytesPerEvent(g.proc.contents, plan.exports);
      int64_t nranks = g.all ? (opt.world_size > 0 ? opt.world_size : -1)
                             : static_cast<int64_t>(g.ranks.size());
      std::string ranks = g.all && opt.world_size <= 0 ? "all" : RankListToString(g.ranks);
      size_t rows_before = sum.rows.size();
      for (const Window& w : windows) {
        bool continuous_run = w.steps.size() > 1;
        std::vector<std::string> row_scopes =
            scopes.empty() ? std::vector<std::string>{continuous_run
                                                          ? "steps" + w.label
                                                          : std::string("e2e")}
                           : scopes;
        for (const std::string& scope : row_scopes) {
          CaptureRow row;
          row.worker = wk.name;
          row.roles = g.proc.roles;
          row.steps = w.label;
          row.windows = 1;
          row.scope = scope;
          row.ranks = ranks;
          row.rank_count = nranks;
          row.mode = g.proc.mode;
          row.contents = g.proc.contents;
          row.level = g.proc.level;
          row.schedule = g.proc.schedule;
          if (g.proc.token_start || g.proc.token_end)
            row.token_window = "[" + std::to_string(g.proc.token_start.value_or(0)) + ", " +
                               (g.proc.token_end ? std::to_string(*g.proc.token_end) : "end") + ")";
          int64_t first_step = w.steps.empty() ? 0 : w.steps.front();
          row.directory = plan.save_path + "/<run_id>/step" +
                          (first_step ? std::to_string(first_step) : std::string("<N>")) + "/" +
                          scope + "/rank<R>-<host>-<pid>/";
          double seconds = model.step_seconds * std::max<size_t>(1, w.steps.size());
          if (scope != "e2e" && scope.rfind("steps", 0) != 0) seconds = model.step_seconds * StageShare(scope);
          seconds *= ScheduleFraction(g.proc.schedule, scope);
          double events = eps * seconds;
          if (plan.budget.max_events > 0) events = std::min<double>(events, plan.budget.max_events);
          row.events_per_capture = static_cast<uint64_t>(events);
          row.bytes_per_capture = row.events_per_capture * bpe;
          if (plan.budget.max_bytes > 0)
            row.bytes_per_capture = std::min<uint64_t>(row.bytes_per_capture, plan.budget.max_bytes);
          row.captures = (nranks < 0 || symbolic_all) ? -1 : nranks;
          sum.rows.push_back(row);
        }
      }
      (void)first_role;
      // nsys writes one report per capture range; verl's default repeat-shutdown count is
      // 6 × len(steps), right only by luck. Say what the exact count is.
      if (plan.tool == Tool::kNsys && !symbolic_all) {
        size_t ranges = sum.rows.size() - rows_before;
        size_t verl_default = 6 * steps.size();
        std::string tail;
        if (ranges != verl_default)
          tail = " (verl's default " + std::to_string(verl_default) +
                 (ranges < verl_default ? " never finalises the last report)"
                                        : " drops the ranges past it)");
        sum.notes.push_back("nsys: " + std::to_string(ranges) + " capture ranges per profiled " +
                            wk.name + " process (ranks " + ranks +
                            "): set worker_nsight_options.capture-range-end: repeat-shutdown:" +
                            std::to_string(ranges) + tail);
      }
    }
  }
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
  return sum;
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
  return out;
}

}  // namespace rlprof::config
