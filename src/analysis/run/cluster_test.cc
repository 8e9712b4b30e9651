// The cluster view: worked examples E (balance), F (slow rank by Dixon's test) and G
// (collective latency, skew, bandwidth) of docs/definitions.md §5.9.
#include "src/analysis/run/cluster.h"

#include <gtest/gtest.h>

namespace rlprof::analysis {
namespace {

constexpr int64_t kUs = 1000, kMs = 1000000;

InputResult Rank(int64_t rank) {
  InputResult r;
  r.input = r.name = "rank" + std::to_string(rank);
  r.analysis.rank = rank;
  return r;
}

// A 100 µs step with the given atoms (µs) and Σ receives.
StepResult Step(int64_t compute, int64_t exposed, int64_t idle, int64_t recv) {
  StepResult s;
  s.window.step = 1;
  s.window.start = 0;
  s.window.end = 100 * kUs;
  s.atoms.compute_only = compute * kUs;
  s.atoms.comm_only = exposed * kUs;
  s.atoms.idle = idle * kUs;
  s.recv_sum = recv * kUs;
  return s;
}

double Real(const Cell& c) { return std::get<double>(c); }

TEST(ClusterTest, ExampleEBalanceFlagsColumnsThatDifferByMoreThanFivePercent) {
  InputResult r0 = Rank(0), r1 = Rank(1);
  r0.analysis.steps = {Step(60, 10, 30, 4)};
  r1.analysis.steps = {Step(50, 25, 25, 8)};
  ClusterResult c = AnalyseCluster({r0, r1});
  ASSERT_EQ(c.step_time.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(Real(c.step_time.rows[0][7]), 96.0);  // Stage of rank 0
  std::map<std::string, std::vector<Cell>> by;
  for (const auto& row : c.balance.rows) by[std::get<std::string>(row[1])] = row;
  EXPECT_NEAR(Real(by["Computing"][6]), 100.0 * 10 / 55, 1e-9);  // 18.2 %
  EXPECT_EQ(std::get<int64_t>(by["Computing"][9]), 1);
  EXPECT_EQ(std::get<int64_t>(by["Computing"][8]), 0);  // max rank
  EXPECT_NEAR(Real(by["Communication(Not Overlapped)"][6]), 100.0 * 15 / 17.5, 1e-9);  // 85.7 %
  EXPECT_DOUBLE_EQ(Real(by["Free"][5]), 30.0);
}

TEST(ClusterTest, ExampleFTheRankWithTheShortestCollectiveIsSlow) {
  const double ms[] = {10.2, 10.4, 10.1, 2.1, 10.3, 10.0, 10.5, 10.2};
  std::vector<InputResult> ranks;
  for (int r = 0; r < 8; ++r) {
    InputResult in = Rank(r);
    const int64_t d = static_cast<int64_t>(ms[r] * kMs);
    in.analysis.collectives = {{"ncclDevKernel_AllReduce_Sum_f32", "dp", 100 * kMs - d, 100 * kMs, 1 << 20}};
    ranks.push_back(in);
  }
  ClusterResult c = AnalyseCluster(ranks);
  ASSERT_EQ(c.slow_ranks.rows.size(), 1u);
  EXPECT_EQ(std::get<int64_t>(c.slow_ranks.rows[0][0]), 3);
  EXPECT_EQ(std::get<int64_t>(c.slow_ranks.rows[0][1]), 1);
  EXPECT_EQ(std::get<int64_t>(c.collectives.rows[0][11]), 3);
}

TEST(ClusterTest, ExampleGLatencySkewAndBandwidth) {
  const double ms[] = {3.0, 3.2, 9.0, 3.1};
  std::vector<InputResult> ranks;
  for (int r = 0; r < 4; ++r) {
    InputResult in = Rank(r);
    const int64_t d = static_cast<int64_t>(ms[r] * kMs + 0.5);
    in.analysis.collectives = {{"nccl:all_reduce", "tp", 100 * kMs - d, 100 * kMs, 300000000}};
    ranks.push_back(in);
  }
  ClusterResult c = AnalyseCluster(ranks);
  ASSERT_EQ(c.collectives.rows.size(), 1u);
  const auto& row = c.collectives.rows[0];
  EXPECT_DOUBLE_EQ(Real(row[4]), 3000.0);   // latency = min duration (µs)
  EXPECT_DOUBLE_EQ(Real(row[6]), 6000.0);   // rank 2 waited 6 ms
  EXPECT_EQ(std::get<int64_t>(row[7]), 2);  // earliest arrival
  EXPECT_DOUBLE_EQ(Real(row[8]), 6000.0);   // start skew
  EXPECT_DOUBLE_EQ(Real(row[9]), 0.0);      // end skew
  EXPECT_EQ(std::get<int64_t>(row[10]), 0); // latest arrival: the straggler
  EXPECT_TRUE(std::holds_alternative<std::monostate>(row[11]));  // not an outlier by Dixon
  EXPECT_NEAR(Real(row[13]), 100.0, 1e-9);  // algbw GB/s
  EXPECT_NEAR(Real(row[14]), 150.0, 1e-9);  // busbw = 1.5 × algbw
  EXPECT_TRUE(c.slow_ranks.rows.empty());
}

TEST(ClusterTest, DixonTableAndItsEdgeCases) {
  EXPECT_DOUBLE_EQ(DixonCritical(8), 0.723);
  EXPECT_DOUBLE_EQ(DixonCritical(100), 0.341);
  // Every n tabulated (issue 29: 17–99 were interpolated between 16, 20, 30, 50 and 100).
  EXPECT_DOUBLE_EQ(DixonCritical(17), 0.611);
  EXPECT_DOUBLE_EQ(DixonCritical(25), 0.519);  // interpolation gave 0.526
  EXPECT_DOUBLE_EQ(DixonCritical(64), 0.382);
  EXPECT_DOUBLE_EQ(DixonCritical(99), 0.341);
  EXPECT_EQ(DixonCritical(101), 0);
  {
    // 25 ranks, r22 = (x[2] − x[0]) / (x[22] − x[0]) = 5.22 / 10 = 0.522: above the table's
    // 0.519, below the interpolated 0.526 — a slow rank msprof-analyze flags.
    std::vector<double> x(25);
    for (size_t i = 0; i < x.size(); ++i) x[i] = 100 + static_cast<double>(i) * 0.01;
    x[0] = 90;
    x[1] = 92;
    x[2] = 95.22;
    for (size_t i = 3; i < 23; ++i) x[i] = 96 + static_cast<double>(i) * 0.1;
    x[22] = 100;
    x[23] = 100.5;
    x[24] = 101;
    EXPECT_TRUE(DixonLowOutlier(x));
  }
  EXPECT_EQ(DixonCritical(2), 0);
  EXPECT_FALSE(DixonLowOutlier({1, 5, 5, 5}));        // ≤ 3 distinct values: skipped
  EXPECT_TRUE(DixonLowOutlier({1, 9, 9.5, 10, 10.5}));  // r10 = 8 / 9.5 = 0.84 > 0.823
  EXPECT_FALSE(DixonLowOutlier({7, 9, 9.5, 10, 10.5}));
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("ncclDevKernel_AllGather_RING", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusBandwidthFactor("nccl:broadcast", 8), 1.0);
}

// Issue 35: four traces all claiming rank 0 made a one-rank cluster without a word.
TEST(ClusterTest, InputsOfOtherProcessesClaimingTheSameRankAndStepAreNamed) {
  std::vector<InputResult> in;
  for (int i = 0; i < 4; ++i) {
    InputResult r = Rank(0);
    r.analysis.source = "node" + std::to_string(i) + "/trace.json";
    r.analysis.steps = {Step(60, 10, 30, 4)};
    in.push_back(r);
  }
  ClusterResult c = AnalyseCluster(in);
  EXPECT_EQ(c.diagnostics.Get("duplicate_rank_inputs"), 3u);
  ASSERT_FALSE(c.diagnostics.details.empty());
  EXPECT_NE(c.diagnostics.details[0].find("node1/trace.json and node0/trace.json both hold step 1"),
            std::string::npos) << c.diagnostics.details[0];
  // Two windows of one process, and other roles of the same rank (actor and rollout rank 0 of
  // an RL run), are not duplicates.
  for (auto& r : in) r.analysis.host = "h", r.analysis.pid = 7;
  EXPECT_EQ(AnalyseCluster(in).diagnostics.Get("duplicate_rank_inputs"), 0u);
  for (size_t i = 0; i < in.size(); ++i) in[i].analysis.pid = 7 + static_cast<int64_t>(i), in[i].analysis.role = "role" + std::to_string(i);
  EXPECT_EQ(AnalyseCluster(in).diagnostics.Get("duplicate_rank_inputs"), 0u);
}

TEST(ClusterTest, UnequalCountsUnreadableInputsAndUnknownRanksAreCounted) {
  InputResult a = Rank(0), b = Rank(1), u = Rank(-1), bad;
  a.analysis.collectives = {{"allreduce", "g", 0, 10, -1}, {"allreduce", "g", 20, 30, -1}};
  b.analysis.collectives = {{"allreduce", "g", 0, 10, -1}};
  bad.status = base::InvalidArgument("x");
  ClusterResult c = AnalyseCluster({a, b, u, bad});
  EXPECT_EQ(c.diagnostics.Get("collectives_with_unequal_counts_skipped"), 1u);
  EXPECT_EQ(c.diagnostics.Get("unreadable_inputs"), 1u);
  EXPECT_EQ(c.diagnostics.Get("inputs_without_rank"), 1u);
  EXPECT_TRUE(c.collectives.rows.empty());
}

}  // namespace
}  // namespace rlprof::analysis
