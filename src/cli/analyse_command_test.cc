// `rlprof analyse` and `rlprof summary`: outputs, JSON, exports and exit codes.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/cli/cli.h"
#include "src/cli/cli_test_util.h"
#include "src/format/raw.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;
using format::Event;

const std::string kInputs = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/inputs/";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

class AnalyseCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("rlprof_cli_analyse_" + std::to_string(::getpid())) /
             ::testing::UnitTest::GetInstance()->current_test_info()->name())
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  // An rlprof capture: one step [1000, 101000) ns with a kernel and a collective on a stream.
  std::string WriteCapture() {
    std::string dir = root_ + "/run1/step2/e2e/rank0-h-77";
    fs::create_directories(dir);
    std::ofstream(dir + "/manifest.json")
        << R"({"format": "rlprof-capture", "format_version": 1, "run_id": "run1",
               "scope": "e2e", "identity": {"rank": 0, "host": "h", "pid": 77},
               "complete": true})";
    auto w = format::RawWriter::Create(dir + "/events.rlp", {0, 77, "h"});
    EXPECT_TRUE(w.ok());
    std::vector<format::StringEntry> strings = {
        {1, "step"}, {2, "actor_update"}, {3, "actor"}, {4, "gemm_kernel"}, {5, "ncclDevKernel_AllReduce"}};
    EXPECT_TRUE((*w)->AddStrings(strings).ok());
    format::TrackEntry tracks[] = {{1, format::TrackKind::kThread, 77, 77, "main"},
                                   {2, format::TrackKind::kDeviceStream, 0, 7, "stream 7"},
                                   {3, format::TrackKind::kDeviceStream, 0, 20, "stream 20"}};
    EXPECT_TRUE((*w)->AddTracks(tracks).ok());
    std::vector<Event> events = {
        {1000, 100000, 1, 1, format::EventKind::kComplete, format::Category::kStep, 2, 0},
        {2000, 80000, 2, 1, format::EventKind::kComplete, format::Category::kStage, 0, 3},
        {10000, 40000, 4, 2, format::EventKind::kComplete, format::Category::kKernel, 0, 0},
        {40000, 20000, 5, 3, format::EventKind::kComplete, format::Category::kCommunication, 0, 0},
    };
    EXPECT_TRUE((*w)->AddEvents(events).ok());
    EXPECT_TRUE((*w)->Close().ok());
    return dir;
  }
  std::string root_;
};

TEST_F(AnalyseCommandTest, WritesCsvsPerInputAndRunLevelSummaryAndDatabase) {
  std::string out, err, o = root_ + "/out";
  ASSERT_EQ(RunArgs({"analyse", kInputs + "tracelens_h100_falconsai.json.gz",
                     kInputs + "torch113_legacy_gloo_ddp_rank0.json.gz", "-o", o, "--jobs", "2"},
                    &out, &err),
            kExitOk)
      << err;
  for (const char* in : {"tracelens_h100_falconsai.json.gz", "torch113_legacy_gloo_ddp_rank0.json.gz"})
    for (const char* f : {"step_trace_time.csv", "op_statistic.csv", "kernel_details.csv", "stage_time.csv"})
      EXPECT_TRUE(fs::exists(o + "/" + in + "/" + f)) << in << "/" << f;
  std::string csv = Slurp(o + "/torch113_legacy_gloo_ddp_rank0.json.gz/step_trace_time.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
            "Communication(Not Overlapped and Exclude Receive),Preparing");
  auto summary = nlohmann::json::parse(Slurp(o + "/summary.json"));
  EXPECT_EQ(summary["schema_version"], 1);
  ASSERT_EQ(summary["inputs"].size(), 2u);
  for (const auto& in : summary["inputs"])
    EXPECT_EQ(in["cpu_only"], in["name"].get<std::string>().starts_with("torch113")) << in["name"];
  EXPECT_TRUE(summary["inputs"][0]["diagnostics"].is_object());

  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((o + "/analysis.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM step_trace_time WHERE input LIKE 'torch113%'",
                               -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), 20);
  sqlite3_finalize(st);
  sqlite3_close(db);
  EXPECT_NE(out.find("2/2 inputs analysed"), std::string::npos) << out;
}

// Issue 11: a run of 8 discrete captures (4 stages × 2 ranks) is one table, not 8 + 1.
TEST_F(AnalyseCommandTest, SummaryViewRlOfADiscreteRunPrintsOneTableForTheRun) {
  std::string out, err;
  const std::string run = kInputs + "grpo_tiny_step2";
  ASSERT_EQ(RunArgs({"summary", run, "--view", "rl"}, &out, &err), kExitOk) << err;
  size_t tables = 0;
  for (size_t p = out.find("-- "); p != std::string::npos; p = out.find("\n-- ", p + 1)) ++tables;
  EXPECT_EQ(tables, 1u) << out;
  EXPECT_EQ(out.find("== run: 8 input(s), 2 rank(s)\n-- run_view (us)\n"), 0u) << out;
  EXPECT_EQ(out.find("stage_time"), std::string::npos) << out;
  EXPECT_EQ(out.find("(none)"), std::string::npos) << out;
  for (const char* stage : {"rollout_generate", "ref_compute_log_prob", "actor_compute_log_prob", "actor_update"})
    EXPECT_NE(out.find(stage), std::string::npos) << stage;
  EXPECT_NE(out.find("rank0"), std::string::npos);
  EXPECT_NE(out.find("critical_rank"), std::string::npos);
  // Stand-in markers are notes, not problems.
  EXPECT_NE(out.find("diagnostics (all inputs): none\nnotes: stage_from_manifest=2 step_from_manifest=8\n"),
            std::string::npos)
      << out;

  ASSERT_EQ(RunArgs({"summary", run, "--view", "rl", "--per-capture"}, &out, &err), kExitOk) << err;
  size_t per_input = 0;
  for (size_t p = out.find("-- stage_time"); p != std::string::npos; p = out.find("-- stage_time", p + 1))
    ++per_input;
  EXPECT_EQ(per_input, 8u);
  EXPECT_NE(out.find("-- stage_across_ranks"), std::string::npos);
  EXPECT_NE(out.find("-- run_view"), std::string::npos);

  ASSERT_EQ(RunArgs({"summary", run, "--view", "rl", "--json"}, &out, &err), kExitOk) << err;
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["inputs"].size(), 8u);
  ASSERT_EQ(j["run_view"]["rows"].size(), 8u);  // 4 stages, 3 gaps, the stage span
  EXPECT_EQ(j["run_view"]["columns"][6]["name"], "rank0");
  EXPECT_EQ(j["run_view"]["rows"][7][1], "stage_span");
}

TEST_F(AnalyseCommandTest, AnalyseWritesTheRunViewWithTheStepWindowOfAnEndToEndCapture) {
  WriteCapture();
  std::string out, err, o = root_ + "/out";
  ASSERT_EQ(RunArgs({"analyse", root_ + "/run1", "-o", o}, &out, &err), kExitOk) << err;
  const std::string csv = Slurp(o + "/run_view.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "step,kind,role,stage,start,ranks,rank0,min,mean,max,critical_rank,partial");
  // Step [1, 101) µs, stage [2, 82) µs: 1 µs before it, 19 µs after it, a 100 µs step.
  EXPECT_NE(csv.find("2,gap,actor,actor_update,,1,1,1,1,1,,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("2,stage,actor,actor_update,1,1,80,80,80,80,rank0,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("2,gap,,(end of step),,1,19,19,19,19,,0\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("2,step_window,,(step window),0,1,100,100,100,100,rank0,0\n"), std::string::npos) << csv;
  auto summary = nlohmann::json::parse(Slurp(o + "/summary.json"));
  EXPECT_EQ(summary["run_view"]["rows"].size(), 5u);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((o + "/analysis.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT rank0 FROM run_view WHERE kind = 'step_window'", -1, &st, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_DOUBLE_EQ(sqlite3_column_double(st, 0), 100.0);
  sqlite3_finalize(st);
  sqlite3_close(db);
}

TEST_F(AnalyseCommandTest, StepMarkerMakesUserRangesTheStepsAndABadRegexIsAUsageError) {
  std::string out, err;
  const std::string in = kInputs + "torch113_legacy_gloo_ddp_rank0.json.gz";
  ASSERT_EQ(RunArgs({"summary", in, "--step-marker", "^forward$", "--json"}, &out, &err), kExitOk) << err;
  auto j = nlohmann::json::parse(out);
  const auto& rows = j["inputs"][0]["tables"]["step_trace_time"]["rows"];
  ASSERT_EQ(rows.size(), 20u);  // one forward per step: numbered by occurrence
  EXPECT_EQ(rows[0][0], 1);
  EXPECT_EQ(rows[19][0], 20);
  out.clear();
  err.clear();
  EXPECT_EQ(RunArgs({"analyse", in, "-o", root_ + "/o", "--step-marker", "(unclosed"}, &out, &err),
            kExitUsage);
  EXPECT_NE(err.find("--step-marker '(unclosed' is not a valid regular expression"), std::string::npos)
      << err;
}

TEST_F(AnalyseCommandTest, CompareWritesItsTablesAndRejectsAMissingSide) {
  std::string out, err, o = root_ + "/cmp";
  const std::string base = kInputs + "hta_trace_compare_base_base.json.gz";
  const std::string test = kInputs + "hta_trace_compare_test_test.json.gz";
  ASSERT_EQ(RunArgs({"compare", base, test, "-o", o, "--top", "3"}, &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("-- compare_stages"), std::string::npos) << out;
  for (const char* f : {"compare_steps.csv", "compare_stages.csv", "compare_ops.csv", "compare.json"})
    EXPECT_TRUE(fs::exists(o + "/" + f)) << f;
  auto j = nlohmann::json::parse(Slurp(o + "/compare.json"));
  EXPECT_EQ(j["format"], "rlprof-compare");
  EXPECT_EQ(j["compare_ops"]["rows"].size(), 3u);
  out.clear();
  err.clear();
  EXPECT_EQ(RunArgs({"compare", base, root_ + "/nothing-here"}, &out, &err), kExitBadInput);
  EXPECT_NE(err.find("rlprof compare: new:"), std::string::npos) << err;
  EXPECT_EQ(RunArgs({"compare", base}, &out, &err), kExitUsage);
}

TEST_F(AnalyseCommandTest, ReportWritesOneSelfContainedPageWithTheComparison) {
  std::string out, err, html = root_ + "/r.html";
  const std::string base = kInputs + "hta_trace_compare_base_base.json.gz";
  const std::string test = kInputs + "hta_trace_compare_test_test.json.gz";
  ASSERT_EQ(RunArgs({"report", test, "--baseline", base, "-o", html, "--title", "t<1>"}, &out, &err),
            kExitOk)
      << err;
  EXPECT_NE(out.find("compared with"), std::string::npos) << out;
  const std::string page = Slurp(html);
  const std::string open = "<script id=\"rlprof-data\" type=\"application/json\">";
  const size_t a = page.find(open), b = page.find("</script>", a);
  ASSERT_NE(a, std::string::npos);
  auto data = nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
  EXPECT_EQ(data["title"], "t<1>");
  EXPECT_EQ(data["model"], "rlprof-report");  // the compact model (src/report/report_model.cc)
  EXPECT_EQ(data["inputs"]["name"].size(), 1u);
  EXPECT_TRUE(data["input_ops"].contains("0"));  // a small run keeps each input's operators
  EXPECT_EQ(data["compare"]["compare_steps"]["rows"].size(), 8u);
  // analyse writes the same page next to summary.json, device and host lanes included (it said
  // "no device or host activity recorded" where report and serve showed them).
  ASSERT_EQ(RunArgs({"analyse", test, "-o", root_ + "/an"}, &out, &err), kExitOk) << err;
  EXPECT_TRUE(fs::exists(root_ + "/an/report.html"));
  auto lanes = [&](const std::string& file) {
    const std::string p = Slurp(file);
    const size_t x = p.find(open), y = p.find("</script>", x);
    return nlohmann::json::parse(p.substr(x + open.size(), y - x - open.size()))["activity"]["lanes"]["name"];
  };
  ASSERT_EQ(RunArgs({"report", test, "-o", root_ + "/r2.html"}, &out, &err), kExitOk) << err;
  EXPECT_FALSE(lanes(root_ + "/r2.html").empty());
  EXPECT_EQ(lanes(root_ + "/an/report.html"), lanes(root_ + "/r2.html"));
  EXPECT_EQ(RunArgs({"report", root_ + "/missing"}, &out, &err), kExitBadInput);
  EXPECT_EQ(RunArgs({"report", test, "-o", "/proc/rlprof_no/r.html"}, &out, &err), kExitOutputError);
}

TEST_F(AnalyseCommandTest, ClusterOfTheTwoRankGrpoStepWritesItsTables) {
  std::string out, err, o = root_ + "/cl";
  ASSERT_EQ(RunArgs({"cluster", kInputs + "grpo_tiny_step2", "-o", o}, &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("-- slow_rank"), std::string::npos) << out;
  auto j = nlohmann::json::parse(Slurp(o + "/cluster.json"));
  EXPECT_EQ(j["format"], "rlprof-cluster");
  EXPECT_EQ(j["cluster_step_trace_time"]["rows"].size(), 8u);  // 4 captures x 2 ranks
  // DDP's all-reduce of actor_update, seen by both ranks: one row per instance.
  bool gloo = false;
  for (const auto& row : j["collectives"]["rows"]) gloo = gloo || row[1] == "gloo:all_reduce";
  EXPECT_TRUE(gloo);
  for (const char* f : {"cluster_step_trace_time.csv", "cluster_balance.csv", "slow_rank.csv", "collectives.csv"})
    EXPECT_TRUE(fs::exists(o + "/" + f)) << f;
  EXPECT_EQ(RunArgs({"cluster", root_ + "/missing"}, &out, &err), kExitBadInput);
}

TEST_F(AnalyseCommandTest, AnalysesAnRlprofCaptureAndExportsIt) {
  std::string cap = WriteCapture();
  std::string out, err, o = root_ + "/out";
  ASSERT_EQ(RunArgs({"analyse", root_ + "/run1", "-o", o, "--export", "text,db", "--json"}, &out, &err),
            kExitOk)
      << err;
  auto j = nlohmann::json::parse(out);
  ASSERT_EQ(j["inputs"].size(), 1u);
  const auto& in = j["inputs"][0];
  EXPECT_EQ(in["format"], "rlprof");
  EXPECT_EQ(in["rank"], 0);
  const auto& row = in["step_trace_time"]["rows"][0];
  EXPECT_EQ(row[0], 2);           // step number from the marker
  EXPECT_DOUBLE_EQ(row[1], 40);   // Computing µs
  EXPECT_DOUBLE_EQ(row[2], 10);   // Communication(Not Overlapped)
  EXPECT_DOUBLE_EQ(row[3], 10);   // Overlapped
  const std::string name = in["name"];
  EXPECT_TRUE(fs::exists(o + "/" + name + "/trace.json.gz"));
  EXPECT_TRUE(fs::exists(o + "/" + name + "/trace.db"));
}

TEST_F(AnalyseCommandTest, MissingInputAndBadRulesAreBadInput) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"analyse", root_ + "/nope", "-o", root_ + "/o"}, &out, &err), kExitBadInput);
  EXPECT_NE(err.find("nope"), std::string::npos);
  std::ofstream(root_ + "/rules.yaml") << "rules:\n  - {name: x, class: gpu}\n";
  EXPECT_EQ(RunArgs({"analyse", kInputs + "hta_cpu_only_rank-34.json.gz", "--rules", root_ + "/rules.yaml",
                     "-o", root_ + "/o"},
                    &out, &err),
            kExitBadInput);
  EXPECT_NE(err.find("rules[0].class"), std::string::npos) << err;
}

// --view tb: torch-tb-profiler 0.4.3's step time (src/analysis/passes/tb_steps_test.cc has its figures),
// in --view all and in the files of `rlprof analyse`.
TEST_F(AnalyseCommandTest, ViewTbPrintsTheTensorBoardPluginsStepTime) {
  const std::string trace = std::string(RLPROF_SOURCE_DIR) + "/test/data/tb_plugin/tb_legacy.json";
  std::string out, err;
  ASSERT_EQ(RunArgs({"summary", trace, "--view", "tb"}, &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("-- tb_step_time (us)"), std::string::npos) << out;
  EXPECT_NE(out.find("   3  274.750   0.000   5.000          0.000   10.000      69.875    15.000  15.500  390.125"),
            std::string::npos)
      << out;
  ASSERT_EQ(RunArgs({"summary", trace, "--view", "all", "--json"}, &out, &err), kExitOk) << err;
  const auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["inputs"][0]["tables"]["tb_step_time"]["rows"].size(), 3u);
  ASSERT_EQ(RunArgs({"analyse", trace, "-o", root_ + "/tb"}, &out, &err), kExitOk) << err;
  std::ifstream f(root_ + "/tb/tb_legacy.json/tb_step_time.csv");
  ASSERT_TRUE(f.good());
  std::stringstream csv;
  csv << f.rdbuf();
  EXPECT_EQ(csv.str(),
            "step,kernel,memcpy,memset,communication,runtime,dataloader,cpu_exec,other,total\n"
            "3,274.75,0,5,0,10,69.875,15,15.5,390.125\n"
            "4,110,50.5,0,169.75,9.5,0,10,30,379.75\n"
            "5,410.75,0,0,0,7,49.5,22.25,10.5,500\n");
}

TEST_F(AnalyseCommandTest, UnwritableOutputIsAnOutputError) {
  std::ofstream(root_ + "/file") << "x";
  std::string out, err;
  EXPECT_EQ(RunArgs({"analyse", kInputs + "hta_cpu_only_rank-34.json.gz", "-o", root_ + "/file/sub"},
                    &out, &err),
            kExitOutputError);
}

TEST_F(AnalyseCommandTest, SummaryPrintsAlignedViewsAndStableJson) {
  std::string out, err;
  ASSERT_EQ(RunArgs({"summary", kInputs + "tracelens_h100_falconsai.json.gz", "--view", "tracelens"},
                    &out, &err),
            kExitOk)
      << err;
  EXPECT_NE(out.find("-- gpu_timeline"), std::string::npos);
  EXPECT_NE(out.find("type                 time ms  percent (%)"), std::string::npos) << out;
  EXPECT_NE(out.find("computation_time"), std::string::npos);
  ASSERT_EQ(RunArgs({"summary", kInputs + "torch113_legacy_gloo_ddp_rank0.json.gz", "--view", "rl", "--json"},
                    &out, &err),
            kExitOk);
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["view"], "rl");
  const auto& t = j["inputs"][0]["tables"]["stage_time"];
  EXPECT_EQ(t["columns"][3]["name"], "stage");
  EXPECT_GT(t["rows"].size(), 20u);
  EXPECT_EQ(RunArgs({"summary", kInputs + "x.json", "--view", "rl"}, &out, &err), kExitBadInput);
}

}  // namespace
}  // namespace rlprof::cli
