#include "src/analysis/run/run.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <tuple>
#include <mutex>
#include <optional>
#include <regex>
#include <set>

#include "src/analysis/readers/readers.h"
#include "src/analysis/run/run_view.h"
#include "src/analysis/tables/tables.h"
#include "src/base/strings.h"
#include "src/base/thread_pool.h"
#include "src/base/time_math.h"

namespace rlprof::analysis {

namespace fs = std::filesystem;

const char* AssignModeName(AssignMode m) {
  switch (m) {
    case AssignMode::kByStart: return "by_start";
    case AssignMode::kByLaunch: return "by_launch";
    case AssignMode::kClip: break;
  }
  return "clip";
}
const char* CompatModeName(CompatMode m) { return m == CompatMode::kHta ? "hta" : "native"; }

std::vector<std::string> InputNames(const std::vector<std::string>& inputs) {
  std::vector<std::string> out;
  if (inputs.empty()) return out;
  std::vector<fs::path> paths;
  for (const auto& in : inputs) paths.push_back(fs::path(in).lexically_normal());
  // Longest common directory of all inputs (component-wise).
  auto under = [](const fs::path& p, const fs::path& dir) {
    auto [a, b] = std::mismatch(dir.begin(), dir.end(), p.begin(), p.end());
    return a == dir.end();
  };
  fs::path common = paths[0].parent_path();
  for (const auto& p : paths)
    while (!common.empty() && !under(p, common)) common = common.parent_path();
  std::set<std::string> used;
  for (const auto& p : paths) {
    std::string rel = common.empty() ? p.string() : p.lexically_relative(common).string();
    if (rel.empty() || rel == ".") rel = p.filename().string();
    std::string name = base::SanitizeForPath(rel);
    if (name.empty()) name = "input";
    std::string unique = name;
    for (int k = 2; used.count(unique); ++k) unique = name + "-" + std::to_string(k);
    used.insert(unique);
    out.push_back(unique);
  }
  return out;
}

base::StatusOr<std::regex> CompileStepMarker(const std::string& pattern) {
  try {
    return std::regex(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    return base::InvalidArgument("--step-marker '" + pattern + "' is not a valid regular expression: " +
                                 e.what());
  }
}

InputAnalyser::InputAnalyser(const Classifier& cls, const AnalysisOptions& opts) : cls_(cls), opts_(opts) {
  if (opts.step_marker.empty()) return;
  auto re = CompileStepMarker(opts.step_marker);
  if (re.ok()) marker_ = std::move(*re);
  else marker_status_ = re.status();
}

InputResult InputAnalyser::Analyse(const std::string& input, const std::string& name) const {
  InputResult r;
  r.input = input;
  r.name = name;
  if (!marker_status_.ok()) {
    r.status = marker_status_;
    return r;
  }
  auto trace = ReadTrace(input);  // freed on return
  if (!trace.ok()) {
    r.status = trace.status();
  } else {
    if (marker_) ApplyStepMarker(&*trace, *marker_);
    r.analysis = AnalyseTrace(*trace, cls_, opts_);
  }
  return r;
}

std::vector<InputResult> AnalyseInputs(const std::vector<std::string>& inputs, const Classifier& cls,
                                       const AnalysisOptions& opts, size_t jobs,
                                       const ProgressFn& progress) {
  std::vector<InputResult> results(inputs.size());
  std::vector<std::string> names = InputNames(inputs);
  std::mutex mu;
  size_t done = 0;
  const InputAnalyser analyser(cls, opts);
  if (!analyser.marker_status().ok()) {  // every input fails with it, none is read
    for (size_t i = 0; i < inputs.size(); ++i) results[i] = analyser.Analyse(inputs[i], names[i]);
    return results;
  }
  base::ParallelFor(inputs.size(), jobs, [&](size_t i) {
    InputResult& r = results[i];
    r = analyser.Analyse(inputs[i], names[i]);
    if (progress) {
      std::lock_guard<std::mutex> lock(mu);
      progress(++done, inputs.size());
    }
  });
  return results;
}

Table StageAcrossRanksTable(const std::vector<InputResult>& results) {
  Table t{"stage_across_ranks",
          {{"step", ColumnType::kInt, ""},
           {"role", ColumnType::kText, ""},
           {"stage", ColumnType::kText, ""},
           {"ranks", ColumnType::kInt, ""},
           {"min_duration", ColumnType::kReal, "us"},
           {"mean_duration", ColumnType::kReal, "us"},
           {"max_duration", ColumnType::kReal, "us"},
           {"imbalance", ColumnType::kReal, "fraction"},
           {"slowest_input", ColumnType::kText, ""},
           {"slowest_rank", ColumnType::kInt, ""},
           {"max_idle", ColumnType::kReal, "us"},
           {"max_comm_not_overlapped", ColumnType::kReal, "us"}},
          {}};
  struct Agg {
    int64_t ranks = 0, min = INT64_MAX, max = -1, sum = 0, max_idle = 0, max_exposed = 0;
    std::string slowest;
    int64_t slowest_rank = -1;
  };
  std::map<std::tuple<int64_t, std::string, std::string>, Agg> groups;
  for (const auto& r : results) {
    if (!r.status.ok()) continue;
    // One row per (step, role, stage) and input: a stage split in several windows is summed.
    std::map<std::tuple<int64_t, std::string, std::string>, StageResult> per_input;
    for (const auto& st : r.analysis.stages) {
      auto [it, fresh] = per_input.try_emplace({st.step, st.role, st.name}, st);
      if (fresh) continue;
      it->second.duration = base::SatAdd(it->second.duration, st.duration);
      it->second.atoms.idle = base::SatAdd(it->second.atoms.idle, st.atoms.idle);
      it->second.atoms.comm_only = base::SatAdd(it->second.atoms.comm_only, st.atoms.comm_only);
    }
    for (const auto& [key, st] : per_input) {
      Agg& g = groups[key];
      ++g.ranks;
      g.sum = base::SatAdd(g.sum, st.duration);  // many ranks of hostile stages saturate
      g.min = std::min(g.min, st.duration);
      if (st.duration > g.max) {
        g.max = st.duration;
        g.slowest = r.name;
        g.slowest_rank = r.analysis.rank;
      }
      g.max_idle = std::max(g.max_idle, st.atoms.idle);
      g.max_exposed = std::max(g.max_exposed, st.atoms.comm_only);
    }
  }
  for (const auto& [key, g] : groups) {
    const double mean = static_cast<double>(g.sum) / static_cast<double>(g.ranks);
    const double imbalance = mean > 0 ? static_cast<double>(g.max - g.min) / mean : 0.0;
    t.rows.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), g.ranks,
                      static_cast<double>(g.min) / 1e3, mean / 1e3, static_cast<double>(g.max) / 1e3,
                      imbalance, g.slowest, g.slowest_rank, static_cast<double>(g.max_idle) / 1e3,
                      static_cast<double>(g.max_exposed) / 1e3});
  }
  return t;
}

nlohmann::json SummaryJson(const std::vector<InputResult>& results, const AnalysisOptions& opts,
                           const Diagnostics* found, bool input_tables) {
  nlohmann::json j;
  j["format"] = "rlprof-analysis-summary";
  j["schema_version"] = 1;
  j["options"] = {{"assign", AssignModeName(opts.assign)},
                  {"compat", CompatModeName(opts.compat)},
                  {"consecutive_kernel_delay_ns", opts.consecutive_kernel_delay_ns},
                  {"step_marker", opts.step_marker}};
  nlohmann::json inputs = nlohmann::json::array();
  Diagnostics total;
  if (found != nullptr) total.Merge(*found);
  for (const auto& r : results) {
    nlohmann::json in;
    in["input"] = r.input;
    in["name"] = r.name;
    if (!r.status.ok()) {
      in["error"] = r.status.ToString();
      inputs.push_back(std::move(in));
      total.Note("unreadable_inputs", r.input + ": " + r.status.message());
      continue;
    }
    const TraceAnalysis& a = r.analysis;
    in["format"] = a.format;
    in["rank"] = a.rank;
    in["cpu_only"] = a.cpu_only;
    if (input_tables) {
      in["step_trace_time"] = ToJson(StepTraceTimeTable(a));
      in["step_atoms"] = ToJson(StepAtomsTable(a));
      in["stage_time"] = ToJson(StageTimeTable(a));
      in["comm_by_group"] = ToJson(CommByGroupTable(a));
      in["hta_temporal_breakdown"] = ToJson(HtaTemporalTable(a));
      in["gpu_timeline"] = ToJson(GpuTimelineTable(a));
      in["classes"] = ToJson(ClassTable(a));
    }
    nlohmann::json diag = nlohmann::json::object();
    for (const auto& [k, v] : a.diagnostics.counts) diag[k] = v;
    in["diagnostics"] = diag;
    total.Merge(a.diagnostics);
    inputs.push_back(std::move(in));
  }
  j["inputs"] = inputs;
  j["stage_across_ranks"] = ToJson(StageAcrossRanksTable(results));
  RunView run_view = BuildRunView(results);
  j["run_view"] = ToJson(RunViewTable(run_view));
  total.Merge(run_view.diagnostics);
  nlohmann::json diag = nlohmann::json::object();
  for (const auto& [k, v] : total.counts) diag[k] = v;
  j["diagnostics"] = diag;
  // The catalogue's severity of every name above, so that readers of summary.json (the HTML
  // report) tell notes from data loss without a copy of the catalogue.
  nlohmann::json severity = nlohmann::json::object();
  for (const auto& [k, v] : total.counts) severity[k] = format::SeverityName(format::DiagnosticSeverity(k));
  j["diagnostic_severity"] = severity;
  if (!total.details.empty()) {
    nlohmann::json details = nlohmann::json::array();
    for (const auto& d : total.details) details.push_back(d);
    j["diagnostic_details"] = details;
  }
  return j;
}

}  // namespace rlprof::analysis
