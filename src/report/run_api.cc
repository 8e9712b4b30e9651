// include/rlprof/report/run_api.h over the run pipeline (src/analysis/run/), compare, cluster,
// the distributed pieces and the HTML report.
#include "rlprof/report/run_api.h"

#include <set>
#include <utility>

#include "src/analysis/readers/readers.h"
#include "src/analysis/run/cluster.h"
#include "src/analysis/run/compare.h"
#include "src/analysis/run/input_codec.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/tables/tables.h"
#include "src/base/version.h"
#include "src/format/diagnostics.h"
#include "src/report/html_report.h"

namespace rlprof::api {

struct Run::Impl {
  analysis::RunAnalysis run;
};

namespace {

[[noreturn]] void Throw(const base::Status& s) {
  switch (s.code()) {
    case base::StatusCode::kNotFound: throw Error(Error::Kind::kNotFound, s.message());
    case base::StatusCode::kIoError: throw Error(Error::Kind::kIo, s.message());
    default: throw Error(Error::Kind::kValue, s.message());
  }
}

std::shared_ptr<const Run> Wrap(analysis::RunAnalysis run) {
  auto impl = std::make_shared<Run::Impl>();
  impl->run = std::move(run);
  return std::make_shared<const Run>(std::move(impl));
}

// Diagnostics as a table: scope, name, count, severity, source, description (the catalogue's).
void AddDiagnostics(Table* t, const std::string& scope, const analysis::Diagnostics& d) {
  for (const auto& [name, count] : d.counts) {
    const format::DiagnosticSpec* spec = format::FindDiagnostic(name);
    t->rows.push_back({scope, name, static_cast<int64_t>(count),
                       std::string(format::SeverityName(format::DiagnosticSeverity(name))),
                       spec ? std::string(spec->source) : std::string(),
                       spec ? std::string(spec->description) : std::string()});
  }
}

Table DiagnosticsTable() {
  return Table{"diagnostics",
               {{"input", ColumnType::kText, ""},
                {"name", ColumnType::kText, ""},
                {"count", ColumnType::kInt, ""},
                {"severity", ColumnType::kText, ""},
                {"source", ColumnType::kText, ""},
                {"description", ColumnType::kText, ""}},
               {}};
}

// The sink `rlprof compare` / `cluster` print: the result's own, what the runs' searches found,
// and each readable input's.
void MergeRunDiagnostics(analysis::Diagnostics* into, const analysis::RunAnalysis& r) {
  into->Merge(r.found);
  for (const auto& in : r.inputs)
    if (in.status.ok()) into->Merge(in.analysis.diagnostics);
}

TableSet WithDiagnostics(std::vector<Table> tables, const analysis::Diagnostics& d) {
  TableSet out;
  out.tables = std::move(tables);
  out.diagnostics = DiagnosticsTable();
  AddDiagnostics(&out.diagnostics, "", d);
  out.details = d.details;
  return out;
}

analysis::RunConfig RemoteConfig(const std::string& rules_yaml, const std::string& rules_origin,
                                 const std::string& assign, const std::string& compat,
                                 const std::string& step_marker) {
  analysis::RunSettings settings;
  settings.assign = assign;
  settings.compat = compat;
  settings.step_marker = step_marker;
  auto cfg = analysis::MakeRunConfig(settings, 1);
  if (!cfg.ok()) throw Error(Error::Kind::kValue, cfg.status().message());
  if (!rules_yaml.empty()) {  // the driver's rules file, shipped as text: nodes need not have it
    auto c = analysis::Classifier::FromRulesYaml(rules_yaml, rules_origin);
    if (!c.ok()) throw Error(Error::Kind::kValue, c.status().message());
    cfg->classifier = std::move(*c);
  }
  return std::move(*cfg);
}

}  // namespace

// ---- Run ----

Run::Run(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Run::~Run() = default;

const std::vector<std::string>& Run::paths() const { return impl_->run.paths; }
std::string Run::assign() const { return std::string(analysis::AssignModeName(impl_->run.options.assign)); }
std::string Run::compat() const { return std::string(analysis::CompatModeName(impl_->run.options.compat)); }
std::string Run::step_marker() const { return impl_->run.options.step_marker; }

std::vector<Table> Run::Tables() const { return analysis::RunTables(impl_->run); }

Table Run::Inputs() const {
  Table t{"inputs",
          {{"input", ColumnType::kText, ""},
           {"path", ColumnType::kText, ""},
           {"format", ColumnType::kText, ""},
           {"rank", ColumnType::kInt, ""},
           {"cpu_only", ColumnType::kInt, ""},
           {"steps", ColumnType::kInt, ""},
           {"stages", ColumnType::kInt, ""},
           {"error", ColumnType::kText, ""}},
          {}};
  for (const auto& in : impl_->run.inputs) {
    if (in.status.ok()) {
      const auto& a = in.analysis;
      t.rows.push_back({in.name, in.input, a.format, a.rank, static_cast<int64_t>(a.cpu_only),
                        static_cast<int64_t>(a.steps.size()), static_cast<int64_t>(a.stages.size()),
                        Cell{}});
    } else {
      t.rows.push_back({in.name, in.input, Cell{}, Cell{}, Cell{}, Cell{}, Cell{}, in.status.ToString()});
    }
  }
  return t;
}

Table Run::Diagnostics() const {
  const analysis::RunAnalysis& r = impl_->run;
  Table t = DiagnosticsTable();
  for (const auto& in : r.inputs)
    if (in.status.ok()) AddDiagnostics(&t, in.name, in.analysis.diagnostics);
  // Run level (input ""): finding inputs, unreadable inputs, building the run view.
  analysis::Diagnostics run = r.found;
  for (const auto& in : r.inputs)
    if (!in.status.ok()) run.Note("unreadable_inputs", in.input + ": " + in.status.message());
  run.Merge(r.view.diagnostics);
  AddDiagnostics(&t, "", run);
  return t;
}

std::vector<std::string> Run::DiagnosticDetails() const { return impl_->run.AllDiagnostics().details; }

std::vector<std::pair<std::string, std::vector<int64_t>>> Run::NsColumns(const std::string& name) const {
  std::vector<std::pair<std::string, std::vector<int64_t>>> cols;
  if (name == "stage_time") {
    cols = {{"start_ns", {}}, {"end_ns", {}}, {"duration_ns", {}}};
    for (const auto& in : impl_->run.inputs) {
      if (!in.status.ok()) continue;
      for (const auto& st : in.analysis.stages) {
        cols[0].second.push_back(st.start);
        cols[1].second.push_back(st.end);
        cols[2].second.push_back(st.duration);
      }
    }
  } else if (name == "kernel_details") {
    cols = {{"start_ns", {}}, {"duration_ns", {}}, {"wait_ns", {}}};
    for (const auto& in : impl_->run.inputs) {
      if (!in.status.ok()) continue;
      for (const auto& k : in.analysis.kernel_rows) {
        cols[0].second.push_back(k.start);
        cols[1].second.push_back(k.dur);
        cols[2].second.push_back(k.wait);
      }
    }
  }
  return cols;
}

Table Run::Activity() const {
  Table t{"activity",
          {{"input", ColumnType::kText, ""},
           {"rank", ColumnType::kInt, ""},
           {"lane", ColumnType::kText, ""},
           {"device", ColumnType::kInt, ""},
           {"start_ns", ColumnType::kInt, "ns"},
           {"end_ns", ColumnType::kInt, "ns"},
           {"busy_ns", ColumnType::kInt, "ns"},
           {"events", ColumnType::kInt, ""},
           {"class", ColumnType::kText, ""},
           {"longest", ColumnType::kText, ""},
           {"longest_ns", ColumnType::kInt, "ns"}},
          {}};
  for (const auto& in : impl_->run.inputs) {
    if (!in.status.ok()) continue;
    for (const auto& l : in.analysis.activity)
      for (const auto& x : l.spans)
        t.rows.push_back({in.name, in.analysis.rank, l.name, static_cast<int64_t>(l.device), x.start, x.end, x.busy,
                          x.count, std::string(analysis::WorkClassName(x.cls)), x.top, x.top_dur});
  }
  return t;
}

Table Run::RunViewLong() const { return analysis::RunViewLongTable(impl_->run.view); }

std::string Run::SummaryJson() const {
  return analysis::RunSummaryJson(impl_->run).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// ---- Functions ----

std::shared_ptr<const Run> Analyse(const std::vector<std::string>& paths, const AnalyseSettings& s) {
  auto cfg = analysis::MakeRunConfig(
      {.rules = s.rules, .assign = s.assign, .compat = s.compat, .step_marker = s.step_marker}, s.jobs);
  // A rules file that is missing is kNotFound, every other setting a bad value.
  if (!cfg.ok()) Throw(cfg.status().code() == base::StatusCode::kNotFound ? cfg.status()
                                                                          : base::InvalidArgument(cfg.status().message()));
  cfg->options.activity_spans = s.activity;
  cfg->progress = s.progress;
  auto run = analysis::AnalyseRun(paths, *cfg);
  if (!run.ok()) Throw(run.status());
  return Wrap(std::move(*run));
}

TableSet Compare(const Run& baseline, const Run& test, size_t top_ops) {
  if (top_ops == 0) throw Error(Error::Kind::kValue, "top must be at least 1");
  const analysis::RunAnalysis& b = baseline.impl().run;
  const analysis::RunAnalysis& t = test.impl().run;
  analysis::Comparison c = analysis::CompareRuns(b.inputs, t.inputs, {.top_ops = top_ops});
  MergeRunDiagnostics(&c.diagnostics, b);  // as `rlprof compare`: one sink for both sides
  MergeRunDiagnostics(&c.diagnostics, t);
  std::vector<Table> tables;
  for (const Table* x : c.Tables()) tables.push_back(*x);
  return WithDiagnostics(std::move(tables), c.diagnostics);
}

TableSet Cluster(const Run& run) {
  const analysis::RunAnalysis& r = run.impl().run;
  analysis::ClusterResult c = analysis::AnalyseCluster(r.inputs);
  MergeRunDiagnostics(&c.diagnostics, r);
  return WithDiagnostics({c.step_time, c.balance, c.slow_ranks, c.collectives}, c.diagnostics);
}

std::vector<std::string> Write(const Run& run, const std::string& dir, const std::vector<std::string>& exports,
                               bool report, const std::string& title) {
  const analysis::RunAnalysis& r = run.impl().run;
  auto w = analysis::WriteRunOutputs(r, dir, {.exports = exports});
  if (!w.ok()) {
    if (w.status().code() == base::StatusCode::kInvalidArgument) throw Error(Error::Kind::kValue, w.status().message());
    throw Error(Error::Kind::kIo, w.status().message());
  }
  std::vector<std::string> files = w->written;
  if (report) {
    // As `rlprof analyse`: the page's title is the path, or how many paths.
    const std::string t = !title.empty()        ? title
                          : r.paths.size() == 1 ? r.paths[0]
                                                : std::to_string(r.paths.size()) + " paths";
    const base::Status page = report::WriteHtmlReport(dir + "/report.html",
                                                      report::ReportData(r.inputs, w->summary, t, base::Version()));
    if (!page.ok()) throw Error(Error::Kind::kIo, page.message());
    files.push_back(dir + "/report.html");
  }
  files.insert(files.end(), w->exported.begin(), w->exported.end());
  return files;
}

FoundInputs FindInputs(const std::vector<std::string>& paths) {
  std::set<std::string> inputs;
  analysis::Diagnostics found;
  FoundInputs out;
  for (const auto& p : paths) {
    auto r = analysis::FindTraceInputs({p}, &found);
    if (r.ok()) inputs.insert(r->begin(), r->end());
    else out.missing.emplace_back(p, r.status().message());
  }
  out.inputs.assign(inputs.begin(), inputs.end());
  out.diagnostics = analysis::EncodeDiagnostics(found);
  return out;
}

void CheckOptions(const std::string& rules_yaml, const std::string& rules_origin, const std::string& assign,
                  const std::string& compat, const std::string& step_marker) {
  RemoteConfig(rules_yaml, rules_origin, assign, compat, step_marker);
}

std::vector<std::string> InputNames(const std::vector<std::string>& inputs) { return analysis::InputNames(inputs); }

std::string AnalyseInputEncoded(const std::string& input, const std::string& name, const std::string& rules_yaml,
                                const std::string& rules_origin, const std::string& assign,
                                const std::string& compat, const std::string& step_marker) {
  const analysis::RunConfig cfg = RemoteConfig(rules_yaml, rules_origin, assign, compat, step_marker);
  std::vector<analysis::InputResult> r = analysis::AnalyseInputs({input}, cfg.classifier, cfg.options, 1);
  r[0].name = name;
  return analysis::EncodeInputResult(r[0]);
}

std::shared_ptr<const Run> Assemble(const std::vector<std::string>& paths, const std::string& assign,
                                    const std::string& compat, const std::string& step_marker,
                                    const std::vector<std::string>& found, const std::vector<RemoteInput>& inputs,
                                    const std::vector<std::string>& missing,
                                    const std::vector<std::string>& lost_searches) {
  const analysis::RunConfig cfg = RemoteConfig("", "", assign, compat, step_marker);
  std::vector<analysis::RemoteInput> in;
  in.reserve(inputs.size());
  for (const auto& i : inputs) in.push_back({i.input, i.name, i.result, i.lost});
  return Wrap(analysis::AssembleRemoteRun(paths, cfg.options, found, in, missing, lost_searches));
}

std::string Version() { return base::Version(); }

}  // namespace rlprof::api
