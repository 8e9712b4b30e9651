// AsyncPools: a process's window split by priority (sync phases > the sync stage > waits > busy
// stages > other), versions and staleness from rlprof.rl's counters.
#include "src/analysis/passes/async_pools.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/analysis/run/async_run.h"

namespace rlprof::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

struct Builder {
  Trace t;
  uint32_t th = t.ThreadTrack(1, 1);
  void Range(const char* name, int64_t s_ms, int64_t e_ms) {
    t.AddSlice(s_ms * kMs, (e_ms - s_ms) * kMs, t.Intern(name), t.Intern("user"), th);
  }
  void Stage(const char* name, int64_t s_ms, int64_t e_ms) {
    Marker m;
    m.start_ns = s_ms * kMs;
    m.end_ns = e_ms * kMs;
    m.name = name;
    t.stages.push_back(m);
  }
  void Counter(const char* name, int64_t at_ms, double v) {
    t.counters.push_back({th, at_ms * kMs, v, t.Intern(name)});
  }
};

// A rollout process over [0, 100) ms: generates 0-30 and 60-90; waits for weights 30-60, and a
// weight sync (stage 40-55: wait 41-45, transfer 45-52, load 52-54) happens inside that wait.
TEST(AsyncPoolsTest, SyncInsideAWaitIsSyncAndEachInstantCountsOnce) {
  Builder b;
  b.t.capture_start_ns = 0;
  b.t.capture_end_ns = 100 * kMs;
  b.Stage("rollout_generate", 0, 30);
  b.Stage("rollout_generate", 60, 90);
  b.Range("wait/weights", 30, 60);
  b.Stage("weight_sync", 40, 55);
  b.Range("sync/wait", 41, 45);
  b.Range("sync/transfer", 45, 52);
  b.Range("sync/load", 52, 54);
  b.Counter("rl/weight_version", 54, 2);
  b.Counter("rl/sync_bytes", 45, 7e6);
  b.t.Finalize();
  const AsyncBreakdown a = AsyncPools(b.t);
  ASSERT_TRUE(a.present);
  EXPECT_EQ(a.window, 100 * kMs);
  EXPECT_EQ(a.busy, 60 * kMs);
  EXPECT_EQ(a.sync[2], 4 * kMs);  // wait
  EXPECT_EQ(a.sync[3], 7 * kMs);  // transfer
  EXPECT_EQ(a.sync[4], 2 * kMs);  // load
  EXPECT_EQ(a.sync_other, 2 * kMs);  // 40-41, 54-55: the stage outside its phases
  EXPECT_EQ(a.wait[kWaitWeights], 15 * kMs);  // 30-40, 55-60
  EXPECT_EQ(a.other, 10 * kMs);               // 90-100
  EXPECT_EQ(a.busy + a.wait_total() + a.sync_total() + a.other, a.window);
  EXPECT_EQ(a.syncs, 1);
  EXPECT_DOUBLE_EQ(a.transfer_bytes, 7e6);
  EXPECT_EQ(a.version_first, 2);
  EXPECT_EQ(a.version_last, 2);
}

TEST(AsyncPoolsTest, ATrainersStarvationAndTheStalenessOfWhatItConsumed) {
  Builder b;
  b.t.capture_start_ns = 10 * kMs;  // the window clips what lies outside it
  b.t.capture_end_ns = 50 * kMs;
  b.Range("wait/samples", 0, 20);
  b.Stage("actor_update", 20, 45);
  b.Range("wait/samples", 45, 60);
  for (auto [at, s] : {std::pair{19, 0}, {44, 1}, {46, 2}}) b.Counter("rl/staleness", at, s);
  b.Counter("rl/trainer_version", 45, 1);
  b.t.Finalize();
  const AsyncBreakdown a = AsyncPools(b.t);
  EXPECT_EQ(a.window, 40 * kMs);
  EXPECT_EQ(a.wait[kWaitSamples], 15 * kMs);  // 10-20 and 45-50
  EXPECT_EQ(a.busy, 25 * kMs);
  EXPECT_EQ(a.other, 0);
  EXPECT_EQ(a.consumed, 3);
  EXPECT_DOUBLE_EQ(a.staleness_mean, 1.0);
  EXPECT_EQ(a.staleness_max, 2);
  EXPECT_EQ(a.version_first, 1);
}

TEST(AsyncPoolsTest, ATraceWithoutRlRecordsIsNotAsync) {
  Builder b;
  b.Stage("actor_update", 0, 10);
  b.Range("wait/elsewhere", 0, 5);  // not rlprof.rl's vocabulary
  b.t.Finalize();
  EXPECT_FALSE(AsyncPools(b.t).present);
}


// In an async run every process that ran stages is in its role's pool: reward workers (no
// rlprof.rl records of their own) get a pool row with their busy time, and a lane in the report;
// without any process holding rlprof.rl's records there is no async run at all.
TEST(AsyncPoolsTest, RewardWorkersOfAnAsyncRunArePoolsOfTheirOwn) {
  auto input = [](const char* name, const char* role, int64_t rank, Builder& b) {
    b.t.Finalize();
    InputResult r;
    r.input = r.name = name;
    r.status = base::Status::Ok();
    r.analysis.role = role;
    r.analysis.rank = rank;
    r.analysis.async = AsyncPools(b.t);
    return r;
  };
  Builder gen, train, reward;
  gen.t.capture_start_ns = train.t.capture_start_ns = reward.t.capture_start_ns = 0;
  gen.t.capture_end_ns = train.t.capture_end_ns = reward.t.capture_end_ns = 100 * kMs;
  gen.Stage("rollout_generate", 0, 80);
  gen.Counter("rl/generated", 80, 4);
  train.Range("wait/samples", 0, 80);
  train.Stage("actor_update", 80, 100);
  train.Counter("rl/staleness", 80, 1);
  reward.Stage("compute_rm_score", 10, 40);
  reward.Stage("compute_rm_score", 50, 70);
  std::vector<InputResult> run{input("gen", "rollout", 0, gen), input("train", "actor", 0, train),
                               input("reward", "reward", 0, reward)};
  EXPECT_FALSE(run[2].analysis.async.present);  // no rlprof.rl records of its own
  EXPECT_TRUE(InAsyncRun(run[2], true));
  const Table t = AsyncPoolsTable(run);
  size_t busy = 0, input_col = 0;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (t.columns[c].name == "busy") busy = c;
    if (t.columns[c].name == "input") input_col = c;
  }
  double reward_busy = -1;
  for (const auto& row : t.rows)
    if (std::get<std::string>(row[input_col]) == "pool reward") reward_busy = std::get<double>(row[busy]);
  EXPECT_DOUBLE_EQ(reward_busy, 50'000.0);  // µs: 10-40 and 50-70 ms
  EXPECT_EQ(CollectAsyncRun(run).processes.size(), 3u);
  // Reward workers alone are no async run.
  EXPECT_FALSE(AnyAsync({run[2]}));
  EXPECT_TRUE(AsyncPoolsTable({run[2]}).rows.empty());
}

}  // namespace
}  // namespace rlprof::analysis
