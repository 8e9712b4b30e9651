// torch-tb-profiler's step time breakdown (tb_steps.h) on the fixtures of test/data/tb_plugin/
// (written by make_fixtures.py there). The expected rows are the plugin's own figures on those
// files (PROVENANCE.md there says how they were produced): torch-tb-profiler 0.4.3 from PyPI
// for TbRules::kRelease043, the plugin's last source in pytorch/kineto (041e7ce, tb_plugin/) for
// TbRules::kKinetoMain. python/tests/test_peers_tb.py recomputes the first where the package is
// installed. ns, exact: the fixtures' µs times have ≤ 3 decimals on a 5 s origin, exact in the
// plugin's float64.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/passes/classify.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/tables/tables.h"
#include "src/analysis/passes/tb_steps.h"

namespace rlprof::analysis {
namespace {

const std::string kDir = std::string(RLPROF_SOURCE_DIR) + "/test/data/tb_plugin/";

// step, kernel, memcpy, memset, communication, runtime, dataloader, cpu_exec, other, total (ns)
using Expected = std::vector<std::vector<int64_t>>;

std::vector<std::vector<int64_t>> Rows(const std::vector<TbStepRow>& rows) {
  std::vector<std::vector<int64_t>> out;
  for (const auto& r : rows)
    out.push_back({r.step, r.kernel, r.memcpy, r.memset, r.communication, r.runtime, r.dataloader, r.cpu_exec,
                   r.other, r.total});
  return out;
}

std::vector<std::vector<int64_t>> Of(const std::string& fixture, TbRules rules) {
  auto t = ReadTrace(kDir + fixture);
  EXPECT_TRUE(t.ok()) << fixture << ": " << t.status().ToString();
  if (!t.ok()) return {};
  return Rows(TbStepTime(*t, rules));
}

// PyTorch 1.x categories (Operator, Runtime, Kernel, Memcpy, Memset): both rule sets agree. A
// memset launched before step 3 ends at 30.125 µs, so step 3 starts there; step 3's last kernel
// ends at 420.25 µs, past its host end; step 6 launches nothing that ran and is dropped.
const Expected kLegacy = {
    {3, 274750, 0, 5000, 0, 10000, 69875, 15000, 15500, 390125},
    {4, 110000, 50500, 0, 169750, 9500, 0, 10000, 30000, 379750},
    {5, 410750, 0, 0, 0, 7000, 49500, 22250, 10500, 500000},
};

TEST(TbStepTimeTest, LegacyCategoriesEqualTorchTbProfiler043) {
  EXPECT_EQ(Of("tb_legacy.json", TbRules::kRelease043), kLegacy);
}

TEST(TbStepTimeTest, LegacyCategoriesEqualThePluginsLastSource) {
  EXPECT_EQ(Of("tb_legacy.json", TbRules::kKinetoMain), kLegacy);
}

// PyTorch 2.x categories. 0.4.3 reads no cuda_runtime call (runtime 0, no step moved to the
// device) and no annotation but ProfilerStep#N and collectives, so the DataLoader and Optimizer
// annotations are not counted; the GPU-side gpu_user_annotation ProfilerStep#N are steps of their
// own (a second row per step number, as the plugin shows). The all-reduce kernel carries the
// External id of record_param_comms, not of the nccl:all_reduce annotation inside it: it is a
// kernel; the broadcast kernel, launched inside a cpu_op nccl:broadcast, is communication.
TEST(TbStepTimeTest, PyTorch2CategoriesEqualTorchTbProfiler043) {
  const Expected want = {
      {10, 198000, 20000, 0, 0, 0, 0, 177000, 105000, 500000},
      {10, 198000, 20000, 0, 0, 0, 0, 0, 0, 218000},
      {11, 355000, 0, 0, 65000, 0, 0, 5000, 75000, 500000},
      {11, 355000, 0, 0, 0, 0, 0, 0, 0, 355000},
      {12, 345000, 0, 0, 0, 0, 0, 20000, 35000, 400000},
      {12, 345000, 0, 0, 0, 0, 0, 0, 15000, 360000},
      {13, 90000, 0, 0, 0, 0, 0, 20000, 190000, 300000},
      {13, 90000, 0, 0, 0, 0, 0, 5000, 0, 95000},
  };
  EXPECT_EQ(Of("tb_modern.json", TbRules::kRelease043), want);
}

// The plugin's last source reads cuda_runtime calls: steps move to the device, each GPU-side
// step then starts at the end of its host step and is empty, and the last GPU-side step (2 device
// events after 3) is dropped by the 0.8 rule.
TEST(TbStepTimeTest, PyTorch2CategoriesEqualThePluginsLastSource) {
  const Expected want = {
      {10, 198000, 20000, 0, 0, 150000, 75000, 22000, 35000, 500000},
      {10, 0, 0, 0, 0, 0, 0, 0, 0, 0},
      {11, 355000, 0, 0, 65000, 0, 55000, 5000, 20000, 500000},
      {11, 0, 0, 0, 0, 0, 0, 0, 0, 0},
      {12, 345000, 0, 0, 0, 7000, 0, 28000, 20000, 400000},
      {12, 0, 0, 0, 0, 0, 0, 0, 0, 0},
      {13, 90000, 0, 0, 0, 5000, 0, 15000, 190000, 300000},
  };
  EXPECT_EQ(Of("tb_modern.json", TbRules::kKinetoMain), want);
}

// A kernel covering every step: nothing is left after Kernel, so the plugin offers the whole
// steps again to the classes after it — the 30 µs copy under the kernel counts as Memcpy, and
// the classes add up past the step (200 µs in a 100 µs step).
TEST(TbStepTimeTest, KernelCoveringEveryStepReOffersTheStepsAsThePluginDoes) {
  EXPECT_EQ(Of("tb_covered.json", TbRules::kRelease043),
            (Expected{{1, 100000, 30000, 0, 0, 0, 0, 40000, 30000, 100000},
                      {2, 100000, 0, 10000, 0, 0, 0, 50000, 40000, 100000}}));
  EXPECT_EQ(Of("tb_covered.json", TbRules::kKinetoMain),
            (Expected{{1, 210000, 30000, 10000, 0, 15000, 0, 75000, 80000, 210000},
                      {2, 0, 0, 0, 0, 0, 0, 0, 0, 0}}));
}

// Without ProfilerStep: one step 0 over the host events (operators, python), moved to the end of
// the kernel its launch started.
TEST(TbStepTimeTest, WithoutStepsTheHostSpanIsStepZero) {
  const Expected want = {{0, 360000, 0, 0, 0, 10000, 0, 30000, 0, 400000}};
  EXPECT_EQ(Of("tb_no_steps.json", TbRules::kRelease043), want);
  EXPECT_EQ(Of("tb_no_steps.json", TbRules::kKinetoMain), want);
}

TEST(TbStepTimeTest, ATraceWithoutHostEventsHasNoRow) {
  Trace t;
  const uint32_t s = t.StreamTrack(0, 7);
  t.AddSlice(1000, 500, t.Intern("gemm"), t.Intern("kernel"), s);
  t.Finalize();
  EXPECT_TRUE(TbStepTime(t).empty());
  EXPECT_TRUE(TbStepTime(Trace{}).empty());
}

TEST(TbStepTimeTest, TheAnalysisAndItsTableCarryTheReleaseRows) {
  auto t = ReadTrace(kDir + "tb_legacy.json");
  ASSERT_TRUE(t.ok());
  TraceAnalysis a = AnalyseTrace(*t, Classifier::Default(), {});
  EXPECT_EQ(Rows(a.tb_steps), kLegacy);
  Table tbl = TbStepTimeTable(a);
  EXPECT_EQ(tbl.name, "tb_step_time");
  ASSERT_EQ(tbl.rows.size(), 3u);
  EXPECT_EQ(ToCsv(tbl).substr(0, ToCsv(tbl).find('\n')),
            "step,kernel,memcpy,memset,communication,runtime,dataloader,cpu_exec,other,total");
  EXPECT_EQ(std::get<double>(tbl.rows[0][1]), 274.75);
  EXPECT_EQ(std::get<double>(tbl.rows[0][9]), 390.125);
  bool in_all = false;
  for (const auto& x : AllTables(a)) in_all = in_all || x.name == "tb_step_time";
  EXPECT_TRUE(in_all);
}

}  // namespace
}  // namespace rlprof::analysis
