// `rlprof plan CONFIG [KEY=VALUE ...] --world-size N [--total-steps M] [--replica-size K] [--json]`
// Prints every capture a config will produce, with sizes and the semantics made explicit.
#include <iomanip>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>

#include "src/base/strings.h"
#include "src/cli/cli.h"
#include "src/cli/command.h"
#include "src/config/captures.h"
#include "src/config/loader.h"
#include "src/config/plan_json.h"

namespace rlprof::cli {

namespace {

struct PlanArgs {
  std::string config;
  std::vector<std::string> overrides;
  int64_t world_size = 0;
  int64_t total_steps = 0;
  int64_t replica_size = 0;
  double step_seconds = 60.0;
  std::string sub_steps;  // "decode=128,micro_batch=8"
  bool json = false;
};

// --sub-steps "decode=128,micro_batch=8": sub-steps per stage call, per unit.
bool ParseSubSteps(const std::string& text, std::map<config::SubStepKind, int64_t>* out,
                   std::string* error) {
  using config::SubStepKind;
  for (const std::string& part : base::Split(text, ',')) {
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    const std::string unit = part.substr(0, eq);
    SubStepKind k;
    if (unit == "decode") k = SubStepKind::kDecode;
    else if (unit == "micro_batch") k = SubStepKind::kMicroBatch;
    else if (unit == "mini_batch") k = SubStepKind::kMiniBatch;
    else {
      *error = "--sub-steps: unknown unit '" + unit + "' (decode, micro_batch, mini_batch)";
      return false;
    }
    int64_t n = -1;
    if (eq != std::string::npos) {
      try {
        size_t used = 0;
        n = std::stoll(part.substr(eq + 1), &used);
        if (used != part.size() - eq - 1) n = -1;
      } catch (...) {
        n = -1;
      }
    }
    if (n < 0) {
      *error = "--sub-steps: expected UNIT=COUNT with COUNT >= 0, got '" + part + "'";
      return false;
    }
    (*out)[k] = n;
  }
  return true;
}

std::string ToolSources(config::Tool t) {
  switch (t) {
    case config::Tool::kNsys: return "host ranges + CUPTI device activity";
    case config::Tool::kNpu: return "host ranges + mstx markers + operators (+ NPU activity)";
    case config::Tool::kTorch: return "host ranges + torch operators (+ CUDA activity)";
    case config::Tool::kTorchMemory: return "host ranges + memory counters";
    case config::Tool::kRlprof: return "rlprof sources as listed in contents";
    default: return "nothing";
  }
}

std::string ScheduleText(const config::Schedule& s) {
  if (!s.enabled()) return "-";
  std::string t = std::string(config::SubStepKindName(s.unit)) + ": " + config::ScheduleParamsText(s);
  return s.stage.empty() ? t : s.stage + " " + t;
}

std::string TokenText(std::optional<int64_t> start, std::optional<int64_t> end) {
  return "decode tokens [" + std::to_string(start.value_or(0)) + ", " +
         (end ? std::to_string(*end) : std::string("end")) + ")";
}

// A left-aligned text table; column widths from the content (UTF-8 aware enough for "∞").
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out, const std::string& indent) const {
    std::vector<size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_)
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], Width(r[i]));
    for (const auto& r : rows_) {
      std::string line = indent;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(w[i] - Width(r[i]) + 2, ' ');
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out << line << "\n";
    }
  }

 private:
  static size_t Width(const std::string& s) {
    size_t n = 0;
    for (unsigned char c : s)
      if ((c & 0xC0) != 0x80) ++n;
    return n;
  }
  std::vector<std::vector<std::string>> rows_;
};

// How many nsys capture ranges each worker's processes have (the exact capture-range-end).
void PrintNsys(std::ostream& out, const config::CaptureSummary& sum) {
  if (sum.nsys.empty()) return;
  // rlprof calls cudaProfilerStart/Stop at each capture window (docs/config.md, "nsys").
  out << "\nnsys (rlprof starts and stops the CUDA profiler at each capture window)\n";
  for (const auto& n : sum.nsys) {
    out << "  " << n.worker << " (ranks " << n.ranks << "): ";
    if (n.ranges < 0) {
      out << "capture ranges unknown (steps: all, or a schedule that repeats for ever): pass "
             "--total-steps, or use capture-range-end: repeat\n";
      continue;
    }
    out << n.ranges << " capture range" << (n.ranges == 1 ? "" : "s") << " per process ("
        << (n.mode == config::CaptureMode::kDiscrete ? "discrete: one per stage call"
            : n.continuous ? "continuous: one per run of consecutive steps"
                           : "end-to-end: one per step")
        << ")\n";
    if (!n.excluded.empty())
      out << "    not counted: " << base::Join(n.excluded, ", ")
          << " (Agent-Loop rollout: runs in the rollout servers, not in this process)\n";
    out << "    worker_nsight_options: {capture-range: cudaProfilerApi, capture-range-end: \""
        << n.CaptureRangeEnd(true) << "\"}\n";
    out << "    " << n.Command() << "\n";
    out << "    report finalised when the last window closes; " << n.CaptureRangeEnd(false)
        << " keeps the job running after it";
    if (n.ranges != n.verl_default)
      out << "; verl's default " << n.verl_default
          << (n.ranges < n.verl_default ? " would finalise the report only at exit"
                                        : " would shut the job down before its last window");
    out << "\n";
  }
}

// What each scheduled stage records per call, and the size it saves.
void PrintSampling(std::ostream& out, const config::CaptureSummary& sum,
                   const config::EstimateModel& model) {
  using namespace config;
  bool any_schedule = false;
  for (const auto& s : sum.sampling) any_schedule |= s.schedule.enabled();
  if (!any_schedule) return;
  std::string assumed;
  for (const auto& [unit, n] : model.sub_steps)
    assumed += (assumed.empty() ? "" : ", ") + std::string(SubStepKindName(unit)) + "=" + std::to_string(n);
  out << "\nSampling (per stage call; sub-steps assumed: "
      << (assumed.empty() ? std::string("none, pass --sub-steps decode=N,micro_batch=N,mini_batch=N")
                          : assumed)
      << ")\n";
  Table t({"worker", "stage", "schedule", "from", "records", "est. size/call"});
  for (const auto& s : sum.sampling) {
    std::string sched = !s.schedule.enabled() ? "-"
                        : s.token_window     ? std::string("decode: ") + ScheduleParamsText(s.schedule)
                                             : std::string(SubStepKindName(s.schedule.unit)) + ": " +
                                                   ScheduleParamsText(s.schedule);
    std::string records;
    if (!s.schedule.enabled()) {
      records = "whole stage";
    } else if (s.periods.empty()) {
      records = "nothing (the stage ends before an active period)";
    } else {
      for (const auto& p : s.periods) records += (records.empty() ? "" : "; ") + PeriodText(s.schedule.unit, p);
      if (s.more) records += s.schedule.repeat == 0 ? "; ... every " +
                                                          std::to_string(s.schedule.wait + s.schedule.warmup + s.schedule.active) +
                                                          " until the stage ends"
                                                    : "; ...";
    }
    std::string size = base::FormatBytes(s.bytes_sampled);
    if (s.schedule.enabled()) size += " of " + base::FormatBytes(s.bytes_whole);
    t.Add({s.worker, s.stage.empty() ? "(step window)" : s.stage, sched, s.from.empty() ? "-" : s.from,
           records, size});
  }
  t.Print(out, "  ");
  uint64_t sampled = 0, whole = 0;
  for (const auto& s : sum.sampling) {
    sampled += s.bytes_sampled;
    whole += s.bytes_whole;
  }
  if (sampled > 0) {
    std::ostringstream ratio;
    ratio << std::fixed << std::setprecision(1) << static_cast<double>(whole) / static_cast<double>(sampled);
    out << "  per step, one rank of each row: ~" << base::FormatBytes(sampled) << " sampled instead of ~"
        << base::FormatBytes(whole) << " for whole stages (" << ratio.str() << "x less)\n";
  }
}

void PrintText(std::ostream& out, const config::Plan& plan, const config::CaptureSummary& sum,
               const PlanArgs& a, const config::EstimateModel& model) {
  using namespace config;
  out << "rlprof plan: " << plan.config_path << "\n";
  Table head({"", ""});
  head.Add({"dialect", DialectName(plan.dialect)});
  head.Add({"tool", std::string(ToolName(plan.tool)) + " -> " + ToolSources(plan.tool)});
  head.Add({"steps", plan.steps.ToString() + (plan.continuous_steps ? " (continuous windows)" : "")});
  head.Add({"save_path", plan.save_path});
  std::vector<std::string> ex;
  for (auto f : plan.exports) ex.push_back(format::ExportFormatConfigWord(f));
  head.Add({"exports", base::Join(ex, ", ")});
  head.Add({"combine", CombinePolicyName(plan.combine)});
  head.Add({"world size", a.world_size > 0 ? std::to_string(a.world_size) : "unknown (--world-size)"});
  if (plan.budget.max_bytes || plan.budget.max_events)
    head.Add({"budget", (plan.budget.max_bytes ? base::FormatBytes(plan.budget.max_bytes) : "-") +
                            " / " +
                            (plan.budget.max_events ? base::FormatCount(plan.budget.max_events) + " events" : "-") +
                            " per capture"});
  head.Print(out, "  ");

  out << "\nRoles\n";
  Table roles({"block", "enabled", "ranks", "mode", "stages", "contents", "level", "schedule"});
  for (const auto& r : plan.roles) {
    std::string ranks = !r.enabled ? "-" : r.all_ranks ? "all" : RankListToString(r.ranks);
    if (r.enabled && r.ranks_are_replica_owners && !r.all_ranks) ranks += " (GPU ranks -> replicas)";
    std::vector<std::string> scheds;
    if (r.token_start || r.token_end) scheds.push_back(TokenText(r.token_start, r.token_end));
    for (const auto& sc : r.schedules) scheds.push_back(ScheduleText(sc));
    std::string sched = scheds.empty() ? "-" : base::Join(scheds, "; ");
    roles.Add({r.block_path, r.enabled ? "yes" : "no", ranks, CaptureModeName(r.mode),
               r.stages.empty() ? "all" : base::Join(r.stages, ","),
               base::Join(r.contents.Names(), ",") +
                   (r.contents.RecordsOperators() && r.ops_sampling < 1
                        ? " (ops_sampling " + base::FormatShare(r.ops_sampling) + ")"
                        : ""),
               r.level, sched});
  }
  roles.Print(out, "  ");

  out << "\nCaptures\n";
  if (sum.rows.empty()) {
    out << "  none\n";
  } else {
    bool any_sampled = false;
    for (const auto& r : sum.rows) any_sampled |= r.sampled;
    std::vector<std::string> header = {"worker", "step", "scope", "ranks", "captures", "est. size/capture", "est. total"};
    if (any_sampled) header.insert(header.begin() + 4, "holds");
    Table caps(header);
    for (const auto& r : sum.rows) {
      std::string n = r.captures < 0 ? "?" : std::to_string(r.captures);
      std::string total = r.captures < 0 ? "?" : base::FormatBytes(r.bytes_per_capture * r.captures);
      std::vector<std::string> row = {r.worker, r.steps, r.scope, r.ranks, n,
                                      base::FormatBytes(r.bytes_per_capture), total};
      if (any_sampled) row.insert(row.begin() + 4, r.sampled ? r.sub_steps : "whole");
      caps.Add(row);
    }
    caps.Print(out, "  ");
    out << "  total: " << (sum.total_captures < 0 ? std::string("? (pass --world-size / --total-steps)")
                                                   : std::to_string(sum.total_captures))
        << " captures, ~" << base::FormatBytes(sum.total_bytes) << " (model: "
        << a.step_seconds << " s per step, docs/config.md#size-estimates)\n";
    out << "  directory: " << sum.rows.front().directory << "\n";
  }
  for (const auto& n : sum.notes) out << "  note: " << n << "\n";

  PrintNsys(out, sum);
  PrintSampling(out, sum, model);

  if (!plan.warnings.empty() || !sum.warnings.empty()) {
    out << "\nWarnings\n";
    for (const auto& w : plan.warnings) out << "  - " << w << "\n";
    for (const auto& w : sum.warnings) out << "  - " << w << "\n";
  }
  out << "\nNormalised (verl Gen 3 form)\n";
  std::istringstream y(plan.resolved_yaml);
  for (std::string line; std::getline(y, line);) out << "  " << line << "\n";
}

}  // namespace

Command AddPlanCommand(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand("plan", "Print every capture a profiler config will produce");
  cmd->add_option("config", a->config, "verl, MindSpeed-RL or rlprof YAML config")->required();
  cmd->add_option("overrides", a->overrides, "Hydra-style overrides: a.b=value, +a.b=value, ~a.b");
  cmd->add_option("--world-size", a->world_size, "Number of ranks (enables rank checks)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--total-steps", a->total_steps, "Number of RL steps the job runs")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--replica-size", a->replica_size, "GPUs per rollout replica (Agent Loop)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--step-seconds", a->step_seconds, "Assumed seconds per RL step for size estimates")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--sub-steps", a->sub_steps,
                  "Sub-steps one stage call runs, per unit: decode=128,micro_batch=8,mini_batch=4 "
                  "(the plan then lists the exact sub-step indices each schedule records)");
  cmd->add_flag("--json", a->json, "Print the plan as JSON");
  return {cmd, [a](Io& io) {
            config::LoadOptions opts;
            opts.world_size = a->world_size;
            opts.total_steps = a->total_steps;
            opts.replica_size = a->replica_size;
            auto plan = config::LoadPlan(a->config, a->overrides, opts);
            if (!plan.ok()) {  // printed here: a config error's later lines are indented, not prefixed
              io.err << "rlprof plan: " << plan.status().message() << "\n";
              return Silent(plan.status().code());
            }
            config::EstimateModel model;
            model.step_seconds = a->step_seconds;
            std::string error;
            if (!ParseSubSteps(a->sub_steps, &model.sub_steps, &error)) return base::UsageError(error);
            auto sum = config::EnumerateCaptures(*plan, opts, model);
            if (a->json) {
              nlohmann::ordered_json j = config::PlanToJson(*plan);
              j["world_size"] = a->world_size > 0 ? nlohmann::ordered_json(a->world_size) : nullptr;
              j["total_steps"] = a->total_steps > 0 ? nlohmann::ordered_json(a->total_steps) : nullptr;
              auto cj = config::CaptureSummaryToJson(sum);
              for (auto& [k, v] : cj.items()) j[k] = v;
              for (const auto& w : sum.warnings) j["warnings"].push_back(w);
              j["normalised_yaml"] = plan->resolved_yaml;
              io.out << j.dump(2) << "\n";
            } else {
              PrintText(io.out, *plan, sum, *a, model);
            }
            return base::Status::Ok();
          }};
}

}  // namespace rlprof::cli
