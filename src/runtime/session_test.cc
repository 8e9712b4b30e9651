#include "src/runtime/session.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"
#include "src/runtime/thread_buffer.h"
#include "src/runtime/writer.h"

namespace rlprof::runtime {
namespace {

using testing_util::FindCaptures;
using testing_util::FreshDir;
using testing_util::MakePlan;
using testing_util::ReadManifest;

const char* NoEnv(const char*) { return nullptr; }

SessionOptions Quiet(std::string run_id = "run") {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = std::move(run_id);
  o.quiet = true;
  o.install_signal_handlers = false;
  return o;
}

std::vector<std::string> EventNames(const format::RawCapture& cap, format::EventKind kind) {
  std::vector<std::string> out;
  for (const auto& e : cap.events)
    if (e.kind == kind) out.push_back(cap.str(e.name));
  std::sort(out.begin(), out.end());
  return out;
}

// contents: [memory]: the RSS is a counter at each step and stage boundary and every
// memory_interval_s while the window is open, and nowhere else.
TEST(SessionTest, MemoryContentsSampleRssAtStageBoundariesAndAtTheInterval) {
  const std::string save = FreshDir("memory");
  config::Plan plan = MakePlan(save, {1});
  plan.roles[0].contents.memory = true;
  plan.memory_interval_s = 0.01;
  auto s = SessionImpl::Create(plan, Quiet("mem"), NoEnv);
  ASSERT_TRUE(s->enabled());
  s->BeginStep(1);
  s->BeginStage("actor", "actor_update", std::nullopt);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  s->EndStage();
  s->EndStep();
  s->BeginStep(2);  // not selected: no window, no samples
  s->BeginStage("actor", "actor_update", std::nullopt);
  s->EndStage();
  s->EndStep();
  s->Shutdown();
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  int samples = 0;
  for (const auto& e : cap->events) {
    if (e.kind != format::EventKind::kCounter || cap->str(e.name) != "rss_bytes") continue;
    EXPECT_EQ(e.category, format::Category::kMemory);
    EXPECT_GT(e.counter_value(), 1 << 20);  // this test binary is bigger than 1 MiB
    ++samples;
  }
  // Four at the step's and stage's bounds, and about one per 10 ms of the 300 ms (the writer wakes at
  // the interval; a loaded machine may skip some, never all).
  EXPECT_GE(samples, 6);
}

TEST(SessionTest, WritesOneCapturePerSelectedStepWithAFullManifest) {
  const std::string save = FreshDir("e2e");
  auto s = SessionImpl::Create(MakePlan(save, {2}), Quiet("r1"), NoEnv);
  ASSERT_TRUE(s->enabled());
  for (int64_t step = 1; step <= 3; ++step) {
    s->BeginStep(step);
    {
      RLPROF_RANGE("forward");
      Mark("tick");
      Counter("loss", 0.5 * static_cast<double>(step));
    }
    s->EndStep();
  }
  s->Shutdown();
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  const Identity& id = s->identity();
  EXPECT_EQ(caps[0], save + "/r1/step2/e2e/rank0-" + id.host + "-" + std::to_string(id.pid));
  EXPECT_EQ(s->Captures(), caps);

  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["format"], "rlprof-capture");
  EXPECT_EQ(m["format_version"], 1);
  EXPECT_EQ(m["run_id"], "r1");
  EXPECT_EQ(m["scope"], "e2e");
  EXPECT_EQ(m["mode"], "e2e");
  EXPECT_FALSE(m.contains("stage"));  // no value: left out, not null
  EXPECT_FALSE(m.contains("role"));
  EXPECT_EQ(m["steps"], nlohmann::json::array({2}));
  EXPECT_EQ(m["identity"]["rank"], 0);
  EXPECT_EQ(m["identity"]["world_size"], 1);
  EXPECT_EQ(m["identity"]["pid"], id.pid);
  EXPECT_EQ(m["identity"]["roles"], nlohmann::json::array({"actor"}));
  EXPECT_EQ(m["window"]["close_reason"], "step_end");
  EXPECT_EQ(m["complete"], true);
  EXPECT_TRUE(m["errors"].empty());
  EXPECT_EQ(m["counts"]["dropped_events"], 0);
  EXPECT_EQ(m["counts"]["threads"], 1);
  EXPECT_EQ(m["contents"], nlohmann::json::array({"cpu"}));
  EXPECT_TRUE(m["config"].contains("process"));
  EXPECT_EQ(m["config"]["process"]["roles"], nlohmann::json::array({"actor"}));
  const int64_t open_ns = m["window"]["open_ns"], close_ns = m["window"]["close_ns"];
  EXPECT_LT(open_ns, close_ns);

  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().message();
  EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
  EXPECT_EQ(m["counts"]["events"], cap->events.size());
  EXPECT_EQ(m["files"][0]["bytes"], std::filesystem::file_size(caps[0] + "/events.rlp"));
  // Exactly step 2's events: one range, one mark, one counter sample, the step itself.
  ASSERT_EQ(cap->events.size(), 4u);
  EXPECT_EQ(EventNames(*cap, format::EventKind::kComplete),
            (std::vector<std::string>{"forward", "step 2"}));
  EXPECT_EQ(EventNames(*cap, format::EventKind::kInstant), (std::vector<std::string>{"tick"}));
  for (const auto& e : cap->events) {
    EXPECT_GE(e.ts_ns, open_ns);
    EXPECT_LE(e.end_ns(), close_ns);
    if (e.kind == format::EventKind::kCounter) {
      EXPECT_EQ(e.counter_value(), 1.0);
      bool counter_track = false;
      for (const auto& t : cap->tracks)
        if (t.id == e.track && t.kind == format::TrackKind::kCounter && t.name == "loss")
          counter_track = true;
      EXPECT_TRUE(counter_track);
    }
    if (e.category == format::Category::kStep) {
      EXPECT_EQ(e.arg0, 2u);
    }
  }
}

TEST(SessionTest, DiscreteModeWritesOneCapturePerSelectedStageWithItsRole) {
  const std::string save = FreshDir("discrete");
  config::Plan plan = MakePlan(save, {1}, config::CaptureMode::kDiscrete);
  plan.roles[0].stages = {"actor_update"};
  auto s = SessionImpl::Create(plan, Quiet("r"), NoEnv);
  s->BeginStep(1);
  s->BeginStage("actor", "actor_compute_log_prob", std::nullopt);
  Mark("not captured");
  s->EndStage();
  s->BeginStage("actor", "actor_update", std::nullopt);
  Mark("captured");
  s->EndStage();
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_NE(caps[0].find("/r/step1/actor_update/rank0-"), std::string::npos) << caps[0];
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["scope"], "actor_update");
  EXPECT_EQ(m["mode"], "discrete");
  EXPECT_EQ(m["stage"], "actor_update");
  EXPECT_EQ(m["role"], "actor");
  EXPECT_EQ(m["window"]["close_reason"], "stage_end");
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(EventNames(*cap, format::EventKind::kInstant), (std::vector<std::string>{"captured"}));
  ASSERT_EQ(EventNames(*cap, format::EventKind::kComplete),
            (std::vector<std::string>{"actor_update"}));
  for (const auto& e : cap->events)
    if (e.category == format::Category::kStage) {
      EXPECT_EQ(cap->str(e.arg1), "actor");
    }
}

TEST(SessionTest, NeverOverwritesAnExistingCaptureDirectory) {
  const std::string save = FreshDir("overwrite");
  for (int i = 0; i < 3; ++i) {
    auto s = SessionImpl::Create(MakePlan(save, {1}), Quiet("same"), NoEnv);
    s->BeginStep(1);
    Mark("m");
    s->EndStep();
    s->Shutdown();
  }
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 3u);
  EXPECT_EQ(caps[1], caps[0] + "-1");
  EXPECT_EQ(caps[2], caps[0] + "-2");
  for (const auto& c : caps) EXPECT_EQ(ReadManifest(c)["counts"]["events"], 2);  // mark + step
}

// Manual captures of one scope in one session: each its own directory (one mkdir each, the
// writer remembers the next suffix), and a scope directory removed under the running job is
// made again for the next capture.
TEST(SessionTest, ManyCapturesOfOneScopeEachGetADirectoryEvenAfterItsParentWasRemoved) {
  const std::string save = FreshDir("manyscope");
  auto s = SessionImpl::Create(MakePlan(save, {}), Quiet("many"), NoEnv);
  ASSERT_TRUE(s->enabled());
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(s->StartCapture("loop"));
    Mark("m");
    s->StopCapture();
    ASSERT_TRUE(s->Flush(10));
  }
  std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 5u);
  const std::string parent = caps[0].substr(0, caps[0].rfind('/'));
  std::filesystem::remove_all(parent);
  ASSERT_TRUE(s->StartCapture("loop"));
  Mark("after");
  s->StopCapture();
  s->Shutdown();
  caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(caps[0].substr(0, caps[0].rfind('/')), parent);
  EXPECT_EQ(ReadManifest(caps[0])["complete"], true);
}

// A capture's string table holds the strings its events name, not the whole process's: the
// second capture has no entry for the first one's marker, and every name it uses resolves.
TEST(SessionTest, ACaptureHoldsOnlyTheStringsItsEventsName) {
  const std::string save = FreshDir("strings");
  auto s = SessionImpl::Create(MakePlan(save, {}), Quiet("str"), NoEnv);
  ASSERT_TRUE(s->StartCapture("first"));
  Mark("only in the first capture");
  s->StopCapture();
  ASSERT_TRUE(s->StartCapture("second"));
  Mark("in the second");
  s->StopCapture();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 2u);
  for (const auto& dir : caps) {
    auto cap = format::ReadRaw(dir + "/events.rlp");
    ASSERT_TRUE(cap.ok());
    const bool second = dir.find("/second/") != std::string::npos;
    const std::string other = second ? "only in the first capture" : "in the second";
    EXPECT_EQ(std::count(cap->strings.begin(), cap->strings.end(), other), 0) << dir;
    const std::vector<std::string> marks = EventNames(*cap, format::EventKind::kInstant);
    EXPECT_EQ(marks, std::vector<std::string>{second ? "in the second" : "only in the first capture"});
  }
}

TEST(SessionTest, UnwritableSavePathWarnsOnceAndDisablesProfiling) {
  const std::string blocker = FreshDir("unwritable") + "/file";
  ASSERT_TRUE(base::WriteFileAtomic(blocker, "x").ok());
  ::testing::internal::CaptureStderr();
  auto s = SessionImpl::Create(MakePlan(blocker + "/sub", {1, 2}), Quiet(), NoEnv);
  for (int64_t step = 1; step <= 2; ++step) {
    s->BeginStep(step);
    EXPECT_FALSE(Recording());
    RLPROF_RANGE("nothing");
    s->EndStep();
  }
  EXPECT_FALSE(s->StartCapture("manual"));
  s->Shutdown();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(s->enabled());
  size_t warnings = 0;
  for (size_t p = err.find("rlprof: warning"); p != std::string::npos;
       p = err.find("rlprof: warning", p + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  EXPECT_NE(err.find("profiling is disabled"), std::string::npos) << err;
}

TEST(SessionTest, ProcessNotSelectedByThePlanRecordsNothing) {
  const std::string save = FreshDir("unselected");
  SessionOptions o = Quiet();
  o.roles = std::vector<std::string>{"critic"};
  auto s = SessionImpl::Create(MakePlan(save, {1}), o, NoEnv);
  EXPECT_FALSE(s->enabled());
  s->BeginStep(1);
  EXPECT_FALSE(Recording());
  s->EndStep();
  s->Shutdown();
  EXPECT_TRUE(FindCaptures(save).empty());
}

TEST(SessionTest, DropPolicyCountsExactlyInTheManifest) {
  const std::string save = FreshDir("drop");
  config::Plan plan = MakePlan(save, {});
  plan.steps.list = {99};
  plan.buffer_events_per_thread = 64;
  plan.buffer_policy = config::BufferPolicy::kDrop;
  auto s = SessionImpl::Create(plan, Quiet(), NoEnv);
  ASSERT_TRUE(s->StartCapture("manual"));
  for (int i = 0; i < 1000; ++i) Mark("m");
  s->StopCapture();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["counts"]["events"], 64);
  EXPECT_EQ(m["counts"]["dropped_events"], 936);
  EXPECT_EQ(m["counts"]["dropped_buffer_full"], 936);
  EXPECT_EQ(m["mode"], "manual");
}

TEST(SessionTest, FlushPolicyAccountsForEveryEvent) {
  const std::string save = FreshDir("flush");
  config::Plan plan = MakePlan(save, {99});
  plan.buffer_events_per_thread = 64;
  plan.buffer_policy = config::BufferPolicy::kFlush;
  auto s = SessionImpl::Create(plan, Quiet(), NoEnv);
  ASSERT_TRUE(s->StartCapture("manual"));
  for (int i = 0; i < 5000; ++i) Mark("m");
  s->StopCapture();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  const uint64_t events = m["counts"]["events"], dropped = m["counts"]["dropped_events"];
  EXPECT_EQ(events + dropped, 5000u);
  EXPECT_GE(events, 64u * 3);  // at least the pre-faulted chunks
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  EXPECT_EQ(cap->events.size(), events);
}

// A thread records and exits just as its window closes: the writer's last drain of the window
// takes the hand-offs, the thread exits (its chunk moves from current to the hand-offs), then
// the writer reads the current chunks. Its events are in the capture, none late.
struct ExitingThread {
  std::mutex mu;
  std::condition_variable cv;
  bool marked = false, go = false;
  std::thread t;
};
ExitingThread* exiting = nullptr;
void ExitTheThreadNow(uint32_t final_gen) {
  if (final_gen == 0 || exiting == nullptr || !exiting->t.joinable()) return;
  {
    std::lock_guard<std::mutex> l(exiting->mu);
    exiting->go = true;
  }
  exiting->cv.notify_all();
  exiting->t.join();  // its buffer is handed off as it exits
}
TEST(SessionTest, AThreadThatExitsAsItsWindowClosesLosesNothing) {
  const std::string save = FreshDir("exit-at-close");
  config::Plan plan = MakePlan(save, {1});
  plan.flush_interval_s = 60;  // no periodic drain: the window's last drain is the first after the mark
  auto s = SessionImpl::Create(plan, Quiet(), NoEnv);
  ASSERT_TRUE(s->enabled());
  s->BeginStep(1);
  ASSERT_TRUE(s->Flush(30));  // the writer has opened the window and drained: idle until EndStep
  ExitingThread x;
  exiting = &x;
  x.t = std::thread([&x] {
    Mark("before-exit");
    std::unique_lock<std::mutex> l(x.mu);
    x.marked = true;
    x.cv.notify_all();
    x.cv.wait(l, [&x] { return x.go; });
  });
  {
    std::unique_lock<std::mutex> l(x.mu);
    x.cv.wait(l, [&x] { return x.marked; });
  }
  SetDrainHookForTesting(&ExitTheThreadNow);
  s->EndStep();  // the window's last drain: the hook lets the thread exit inside it
  s->Shutdown();
  SetDrainHookForTesting(nullptr);
  if (x.t.joinable()) {  // (no close drain ran the hook: let it go)
    { std::lock_guard<std::mutex> l(x.mu); x.go = true; }
    x.cv.notify_all();
    x.t.join();
  }
  exiting = nullptr;
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  const std::vector<std::string> marks = EventNames(*cap, format::EventKind::kInstant);
  EXPECT_EQ(std::count(marks.begin(), marks.end(), "before-exit"), 1) << ::testing::PrintToString(marks);
}

TEST(SessionTest, EventBudgetClosesTheWindowEarly) {
  const std::string save = FreshDir("budget");
  config::Plan plan = MakePlan(save, {1});
  plan.budget.max_events = 100;
  auto s = SessionImpl::Create(plan, Quiet(), NoEnv);
  s->BeginStep(1);
  for (int i = 0; i < 1000; ++i) Mark("m");
  // The writer notices within a flush interval and stops recording (waited for up to 30 s: a
  // loaded machine can hold the writer thread back).
  for (int i = 0; i < 3000 && Recording(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(Recording());
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["counts"]["events"], 100);
  // Records already in the buffer past the budget are counted; once the writer stops the
  // window, later marks are not recorded at all.
  EXPECT_GE(m["counts"]["dropped_budget"].get<uint64_t>(), 1u);
  EXPECT_LE(m["counts"]["dropped_budget"].get<uint64_t>(), 900u);
  EXPECT_EQ(m["window"]["close_reason"], "budget");
}

TEST(SessionTest, ByteBudgetClosesTheWindowEarly) {
  const std::string save = FreshDir("budget-bytes");
  config::Plan plan = MakePlan(save, {1});
  plan.budget.max_bytes = 16 << 10;
  auto s = SessionImpl::Create(plan, Quiet(), NoEnv);
  s->BeginStep(1);
  uint64_t x = 88172645463325252ull;
  // Until the writer closes the window (at most ~30 s of 1 ms pauses: a loaded machine can hold
  // the writer thread back; unloaded it closes within the first 200,000).
  uint64_t emitted = 0;
  for (int i = 0; i < 30'000'000 && Recording(); ++i, ++emitted) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift: incompressible counter values
    Counter("noise", static_cast<double>(x));
    if ((i & 1023) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["window"]["close_reason"], "budget");
  EXPECT_LT(m["counts"]["events"].get<uint64_t>(), emitted);
  EXPECT_GE(m["files"][0]["bytes"].get<uint64_t>(), 16u << 10);
}

TEST(SessionTest, ScheduledStageWindowWritesOnePartPerActiveCycle) {
  const std::string save = FreshDir("parts");
  config::Plan plan = MakePlan(save, {1}, config::CaptureMode::kDiscrete);
  plan.roles[0].stages = {"actor_update"};
  plan.roles[0].schedules = {{.wait = 1, .active = 2, .repeat = 2, .unit = config::SubStepKind::kMiniBatch}};
  auto s = SessionImpl::Create(plan, Quiet("p"), NoEnv);
  s->BeginStep(1);
  s->BeginStage("actor", "actor_update", std::nullopt);  // no declaration needed
  for (int mb = 0; mb < 8; ++mb) {
    Mark(InternName("mb " + std::to_string(mb)));
    s->SubStep(config::SubStepKind::kMiniBatch);
  }
  s->EndStage();
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 2u);
  const std::vector<std::vector<std::string>> want = {{"mb 1", "mb 2"}, {"mb 4", "mb 5"}};
  for (int part = 0; part < 2; ++part) {
    EXPECT_NE(caps[part].find("/p/step1/actor_update.part" + std::to_string(part + 1) + "/"),
              std::string::npos)
        << caps[part];
    nlohmann::json m = ReadManifest(caps[part]);
    EXPECT_EQ(m["window"]["close_reason"], "schedule");
    // The manifest says which mini-batches the capture holds.
    const nlohmann::json& sm = m["window"]["sampling"];
    EXPECT_EQ(sm["unit"], "mini_batch");
    EXPECT_EQ(sm["first"], part == 0 ? 1 : 4);
    EXPECT_EQ(sm["count"], 2);
    EXPECT_EQ(sm["complete"], true);
    EXPECT_EQ(sm["schedule"]["active"], 2);
    auto cap = format::ReadRaw(caps[part] + "/events.rlp");
    ASSERT_TRUE(cap.ok());
    std::vector<std::string> marks;
    for (const auto& e : cap->events)
      if (e.kind == format::EventKind::kInstant && e.category == format::Category::kUser)
        marks.push_back(cap->str(e.name));
    std::sort(marks.begin(), marks.end());
    EXPECT_EQ(marks, want[part]);
  }
}

TEST(SessionTest, BackstopClosesAScheduledWindowThatStopsAdvancing) {
  const std::string save = FreshDir("backstop");
  config::Plan plan = MakePlan(save, {1}, config::CaptureMode::kDiscrete);
  plan.backstop_s = 0.05;
  plan.flush_interval_s = 0.01;
  plan.roles[0].schedules = {{.active = 100, .repeat = 1, .unit = config::SubStepKind::kDecode,
                              .stage = "rollout_generate"}};
  auto s = SessionImpl::Create(plan, Quiet("b"), NoEnv);
  s->BeginStep(1);
  s->BeginStage("rollout", "rollout_generate", config::SubStepKind::kDecode);
  EXPECT_TRUE(Recording());
  Mark("decoding");
  // An idle rank: no more sub-steps. The writer's ticks reach the backstop.
  for (int i = 0; i < 500 && Recording(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_FALSE(Recording());
  s->EndStage();
  s->EndStep();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(ReadManifest(caps[0])["window"]["close_reason"], "backstop");
}

TEST(SessionTest, ManySessionsAndThreadsRecordWhileWindowsOpenAndClose) {
  const std::string save = FreshDir("concurrency");
  config::Plan plan = MakePlan(save, {});
  plan.steps.kind = config::StepSelection::Kind::kAll;
  plan.buffer_events_per_thread = 1024;
  plan.flush_interval_s = 0.01;
  auto s = SessionImpl::Create(plan, Quiet(), NoEnv);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int t = 0; t < 6; ++t)
    workers.emplace_back([&, t] {
      SetThreadName("worker " + std::to_string(t));
      while (!stop.load(std::memory_order_relaxed)) {
        RLPROF_RANGE("work");
        Mark("m");
        const uint64_t id = RangeStart("async");
        Counter("c", 1.0);
        RangeEnd(id);
      }
    });
  // Short-lived threads too: their buffers are handed back on exit.
  for (int64_t step = 1; step <= 20; ++step) {
    s->BeginStep(step);
    std::thread([] {
      for (int i = 0; i < 100; ++i) Mark("short-lived");
    }).join();
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s->EndStep();
  }
  stop = true;
  for (auto& w : workers) w.join();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 20u);
  size_t named_workers = 0;
  for (const auto& c : caps) {
    nlohmann::json m = ReadManifest(c);
    EXPECT_TRUE(m["complete"].get<bool>());
    auto cap = format::ReadRaw(c + "/events.rlp");
    ASSERT_TRUE(cap.ok());
    EXPECT_TRUE(cap->diagnostics.clean()) << cap->diagnostics.ToString();
    EXPECT_EQ(m["counts"]["events"], cap->events.size());
    const int64_t open_ns = m["window"]["open_ns"], close_ns = m["window"]["close_ns"];
    size_t short_lived = 0;
    for (const auto& e : cap->events) {
      EXPECT_GE(e.ts_ns, open_ns);  // events of a window begin inside it
      EXPECT_LE(e.ts_ns, close_ns);
      if (cap->str(e.name) == "short-lived") ++short_lived;
    }
    // Recorded in full although the thread exited before the window closed.
    EXPECT_EQ(short_lived, 100u);
    for (const auto& t : cap->tracks)
      if (t.kind == format::TrackKind::kThread && t.name.rfind("worker ", 0) == 0) ++named_workers;
  }
  // SetThreadName reaches the track table (workers may miss a 2 ms window on a loaded machine,
  // so this is checked over all captures).
  EXPECT_GE(named_workers, 1u);
}

TEST(SessionTest, SecondConcurrentSessionIsDisabledWithOneWarning) {
  const std::string save = FreshDir("second");
  auto a = SessionImpl::Create(MakePlan(save, {1}), Quiet("a"), NoEnv);
  ::testing::internal::CaptureStderr();
  auto b = SessionImpl::Create(MakePlan(save, {1}), Quiet("b"), NoEnv);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(a->enabled());
  EXPECT_FALSE(b->enabled());
  EXPECT_NE(err.find("another rlprof session"), std::string::npos);
  b->Shutdown();
  a->Shutdown();
}

}  // namespace
}  // namespace rlprof::runtime
