// rlprof compare: the comparison of two runs (docs/definitions.md §5.8).
#include "src/analysis/run/compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "src/analysis/model/test_traces.h"

namespace rlprof::analysis {
namespace {

using testing::kUs;
using testing::TraceBuilder;

// One rank with `steps` steps of 100 µs; each has stage actor/update of `update_us` with a
// gemm kernel inside it, and (from step 2 on) an all-reduce of `comm_us` after the gemm.
InputResult SyntheticRun(int steps, int64_t update_us, int64_t comm_us, bool last_partial = false) {
  TraceBuilder b;
  for (int s = 0; s < steps; ++s) {
    const int64_t t0 = s * 100;
    b.Step(s + 1, t0, t0 + 100);
    b.Stage(s + 1, "actor", "actor_update", t0 + 10, t0 + 10 + update_us);
    b.Kernel(7, "gemm", t0 + 10, t0 + 10 + update_us / 2);
    b.Kernel(20, "ncclDevKernel_AllReduce", t0 + 10 + update_us / 2, t0 + 10 + update_us / 2 + comm_us);
  }
  Trace t = b.Build();
  if (last_partial) t.capture_end_ns = (steps * 100 - 50) * kUs;
  InputResult r;
  r.input = r.name = "synthetic";
  r.analysis = AnalyseTrace(t, Classifier::Default(), {});
  return r;
}

double Real(const Cell& c) { return std::get<double>(c); }

TEST(CompareTest, StepStageAndOperatorDeltasAreNewMinusBaselinePerRankStep) {
  // Baseline: 2 steps, update 40 µs (gemm 20), all-reduce 10. New: 3 steps, update 60 (gemm 30),
  // all-reduce 30 — exposed communication grows by 20 µs per step.
  Comparison c = CompareRuns({SyntheticRun(2, 40, 10)}, {SyntheticRun(3, 60, 30)}, {});
  ASSERT_EQ(c.steps.rows.size(), 8u);
  const auto& window = c.steps.rows[0];
  EXPECT_EQ(std::get<std::string>(window[0]), "Step (window)");
  EXPECT_DOUBLE_EQ(Real(window[1]), 100.0);
  EXPECT_DOUBLE_EQ(Real(window[3]), 0.0);
  const auto& exposed = c.steps.rows[2];
  EXPECT_EQ(std::get<std::string>(exposed[0]), "Communication(Not Overlapped)");
  EXPECT_DOUBLE_EQ(Real(exposed[1]), 10.0);
  EXPECT_DOUBLE_EQ(Real(exposed[2]), 30.0);
  EXPECT_DOUBLE_EQ(Real(exposed[3]), 20.0);
  EXPECT_DOUBLE_EQ(Real(exposed[4]), 200.0);  // %
  EXPECT_DOUBLE_EQ(Real(exposed[5]), 3.0);  // ratio
  EXPECT_EQ(std::get<int64_t>(exposed[10]), 2);
  EXPECT_EQ(std::get<int64_t>(exposed[11]), 3);
  // Stages by |delta|: actor_update grew by 20 µs, the step time outside it shrank by as much.
  ASSERT_EQ(c.stages.rows.size(), 2u);
  const auto& top = std::get<std::string>(c.stages.rows[0][1]) == "actor_update" ? c.stages.rows[0]
                                                                                  : c.stages.rows[1];
  EXPECT_EQ(std::get<std::string>(top[1]), "actor_update");
  EXPECT_DOUBLE_EQ(std::fabs(Real(c.stages.rows[0][4])), 20.0);
  EXPECT_DOUBLE_EQ(std::fabs(Real(c.stages.rows[1][4])), 20.0);
  EXPECT_DOUBLE_EQ(Real(top[2]), 40.0);
  EXPECT_DOUBLE_EQ(Real(top[3]), 60.0);
  EXPECT_DOUBLE_EQ(Real(top[4]), 20.0);
  EXPECT_DOUBLE_EQ(Real(top[11]), 20.0);  // baseline compute (the gemm)
  EXPECT_DOUBLE_EQ(Real(top[12]), 30.0);
  EXPECT_DOUBLE_EQ(Real(top[6]), 1.5);  // ratio
  // Kernels per rank-step: the all-reduce moved +20 µs, the gemm +10 µs.
  ASSERT_GE(c.ops.rows.size(), 2u);
  EXPECT_EQ(std::get<std::string>(c.ops.rows[0][1]), "ncclDevKernel_AllReduce");
  EXPECT_DOUBLE_EQ(Real(c.ops.rows[0][7]), 20.0);
  EXPECT_EQ(std::get<std::string>(c.ops.rows[0][2]), "increased");
  EXPECT_DOUBLE_EQ(Real(c.ops.rows[0][3]), 1.0);  // one per step on both sides
  EXPECT_DOUBLE_EQ(Real(c.ops.rows[0][4]), 1.0);
  EXPECT_EQ(std::get<std::string>(c.ops.rows[1][1]), "gemm");
  EXPECT_DOUBLE_EQ(Real(c.ops.rows[1][7]), 10.0);
  EXPECT_TRUE(c.diagnostics.counts.empty());
}

TEST(CompareTest, PartialStepsAreLeftOutOfTheMeansAndCounted) {
  Comparison c = CompareRuns({SyntheticRun(2, 40, 10)}, {SyntheticRun(3, 60, 30, /*last_partial=*/true)}, {});
  EXPECT_EQ(std::get<int64_t>(c.steps.rows[0][11]), 2);  // 3 steps, one partial
  EXPECT_EQ(c.diagnostics.Get("partial_steps_left_out_new"), 1u);
}

TEST(CompareTest, StagesOnOneSideOnlyHaveEmptyDeltasAndComeLast) {
  InputResult extra = SyntheticRun(1, 40, 10);
  TraceBuilder b;
  b.Step(1, 0, 100);
  b.Stage(1, "rollout", "rollout_generate", 0, 90);
  Trace t = b.Build();
  extra.analysis = AnalyseTrace(t, Classifier::Default(), {});
  Comparison c = CompareRuns({SyntheticRun(1, 40, 10)}, {extra}, {});
  const auto& last = c.stages.rows.back();
  const bool one_sided = std::holds_alternative<std::monostate>(last[4]);
  EXPECT_TRUE(one_sided);
  bool found = false;
  for (const auto& r : c.stages.rows)
    if (std::get<std::string>(r[1]) == "rollout_generate") {
      found = true;
      EXPECT_TRUE(std::holds_alternative<std::monostate>(r[2]));  // not in the baseline
      EXPECT_DOUBLE_EQ(Real(r[3]), 90.0);
    }
  EXPECT_TRUE(found);
}

TEST(CompareTest, MediansAndSpreadsOverStepsAndTheRatioConvention) {
  // Stage durations 40, 40 and 100 µs: the median (40) is the figure, 100 the spread's top.
  TraceBuilder b;
  for (int s = 0; s < 3; ++s) {
    b.Step(s + 1, s * 200, s * 200 + 200);
    b.Stage(s + 1, "actor", "actor_update", s * 200, s * 200 + (s == 2 ? 100 : 40));
  }
  InputResult r;
  r.analysis = AnalyseTrace(b.Build(), Classifier::Default(), {});
  Comparison c = CompareRuns({SyntheticRun(1, 40, 10)}, {r}, {});
  for (const auto& row : c.stages.rows) {
    if (std::get<std::string>(row[1]) != "actor_update") continue;
    EXPECT_DOUBLE_EQ(Real(row[3]), 40.0);   // new median
    EXPECT_DOUBLE_EQ(Real(row[9]), 40.0);   // new min
    EXPECT_DOUBLE_EQ(Real(row[10]), 100.0);  // new max
    EXPECT_DOUBLE_EQ(Real(row[6]), 1.0);    // ratio
  }
  // Communication only in the baseline: ratio 0; a kernel only in the new run is "added".
  const auto& comm = c.steps.rows[4];
  EXPECT_EQ(std::get<std::string>(comm[0]), "Communication");
  EXPECT_DOUBLE_EQ(Real(comm[5]), 0.0);
  Comparison d = CompareRuns({r}, {SyntheticRun(1, 40, 10)}, {});
  EXPECT_TRUE(std::isinf(Real(d.steps.rows[4][5])));  // 0 → 10 µs: inf
  bool added = false;
  for (const auto& row : d.ops.rows) added = added || std::get<std::string>(row[2]) == "added";
  EXPECT_TRUE(added);
}

TEST(CompareTest, UnreadableInputsAreCountedPerSide) {
  InputResult bad;
  bad.status = base::InvalidArgument("broken");
  Comparison c = CompareRuns({SyntheticRun(1, 40, 10), bad}, {SyntheticRun(1, 40, 10)}, {.top_ops = 1});
  EXPECT_EQ(c.diagnostics.Get("unreadable_inputs_baseline"), 1u);
  EXPECT_EQ(c.ops.rows.size(), 1u);
}

TEST(CompareTest, HostOperatorsCarryTheDeviceTimeTheyLaunchedPerRankStep) {
  auto with_op = [](InputResult r, int64_t device_us) {
    OpStat o;
    o.name = "aten::mm";
    o.count = 2;
    o.total = 5 * kUs;
    o.device_total = device_us * kUs;
    o.kernels = 2;
    r.analysis.host_ops.push_back(o);
    OpStat cpu_only = o;
    cpu_only.name = "aten::view";
    cpu_only.device_total = cpu_only.kernels = 0;
    r.analysis.host_ops.push_back(cpu_only);
    return r;
  };
  // Two steps per side: device time per rank-step = Σ / 2.
  Comparison c = CompareRuns({with_op(SyntheticRun(2, 40, 10), 30)}, {with_op(SyntheticRun(2, 40, 10), 50)}, {});
  const size_t n = c.ops.columns.size();
  ASSERT_EQ(c.ops.columns[n - 3].name, "baseline_device");
  ASSERT_EQ(c.ops.columns[n - 1].name, "device_delta");
  bool seen_mm = false, seen_view = false;
  for (const auto& row : c.ops.rows) {
    const std::string& name = std::get<std::string>(row[1]);
    if (name == "aten::mm") {
      seen_mm = true;
      EXPECT_DOUBLE_EQ(Real(row[n - 3]), 15.0);
      EXPECT_DOUBLE_EQ(Real(row[n - 2]), 25.0);
      EXPECT_DOUBLE_EQ(Real(row[n - 1]), 10.0);
    } else if (name == "aten::view" || std::get<std::string>(row[0]) == "device") {
      seen_view = seen_view || name == "aten::view";
      EXPECT_TRUE(std::holds_alternative<std::monostate>(row[n - 1])) << name;  // no device work launched
    }
  }
  EXPECT_TRUE(seen_mm);
  EXPECT_TRUE(seen_view);
}

}  // namespace
}  // namespace rlprof::analysis
