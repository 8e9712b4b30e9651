#include "src/analysis/run/run_pipeline.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;
const std::string kInputs = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/inputs/";

std::string Slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class RunPipelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("rlprof_run_pipeline_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string root_;
};

RunSettings Settings(std::string assign = "clip", std::string compat = "native", std::string step_marker = "",
                     std::string rules = "") {
  RunSettings s;
  s.assign = std::move(assign);
  s.compat = std::move(compat);
  s.step_marker = std::move(step_marker);
  s.rules = std::move(rules);
  return s;
}

TEST(RunConfigTest, OptionsAreParsedAndBadOnesAreInvalidArguments) {
  auto cfg = MakeRunConfig(Settings("by_launch", "hta", "^step (\\d+)$"), 3);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->options.assign, AssignMode::kByLaunch);
  EXPECT_EQ(cfg->options.compat, CompatMode::kHta);
  EXPECT_EQ(cfg->options.step_marker, "^step (\\d+)$");
  EXPECT_EQ(cfg->jobs, 3u);
  EXPECT_EQ(MakeRunConfig(Settings("nearest")).status().code(), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeRunConfig(Settings("clip", "nsight")).status().code(), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeRunConfig(Settings("clip", "native", "(unclosed")).status().code(), base::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeRunConfig({}, 0).status().code(), base::StatusCode::kInvalidArgument);
  EXPECT_FALSE(MakeRunConfig(Settings("clip", "native", "", "/nonexistent/rules.yaml")).ok());
}

TEST_F(RunPipelineTest, ARunFolderOfDiscreteCapturesBecomesOneRunWithItsTables) {
  auto cfg = MakeRunConfig({});
  ASSERT_TRUE(cfg.ok());
  auto run = AnalyseRun({kInputs + "grpo_tiny_step2"}, *cfg);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->inputs.size(), 8u);  // 4 stages × 2 ranks
  EXPECT_EQ(run->analysed(), 8u);
  EXPECT_EQ(run->view.lanes.size(), 2u);
  std::vector<Table> tables = RunTables(*run);
  ASSERT_GE(tables.size(), 3u);
  EXPECT_EQ(tables.front().name, "step_trace_time");
  EXPECT_EQ(tables.front().columns.front().name, "input");
  EXPECT_EQ(tables[tables.size() - 4].name, "stage_across_ranks");
  EXPECT_EQ(tables[tables.size() - 3].name, "run_view");
  EXPECT_EQ(tables[tables.size() - 2].name, "run_view_long");
  EXPECT_EQ(tables.back().name, "findings");  // the advisor's (docs/advise.md)
  EXPECT_EQ(RunSummaryJson(*run)["inputs"].size(), 8u);
}

TEST_F(RunPipelineTest, WritesTheSameFilesAsTheCommandAndKeepsUnreadableInputsWithTheirStatus) {
  std::ofstream(root_ + "/bad.json") << "this is not a trace";
  auto cfg = MakeRunConfig({});
  ASSERT_TRUE(cfg.ok());
  auto run = AnalyseRun({kInputs + "hta_cpu_only_rank-34.json.gz", root_ + "/bad.json"}, *cfg);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->inputs.size(), 2u);
  EXPECT_EQ(run->analysed(), 1u);
  EXPECT_EQ(run->AllDiagnostics().Get("unreadable_inputs"), 1u);
  auto w = WriteRunOutputs(*run, root_ + "/out");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->summary["output"], root_ + "/out");
  for (const char* f : {"run_view.csv", "summary.json", "analysis.db"})
    EXPECT_TRUE(fs::exists(root_ + "/out/" + f)) << f;
  const std::string name = run->inputs[0].status.ok() ? run->inputs[0].name : run->inputs[1].name;
  const InputResult& ok = run->inputs[0].status.ok() ? run->inputs[0] : run->inputs[1];
  EXPECT_EQ(Slurp(root_ + "/out/" + name + "/step_trace_time.csv"), ToCsv(StepTraceTimeTable(ok.analysis)));
  EXPECT_EQ(WriteRunOutputs(*run, root_ + "/out2", {.exports = {"xml"}}).status().code(),
            base::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(root_ + "/out2"));
  std::ofstream(root_ + "/file") << "x";
  EXPECT_EQ(WriteRunOutputs(*run, root_ + "/file/sub").status().code(), base::StatusCode::kIoError);
}

// Every file under `dir`, relative path → bytes.
std::map<std::string, std::string> Files(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir))
    if (e.is_regular_file()) out[fs::relative(e.path(), dir).string()] = Slurp(e.path().string());
  return out;
}

// Every table and view of a database but `meta` and the storage behind views, by name: its
// columns with their declared types (PRAGMA table_info), then `SELECT *` (in rowid order for a
// table), each value with its storage class.
std::string DumpDb(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) return "cannot open";
  auto rows = [&](const std::string& sql, bool typed) {
    std::string out;
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK) return "bad query: " + sql + "\n";
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int i = 0; i < sqlite3_column_count(st); ++i) {
        if (i) out += "|";
        const int type = sqlite3_column_type(st, i);
        const char* text = reinterpret_cast<const char*>(sqlite3_column_text(st, i));
        if (typed) out += type == SQLITE_NULL ? "null" : type == SQLITE_INTEGER ? "i:" : type == SQLITE_FLOAT ? "r:" : "t:";
        if (type == SQLITE_FLOAT) out += FormatCell(sqlite3_column_double(st, i));
        else if (text) out += text;
      }
      out += "\n";
    }
    sqlite3_finalize(st);
    return out;
  };
  std::string names = rows(
      "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND name NOT IN ('meta', 'strings') "
      "AND name NOT LIKE '%\\_rows' ESCAPE '\\' ORDER BY name",
      false);
  std::string out;
  std::istringstream in(names);
  for (std::string name; std::getline(in, name);) {
    out += "-- " + name + "\n";
    std::string cols = rows("SELECT name || ' ' || type FROM pragma_table_info('" + name + "')", false);
    for (char& c : cols) c = c == '\n' ? '|' : c;
    out += cols.substr(0, cols.size() - 1) + "\n";
    out += rows("SELECT * FROM \"" + name + "\"", true);
  }
  sqlite3_close(db);
  return out;
}

// Issue 35: analysis.db failed at ~1,990 ranks ("too many columns on run_view": one column per
// rank). Beyond kSqliteRunViewLaneColumns ranks run_view keeps its summary columns and
// run_view_long holds every rank; run_view.csv stays wide.
TEST_F(RunPipelineTest, TwoThousandRanksWriteTheRunViewInLongForm) {
  constexpr int kRanks = 2100;
  std::vector<InputResult> inputs;
  std::vector<std::string> paths;
  for (int r = 0; r < kRanks; ++r) {
    InputResult in;
    in.input = in.name = "rank" + std::to_string(r);
    in.analysis.source = in.input;
    in.analysis.rank = r;
    StepResult step;
    step.window.step = 1;
    step.window.start = 0;
    step.window.end = 1000 + r;
    in.analysis.steps.push_back(step);
    StageResult st;
    st.step = 1;
    st.role = "actor";
    st.name = "update";
    st.start = 10;
    st.end = 500 + r;
    st.duration = st.end - st.start;
    in.analysis.stages.push_back(st);
    paths.push_back(in.input);
    inputs.push_back(std::move(in));
  }
  RunAnalysis run = AssembleRun(paths, AnalysisOptions{}, Diagnostics{}, std::move(inputs));
  ASSERT_EQ(run.view.lanes.size(), static_cast<size_t>(kRanks));
  auto w = WriteRunOutputs(run, root_ + "/out");
  ASSERT_TRUE(w.ok()) << w.status().message();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((root_ + "/out/analysis.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto scalar = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
      v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
  };
  EXPECT_EQ(scalar("SELECT COUNT(DISTINCT rank) FROM run_view_long WHERE kind = 'stage'"), kRanks);
  EXPECT_EQ(scalar("SELECT value_ns FROM run_view_long WHERE kind = 'stage' AND rank = 2099"), 490 + 2099);
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM pragma_table_info('run_view') WHERE name LIKE 'rank%'"), 1);  // "ranks"
  EXPECT_EQ(scalar("SELECT COUNT(*) FROM run_view WHERE kind = 'stage' AND critical_rank = 'rank2099'"), 1);
  sqlite3_close(db);
  // The CSV keeps a column per rank.
  const std::string csv = Slurp(root_ + "/out/run_view.csv");
  EXPECT_NE(csv.substr(0, csv.find('\n')).find("rank2099"), std::string::npos);
}

TEST_F(RunPipelineTest, TakingTheKernelRowsIntoTheTablesWritesTheSameFilesAndLeavesNoneInTheRun) {
  // The CLI's setting (keep_kernel_rows = false): names moved into kernel_details instead of
  // copied, the rows freed once written. Every file is the same, analysis.db byte for byte.
  auto cfg = MakeRunConfig({}, 2);
  ASSERT_TRUE(cfg.ok());
  RunAnalysis kept, taken;
  auto k = AnalyseAndWriteRun({kInputs}, *cfg, root_ + "/kept", {}, &kept);
  ASSERT_TRUE(k.ok()) << k.status().message();
  RunWriteOptions take;
  take.keep_kernel_rows = false;
  auto t = AnalyseAndWriteRun({kInputs}, *cfg, root_ + "/taken", take, &taken);
  ASSERT_TRUE(t.ok()) << t.status().message();
  size_t kernel_rows = 0;
  for (const auto& r : kept.inputs) kernel_rows += r.analysis.kernel_rows.size();
  EXPECT_GT(kernel_rows, 100u);
  for (const auto& r : taken.inputs) EXPECT_TRUE(r.analysis.kernel_rows.empty()) << r.name;
  auto fk = Files(root_ + "/kept"), ft = Files(root_ + "/taken");
  ASSERT_EQ(fk.size(), ft.size());
  size_t kernel_details = 0;
  for (const auto& [name, bytes] : fk) {
    ASSERT_TRUE(ft.count(name)) << name;
    if (name == "summary.json") continue;  // its "output" differs
    EXPECT_TRUE(bytes == ft[name]) << name;
    if (name.find("kernel_details.csv") != std::string::npos && bytes.size() > 200) ++kernel_details;
  }
  EXPECT_GT(kernel_details, 0u);
  EXPECT_TRUE(fk.count("analysis.db"));
}

TEST_F(RunPipelineTest, OnePassWritesTheSameFilesAsAnalyseThenWriteAndTheSameDatabaseAsTheConcatenatedTables) {
  std::ofstream(root_ + "/bad.json") << "this is not a trace";
  const std::vector<std::string> paths = {kInputs, root_ + "/bad.json"};
  auto cfg = MakeRunConfig({}, 2);
  ASSERT_TRUE(cfg.ok());
  // AnalyseAndWriteRun: CSVs and analysis.db on threads of their own, the page made beside them.
  RunAnalysis one;
  int calls = 0;
  RunWriteOptions opts;
  opts.page = [&](const nlohmann::json& summary) -> base::StatusOr<std::string> {
    ++calls;
    EXPECT_EQ(summary["output"], root_ + "/a");
    return std::string("<p>page</p>");
  };
  opts.page_name = "page.html";
  auto a = AnalyseAndWriteRun(paths, *cfg, root_ + "/a", opts, &one);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(Slurp(root_ + "/a/page.html"), "<p>page</p>");
  fs::remove(root_ + "/a/page.html");  // the two calls below write none
  EXPECT_GT(one.analysed(), 10u);  // the golden inputs (captures, Kineto, legacy torch) …
  EXPECT_EQ(one.inputs.size(), one.analysed() + 1);  // … and the one that is not a trace
  // The two calls, one input after the other.
  cfg->jobs = 1;
  auto run = AnalyseRun(paths, *cfg);
  ASSERT_TRUE(run.ok());
  auto b = WriteRunOutputs(*run, root_ + "/b");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(a->written.size(), b->written.size());
  auto fa = Files(root_ + "/a"), fb = Files(root_ + "/b");
  ASSERT_EQ(fa.size(), fb.size());
  ASSERT_GT(fa.size(), one.analysed() * 14);  // 14 CSVs per analysed input, the run's files
  for (const auto& [name, bytes] : fa) {
    ASSERT_TRUE(fb.count(name)) << name;
    if (name == "summary.json") continue;  // its "output" differs
    EXPECT_TRUE(bytes == fb[name]) << name;
  }
  nlohmann::json sa = nlohmann::json::parse(fa["summary.json"]), sb = nlohmann::json::parse(fb["summary.json"]);
  sa.erase("output");
  sb.erase("output");
  EXPECT_EQ(sa, sb);
  // analysis.db (written input by input as inputs finish, 32 rows per INSERT, kernel names
  // interned) holds the concatenated tables: the same names, columns, declared types and rows
  // in the same order as a plain database of RunTables, one row per INSERT, nothing interned.
  size_t rows = 0;
  std::vector<Table> merged = RunTables(*run);
  for (const auto& t : merged) rows = std::max(rows, t.rows.size());
  EXPECT_GT(rows, 100u);  // several full batches and a remainder
  for (auto& t : merged)
    for (auto& c : t.columns) c.repeats = false;
  ASSERT_TRUE(WriteSqlite(merged, root_ + "/plain.db").ok());
  const std::string got = DumpDb(root_ + "/a/analysis.db"), want = DumpDb(root_ + "/plain.db");
  EXPECT_GT(want.size(), 100000u);
  EXPECT_TRUE(got == want) << got.substr(0, 2000);
  EXPECT_NE(got.find("-- kernel_details\n"), std::string::npos);
}

// A run's analysis.db does not depend on the number of jobs or on which input finishes first:
// the same bytes, run after run.
TEST_F(RunPipelineTest, ManyInputsGiveTheSameFilesWhateverTheJobs) {
  // More inputs than the writer lets wait for the database (4 × jobs, at least 8): every file
  // the same with 1, 2 and 5 threads.
  fs::create_directories(root_ + "/many");
  for (int i = 0; i < 40; ++i) {
    const std::string src = kInputs + (i % 2 ? "kineto_launches.json" : "hta_cpu_only_rank-34.json.gz");
    fs::copy_file(src, root_ + "/many/r" + std::to_string(100 + i) + (i % 2 ? ".json" : ".json.gz"));
  }
  std::map<std::string, std::string> first;
  for (size_t jobs : {1, 2, 5}) {
    auto cfg = MakeRunConfig({}, jobs);
    ASSERT_TRUE(cfg.ok());
    const std::string out = root_ + "/many_out" + std::to_string(jobs);
    RunAnalysis run;
    auto w = AnalyseAndWriteRun({root_ + "/many"}, *cfg, out, {}, &run);
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(run.analysed(), 40u);
    auto files = Files(out);
    files.erase("summary.json");  // its "output" differs
    EXPECT_GT(files.size(), 40u * 14);
    if (first.empty()) first = files;
    else EXPECT_TRUE(files == first) << "jobs " << jobs;
  }
}

TEST_F(RunPipelineTest, TheDatabaseIsTheSameFileWhateverTheJobsAndRuns) {
  auto cfg = MakeRunConfig({}, 2);
  ASSERT_TRUE(cfg.ok());
  std::string first;
  for (int i = 0; i < 6; ++i) {
    cfg->jobs = i % 3 + 1;  // 1, 2, 3 jobs, twice
    const std::string out = root_ + "/o" + std::to_string(i);
    RunAnalysis run;
    auto w = AnalyseAndWriteRun({kInputs}, *cfg, out, {}, &run);
    ASSERT_TRUE(w.ok()) << w.status().message();
    const std::string db = Slurp(out + "/analysis.db");
    ASSERT_GT(db.size(), 65536u);
    if (i == 0) first = db;
    else EXPECT_TRUE(db == first) << "jobs " << cfg->jobs;
  }
}

// kernel_details: a view over kernel_details_rows whose names are ids into `strings`; what a
// reader sees (PRAGMA table_info, SELECT *) is the table's own columns and rows.
TEST_F(RunPipelineTest, RepeatingTextIsStoredOnceAndReadBackThroughAViewWithTheTablesColumns) {
  Table t{"k",
          {{"n", ColumnType::kInt, ""}, {"name", ColumnType::kText, "", true}, {"x", ColumnType::kReal, ""}},
          {}};
  for (int i = 0; i < 100; ++i)
    t.rows.push_back({int64_t{i}, i % 7 == 3 ? Cell{} : Cell{std::string(i % 3 ? "gemm, <4>" : "nccl \"x\"")},
                      i * 0.5});
  Table u = t;
  u.rows.resize(5);
  for (auto& c : u.columns) c.repeats = false;
  u.name = "plain";
  auto w = SqliteWriter::Open(root_ + "/s.db");
  ASSERT_TRUE(w.ok());
  auto id = (*w)->Create(t, true);
  ASSERT_TRUE(id.ok());
  ASSERT_TRUE((*w)->Append(*id, "in0", t).ok());
  ASSERT_TRUE((*w)->Add({{{"", &u}}, false}).ok());
  ASSERT_TRUE((*w)->Append(*id, "in1", u).ok());  // after another table: rows still in order
  ASSERT_TRUE((*w)->Commit().ok());
  const std::string dump = DumpDb(root_ + "/s.db");
  std::string want = "-- k\ninput TEXT|n INTEGER|name TEXT|x REAL\n";
  auto row = [](const std::string& in, const std::vector<Cell>& r) {
    const std::string* s = std::get_if<std::string>(&r[1]);
    return "t:" + in + "|i:" + std::to_string(std::get<int64_t>(r[0])) + "|" + (s ? "t:" + *s : "null") + "|r:" +
           FormatCell(r[2]) + "\n";
  };
  for (const auto& r : t.rows) want += row("in0", r);
  for (const auto& r : u.rows) want += row("in1", r);
  EXPECT_EQ(dump.substr(0, want.size()), want);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((root_ + "/s.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT type, (SELECT COUNT(*) FROM strings) FROM sqlite_master WHERE name = 'k'",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "view");
  EXPECT_EQ(sqlite3_column_int(st, 1), 4);  // in0, the two names, in1
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST(ToCsvTest, RealsAreWrittenAsTheirShortestFormWholeNumbersIncluded) {
  // Whole numbers below 2^53 take a path of their own: the same text as FormatCell (fmt's
  // shortest round-trip form) for every one, and for what is not one (-0, 2^53, fractions, huge).
  std::vector<double> values = {0.0, -0.0, 1.0, -1.0, 10.0, 1e15, 1e16, 1661203462600478.0, 1661203462600000.0,
                                9007199254740991.0, -9007199254740991.0, 9007199254740992.0, 9007199254740994.0,
                                1e300, -1e300, 0.5, 1661203462600478.2, 123.25, 1e-7, std::nan(""),
                                std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity()};
  std::mt19937_64 rng(11);
  for (int e = 1; e <= 53; ++e)
    for (int k = 0; k < 200; ++k) {
      const double v = static_cast<double>(rng() >> (64 - e));
      values.push_back(v);
      values.push_back(-v);
      values.push_back(v / 1000.0);
    }
  Table t{"t", {{"x", ColumnType::kReal, ""}}, {}};
  std::string want = "x\n";
  for (double v : values) {
    t.rows.push_back({v});
    want += FormatCell(Cell{v}) + "\n";
  }
  EXPECT_EQ(ToCsv(t), want);
  EXPECT_EQ(FormatCell(Cell{-0.0}), "-0");  // kept, not "0"
}

TEST(ToCsvTest, QuotesExactlyTheFieldsWithASeparatorAQuoteOrANewline) {
  Table t{"t", {{"a,b", ColumnType::kText, ""}, {"n", ColumnType::kInt, ""}}, {}};
  for (const char* s : {"plain", "a,b", "say \"hi\"", "x\ny", "cr\r", "", "\"", "\"\",\"", "void f<a, b>(int)"})
    t.rows.push_back({std::string(s), int64_t{-3}});
  t.rows.push_back({Cell{}, 1.5});
  EXPECT_EQ(ToCsv(t),
            "\"a,b\",n\nplain,-3\n\"a,b\",-3\n\"say \"\"hi\"\"\",-3\n\"x\ny\",-3\n\"cr\r\",-3\n,-3\n\"\"\"\",-3\n"
            "\"\"\"\"\",\"\"\",-3\n\"void f<a, b>(int)\",-3\n,1.5\n");
}

TEST_F(RunPipelineTest, OnePassFailuresAreStatusesAndLeaveNoDatabase) {
  auto cfg = MakeRunConfig({}, 2);
  ASSERT_TRUE(cfg.ok());
  const std::vector<std::string> paths = {kInputs + "hta_cpu_only_rank-34.json.gz", kInputs + "kineto_launches.json"};
  RunAnalysis run;
  EXPECT_EQ(AnalyseAndWriteRun(paths, *cfg, root_ + "/x", {.exports = {"xml"}}, &run).status().code(),
            base::StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(root_ + "/x"));
  // An output folder that cannot be made: the inputs are still analysed.
  std::ofstream(root_ + "/file") << "x";
  EXPECT_EQ(AnalyseAndWriteRun(paths, *cfg, root_ + "/file/sub", {}, &run).status().code(),
            base::StatusCode::kIoError);
  EXPECT_EQ(run.analysed(), 2u);
  // The run-level page's failure is the run's; analysis.db is not left behind half-written.
  RunWriteOptions opts;
  opts.page = [](const nlohmann::json&) -> base::StatusOr<std::string> {
    return base::IoError("report.html: disk full");
  };
  auto w = AnalyseAndWriteRun(paths, *cfg, root_ + "/y", opts, &run);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), "report.html: disk full");
  EXPECT_FALSE(fs::exists(root_ + "/y/analysis.db.tmp"));
  EXPECT_FALSE(fs::exists(root_ + "/y/analysis.db"));  // published only after every other file
  EXPECT_FALSE(fs::exists(root_ + "/y/report.html"));
  EXPECT_TRUE(fs::exists(root_ + "/y/summary.json"));
  // No trace: NotFound, nothing written, `run` untouched.
  fs::create_directories(root_ + "/empty");
  EXPECT_EQ(AnalyseAndWriteRun({root_ + "/empty"}, *cfg, root_ + "/z", {}, &run).status().code(),
            base::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(root_ + "/z"));
}

TEST_F(RunPipelineTest, AnInputWhoseCsvsCannotBeWrittenFailsTheRunWithItsPathAndLeavesNoDatabase) {
  // Input 1's folder is taken by a file: its CSVs fail, whatever thread writes them; the run's
  // error names it, the other inputs are still analysed, and analysis.db is never committed.
  const std::vector<std::string> paths = {kInputs + "hta_cpu_only_rank-34.json.gz", kInputs + "kineto_launches.json",
                                          kInputs + "torch113_legacy_gloo_ddp_rank0.json.gz"};
  for (size_t jobs : {1, 2, 3}) {
    auto cfg = MakeRunConfig({}, jobs);
    ASSERT_TRUE(cfg.ok());
    const std::string out = root_ + "/blocked" + std::to_string(jobs);
    fs::create_directories(out);
    std::ofstream(out + "/" + InputNames(paths)[1]) << "not a folder";
    RunAnalysis run;
    auto w = AnalyseAndWriteRun(paths, *cfg, out, {}, &run);
    ASSERT_FALSE(w.ok()) << jobs;
    EXPECT_EQ(w.status().code(), base::StatusCode::kIoError);
    EXPECT_NE(w.status().message().find(InputNames(paths)[1]), std::string::npos) << w.status().message();
    EXPECT_EQ(run.analysed(), 3u);
    EXPECT_FALSE(fs::exists(out + "/analysis.db"));
    EXPECT_FALSE(fs::exists(out + "/analysis.db.tmp"));
    EXPECT_FALSE(fs::exists(out + "/summary.json"));
  }
}

TEST_F(RunPipelineTest, ASqliteWriterDroppedBeforeCommitLeavesNoFile) {
  Table t{"t", {{"x", ColumnType::kInt, ""}}, {{int64_t{1}}, {int64_t{2}}}};
  {
    auto w = SqliteWriter::Open(root_ + "/a.db");
    ASSERT_TRUE(w.ok()) << w.status().message();
    ASSERT_TRUE((*w)->Add({{{"in", &t}}, true}).ok());
  }
  EXPECT_FALSE(fs::exists(root_ + "/a.db"));
  EXPECT_FALSE(fs::exists(root_ + "/a.db.tmp"));
  auto w = SqliteWriter::Open(root_ + "/a.db");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Add({{{"in", &t}}, true}).ok());
  ASSERT_TRUE((*w)->Commit().ok());
  EXPECT_TRUE(fs::exists(root_ + "/a.db"));
  EXPECT_EQ((*w)->Commit().code(), base::StatusCode::kIoError);  // once only
  EXPECT_EQ(SqliteWriter::Open(root_ + "/no/such/dir/a.db").status().code(), base::StatusCode::kIoError);
  // Closed but never published: the file in place is kept as it was, the temporary one goes.
  const std::string before = Slurp(root_ + "/a.db");
  Table u{"u", {{"y", ColumnType::kInt, ""}}, {{int64_t{3}}}};
  {
    auto c = SqliteWriter::Open(root_ + "/a.db");
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Add({{{"in", &u}}, true}).ok());
    ASSERT_TRUE((*c)->Close().ok());
    EXPECT_TRUE(fs::exists(root_ + "/a.db.tmp"));
  }
  EXPECT_FALSE(fs::exists(root_ + "/a.db.tmp"));
  EXPECT_EQ(Slurp(root_ + "/a.db"), before);
  // Closed, then published: the new file.
  auto p = SqliteWriter::Open(root_ + "/a.db");
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*p)->Add({{{"in", &u}}, true}).ok());
  EXPECT_EQ((*p)->Publish().code(), base::StatusCode::kIoError);  // not closed yet
  ASSERT_TRUE((*p)->Close().ok());
  ASSERT_TRUE((*p)->Publish().ok());
  EXPECT_NE(Slurp(root_ + "/a.db"), before);
  EXPECT_FALSE(fs::exists(root_ + "/a.db.tmp"));
  EXPECT_EQ((*p)->Publish().code(), base::StatusCode::kIoError);  // once only
}

TEST_F(RunPipelineTest, AFileNameThatIsNotUtf8IsWrittenNotThrown) {
  fs::create_directories(root_ + "/in");
  fs::copy_file(kInputs + "hta_cpu_only_rank-34.json.gz", root_ + "/in/tr\xff.json.gz");
  auto cfg = MakeRunConfig({});
  ASSERT_TRUE(cfg.ok());
  auto run = AnalyseRun({root_ + "/in"}, *cfg);
  ASSERT_TRUE(run.ok()) << run.status().message();
  ASSERT_EQ(run->analysed(), 1u);
  auto w = WriteRunOutputs(*run, root_ + "/out");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_NE(Slurp(root_ + "/out/summary.json").find("tr\xef\xbf\xbd.json.gz"), std::string::npos);  // U+FFFD
}

TEST_F(RunPipelineTest, ActivityLanesOnlyForRunsOfAtMostActivityMaxInputs) {
  auto cfg = MakeRunConfig(Settings());
  ASSERT_TRUE(cfg.ok());
  cfg->options.activity_spans = 100;
  const std::string run_dir = kInputs + "grpo_tiny_step2";  // 4 discrete captures with host operators
  auto lanes = [&](size_t max_inputs) {
    cfg->activity_max_inputs = max_inputs;
    auto run = AnalyseRun({run_dir}, *cfg);
    EXPECT_TRUE(run.ok());
    size_t n = 0;
    for (const auto& in : run->inputs) n += in.analysis.activity.size();
    return std::make_pair(run->inputs.size(), n);
  };
  const auto [inputs, all] = lanes(SIZE_MAX);
  EXPECT_GT(all, 0u);
  EXPECT_EQ(lanes(inputs).second, all);
  EXPECT_EQ(lanes(inputs - 1).second, 0u);
}

TEST_F(RunPipelineTest, NoTraceUnderThePathsIsNotFound) {
  auto cfg = MakeRunConfig({});
  ASSERT_TRUE(cfg.ok());
  fs::create_directories(root_ + "/empty");
  auto run = AnalyseRun({root_ + "/empty"}, *cfg);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), base::StatusCode::kNotFound);
  EXPECT_NE(run.status().message().find("empty"), std::string::npos);
}

}  // namespace
}  // namespace rlprof::analysis
