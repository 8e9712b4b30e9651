// The run pipeline: find → analyse in parallel → run tables, summary.json → files.
#include "src/analysis/run_pipeline.h"

#include <atomic>
#include <filesystem>
#include <functional>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>

#include "src/analysis/readers/readers.h"
#include "src/base/files.h"
#include "src/format/capture.h"
#include "src/format/export.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

// --export for rlprof captures: the format stage's exporters, next to the input's CSVs.
// IoError when a file cannot be written; the loader's Status when the capture cannot be read.
base::Status ExportCapture(const InputResult& r, const std::vector<std::string>& exports,
                           const std::string& dir, std::vector<std::string>* written) {
  std::error_code ec;
  const bool is_capture = fs::is_directory(r.input, ec) || r.input.ends_with(".rlp");
  if (!is_capture) return base::Status::Ok();
  RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(r.input));
  std::vector<format::Capture> one;
  one.push_back(std::move(c));
  for (const auto& e : exports) {
    std::string file;
    format::ExportFormat f;
    if (e == "text") {
      file = dir + "/trace.json.gz";
      f = format::ExportFormat::kChromeJson;
    } else if (e == "db") {
      file = dir + "/trace.db";
      f = format::ExportFormat::kSqlite;
    } else {
      file = dir + "/trace.pftrace";
      f = format::ExportFormat::kPftrace;
    }
    auto st = format::ExportCaptures(one, f, file);
    if (!st.ok()) return base::IoError(file + ": " + st.status().message());
    written->push_back(file);
  }
  return base::Status::Ok();
}

}  // namespace

base::StatusOr<AssignMode> ParseAssignMode(const std::string& name) {
  if (name == "clip") return AssignMode::kClip;
  if (name == "by_start") return AssignMode::kByStart;
  if (name == "by_launch") return AssignMode::kByLaunch;
  return base::InvalidArgument("assign '" + name + "' is not one of clip, by_start, by_launch");
}

base::StatusOr<CompatMode> ParseCompatMode(const std::string& name) {
  if (name == "native") return CompatMode::kNative;
  if (name == "hta") return CompatMode::kHta;
  return base::InvalidArgument("compat '" + name + "' is not one of native, hta");
}

base::StatusOr<RunConfig> MakeRunConfig(const RunSettings& s, size_t jobs) {
  RunConfig cfg;
  RLPROF_ASSIGN_OR_RETURN(cfg.options.assign, ParseAssignMode(s.assign));
  RLPROF_ASSIGN_OR_RETURN(cfg.options.compat, ParseCompatMode(s.compat));
  if (!s.step_marker.empty()) {
    RLPROF_RETURN_IF_ERROR(CompileStepMarker(s.step_marker).status());
    cfg.options.step_marker = s.step_marker;
  }
  if (jobs == 0) return base::InvalidArgument("jobs must be at least 1");
  cfg.jobs = jobs;
  if (!s.rules.empty()) {
    RLPROF_ASSIGN_OR_RETURN(cfg.classifier, Classifier::FromRulesFile(s.rules));
  }
  return cfg;
}

size_t RunAnalysis::analysed() const {
  size_t n = 0;
  for (const auto& r : inputs) n += r.status.ok();
  return n;
}

Diagnostics RunAnalysis::AllDiagnostics() const {
  Diagnostics d = found;
  for (const auto& r : inputs) {
    if (r.status.ok()) d.Merge(r.analysis.diagnostics);
    else d.Note("unreadable_inputs", r.input + ": " + r.status.message());
  }
  d.Merge(view.diagnostics);
  return d;
}

// AnalyseRun, with `found(n)` called once the n inputs are known and `each` on the worker that
// analysed each input.
base::StatusOr<RunAnalysis> AnalyseRunWith(const std::vector<std::string>& paths, const RunConfig& cfg,
                                           const std::function<void(size_t)>& found, const InputFn& each) {
  RunAnalysis run;
  run.paths = paths;
  run.options = cfg.options;
  RLPROF_ASSIGN_OR_RETURN(std::vector<std::string> inputs, FindTraceInputs(paths, &run.found));
  if (inputs.empty()) {
    std::string what = "no trace found under ";
    for (size_t i = 0; i < paths.size(); ++i) what += (i ? ", " : "") + paths[i];
    for (const auto& d : run.found.details) what += "\n" + d;  // why nothing was found
    return base::NotFound(what);
  }
  if (found) found(inputs.size());
  AnalysisOptions options = cfg.options;
  if (inputs.size() > cfg.activity_max_inputs) options.activity_spans = 0;
  run.options = options;
  run.inputs = AnalyseInputs(inputs, cfg.classifier, options, cfg.jobs, cfg.progress, each);
  run.view = BuildRunView(run.inputs);
  return run;
}

base::StatusOr<RunAnalysis> AnalyseRun(const std::vector<std::string>& paths, const RunConfig& cfg) {
  return AnalyseRunWith(paths, cfg, nullptr, nullptr);
}

RunAnalysis AssembleRun(std::vector<std::string> paths, const AnalysisOptions& options, Diagnostics found,
                        std::vector<InputResult> inputs) {
  RunAnalysis run;
  run.paths = std::move(paths);
  run.options = options;
  run.found = std::move(found);
  run.inputs = std::move(inputs);
  run.view = BuildRunView(run.inputs);
  return run;
}

std::vector<Table> RunTables(const RunAnalysis& run) {
  std::vector<std::vector<Table>> tables(run.inputs.size());
  size_t first = run.inputs.size();
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    if (!run.inputs[i].status.ok()) continue;
    tables[i] = AllTables(run.inputs[i].analysis);
    if (first == run.inputs.size()) first = i;
  }
  std::vector<Table> merged;
  if (first < tables.size()) {
    for (size_t k = 0; k < tables[first].size(); ++k) {
      std::vector<std::pair<std::string, const Table*>> parts;
      for (size_t i = 0; i < run.inputs.size(); ++i)
        if (!tables[i].empty()) parts.push_back({run.inputs[i].name, &tables[i][k]});
      merged.push_back(ConcatWithInput(parts));
    }
  }
  merged.push_back(StageAcrossRanksTable(run.inputs));
  merged.push_back(RunViewTable(run.view));
  return merged;
}

nlohmann::json RunSummaryJson(const RunAnalysis& run) { return SummaryJson(run.inputs, run.options, &run.found); }

namespace {

base::Status CheckExports(const RunWriteOptions& opts) {
  for (const auto& e : opts.exports)
    if (e != "text" && e != "db" && e != "pftrace")
      return base::InvalidArgument("export type '" + e + "' is not one of text, db, pftrace");
  return base::Status::Ok();
}

// What writing one input's files left: its tables (kept for analysis.db), the first write that
// failed, its exports.
struct InputFiles {
  std::string name;           // the input's name (its folder, its `input` in analysis.db)
  std::vector<Table> tables;  // AllTables; empty when the input was not analysed
  base::Status write;         // the first IoError writing its CSVs or exports
  std::vector<std::string> exported;
  std::optional<base::Status> export_failure;  // its capture could not be read for --export
};

// analysis.db, written on a thread of its own, input by input in input order: each input's rows
// go into every per-input table as soon as its tables and those of every earlier input are
// built, so the database is filled while later inputs are still being analysed; the run-level
// tables follow once they are given, then the commit. The file depends only on the inputs and
// their order, never on which worker finished first. Abandoned (no file) when an input's files
// or the run-level files could not be written, as if it had been written last.
class DbJob {
 public:
  DbJob(std::string path, std::vector<InputFiles>* files) : path_(std::move(path)), files_(files) {}
  ~DbJob() { Abandon(); }

  // `files` has its final size: start waiting for the inputs.
  void Start() {
    ready_.assign(files_->size(), false);
    users_ = std::make_unique<std::atomic<int>[]>(files_->size());
    for (size_t i = 0; i < files_->size(); ++i) users_[i] = 2;  // its CSV writer and the database
    thread_ = std::thread([this] { status_ = Run(); });
  }
  // Input i's tables are built (call after filling its InputFiles' name and tables).
  void InputReady(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    if (i < ready_.size()) ready_[i] = true;
    cv_.notify_all();
  }
  // The run-level tables (alive until Join); the file is committed after them.
  void RunLevel(const Table* across, const Table* view) {
    std::lock_guard<std::mutex> lock(mu_);
    across_ = across;
    view_ = view;
    cv_.notify_all();
  }
  // Input i's CSVs are written (or failed): its tables go once the database has them too.
  void CsvsDone(size_t i) { Release(i); }
  // Call after RunLevel: waits for the file. Its Status.
  base::Status Join() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  void Abandon() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      abandon_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();  // its status no longer matters
  }

 private:
  base::Status Run() {
    // Only `name` and `tables` may be read here: the workers may still be writing the CSVs
    // (and setting `write`). A failed write abandons the job before the run-level tables come.
    const std::vector<InputFiles>& files = *files_;
    std::unique_ptr<SqliteWriter> w;
    auto open = [&]() -> base::Status {
      const size_t dir_end = path_.rfind('/');
      if (dir_end != std::string::npos) RLPROF_RETURN_IF_ERROR(base::MakeDirs(path_.substr(0, dir_end)));
      RLPROF_ASSIGN_OR_RETURN(w, SqliteWriter::Open(path_));
      return base::Status::Ok();
    };
    std::vector<size_t> ids;  // per-input table k → its handle in `w`, made by the first analysed input
    for (size_t i = 0; i < files.size(); ++i) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return abandon_ || ready_[i]; });
        if (abandon_) return base::Status::Ok();  // `w` removes the partial file
      }
      if (w == nullptr) RLPROF_RETURN_IF_ERROR(open());
      const InputFiles& f = files[i];
      // Every input's AllTables are the same tables, in the same order; the first analysed
      // input's make the schema (CREATE TABLE for all of them before any row).
      if (ids.empty())
        for (const Table& t : f.tables) {
          RLPROF_ASSIGN_OR_RETURN(size_t id, w->Create(t, true));
          ids.push_back(id);
        }
      for (size_t k = 0; k < f.tables.size() && k < ids.size(); ++k)
        RLPROF_RETURN_IF_ERROR(w->Append(ids[k], f.name, f.tables[k]));
      Release(i);
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return abandon_ || (across_ != nullptr && view_ != nullptr); });
      if (abandon_) return base::Status::Ok();
    }
    if (w == nullptr) RLPROF_RETURN_IF_ERROR(open());  // no input at all
    RLPROF_RETURN_IF_ERROR(w->Add({{{"", across_}}, false}));
    RLPROF_RETURN_IF_ERROR(w->Add({{{"", view_}}, false}));
    return w->Commit();
  }

  // One user of input i's tables is done with them; the last frees them (~25 k heap strings an
  // input here: freed while later inputs are analysed rather than all at the end).
  void Release(size_t i) {
    if (users_ && i < files_->size() && users_[i].fetch_sub(1, std::memory_order_acq_rel) == 1)
      std::vector<Table>().swap((*files_)[i].tables);
  }

  const std::string path_;
  std::vector<InputFiles>* files_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<bool> ready_;  // input i's tables are built
  std::unique_ptr<std::atomic<int>[]> users_;  // per input: who still reads its tables
  bool abandon_ = false;
  const Table* across_ = nullptr;
  const Table* view_ = nullptr;
  base::Status status_;
  std::thread thread_;
};

// Writes DIR/<name>/<table>.csv from input i's `tables` (AllTables, built once; empty when it
// was not analysed) and its exports; tells `db` once the tables are there, before the CSVs.
void WriteInputFiles(size_t i, const InputResult& r, std::vector<Table> tables, const std::string& dir,
                     const RunWriteOptions& opts, InputFiles* f, DbJob* db) {
  f->name = r.name;
  f->tables = std::move(tables);
  db->InputReady(i);
  struct Done {  // however this returns
    DbJob* db;
    size_t i;
    ~Done() { db->CsvsDone(i); }
  } done{db, i};
  if (!r.status.ok()) return;
  const std::string sub = dir + "/" + r.name;
  f->write = base::MakeDirs(sub);
  for (size_t k = 0; k < f->tables.size() && f->write.ok(); ++k)
    f->write = base::WriteFileAtomic(sub + "/" + f->tables[k].name + ".csv", ToCsv(f->tables[k]));
  if (!f->write.ok() || opts.exports.empty()) return;
  if (base::Status s = ExportCapture(r, opts.exports, sub, &f->exported); !s.ok()) {
    if (s.code() == base::StatusCode::kIoError) f->write = s;
    else f->export_failure = s;
  }
}

// The run-level files once every input's are written: this thread writes run_view.csv,
// summary.json and then runs `opts.while_db` (the CLI's report) while `db` finishes analysis.db.
// Errors: the inputs' own (first in input order), then in that order.
base::StatusOr<RunOutputs> FinishRunOutputs(const RunAnalysis& run, const std::vector<InputFiles>& files,
                                            const std::string& dir, const RunWriteOptions& opts, DbJob* db) {
  RunOutputs out;
  for (const auto& f : files) {
    if (!f.write.ok()) {
      db->Abandon();
      return f.write;
    }
    out.exported.insert(out.exported.end(), f.exported.begin(), f.exported.end());
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i].export_failure) out.export_failures.emplace_back(run.inputs[i].input, *files[i].export_failure);
  const Table across = StageAcrossRanksTable(run.inputs);
  const Table view = RunViewTable(run.view);
  db->RunLevel(&across, &view);
  base::Status docs = [&]() -> base::Status {
    RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir));
    out.summary = RunSummaryJson(run);
    out.summary["output"] = dir;
    // The run view, the run's one table of steps × stages × ranks (also in summary.json).
    RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/run_view.csv", ToCsv(view)));
    // Paths and names from traces need not be UTF-8: invalid bytes become U+FFFD, never a throw.
    const std::string summary = out.summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/summary.json", summary + "\n"));
    if (opts.while_db) return opts.while_db(out.summary);
    return base::Status::Ok();
  }();
  if (!docs.ok()) {
    db->Abandon();  // as before: no analysis.db after a failed run-level write (unless done)
    return docs;
  }
  RLPROF_RETURN_IF_ERROR(db->Join());
  out.written = {dir + "/run_view.csv", dir + "/summary.json", dir + "/analysis.db"};
  return out;
}

}  // namespace

base::StatusOr<RunOutputs> WriteRunOutputs(const RunAnalysis& run, const std::string& dir,
                                           const RunWriteOptions& opts) {
  RLPROF_RETURN_IF_ERROR(CheckExports(opts));
  std::vector<InputFiles> files(run.inputs.size());
  DbJob db(dir + "/analysis.db", &files);
  db.Start();
  for (size_t i = 0; i < run.inputs.size(); ++i) {
    const InputResult& r = run.inputs[i];
    WriteInputFiles(i, r, r.status.ok() ? AllTables(r.analysis) : std::vector<Table>{}, dir, opts, &files[i], &db);
    if (!files[i].write.ok()) {  // the first failure, as it happened
      db.Abandon();
      return files[i].write;
    }
  }
  return FinishRunOutputs(run, files, dir, opts, &db);
}

base::StatusOr<RunOutputs> AnalyseAndWriteRun(const std::vector<std::string>& paths, const RunConfig& cfg,
                                              const std::string& dir, const RunWriteOptions& opts,
                                              RunAnalysis* run) {
  RLPROF_RETURN_IF_ERROR(CheckExports(opts));
  std::vector<InputFiles> files;
  DbJob db(dir + "/analysis.db", &files);
  // Each input's CSVs are written by the worker that analysed it, inside the parallel phase;
  // analysis.db takes each input's rows as soon as it and every earlier input are analysed.
  auto found = [&](size_t n) {
    files.resize(n);
    db.Start();
  };
  auto each = [&](size_t i, InputResult& r) {
    std::vector<Table> tables;
    if (r.status.ok()) tables = opts.keep_kernel_rows ? AllTables(r.analysis) : TakeAllTables(&r.analysis);
    WriteInputFiles(i, r, std::move(tables), dir, opts, &files[i], &db);
  };
  RLPROF_ASSIGN_OR_RETURN(*run, AnalyseRunWith(paths, cfg, found, each));
  return FinishRunOutputs(*run, files, dir, opts, &db);
}

}  // namespace rlprof::analysis
