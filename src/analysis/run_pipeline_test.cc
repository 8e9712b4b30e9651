#include "src/analysis/run_pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
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
