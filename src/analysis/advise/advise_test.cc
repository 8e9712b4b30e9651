// The advisor on planted runs (issue 34): each case plants one bottleneck with a known cost per
// step; the advisor must rank its rule first with a saving within 20 % of the planted cost, and
// a balanced run must give nothing above info.
#include "src/analysis/advise/advise.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <functional>
#include <string>
#include <vector>

#include "src/analysis/model/test_traces.h"
#include "src/base/golden_test_util.h"
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

// The advice as `rlprof advise --json` writes it, golden: test/golden/advise/<test name>.json
// (RLPROF_UPDATE_GOLDEN=1 rewrites it; review the diff).
void ExpectGoldenAdvice(const Advice& a) {
  const std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
  EXPECT_GOLDEN(std::string(RLPROF_SOURCE_DIR) + "/test/golden/advise/" + name + ".json", AdviceJson(a).dump(2) + "\n");
}

// The advice's first finding is `id` with a saving within 20 % of `planted_ms` a step.
void ExpectFirst(const Advice& a, const std::string& id, double planted_ms) {
  ExpectGoldenAdvice(a);
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
  // Placed on the timeline: rank 3's actor_update (0–104 ms) of the step named.
  const Evidence& e = a.findings.front().evidence.front();
  EXPECT_EQ(e.start_ns, (e.step - 1) * 130 * kMs * kUs);
  EXPECT_EQ(e.end_ns - e.start_ns, 104 * kMs * kUs);
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

TEST(AdviseTest, AnImbalanceIsNotTakenForTheStragglerThatIsSlowerInSmallStages) {
  // Two ranks; in step s rank s % 2 generates 200 ms longer and the other waits for it in the
  // update (both end it at 400 ms). Rank 1 is also 10 % slower in the two small stages of every
  // step, as a loaded machine can make one rank: slowest in 10 of the 12 stages that are not a
  // wait, but with half of the time over the others only. The imbalance is the finding.
  std::vector<InputResult> in;
  for (int64_t rank = 0; rank < 2; ++rank)
    in.push_back(Process(rank, 4, 420, [rank](int64_t step) {
      const int64_t gen = step % 2 == rank ? 300 : 100, ref = gen + (rank ? 22 : 20), rew = ref + (rank ? 11 : 10);
      return std::vector<StageSpec>{{"rollout", "rollout_generate", 0, gen},
                                    {"ref", "ref_compute_log_prob", gen, ref},
                                    {"reward", "compute_rm_score", ref, rew},
                                    {"actor", "actor_update", rew, 400}};
    }));
  const Advice a = Advise(MakeRun(std::move(in)));
  ExpectFirst(a, "rl.dp_imbalance", 100.0);  // (300 − 100) / 2, and 1.5 ms of the small stages
  for (const Finding& f : a.findings) EXPECT_NE(f.id, "rl.straggler_rank");
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
  ASSERT_EQ(a.findings.front().evidence.size(), 3u);  // each step's, placed
  EXPECT_EQ(a.findings.front().evidence[1].start_ns, 100 * kMs * kUs);
  EXPECT_EQ(a.findings.front().evidence[1].end_ns, 130 * kMs * kUs);
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

constexpr double kGiB = 1024.0 * 1024 * 1024;

TEST(AdviseTest, MemoryCloseToCapacityCostsTheAllocatorsDriverCalls) {
  // An 80 GiB device held at 77 GiB (96 %) in actor_update; the caching allocator frees its
  // cache and retries: cudaFree + cudaMalloc, 3 × 5 ms a step.
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) {
    return std::vector<StageSpec>{{"actor", "compute_advantage", 0, 40}, {"actor", "actor_update", 40, 100}};
  }, [](TraceBuilder& b, int64_t, int64_t t0) {
    b.Kernel(7, "sm90_gemm", t0 + 1 * kMs, t0 + 99 * kMs);
    Trace& t = b.trace();
    const uint32_t cap = t.Intern("capacity_bytes cuda:0"), res = t.Intern("reserved_bytes cuda:0");
    t.counters.push_back({b.host(), t0 * kUs, 80 * kGiB, cap});
    t.counters.push_back({b.host(), (t0 + 10 * kMs) * kUs, 40 * kGiB, res});
    t.counters.push_back({b.host(), (t0 + 60 * kMs) * kUs, 77 * kGiB, res});
    t.counters.push_back({b.host(), (t0 + 99 * kMs) * kUs, 41 * kGiB, res});
    for (int i = 0; i < 3; ++i) {
      b.HostOp(b.host(), "cudaFree", "cuda_runtime", t0 + (45 + 10 * i) * kMs, t0 + (49 + 10 * i) * kMs);
      b.HostOp(b.host(), "cudaMalloc", "cuda_runtime", t0 + (49 + 10 * i) * kMs, t0 + (50 + 10 * i) * kMs);
    }
  })}));
  ExpectFirst(a, "device.memory", 15.0);
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.severity, Severity::kHigh);  // 15 % of the step
  ASSERT_FALSE(f.evidence.empty());
  EXPECT_EQ(f.evidence.front().stage, "actor/actor_update");
  EXPECT_EQ(f.evidence.front().start_ns, 40 * kMs * kUs);  // step 1's actor_update, on the timeline
  EXPECT_NE(f.title.find("96 %"), std::string::npos) << f.title;
}

TEST(AdviseTest, MemoryCloseToCapacityWithoutRetriesIsARiskNotATime) {
  // 92 % of the host's memory in RSS, no allocator calls: low, no saving, stated all the same.
  const Advice a = Advise(MakeRun({Process(0, 2, 100, [](int64_t) {
    return std::vector<StageSpec>{{"rollout", "rollout_generate", 0, 50}, {"actor", "actor_update", 50, 100}};
  }, [](TraceBuilder& b, int64_t, int64_t t0) {
    Trace& t = b.trace();
    t.counters.push_back({b.host(), t0 * kUs, 32 * kGiB, t.Intern("capacity_bytes host")});
    t.counters.push_back({b.host(), (t0 + 20 * kMs) * kUs, 29.5 * kGiB, t.Intern("rss_bytes")});
  })}));
  ExpectGoldenAdvice(a);
  const auto it = std::find_if(a.findings.begin(), a.findings.end(), [](const Finding& f) { return f.id == "device.memory"; });
  ASSERT_NE(it, a.findings.end());
  EXPECT_EQ(it->severity, Severity::kLow);
  EXPECT_EQ(it->saving_ns, 0);
  EXPECT_EQ(it->evidence.front().stage, "rollout/rollout_generate");
  EXPECT_EQ(a.findings.front().id, "device.memory");  // above the info findings
}

TEST(AdviseTest, AnOutOfMemoryErrorPointsToTheAllocatorSnapshot) {
  // Step 2's actor_update asks for 2 GiB more than the device has: the allocator's report and
  // rlprof.torch's note naming the snapshot it wrote.
  const std::string snap = "/runs/r/step2/e2e/rank0-h-1/oom_device0_rank0.pickle";
  const Advice a = Advise(MakeRun({Process(0, 2, 100, [](int64_t) {
    return std::vector<StageSpec>{{"rollout", "rollout_generate", 0, 50}, {"actor", "actor_update", 50, 100}};
  }, [&](TraceBuilder& b, int64_t step, int64_t t0) {
    if (step != 2) return;
    Trace& t = b.trace();
    const size_t row = t.AddSlice((t0 + 70 * kMs) * kUs, 0, t.Intern("cuda:0"), t.Intern("allocation"), b.host(),
                                  SliceKind::kInstant);
    t.bytes[row] = static_cast<int64_t>(2 * kGiB);
    t.flags[row] |= kSliceOutOfMemory;
    t.detail[row] = t.Intern("aten::mm");
    t.AddSlice((t0 + 70 * kMs + 3) * kUs, 0, t.Intern("out of memory on cuda:0 (2147483648 bytes asked): snapshot " + snap),
               t.Intern("capture"), b.host(), SliceKind::kInstant);
  })}));
  ExpectGoldenAdvice(a);
  ASSERT_FALSE(a.findings.empty());
  const Finding& f = a.findings.front();
  EXPECT_EQ(f.id, "device.memory");
  EXPECT_EQ(f.severity, Severity::kHigh);
  ASSERT_EQ(f.evidence.size(), 1u);  // the note joined to the allocator's report
  EXPECT_EQ(f.evidence[0].step, 2);
  EXPECT_EQ(f.evidence[0].stage, "actor_update");
  EXPECT_EQ(f.evidence[0].start_ns, (100 + 70) * kMs * kUs);
  EXPECT_NE(f.evidence[0].what.find(snap), std::string::npos) << f.evidence[0].what;
  EXPECT_NE(f.evidence[0].what.find("aten::mm"), std::string::npos);
  EXPECT_NE(f.title.find("2.0 GiB asked"), std::string::npos) << f.title;
}

// An async run: `gen` generating processes (each 4 samples a 100 ms step, busy all of it) and
// `train` trainers (each taking 4 samples a step in `train_ms`, waiting for them before), with
// an optional weight sync at the end of each step that holds both pools.
std::vector<InputResult> AsyncRun(int gen, int train, int64_t train_ms, int64_t sync_ms) {
  std::vector<InputResult> in;
  auto process = [&](int64_t rank, bool generating) {
    return Process(rank, 3, 100, [=](int64_t) {
      const int64_t work_end = 100 - sync_ms;
      std::vector<StageSpec> st;
      if (generating) st.push_back({"rollout", "rollout_generate", 0, work_end});
      else st.push_back({"actor", "actor_update", work_end - train_ms, work_end});
      if (sync_ms > 0) st.push_back({generating ? "rollout" : "actor", "weight_sync", work_end, 100});
      return st;
    }, [=](TraceBuilder& b, int64_t step, int64_t t0) {
      Trace& t = b.trace();
      t.capture_start_ns = 0;
      t.capture_end_ns = 300 * kMs * kUs;
      t.role = generating ? "rollout" : "actor";
      const int64_t work_end = 100 - sync_ms;
      if (generating) {
        t.counters.push_back({b.host(), (t0 + work_end - 1) * kMs * kUs, 4, t.Intern("rl/generated")});
      } else {
        b.HostOp(b.host(), "wait/samples", "user_annotation", t0, t0 + (work_end - train_ms) * kMs);
        for (int i = 0; i < 4; ++i)
          t.counters.push_back({b.host(), (t0 + work_end - train_ms) * kMs * kUs, 0, t.Intern("rl/staleness")});
        t.counters.push_back({b.host(), (t0 + work_end) * kMs * kUs, static_cast<double>(step), t.Intern("rl/trainer_version")});
      }
    });
  };
  for (int i = 0; i < gen; ++i) in.push_back(process(i, true));
  for (int i = 0; i < train; ++i) in.push_back(process(gen + i, false));
  return in;
}

TEST(AdviseTest, AnAsyncRunWhoseTrainersWaitForSamples) {
  // 2 generators at 40 samples/s each, 2 trainers at 160/s each (25 ms for 4 samples): the
  // trainers wait 75 ms a step. A third generator would make a step's 8 samples in 66.7 ms
  // instead of 100 ms: 33.3 ms a step.
  const Advice a = Advise(MakeRun(AsyncRun(2, 2, 25, 0)));
  ExpectFirst(a, "rl.async_balance", 100.0 / 3);
  EXPECT_NE(a.findings.front().title.find("rollout-bound"), std::string::npos) << a.findings.front().title;
}

TEST(AdviseTest, AnAsyncWeightSyncThatHoldsBothPools) {
  // Balanced pools (1 generator at 4 samples / 80 ms, 1 trainer at 4 / 80 ms), then a 20 ms
  // weight sync in both with neither generating nor training.
  const Advice a = Advise(MakeRun(AsyncRun(1, 1, 80, 20)));
  ExpectFirst(a, "rl.weight_sync", 20.0);
}

TEST(AdviseTest, LaunchBoundWhenTheDeviceWaitsForTheHost) {
  // 400 kernels of 50 µs a step, each launched 200 µs after the last ended: the device is busy
  // 20 % of the step and waits for the host 80 ms of each 100 ms step.
  const Advice a = Advise(MakeRun({Process(0, 3, 100, [](int64_t) { return std::vector<StageSpec>{}; },
                                       [](TraceBuilder& b, int64_t, int64_t t0) {
                                         for (int i = 0; i < 400; ++i) {
                                           const int64_t s = t0 * 1 + i * 250 + 200;  // µs
                                           b.Launch(1 + i + t0, s - 10);
                                           b.Kernel(7, "elementwise_kernel", s, s + 50, 1 + i + t0);
                                         }
                                       })}));
  ExpectFirst(a, "device.launch_bound", 80.0);
}

TEST(AdviseTest, ABalancedRunHasNothingAboveInfo) {
  std::vector<InputResult> in;
  for (int64_t rank = 0; rank < 2; ++rank)
    in.push_back(Process(rank, 3, 100, [](int64_t) {
      return std::vector<StageSpec>{{"rollout", "rollout_generate", 0, 50}, {"actor", "actor_update", 50, 100}};
    }));
  const Advice a = Advise(MakeRun(std::move(in)));
  ExpectGoldenAdvice(a);
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
