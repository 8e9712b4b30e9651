// The run pipeline: find → analyse in parallel → run tables, summary.json → files.
#include "src/analysis/run/async_run.h"
#include "src/analysis/run/samples_run.h"
#include "src/analysis/run/run_pipeline.h"

#include "src/analysis/advise/advise.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <condition_variable>
#include <deque>
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
base::Status ExportCapture(const std::string& input, const std::vector<std::string>& exports,
                           const std::string& dir, std::vector<std::string>* written) {
  std::error_code ec;
  const bool is_capture = fs::is_directory(input, ec) || input.ends_with(".rlp");
  if (!is_capture) return base::Status::Ok();
  RLPROF_ASSIGN_OR_RETURN(format::Capture c, format::LoadCapture(input));
  std::vector<format::Capture> one;
  one.push_back(std::move(c));
  for (const auto& e : exports) {
    RLPROF_ASSIGN_OR_RETURN(format::ExportFormat f, format::ParseExportFormat(e));
    const std::string file = dir + "/" + format::ExportFileName(f);
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
  if (name == "tracelens") return CompatMode::kTraceLens;
  return base::InvalidArgument("compat '" + name + "' is not one of native, hta, tracelens");
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

namespace {
// AnalyseRun's first half: run.paths, run.found and run.options (activity lanes left out past
// cfg.activity_max_inputs), and the inputs found; NotFound, saying why, when there is none.
base::Status FindRunInputs(const std::vector<std::string>& paths, const RunConfig& cfg, RunAnalysis* run,
                           std::vector<std::string>* inputs) {
  run->paths = paths;
  run->options = cfg.options;
  RLPROF_ASSIGN_OR_RETURN(*inputs, FindTraceInputs(paths, &run->found));
  if (inputs->empty()) {
    std::string what = "no trace found under ";
    for (size_t i = 0; i < paths.size(); ++i) what += (i ? ", " : "") + paths[i];
    for (const auto& d : run->found.details) what += "\n" + d;  // why nothing was found
    return base::NotFound(what);
  }
  if (!cfg.confine_to.empty()) {
    std::vector<std::string> kept;
    for (std::string& in : *inputs) {
      if (format::ResolvesInsideWithCaptureFiles(in, cfg.confine_to)) kept.push_back(std::move(in));
      else run->found.Note("input_outside_root", in + ": leads outside " + cfg.confine_to + " (a link): not read");
    }
    *inputs = std::move(kept);
    if (inputs->empty()) return base::NotFound("no trace inside " + cfg.confine_to);
  }
  if (inputs->size() > cfg.activity_max_inputs) run->options.activity_spans = 0;
  return base::Status::Ok();
}
}  // namespace

base::StatusOr<RunAnalysis> AnalyseRun(const std::vector<std::string>& paths, const RunConfig& cfg) {
  RunAnalysis run;
  std::vector<std::string> inputs;
  RLPROF_RETURN_IF_ERROR(FindRunInputs(paths, cfg, &run, &inputs));
  run.inputs = AnalyseInputs(inputs, cfg.classifier, run.options, cfg.jobs, cfg.progress);
  run.view = BuildRunView(run.inputs);
  return run;
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

// The run-level tables made from every input together: asynchronous RL (rlprof.rl's records;
// async_run.h) and each sample's life (sample records; samples_run.h), each set where some input
// holds its records.
static std::vector<Table> JoinedTables(const std::vector<InputResult>& inputs) {
  std::vector<Table> out;
  if (AnyAsync(inputs)) {
    out.push_back(AsyncPoolsTable(inputs));
    out.push_back(AsyncVerdictTable(inputs));
    out.push_back(AsyncVersionsTable(inputs));
    out.push_back(AsyncSyncsTable(inputs));
  }
  if (AnySamples(inputs)) {
    out.push_back(SamplesTable(inputs));
    out.push_back(SampleTailTable(inputs));
    out.push_back(SampleOutcomesTable(inputs));
  }
  return out;
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
  for (Table& t : JoinedTables(run.inputs)) merged.push_back(std::move(t));
  merged.push_back(StageAcrossRanksTable(run.inputs));
  merged.push_back(RunViewDbTable(run.view));
  merged.push_back(RunViewLongTable(run.view));
  merged.push_back(FindingsTable(Advise(run)));  // the advisor's (docs/advise.md)
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

// One input's part of the run's files: its tables until both its CSVs and its analysis.db rows
// are written, the first write that failed, its exports.
struct InputFiles {
  std::string name;           // the input's name (its folder, its `input` in analysis.db)
  std::string input;          // its path (for --export)
  bool analysed = false;      // its analysis succeeded: it has tables and CSVs
  std::vector<Table> tables;  // AllTables; freed once written
  base::Status csv[2];        // the first IoError writing each half of its CSVs (and exports)
  std::vector<std::string> exported;
  std::optional<base::Status> export_failure;  // its capture could not be read for --export
  // The first failed write of its files, in file order.
  const base::Status& write() const { return csv[0].ok() ? csv[1] : csv[0]; }
};

// One CSV text buffer per thread that writes CSVs, reused for every table it writes (its pages
// faulted in once, not once per table).
std::string& CsvBuffer() {
  thread_local std::string buffer;
  return buffer;
}

// kernel_details, one row per kernel, is most of an input's CSV bytes: written as a task of its
// own (half 0), beside the other tables and the exports (half 1).
bool InCsvHalf(const Table& t, int half) { return (t.name == "kernel_details") == (half == 0); }

// Writes one half of DIR/<name>/<table>.csv for an analysed input (half 1: and its exports).
void WriteCsvHalf(const std::string& dir, const RunWriteOptions& opts, InputFiles* f, int half) {
  const std::string sub = dir + "/" + f->name;
  base::Status& st = f->csv[half];
  st = base::MakeDirs(sub);
  std::string& text = CsvBuffer();
  for (size_t k = 0; k < f->tables.size() && st.ok(); ++k) {
    if (!InCsvHalf(f->tables[k], half)) continue;
    ToCsv(f->tables[k], &text);
    st = base::WriteFileAtomic(sub + "/" + f->tables[k].name + ".csv", text);
  }
  if (half != 1 || !st.ok() || opts.exports.empty()) return;
  if (base::Status s = ExportCapture(f->input, opts.exports, sub, &f->exported); !s.ok()) {
    if (s.code() == base::StatusCode::kIoError) st = s;
    else f->export_failure = s;
  }
}

// Writes a run's files on `jobs` threads of its own, with no thread for any one kind of work:
// each input's tables are made on a thread (stage 1: the input analysed and its tables built, or
// only its tables built), then its two CSV halves and its analysis.db rows are tasks that any of
// the threads takes, before it starts another input's stage 1. So no core idles while work is
// left (the last input's files are written by both threads), and an input's tables are freed
// soon after they are made. analysis.db's rows go in input order (one task at a time, each
// input's once it and every earlier input's are in), the tables created from the first analysed
// input's: the file depends only on the inputs and their order, never on which thread finished
// first. After the first failed CSV write the other CSVs are skipped. analysis.db is committed
// to its temporary file by the last task and published (renamed into place) by the caller only
// once every other file is written (PublishDb): otherwise no file, and `path` left as it was.
class RunWriter {
 public:
  // Input i's tables (empty when it was not analysed); called on a writer thread, once per i.
  using Stage1 = std::function<std::vector<Table>(size_t i, InputFiles* f)>;

  RunWriter(std::string dir, const RunWriteOptions& opts, size_t n)
      : dir_(std::move(dir)), opts_(opts), files_(n), made_(n, false), users_(n, 0) {}
  ~RunWriter() {
    Abandon();
    Join();
  }

  void Start(size_t jobs, Stage1 stage1) {
    stage1_ = std::move(stage1);
    jobs = std::max<size_t>(1, std::min(jobs, std::max<size_t>(files_.size(), 1)));
    max_held_ = std::max<size_t>(4 * jobs, 8);
    for (size_t t = 0; t < jobs; ++t) threads_.emplace_back([this] { Work(); });
  }
  // Waits until every input's stage 1 has run.
  void WaitStage1() {
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [&] { return stage1_done_ == files_.size(); });
  }
  // The run-level tables (alive until Join): analysis.db gets them after every input's rows and
  // is committed, unless an input's CSVs failed.
  void RunLevel(const Table* across, const Table* view, const Table* view_long,
                const std::vector<Table>* async) {
    std::lock_guard<std::mutex> lock(mu_);
    async_ = async;
    across_ = across;
    view_ = view;
    view_long_ = view_long;
    cv_.notify_all();
  }
  // No analysis.db: stops inserting and commits nothing (the partial file is removed).
  void Abandon() {
    std::lock_guard<std::mutex> lock(mu_);
    abandon_ = true;
    cv_.notify_all();
  }
  // Waits for the threads: every task is done (or skipped after Abandon).
  void Join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }
  // After Join: the inputs' files.
  std::vector<InputFiles>& files() { return files_; }
  // After Join: analysis.db into place (its error if writing it failed). Not called, the
  // temporary file is removed with the writer.
  base::Status PublishDb() {
    RLPROF_RETURN_IF_ERROR(db_status_);
    if (db_ == nullptr) return base::IoError(dir_ + "/analysis.db: not written");
    return db_->Publish();
  }

 private:
  enum class Kind { kStage1, kCsv0, kCsv1, kDb, kCommit, kNone };
  struct Task {
    Kind kind = Kind::kNone;
    size_t i = 0;
  };

  // The next task, under mu_: an input's outputs before another input's stage 1 (analysis.db's
  // rows first: they go one input at a time, in order); kNone once all is done.
  Task Next(std::unique_lock<std::mutex>& lock) {
    const size_t n = files_.size();
    for (;;) {
      if (!db_busy_ && !abandon_ && !db_failed_) {
        if (db_next_ < n && made_[db_next_]) {
          db_busy_ = true;
          return {Kind::kDb, db_next_};
        }
        if (db_next_ == n && !committed_ && across_ != nullptr) {
          db_busy_ = true;
          return {Kind::kCommit, 0};
        }
      }
      if (!csv_ready_.empty()) {
        Task t = csv_ready_.front();
        csv_ready_.pop_front();
        return t;
      }
      // Another input's stage 1, unless too many inputs' tables already wait for an earlier
      // input's database rows (a slow first input would otherwise keep every later one's
      // tables in memory). No deadlock: that earlier input's stage 1 has started (and without a
      // database to wait for, there is no bound).
      if (next_stage1_ < n && (next_stage1_ - db_next_ < max_held_ || db_failed_ || abandon_))
        return {Kind::kStage1, next_stage1_++};
      if (stage1_done_ == n && csv_pending_ == 0 && !db_busy_ && (abandon_ || committed_ || db_failed_))
        return {};
      cv_.wait(lock);  // for another thread's task, or for the run-level tables
    }
  }

  void Work() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Task t = Next(lock);
      if (t.kind == Kind::kNone) {
        cv_.notify_all();
        return;
      }
      lock.unlock();
      Run(t);
      lock.lock();
      Done(t);
      cv_.notify_all();
    }
  }

  void Run(const Task& t) {
    switch (t.kind) {
      case Kind::kStage1:
        files_[t.i].tables = stage1_(t.i, &files_[t.i]);
        break;
      case Kind::kCsv0:
      case Kind::kCsv1: {
        const int half = t.kind == Kind::kCsv0 ? 0 : 1;
        if (!csv_failed_.load()) {
          WriteCsvHalf(dir_, opts_, &files_[t.i], half);
          if (!files_[t.i].csv[half].ok()) csv_failed_ = true;
        }
        break;
      }
      case Kind::kDb:
        db_status_ = InsertRows(t.i);
        break;
      case Kind::kCommit:
        db_status_ = CommitDb();
        break;
      case Kind::kNone:
        break;
    }
  }

  // Under mu_: what task t makes ready.
  void Done(const Task& t) {
    switch (t.kind) {
      case Kind::kStage1:
        ++stage1_done_;
        made_[t.i] = true;
        if (files_[t.i].analysed) {
          users_[t.i] = 3;  // two CSV halves and the database
          csv_ready_.push_back({Kind::kCsv0, t.i});
          csv_ready_.push_back({Kind::kCsv1, t.i});
          csv_pending_ += 2;
        } else {
          users_[t.i] = 1;  // the database only (nothing to insert)
        }
        if (stage1_done_ == files_.size()) done_cv_.notify_all();
        break;
      case Kind::kCsv0:
      case Kind::kCsv1:
        --csv_pending_;
        Release(t.i);
        break;
      case Kind::kDb:
        db_busy_ = false;
        if (!db_status_.ok()) db_failed_ = true;
        Release(db_next_);
        ++db_next_;
        break;
      case Kind::kCommit:
        db_busy_ = false;
        committed_ = true;
        break;
      case Kind::kNone:
        break;
    }
  }

  // Under mu_: one user of input i's tables is done with them; the last frees them.
  void Release(size_t i) {
    if (users_[i] > 0 && --users_[i] == 0) std::vector<Table>().swap(files_[i].tables);
  }

  base::Status InsertRows(size_t i) {
    const InputFiles& f = files_[i];
    if (f.tables.empty()) return base::Status::Ok();
    if (db_ == nullptr) {
      const std::string path = dir_ + "/analysis.db";
      RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir_));
      RLPROF_ASSIGN_OR_RETURN(db_, SqliteWriter::Open(path));
    }
    // Every input's AllTables are the same tables, in the same order; the first analysed
    // input's make the schema (CREATE TABLE for all of them before any row).
    if (ids_.empty())
      for (const Table& t : f.tables) {
        RLPROF_ASSIGN_OR_RETURN(size_t id, db_->Create(t, true));
        ids_.push_back(id);
      }
    for (size_t k = 0; k < f.tables.size() && k < ids_.size(); ++k)
      RLPROF_RETURN_IF_ERROR(db_->Append(ids_[k], f.name, f.tables[k]));
    return base::Status::Ok();
  }

  // Commits and closes analysis.db's temporary file; Publish renames it into place.
  base::Status CommitDb() {
    if (db_ == nullptr) {  // no input analysed
      RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir_));
      RLPROF_ASSIGN_OR_RETURN(db_, SqliteWriter::Open(dir_ + "/analysis.db"));
    }
    if (async_ != nullptr)
      for (const Table& a : *async_) RLPROF_RETURN_IF_ERROR(db_->Add({{{"", &a}}, false}));
    RLPROF_RETURN_IF_ERROR(db_->Add({{{"", across_}}, false}));
    RLPROF_RETURN_IF_ERROR(db_->Add({{{"", view_}}, false}));
    RLPROF_RETURN_IF_ERROR(db_->Add({{{"", view_long_}}, false}));
    return db_->Close();
  }

  const std::string dir_;
  const RunWriteOptions& opts_;
  std::vector<InputFiles> files_;
  Stage1 stage1_;
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  // Under mu_.
  std::vector<bool> made_;      // input i's stage 1 has run
  std::vector<int> users_;      // who still reads input i's tables
  size_t next_stage1_ = 0, stage1_done_ = 0, db_next_ = 0, csv_pending_ = 0;
  size_t max_held_ = 8;  // inputs past db_next_ whose stage 1 may have started
  std::deque<Task> csv_ready_;
  bool db_busy_ = false, db_failed_ = false, committed_ = false, abandon_ = false;
  const Table* across_ = nullptr;
  // async_pools, async_verdict, async_versions, async_syncs, when some input holds rlprof.rl's
  // records; samples, sample_tail, sample_outcomes when some holds sample records.
  const std::vector<Table>* async_ = nullptr;
  const Table* view_ = nullptr;
  const Table* view_long_ = nullptr;
  // The database: used by one task at a time (db_busy_).
  std::unique_ptr<SqliteWriter> db_;
  std::vector<size_t> ids_;  // per-input table k → its handle in db_
  base::Status db_status_;
  std::atomic<bool> csv_failed_{false};
};

// The run-level files, once every input's stage 1 has run: their contents (summary.json,
// run_view.csv, `opts.page`) are made on this thread while `w`'s threads write the last inputs'
// CSVs and analysis.db; then the inputs' failures are checked, the files written and analysis.db
// published last. Errors: the inputs' own (first in input order), then in that order, then
// analysis.db's.
base::StatusOr<RunOutputs> FinishRunOutputs(const RunAnalysis& run, const std::string& dir,
                                            const RunWriteOptions& opts, RunWriter* w) {
  RunOutputs out;
  const Table across = StageAcrossRanksTable(run.inputs);
  const Table view = RunViewTable(run.view);
  // analysis.db: the wide run view up to SQLite's column limit, every rank in long form.
  std::optional<Table> db_view;
  if (run.view.lanes.size() > kSqliteRunViewLaneColumns) db_view = RunViewDbTable(run.view);
  const Table view_long = RunViewLongTable(run.view);
  // Async RL and sample tables (JoinedTables): CSV files and analysis.db tables of the run.
  // And the advisor's findings (docs/advise.md), in every run.
  std::optional<std::vector<Table>> async = JoinedTables(run.inputs);
  async->push_back(FindingsTable(Advise(run)));
  w->RunLevel(&across, db_view ? &*db_view : &view, &view_long, async ? &*async : nullptr);  // then the db commits
  out.summary = RunSummaryJson(run);
  out.summary["output"] = dir;
  // The run view, the run's one table of steps × stages × ranks (also in summary.json).
  const std::string view_csv = ToCsv(view);
  // Paths and names from traces need not be UTF-8: invalid bytes become U+FFFD, never a throw.
  const std::string summary = out.summary.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::optional<base::StatusOr<std::string>> page;
  if (opts.page) page = opts.page(out.summary);
  w->Join();
  const std::vector<InputFiles>& files = w->files();
  for (const auto& f : files) {
    if (!f.write().ok()) return f.write();  // analysis.db is not published
    out.exported.insert(out.exported.end(), f.exported.begin(), f.exported.end());
  }
  for (size_t i = 0; i < files.size(); ++i)
    if (files[i].export_failure) out.export_failures.emplace_back(run.inputs[i].input, *files[i].export_failure);
  RLPROF_RETURN_IF_ERROR(base::MakeDirs(dir));
  RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/run_view.csv", view_csv));
  if (async)
    for (const Table& a : *async) RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/" + a.name + ".csv", ToCsv(a)));
  RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/summary.json", summary));
  if (page) {
    RLPROF_RETURN_IF_ERROR(page->status());
    RLPROF_RETURN_IF_ERROR(base::WriteFileAtomic(dir + "/" + opts.page_name, **page));
  }
  RLPROF_RETURN_IF_ERROR(w->PublishDb());
  out.written = {dir + "/run_view.csv", dir + "/summary.json", dir + "/analysis.db"};
  for (const Table& a : *async) out.written.push_back(dir + "/" + a.name + ".csv");
  return out;
}

}  // namespace

base::StatusOr<RunOutputs> WriteRunOutputs(const RunAnalysis& run, const std::string& dir,
                                           const RunWriteOptions& opts) {
  RLPROF_RETURN_IF_ERROR(CheckExports(opts));
  RunWriter w(dir, opts, run.inputs.size());
  w.Start(2, [&](size_t i, InputFiles* f) {
    const InputResult& r = run.inputs[i];
    f->name = r.name;
    f->input = r.input;
    f->analysed = r.status.ok();
    return r.status.ok() ? AllTables(r.analysis) : std::vector<Table>{};
  });
  w.WaitStage1();
  return FinishRunOutputs(run, dir, opts, &w);
}

base::StatusOr<RunOutputs> AnalyseAndWriteRun(const std::vector<std::string>& paths, const RunConfig& cfg,
                                              const std::string& dir, const RunWriteOptions& opts,
                                              RunAnalysis* run) {
  RLPROF_RETURN_IF_ERROR(CheckExports(opts));
  RunAnalysis r;
  std::vector<std::string> inputs;
  RLPROF_RETURN_IF_ERROR(FindRunInputs(paths, cfg, &r, &inputs));
  const size_t n = inputs.size();
  const std::vector<std::string> names = InputNames(inputs);
  r.inputs.resize(n);
  const InputAnalyser analyser(cfg.classifier, r.options);
  std::mutex mu;
  size_t done = 0;
  // Stage 1 on the writer's threads: the input analysed, its tables built (per-kernel rows moved
  // into them unless kept); its CSVs and analysis.db rows follow as tasks of their own.
  RunWriter w(dir, opts, n);
  w.Start(cfg.jobs, [&](size_t i, InputFiles* f) {
    InputResult& res = r.inputs[i];
    res = analyser.Analyse(inputs[i], names[i]);
    f->name = res.name;
    f->input = res.input;
    f->analysed = res.status.ok();
    std::vector<Table> tables;
    if (res.status.ok()) tables = opts.keep_kernel_rows ? AllTables(res.analysis) : TakeAllTables(&res.analysis);
    if (cfg.progress) {
      std::lock_guard<std::mutex> lock(mu);
      cfg.progress(++done, n);
    }
    return tables;
  });
  w.WaitStage1();
  r.view = BuildRunView(r.inputs);
  *run = std::move(r);
  return FinishRunOutputs(*run, dir, opts, &w);
}

}  // namespace rlprof::analysis
