// Golden outputs of the analysis (test/golden/analysis/).
//
// Data-driven cases: every folder test/golden/analysis/<case>/ holding a case.json is one test
// (AnalysisGoldenCases/<case>), run by one runner:
//   {"about": "what it shows",
//    "inputs": ["inputs/trace.json.gz"],       // files or folders, relative to test/golden/analysis
//    "baseline": ["inputs/base.json.gz"],      // optional: a comparison, baseline vs inputs
//    "options": {"assign": "clip", "compat": "native", "step_marker": "REGEX"},  // optional
//    "jobs": 2,                                // optional
//    "tables": ["step_trace_time", …],         // each input's tables: <case>/<table>.csv, or
//                                              // <case>/<input name>/<table>.csv for several inputs
//    "run_tables": ["run_view", "stage_across_ranks", "compare_steps", "findings", …]}  // <case>/<table>.csv
// To add a case: a folder with case.json (its inputs under inputs/ with their provenance in
// inputs/PROVENANCE.md), then RLPROF_UPDATE_GOLDEN=1 writes the expected files; review them.
//
// Hand-written below: the worked example A (built in C++, test_traces.h) as every table,
// TraceLens's own gpu_timeline for its H100 trace, and the invariants each data case must also
// hold (they read the same inputs; their tables are the runner's).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "src/base/golden_test_util.h"
#include "src/analysis/advise/advise.h"
#include "src/analysis/passes/analyse.h"
#include "src/analysis/run/compare.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/run/run.h"
#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/run/run_view.h"
#include "src/analysis/tables/tables.h"
#include "src/analysis/model/test_traces.h"
#include "src/base/files.h"
#include "src/base/strings.h"

namespace rlprof::analysis {
namespace {

const std::string kGolden = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/";

void ExpectGolden(const std::string& rel, const std::string& actual) {
  EXPECT_GOLDEN(kGolden + rel, actual);
}

void ExpectTablesGolden(const std::string& dir, const TraceAnalysis& a,
                        const std::vector<std::string>& names) {
  for (const auto& t : AllTables(a))
    for (const auto& n : names)
      if (t.name == n) ExpectGolden(dir + "/" + n + ".csv", ToCsv(t));
}

TEST(GoldenTest, ExampleAEveryTable) {
  TraceAnalysis a = AnalyseTrace(testing::ExampleA(), Classifier::Default(), {});
  ExpectTablesGolden("example_a", a,
                     {"step_trace_time", "step_atoms", "stage_time", "comm_by_group", "op_statistic", "kernel_details",
                      "hta_temporal_breakdown", "hta_idle_breakdown", "gpu_timeline", "classes",
                      "diagnostics"});
}

std::map<std::string, double> ReadTimeline(const std::string& csv) {
  std::map<std::string, double> out;
  for (const auto& line : base::Split(csv, '\n')) {
    auto f = base::Split(line, ',');
    if (f.size() < 2 || f[0] == "type") continue;
    out[f[0]] = std::stod(f[1]);
  }
  return out;
}

TEST(GoldenTest, TraceLensH100TimelineMatchesTraceLensWithinOnePpm) {
  auto t = ReadTrace(kGolden + "inputs/tracelens_h100_falconsai.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), {});
  auto expected_csv = base::ReadFile(kGolden + "inputs/tracelens_h100_falconsai.gpu_timeline.csv");
  ASSERT_TRUE(expected_csv.ok());
  auto expected = ReadTimeline(*expected_csv);
  auto actual = ReadTimeline(ToCsv(GpuTimelineTable(a)));
  ASSERT_EQ(expected.size(), 8u);
  for (const auto& [name, want] : expected) {
    ASSERT_TRUE(actual.count(name)) << name;
    const double got = actual[name];
    if (want == 0) EXPECT_EQ(got, 0) << name;
    else EXPECT_LE(std::fabs(got - want) / std::fabs(want), 1e-6) << name << ": " << got << " vs " << want;
  }
  // TraceLens's own invariant, exact here (int64 ns).
  const auto& r = a.tracelens;
  EXPECT_EQ(r.computation + r.exposed_comm + r.exposed_memcpy + r.idle, r.total);
}

// A small hand-written Kineto trace with known launches (inputs/kineto_launches.json): each
// host operator's device time is that of the kernels launched by runtime calls it innermost
// encloses (docs/definitions.md §5.5). aten::mul's External id equals a kernel's correlation
// id (Kineto numbers them apart): it launched nothing.
TEST(GoldenTest, KinetoHostOpsCarryTheDeviceTimeTheyLaunched) {
  auto t = ReadTrace(kGolden + "inputs/kineto_launches.json");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), {});
  std::map<std::string, OpStat> ops;
  for (const OpStat& o : a.host_ops) ops[o.name] = o;
  EXPECT_EQ(ops["aten::addmm"].device_total, 30000);
  EXPECT_EQ(ops["aten::addmm"].kernels, 2);
  EXPECT_EQ(ops["aten::linear"].device_total, 5000);
  EXPECT_EQ(ops["aten::linear"].kernels, 1);
  EXPECT_EQ(ops["aten::copy_"].device_total, 15000);  // the memcpy
  EXPECT_EQ(ops["aten::copy_"].kernels, 1);
  EXPECT_EQ(ops["aten::mul"].kernels, 0);
  EXPECT_EQ(ops["cudaLaunchKernel"].kernels, 0);
}

// A real H100 Kineto trace: every host-credited kernel is a counted device row, and most
// device work is credited to some operator.
TEST(GoldenTest, TraceLensH100DeviceTimeOfHostOpsIsBoundedByTheDeviceRows) {
  auto t = ReadTrace(kGolden + "inputs/tracelens_h100_falconsai.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), {});
  int64_t host_kernels = 0, host_time = 0, device_kernels = 0, device_time = 0;
  for (const OpStat& o : a.host_ops) host_kernels += o.kernels, host_time += o.device_total;
  for (const OpStat& o : a.kernels) device_kernels += o.count, device_time += o.total;
  EXPECT_GT(host_kernels, 0);
  EXPECT_LE(host_kernels, device_kernels);
  EXPECT_LE(host_time, device_time);
  EXPECT_GT(host_time, device_time / 2);
}

TEST(GoldenTest, TorchWithoutKinetoGivesCpuOnlyBreakdowns) {
  auto t = ReadTrace(kGolden + "inputs/torch113_legacy_gloo_ddp_rank0.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), {});
  EXPECT_TRUE(a.cpu_only);
  ASSERT_EQ(a.steps.size(), 20u);
  for (const auto& s : a.steps) {
    EXPECT_GT(s.atoms.compute(), 0) << "step " << s.window.step;
    EXPECT_EQ(s.atoms.sum(), s.window.end - s.window.start);
  }
  int64_t comm = 0;
  for (const auto& s : a.steps) comm += s.atoms.comm();
  EXPECT_GT(comm, 0);  // gloo all_reduce on the worker threads
  for (const auto& [k, v] : a.diagnostics.counts) EXPECT_NE(k.rfind("invariant_", 0), 0u) << k;
}

TEST(GoldenTest, HtaCpuOnlyTraceDoesNotNeedDeviceEvents) {
  auto t = ReadTrace(kGolden + "inputs/hta_cpu_only_rank-34.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), {});
  EXPECT_TRUE(a.cpu_only);
  EXPECT_EQ(a.rank, 34);
  EXPECT_TRUE(a.kernel_rows.empty());
}

// Step 2 of `grpo_tiny.py --ranks 2 --steps 3 --small` profiled from grpo_verl.yaml (steps
// [2]): one discrete capture per stage and rank (the rollout's is its decode schedule).
TEST(GoldenTest, GrpoCapturesOfBothRanksGiveEveryStageAndTheCrossRankView) {
  auto inputs = FindTraceInputs({kGolden + "inputs/grpo_tiny_step2"});
  ASSERT_TRUE(inputs.ok()) << inputs.status().ToString();
  ASSERT_EQ(inputs->size(), 8u);
  std::vector<InputResult> results = AnalyseInputs(*inputs, Classifier::Default(), {}, 2);
  std::map<std::string, int> stages_seen;
  for (const auto& r : results) {
    ASSERT_TRUE(r.status.ok()) << r.input << ": " << r.status.ToString();
    const TraceAnalysis& a = r.analysis;
    EXPECT_EQ(a.format, "rlprof");
    EXPECT_TRUE(a.cpu_only) << r.name;
    ASSERT_EQ(a.steps.size(), 1u) << r.name;
    EXPECT_EQ(a.steps[0].window.step, 2) << r.name;
    EXPECT_FALSE(a.steps[0].window.partial) << r.name << ": " << a.steps[0].window.partial_reason;
    EXPECT_GT(a.steps[0].atoms.compute(), 0) << r.name;
    EXPECT_GT(a.host_ops.size(), 0u) << r.name;
    for (const auto& [k, v] : a.diagnostics.counts) EXPECT_NE(k.rfind("invariant_", 0), 0u) << k;
    // The capture's directory names its stage; the analysis finds it there.
    const std::string stage = std::filesystem::path(r.input).parent_path().filename().string();
    bool found = false;
    for (const auto& st : a.stages) found = found || st.name == stage;
    EXPECT_TRUE(found) << r.name;
    ++stages_seen[stage];
    // DDP's gradient all-reduce (gloo) is communication, on both ranks.
    if (stage == "actor_update") {
      EXPECT_GT(a.steps[0].atoms.comm(), 0) << r.name;
    }
  }
  EXPECT_EQ(stages_seen, (std::map<std::string, int>{{"actor_compute_log_prob", 2},
                                                     {"actor_update", 2},
                                                     {"ref_compute_log_prob", 2},
                                                     {"rollout_generate", 2}}));
  // The run view: the 8 captures are one step of 4 stages on 2 ranks, stages in the order the
  // GRPO loop runs them, every gap ≥ 0; the rollout capture is a decode schedule (sampled).
  RunView v = BuildRunView(results);
  EXPECT_EQ(v.lanes, (std::vector<std::string>{"rank0", "rank1"}));
  std::vector<std::string> stages;
  for (const auto& row : v.rows) {
    EXPECT_EQ(row.step, 2);
    EXPECT_NE(row.kind, RunViewKind::kStepWindow);  // discrete captures do not hold the step
    if (row.kind == RunViewKind::kStage) stages.push_back(row.stage);
    if (row.kind == RunViewKind::kStage) EXPECT_EQ(row.partial, row.stage == "rollout_generate");
    for (const auto& x : row.per_lane) {
      ASSERT_TRUE(x.has_value()) << row.stage;
      EXPECT_GE(*x, 0) << row.stage;
    }
  }
  EXPECT_EQ(stages, (std::vector<std::string>{"rollout_generate", "ref_compute_log_prob",
                                              "actor_compute_log_prob", "actor_update"}));
}

// HTA's own trace-compare fixtures (tests/data/trace_compare): baseline vs new, every table.
TEST(GoldenTest, CompareOfHtasTraceCompareFixtures) {
  auto base = AnalyseInputs({kGolden + "inputs/hta_trace_compare_base_base.json.gz"},
                            Classifier::Default(), {}, 1);
  auto test = AnalyseInputs({kGolden + "inputs/hta_trace_compare_test_test.json.gz"},
                            Classifier::Default(), {}, 1);
  Comparison c = CompareRuns(base, test, {});
  ASSERT_EQ(c.steps.rows.size(), 8u);
  EXPECT_GT(c.ops.rows.size(), 5u);
}

// ---- The data-driven cases.

std::vector<std::string> GoldenCases() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(kGolden, ec))
    if (std::filesystem::is_regular_file(e.path() / "case.json")) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> Paths(const nlohmann::json& c, const char* key) {
  std::vector<std::string> out;
  if (c.contains(key))
    for (const auto& p : c[key]) out.push_back(kGolden + p.get<std::string>());
  return out;
}

std::vector<InputResult> AnalyseCaseInputs(const std::vector<std::string>& paths, const AnalysisOptions& opts,
                                           size_t jobs) {
  auto inputs = FindTraceInputs(paths);
  EXPECT_TRUE(inputs.ok()) << inputs.status().ToString();
  if (!inputs.ok()) return {};
  std::vector<InputResult> results = AnalyseInputs(*inputs, Classifier::Default(), opts, jobs);
  for (const auto& r : results) EXPECT_TRUE(r.status.ok()) << r.input << ": " << r.status.ToString();
  return results;
}

class AnalysisGoldenCases : public ::testing::TestWithParam<std::string> {};

TEST_P(AnalysisGoldenCases, TablesMatchTheExpectedFiles) {
  const std::string name = GetParam();
  auto text = base::ReadFile(kGolden + name + "/case.json");
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  const nlohmann::json c = nlohmann::json::parse(*text);
  AnalysisOptions opts;
  if (c.contains("options")) {
    const auto& o = c["options"];
    if (o.contains("assign")) opts.assign = *ParseAssignMode(o["assign"].get<std::string>());
    if (o.contains("compat")) opts.compat = *ParseCompatMode(o["compat"].get<std::string>());
    if (o.contains("step_marker")) opts.step_marker = o["step_marker"].get<std::string>();
  }
  const size_t jobs = c.value("jobs", 1);
  const std::vector<InputResult> results = AnalyseCaseInputs(Paths(c, "inputs"), opts, jobs);
  ASSERT_FALSE(results.empty()) << name << ": no input";
  for (const auto& r : results) {
    const std::string dir = name + (results.size() > 1 ? "/" + r.name : "") + "/";
    std::vector<Table> all = AllTables(r.analysis);
    for (const auto& want : c.value("tables", nlohmann::json::array())) {
      auto it = std::find_if(all.begin(), all.end(), [&](const Table& t) { return t.name == want; });
      ASSERT_NE(it, all.end()) << name << ": no table " << want;
      ExpectGolden(dir + it->name + ".csv", ToCsv(*it));
    }
  }
  std::optional<Comparison> cmp;
  if (c.contains("baseline")) cmp = CompareRuns(AnalyseCaseInputs(Paths(c, "baseline"), opts, jobs), results, {});
  for (const auto& want : c.value("run_tables", nlohmann::json::array())) {
    const std::string t = want.get<std::string>();
    if (t == "run_view") {
      ExpectGolden(name + "/run_view.csv", ToCsv(RunViewTable(BuildRunView(results))));
    } else if (t == "stage_across_ranks") {
      ExpectGolden(name + "/stage_across_ranks.csv", ToCsv(StageAcrossRanksTable(results)));
    } else if (t == "findings") {  // the advisor's (issue 34), against the baseline when there is one
      const RunView view = BuildRunView(results);
      if (c.contains("baseline")) {
        const std::vector<InputResult> base = AnalyseCaseInputs(Paths(c, "baseline"), opts, jobs);
        const RunView base_view = BuildRunView(base);
        ExpectGolden(name + "/findings.csv", ToCsv(FindingsTable(Advise(results, view, &base, &base_view))));
      } else {
        ExpectGolden(name + "/findings.csv", ToCsv(FindingsTable(Advise(results, view))));
      }
    } else if (cmp && (t == cmp->steps.name || t == cmp->stages.name || t == cmp->ops.name)) {
      const Table& tab = t == cmp->steps.name ? cmp->steps : t == cmp->stages.name ? cmp->stages : cmp->ops;
      ExpectGolden(name + "/" + t + ".csv", ToCsv(tab));
    } else {
      ADD_FAILURE() << name << ": unknown run table " << t << (cmp ? "" : " (compare tables need a baseline)");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, AnalysisGoldenCases, ::testing::ValuesIn(GoldenCases()),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

// The runner finds every case folder (a case.json that no longer parses, or a folder that lost
// it, would otherwise drop out silently).
TEST(AnalysisGoldenCasesTest, EveryCaseFolderIsFound) {
  EXPECT_EQ(GoldenCases(), (std::vector<std::string>{"compare_hta", "grpo_tiny_step2", "h100_grpo_torch",
                                                     "h200_grpo_captures", "hta_cpu_only", "kineto_launches",
                                                     "torch113_legacy_gloo", "tracelens_h100"}));
}

}  // namespace
}  // namespace rlprof::analysis
