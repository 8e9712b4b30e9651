// The advisor on planted runs (issue 34): each case plants one bottleneck with a known cost per
// step; the advisor must rank its rule first with a saving within 20 % of the planted cost, and
// a balanced run must give nothing above info.
#include "src/analysis/advise/advise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <functional>
#include <string>
#include <vector>

#include "src/analysis/model/test_traces.h"
#include "src/analysis/run/run_view.h"
#include "src/analysis/run/samples_run.h"

namespace rlprof::analysis {
namespace {

using testing::kUs;
using testing::TraceBuilder;
constexpr int64_t kMs = 1000;  // in TraceBuilder's µs

struct StageSpec {
  std::string role, name;
  int64_t s_ms, e_ms;
};

// One process's capture: `steps` steps of `step_ms`, each with the stages of `stages(step)`.
InputResult Process(int64_t rank, int64_t steps, int64_t step_ms,
                    const std::function<std::vector<StageSpec>(int64_t)>& stages,
                    const std::function<void(TraceBuilder&, int64_t, int64_t)>& extra = nullptr) {
  TraceBuilder b;
  for (int64_t s = 1; s <= steps; ++s) {
    const int64_t t0 = (s - 1) * step_ms * kMs;
    b.Step(s, t0, t0 + step_ms * kMs);
    for (const StageSpec& st : stages(s)) b.Stage(s, st.role, st.name, t0 + st.s_ms * kMs, t0 + st.e_ms * kMs);
    if (extra) extra(b, s, t0);
  }
  Trace t = b.Build();
  t.rank = rank;
  InputResult r;
  r.input = r.name = "rank" + std::to_string(rank);
  r.analysis = AnalyseTrace(t, Classifier::Default(), {});
  return r;
}

RunAnalysis MakeRun(std::vector<InputResult> inputs) {
  RunAnalysis run;
  run.inputs = std::move(inputs);
  run.view = BuildRunView(run.inputs);
  return run;
}

// The advice's first finding is `id` with a saving within 20 % of `planted_ms` a step.
void ExpectFirst(const Advice& a, const std::string& id, double planted_ms) {
  ASSERT_FALSE(a.findings.empty()) << id;
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.id, id) << f.title;
  EXPECT_NEAR(f.saving_ns / 1e6, planted_ms, 0.2 * planted_ms) << f.how;
  EXPECT_GE(f.severity, Severity::kLow) << f.title;
  EXPECT_FALSE(f.action.empty());
  EXPECT_FALSE(f.how.empty());
}

TEST(AdviseTest, AStragglerRankIsFoundWithTheTimeItCosts) {
  // Four actor ranks; rank 3 runs every stage 30 % longer; the step ends with it (130 ms).
  std::vector<InputResult> in;
  for (int64_t rank = 0; rank < 4; ++rank) {
    const int64_t k = rank == 3 ? 130 : 100;  // per mille of the others' time ×10
    in.push_back(Process(rank, 3, 130, [k](int64_t) {
      return std::vector<StageSpec>{{"actor", "actor_update", 0, 80 * k / 100},
                                    {"actor", "ref_compute_log_prob", 80 * k / 100, 100 * k / 100}};
    }));
  }
  const Advice a = Advise(MakeRun(std::move(in)));
  ExpectFirst(a, "rl.straggler_rank", 30.0);  // 24 + 6 ms a step
  EXPECT_EQ(a.findings.front().evidence.front().rank, 3);
  for (const Finding& f : a.findings) EXPECT_NE(f.id, "rl.dp_imbalance");  // not both
}

TEST(AdviseTest, ImbalanceAcrossDataParallelRanksIsNotAStraggler) {
  // The slow rank changes every step: 120 ms against 90 ms for the others.
  std::vector<InputResult> in;
  for (int64_t rank = 0; rank < 4; ++rank)
    in.push_back(Process(rank, 4, 120, [rank](int64_t step) {
      return std::vector<StageSpec>{{"actor", "actor_update", 0, step % 4 == rank ? 120 : 90}};
    }));
  const Advice a = Advise(MakeRun(std::move(in)));
  ExpectFirst(a, "rl.dp_imbalance", 22.5);  // 120 − mean(120, 90, 90, 90)
}

TEST(AdviseTest, GapsBetweenStagesAreTheStepsUncoveredTime) {
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) {
    return std::vector<StageSpec>{{"actor", "actor_update", 0, 40}, {"actor", "compute_advantage", 70, 100}};
  })}));
  ExpectFirst(a, "rl.stage_gaps", 30.0);
  EXPECT_EQ(a.findings.front().evidence.front().start_ns, 40 * kMs * kUs);  // step 1's gap, on the timeline
}

TEST(AdviseTest, AnExposedWeightSyncCostsItsStage) {
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) {
    return std::vector<StageSpec>{{"actor", "actor_update", 0, 75}, {"rollout", "weight_sync", 75, 100}};
  })}));
  ExpectFirst(a, "rl.weight_sync", 25.0);
}

TEST(AdviseTest, RecomputedLogProbsCostTheirStage) {
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) {
    return std::vector<StageSpec>{{"actor", "actor_compute_log_prob", 0, 30}, {"actor", "actor_update", 30, 100}};
  })}));
  ExpectFirst(a, "rl.logprob_recompute", 30.0);
}

TEST(AdviseTest, TheGenerationTailIsWhatStoppingAtP95Saves) {
  // 100 samples a step: 95 end at 20 ms, 5 (planted, 8× longer) at 160 ms.
  InputResult r = Process(0, 2, 170, [](int64_t) {
    return std::vector<StageSpec>{{"rollout", "rollout_generate", 0, 160}, {"actor", "actor_update", 160, 170}};
  });
  for (int64_t step = 1; step <= 2; ++step)
    for (int i = 0; i < 100; ++i) {
      SampleRecord s;
      s.id = "s" + std::to_string(step) + "-" + std::to_string(i);
      s.step = step;
      s.submit = (step - 1) * 170 * kMs * kUs;
      s.first_token = s.submit + 2 * kMs * kUs;
      s.last_token = s.end = s.submit + (i < 5 ? 160 : 20) * kMs * kUs;
      s.completion_tokens = i < 5 ? 800 : 100;
      r.analysis.samples.push_back(s);
    }
  const Advice a = Advise(MakeRun({std::move(r)}));
  ExpectFirst(a, "rl.generation_tail", 140.0);
}

TEST(AdviseTest, HostSynchronisationInTheLoop) {
  // Kernels keep the device busy; the host calls .item() ten times a step, 2 ms each.
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) { return std::vector<StageSpec>{}; },
                                       [](TraceBuilder& b, int64_t, int64_t t0) {
                                         b.Kernel(7, "sm90_gemm", t0 + 1 * kMs, t0 + 99 * kMs);
                                         for (int i = 0; i < 10; ++i)
                                           b.HostOp(b.host(), "aten::item", "cpu_op", t0 + (5 + 9 * i) * kMs,
                                                    t0 + (7 + 9 * i) * kMs);
                                       })}));
  ExpectFirst(a, "device.host_sync", 20.0);
}

TEST(AdviseTest, CommunicationNotOverlapped) {
  // 60 ms of compute, then a 30 ms all-reduce alone on the device.
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) { return std::vector<StageSpec>{}; },
                                       [](TraceBuilder& b, int64_t, int64_t t0) {
                                         b.Kernel(7, "sm90_gemm", t0 + 1 * kMs, t0 + 61 * kMs);
                                         b.Kernel(20, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", t0 + 61 * kMs,
                                                  t0 + 91 * kMs);
                                         b.Kernel(7, "sm90_gemm", t0 + 91 * kMs, t0 + 99 * kMs);
                                       })}));
  ExpectFirst(a, "device.comm_exposed", 30.0);
}

TEST(AdviseTest, CopiesNotOverlapped) {
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) { return std::vector<StageSpec>{}; },
                                       [](TraceBuilder& b, int64_t, int64_t t0) {
                                         b.Kernel(7, "sm90_gemm", t0 + 1 * kMs, t0 + 79 * kMs);
                                         b.Device(9, "Memcpy HtoD (Pageable -> Device)", "gpu_memcpy",
                                                  (t0 + 79 * kMs) * kUs, (t0 + 99 * kMs) * kUs);
                                       })}));
  ExpectFirst(a, "device.memcpy_exposed", 20.0);
}

TEST(AdviseTest, ASlowerRunThanItsBaselineIsARegression) {
  auto run = [](int64_t update_ms) {
    return MakeRun({Process(0, 3, 30 + update_ms, [update_ms](int64_t) {
      return std::vector<StageSpec>{{"actor", "compute_advantage", 0, 30}, {"actor", "actor_update", 30, 30 + update_ms}};
    })});
  };
  const RunAnalysis base = run(70), now = run(100);
  const Advice a = Advise(now, &base);
  ExpectFirst(a, "run.regression", 30.0);
  EXPECT_TRUE(a.findings.front().regression);
  EXPECT_NE(a.findings.front().evidence.front().what.find("actor_update"), std::string::npos);
  EXPECT_TRUE(Advise(base, &base).findings.empty() || Advise(base, &base).findings.front().id != "run.regression");
}

TEST(AdviseTest, ABalancedRunHasNothingAboveInfo) {
  std::vector<InputResult> in;
  for (int64_t rank = 0; rank < 2; ++rank)
    in.push_back(Process(rank, 3, 100, [](int64_t) {
      return std::vector<StageSpec>{{"rollout", "rollout_generate", 0, 50}, {"actor", "actor_update", 50, 100}};
    }));
  const Advice a = Advise(MakeRun(std::move(in)));
  for (const Finding& f : a.findings) EXPECT_EQ(f.severity, Severity::kInfo) << f.id << ": " << f.title;
  ASSERT_FALSE(a.findings.empty());  // the colocated rollout's share is stated
  EXPECT_EQ(a.findings.front().id, "rl.colocated_rollout");
  EXPECT_EQ(a.steps, 3);
}

TEST(AdviseTest, TheCatalogueIsTheRulesRunAndTheJsonIsStable) {
  const Advice a = Advise(MakeRun({Process(0, 2, 100, [](int64_t) {
    return std::vector<StageSpec>{{"actor", "actor_update", 0, 60}, {"actor", "compute_advantage", 80, 100}};
  })}));
  ASSERT_EQ(a.rules_run.size(), RuleCatalogue().size());
  for (size_t i = 0; i < a.rules_run.size(); ++i) EXPECT_EQ(a.rules_run[i], RuleCatalogue()[i].id);
  const nlohmann::json j = AdviceJson(a);
  EXPECT_EQ(j["schema"], 1);
  ASSERT_FALSE(j["findings"].empty());
  const auto& f = j["findings"][0];
  for (const char* k : {"rank", "id", "severity", "regression", "title", "saving_us_per_step", "share_pct", "how",
                        "action", "evidence"})
    EXPECT_TRUE(f.contains(k)) << k;
  EXPECT_EQ(f["id"], "rl.stage_gaps");
  EXPECT_DOUBLE_EQ(f["saving_us_per_step"].get<double>(), 20000.0);
  EXPECT_DOUBLE_EQ(f["share_pct"].get<double>(), 20.0);
  const Table t = FindingsTable(a);
  EXPECT_EQ(t.rows.size(), a.findings.size());
  EXPECT_NE(RuleCatalogueMarkdown().find("| `rl.generation_tail` | rl |"), std::string::npos);
}

// docs/advise.md shows the catalogue as RuleCatalogueMarkdown() makes it (`rlprof advise --list-rules`).
TEST(AdviseTest, TheCatalogueIsTheTableInTheDocs) {
  std::ifstream f(std::string(RLPROF_SOURCE_DIR) + "/docs/advise.md");
  std::stringstream doc;
  doc << f.rdbuf();
  ASSERT_FALSE(doc.str().empty());
  EXPECT_NE(doc.str().find(RuleCatalogueMarkdown()), std::string::npos)
      << "docs/advise.md is out of date; its table should read:\n" << RuleCatalogueMarkdown();
}

}  // namespace
}  // namespace rlprof::analysis
