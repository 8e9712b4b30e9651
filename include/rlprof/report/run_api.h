// The analysis library's public face, for bindings (rlprof._analysis, rlprof.analysis) and
// programs: analyse a run (captures and the traces users have), read its tables, compare two
// runs, cluster the ranks, write the outputs and the HTML report, and the pieces of an analysis
// spread over the nodes that hold the captures (docs/scale.md). What `rlprof analyse`,
// `compare` and `cluster` do, with tables (include/rlprof/analysis/table.h) as the only data.
//
//   rlprof::api::AnalyseSettings s;
//   s.jobs = 4;
//   std::shared_ptr<const rlprof::api::Run> run = rlprof::api::Analyse({"outputs/profile/run1"}, s);
//   for (const auto& t : run->Tables()) …                         // step_trace_time, stage_time, …
//   rlprof::api::Write(*run, "out/analysis", {"json"}, /*report=*/true, "");
//
// Errors: the functions throw rlprof::api::Error (kind: a missing file, an I/O error, or a bad
// value or setting); a corrupt or unreadable input is not an error but a diagnostic of the run
// (docs/analysis.md).
// Thread-safety: a Run is immutable; every function may be called from any thread.
#ifndef RLPROF_INCLUDE_RLPROF_REPORT_RUN_API_H_
#define RLPROF_INCLUDE_RLPROF_REPORT_RUN_API_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "rlprof/analysis/table.h"

namespace rlprof::api {

using analysis::Cell;
using analysis::Column;
using analysis::ColumnType;
using analysis::Table;

class Error : public std::runtime_error {
 public:
  enum class Kind { kNotFound, kIo, kValue };
  Error(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

struct AnalyseSettings {
  std::string rules;        // a rules file (docs/analysis.md, "Classification rules"), "" = built in
  std::string assign = "clip";
  std::string compat = "native";
  std::string step_marker;
  size_t jobs = 2;
  size_t activity = 0;      // activity spans per lane (0: none)
  // (done, total) from the worker threads; may be empty.
  std::function<void(size_t, size_t)> progress;
};

// An analysed run: its inputs and their analyses.
class Run {
 public:
  struct Impl;
  explicit Run(std::shared_ptr<const Impl> impl);
  ~Run();

  const std::vector<std::string>& paths() const;
  std::string assign() const;
  std::string compat() const;
  std::string step_marker() const;

  // The run's tables, as analysis.db holds them (built on each call: keep the result).
  std::vector<Table> Tables() const;
  // One row per input found (input, path, format, rank, cpu_only, steps, stages, error).
  Table Inputs() const;
  // Every diagnostic with the catalogue's severity; and their details (one line each).
  Table Diagnostics() const;
  std::vector<std::string> DiagnosticDetails() const;
  // Exact int64 ns columns for the rows of a µs table (stage_time, kernel_details), in the
  // table's row order; empty for other tables.
  std::vector<std::pair<std::string, std::vector<int64_t>>> NsColumns(const std::string& table) const;
  // Device and host activity spans (AnalyseSettings::activity), exact ns.
  Table Activity() const;
  // The run view in long form, exact: one row per (row of the run view, rank lane).
  Table RunViewLong() const;
  // The run's summary.json.
  std::string SummaryJson() const;

  const Impl& impl() const { return *impl_; }

 private:
  std::shared_ptr<const Impl> impl_;
};

std::shared_ptr<const Run> Analyse(const std::vector<std::string>& paths, const AnalyseSettings& settings);

// compare / cluster: their tables, with one diagnostics table (input "") and its details.
struct TableSet {
  std::vector<Table> tables;
  Table diagnostics;
  std::vector<std::string> details;
};
TableSet Compare(const Run& baseline, const Run& test, size_t top_ops);
TableSet Cluster(const Run& run);

// Writes the run's outputs (CSV, analysis.db, summary.json, the asked exports) and, with
// `report`, report.html (titled `title`, else the path or how many paths). The files written.
std::vector<std::string> Write(const Run& run, const std::string& dir, const std::vector<std::string>& exports,
                               bool report, const std::string& title);

// ---- An analysis spread over the nodes that hold the captures ----

struct FoundInputs {
  std::vector<std::string> inputs;  // sorted, unique
  std::string diagnostics;          // the search's diagnostics, encoded
  std::vector<std::pair<std::string, std::string>> missing;  // (path, why) this node cannot search
};
FoundInputs FindInputs(const std::vector<std::string>& paths);
// Throws Error(kValue) for a bad option or rules text.
void CheckOptions(const std::string& rules_yaml, const std::string& rules_origin, const std::string& assign,
                  const std::string& compat, const std::string& step_marker);
// The inputs' short unique names (as `rlprof analyse` names their folders).
std::vector<std::string> InputNames(const std::vector<std::string>& inputs);
// One input analysed here, encoded for the driver.
std::string AnalyseInputEncoded(const std::string& input, const std::string& name, const std::string& rules_yaml,
                                const std::string& rules_origin, const std::string& assign,
                                const std::string& compat, const std::string& step_marker);
struct RemoteInput {
  std::string input, name, result, lost;  // result: AnalyseInputEncoded's bytes; lost: why, or ""
};
std::shared_ptr<const Run> Assemble(const std::vector<std::string>& paths, const std::string& assign,
                                    const std::string& compat, const std::string& step_marker,
                                    const std::vector<std::string>& found, const std::vector<RemoteInput>& inputs,
                                    const std::vector<std::string>& missing,
                                    const std::vector<std::string>& lost_searches);

// rlprof's version.
std::string Version();

}  // namespace rlprof::api

#endif  // RLPROF_INCLUDE_RLPROF_REPORT_RUN_API_H_
