// `rlprof plan CONFIG [KEY=VALUE ...] --world-size N [--total-steps M] [--replica-size K] [--json]`
// Prints every capture a config will produce, with sizes and the semantics made explicit.
#include <iomanip>
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
  bool json = false;
};

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
  std::ostringstream o;
  o << config::SubStepKindName(s.unit) << ":";
  if (s.skip_first) o << " skip " << s.skip_first;
  if (s.wait) o << " wait " << s.wait;
  if (s.warmup) o << " warmup " << s.warmup;
  o << " active " << s.active;
  o << " repeat " << (s.repeat ? std::to_string(s.repeat) : std::string("∞"));
  return o.str();
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

void PrintText(std::ostream& out, const config::Plan& plan, const config::CaptureSummary& sum,
               const PlanArgs& a) {
  using namespace config;
  out << "rlprof plan: " << plan.config_path << "\n";
  Table head({"", ""});
  head.Add({"dialect", DialectName(plan.dialect)});
  head.Add({"tool", std::string(ToolName(plan.tool)) + " -> " + ToolSources(plan.tool)});
  head.Add({"steps", plan.steps.ToString() + (plan.continuous_steps ? " (continuous windows)" : "")});
  head.Add({"save_path", plan.save_path});
  std::vector<std::string> ex;
  for (auto f : plan.exports) ex.push_back(ExportFormatName(f));
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
    std::string sched = ScheduleText(r.schedule);
    if (r.token_start || r.token_end)
      sched = "decode tokens [" + std::to_string(r.token_start.value_or(0)) + ", " +
              (r.token_end ? std::to_string(*r.token_end) : std::string("end")) + ")";
    roles.Add({r.block_path, r.enabled ? "yes" : "no", ranks, CaptureModeName(r.mode),
               r.stages.empty() ? "all" : base::Join(r.stages, ","),
               base::Join(r.contents.Names(), ","), r.level, sched});
  }
  roles.Print(out, "  ");

  out << "\nCaptures\n";
  if (sum.rows.empty()) {
    out << "  none\n";
  } else {
    Table caps({"worker", "step", "scope", "ranks", "captures", "est. size/capture", "est. total"});
    for (const auto& r : sum.rows) {
      std::string n = r.captures < 0 ? "?" : std::to_string(r.captures);
      std::string total = r.captures < 0 ? "?" : base::FormatBytes(r.bytes_per_capture * r.captures);
      caps.Add({r.worker, r.steps, r.scope, r.ranks, n, base::FormatBytes(r.bytes_per_capture), total});
    }
    caps.Print(out, "  ");
    out << "  total: " << (sum.total_captures < 0 ? std::string("? (pass --world-size / --total-steps)")
                                                   : std::to_string(sum.total_captures))
        << " captures, ~" << base::FormatBytes(sum.total_bytes) << " (model: "
        << a.step_seconds << " s per step, docs/config.md#size-estimates)\n";
    out << "  directory: " << sum.rows.front().directory << "\n";
  }
  for (const auto& n : sum.notes) out << "  note: " << n << "\n";

  if (!plan.warnings.empty()) {
    out << "\nWarnings\n";
    for (const auto& w : plan.warnings) out << "  - " << w << "\n";
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
  cmd->add_flag("--json", a->json, "Print the plan as JSON");
  return {cmd, [a](Io& io) {
            config::LoadOptions opts;
            opts.world_size = a->world_size;
            opts.total_steps = a->total_steps;
            opts.replica_size = a->replica_size;
            auto plan = config::LoadPlan(a->config, a->overrides, opts);
            if (!plan.ok()) {
              io.err << "rlprof plan: " << plan.status().message() << "\n";
              return ExitCodeFor(plan.status());
            }
            config::EstimateModel model;
            model.step_seconds = a->step_seconds;
            auto sum = config::EnumerateCaptures(*plan, opts, model);
            if (a->json) {
              nlohmann::ordered_json j = config::PlanToJson(*plan);
              j["world_size"] = a->world_size > 0 ? nlohmann::ordered_json(a->world_size) : nullptr;
              j["total_steps"] = a->total_steps > 0 ? nlohmann::ordered_json(a->total_steps) : nullptr;
              auto cj = config::CaptureSummaryToJson(sum);
              for (auto& [k, v] : cj.items()) j[k] = v;
              j["normalised_yaml"] = plan->resolved_yaml;
              io.out << j.dump(2) << "\n";
            } else {
              PrintText(io.out, *plan, sum, *a);
            }
            return kExitOk;
          }};
}

}  // namespace rlprof::cli
