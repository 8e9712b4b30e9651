#include "src/analysis/run_pipeline.h"

#include <gtest/gtest.h>
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
  EXPECT_EQ(MakeRunConfig(Settings("clip", "tracelens")).status().code(), base::StatusCode::kInvalidArgument);
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
  EXPECT_EQ(tables[tables.size() - 2].name, "stage_across_ranks");
  EXPECT_EQ(tables.back().name, "run_view");
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

TEST_F(RunPipelineTest, OnePassWritesTheSameFilesAsAnalyseThenWriteAndTheSameDatabaseAsTheConcatenatedTables) {
  std::ofstream(root_ + "/bad.json") << "this is not a trace";
  const std::vector<std::string> paths = {kInputs, root_ + "/bad.json"};
  auto cfg = MakeRunConfig({}, 2);
  ASSERT_TRUE(cfg.ok());
  // AnalyseAndWriteRun: CSVs on the workers, analysis.db on its own thread, the callback beside it.
  RunAnalysis one;
  int calls = 0;
  RunWriteOptions opts;
  opts.while_db = [&](const nlohmann::json& summary) {
    ++calls;
    EXPECT_EQ(summary["output"], root_ + "/a");
    return base::Status::Ok();
  };
  auto a = AnalyseAndWriteRun(paths, *cfg, root_ + "/a", opts, &one);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(calls, 1);
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
  // The database built from each input's tables in place (32 rows per INSERT) is the file that
  // WriteSqlite writes from the concatenated tables, one row per INSERT.
  size_t rows = 0;
  const std::vector<Table> merged = RunTables(*run);
  for (const auto& t : merged) rows = std::max(rows, t.rows.size());
  EXPECT_GT(rows, 100u);  // several full batches and a remainder
  ASSERT_TRUE(WriteSqlite(merged, root_ + "/concat.db").ok());
  EXPECT_TRUE(Slurp(root_ + "/concat.db") == fa["analysis.db"]);
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
  // The run-level callback's failure is the run's; analysis.db is not left behind half-written.
  RunWriteOptions opts;
  opts.while_db = [](const nlohmann::json&) { return base::IoError("report.html: disk full"); };
  auto w = AnalyseAndWriteRun(paths, *cfg, root_ + "/y", opts, &run);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), "report.html: disk full");
  EXPECT_FALSE(fs::exists(root_ + "/y/analysis.db.tmp"));
  EXPECT_TRUE(fs::exists(root_ + "/y/summary.json"));
  // No trace: NotFound, nothing written, `run` untouched.
  fs::create_directories(root_ + "/empty");
  EXPECT_EQ(AnalyseAndWriteRun({root_ + "/empty"}, *cfg, root_ + "/z", {}, &run).status().code(),
            base::StatusCode::kNotFound);
  EXPECT_FALSE(fs::exists(root_ + "/z"));
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
