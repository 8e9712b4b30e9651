// The Source seam (source.h): the session starts, flushes, stops and drains every registered
// source with its capture windows, only where the plan wants it; a failing source is switched
// off alone; the C API registers sources from outside.
#include "src/runtime/source.h"

#include <algorithm>
#include <map>
#include <atomic>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "rlprof/rlprof.h"
#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"
#include "src/runtime/session.h"
#include "src/runtime/thread_buffer.h"

namespace rlprof::runtime {
namespace {

using testing_util::FindCaptures;
using testing_util::FreshDir;
using testing_util::MakePlan;
using testing_util::ReadManifest;

const char* NoEnv(const char*) { return nullptr; }

SessionOptions Quiet(std::string run_id) {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = std::move(run_id);
  o.quiet = true;
  o.install_signal_handlers = false;
  return o;
}

// A fake device source: logs every lifecycle call, and in Drain emits one "kernel" on its own
// device-stream track per window it was started for (CLOCK_MONOTONIC ns).
class FakeSource : public Source {
 public:
  explicit FakeSource(std::string name, bool throw_in_start = false)
      : name_(std::move(name)), throw_in_start_(throw_in_start) {}
  std::string_view name() const override { return name_; }
  bool Wanted(const config::ProcessPlan& p) const override { return p.contents.device; }
  void Start(uint32_t gen) override {
    Log("start", gen);
    if (throw_in_start_) throw std::runtime_error("boom");
    std::lock_guard<std::mutex> l(mu_);
    started_.push_back(gen);
    t0_ = MonotonicNowNs();
  }
  void Flush(uint32_t gen) override { Log("flush", gen); }
  void Stop(uint32_t gen) override {
    Log("stop", gen);
    std::lock_guard<std::mutex> l(mu_);
    t1_ = MonotonicNowNs();
  }
  void Drain(SourceSink& sink, uint32_t final_gen) override {
    if (final_gen == 0) return;
    Log("drain-final", final_gen);
    std::lock_guard<std::mutex> l(mu_);
    if (std::find(started_.begin(), started_.end(), final_gen) == started_.end()) return;
    if (track_ == 0) track_ = sink.AddTrack(format::TrackKind::kDeviceStream, (uint64_t{0} << 32) | 7, "stream 7");
    format::Event e{};
    e.ts_ns = t0_ + (t1_ - t0_) / 4;
    e.payload = (t1_ - t0_) / 2;
    e.name = sink.Intern("fake_kernel");
    e.track = track_;
    e.kind = format::EventKind::kComplete;
    e.category = format::Category::kKernel;
    e.arg0 = 42;
    if (sink.Emit(final_gen, e, TimeBase::kMonotonicNs)) ++emitted_[final_gen];
  }
  SourceCounters Counters(uint32_t gen) override {
    std::lock_guard<std::mutex> l(mu_);
    return {{"records", static_cast<int64_t>(emitted_[gen])}, {"status", std::string("on")}};
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> l(mu_);
    return log_;
  }

 private:
  void Log(const char* what, uint32_t gen) {
    std::lock_guard<std::mutex> l(mu_);
    log_.push_back(std::string(what) + " " + std::to_string(gen));
  }
  std::string name_;
  bool throw_in_start_;
  std::mutex mu_;
  std::vector<std::string> log_;
  std::vector<uint32_t> started_;
  int64_t t0_ = 0, t1_ = 0;
  uint16_t track_ = 0;
  std::map<uint32_t, uint64_t> emitted_;
};

struct Registered {
  explicit Registered(std::shared_ptr<Source> s) : name(s->name()) {
    EXPECT_TRUE(SourceRegistry::Get().Register(std::move(s)));
  }
  ~Registered() { SourceRegistry::Get().Unregister(name); }
  std::string name;
};

void RunSteps(SessionImpl& s, int n) {
  for (int64_t step = 1; step <= n; ++step) {
    s.BeginStep(step);
    s.BeginStage("actor", "actor_update", std::nullopt);
    s.EndStage();
    s.EndStep();
  }
}

TEST(SourceTest, ARegisteredSourceIsStartedFlushedStoppedAndDrainedWithEachWindow) {
  auto fake = std::make_shared<FakeSource>("fake_device");
  Registered reg(fake);
  const std::string save = FreshDir("src-life");
  config::Plan plan = MakePlan(save, {1, 2});
  plan.roles[0].contents.device = true;
  auto s = SessionImpl::Create(plan, Quiet("life"), NoEnv);
  ASSERT_TRUE(s->enabled());
  EXPECT_EQ(s->SourceNames(), (std::vector<std::string>{"samples", "fake_device"}));
  RunSteps(*s, 3);
  s->Shutdown();
  // Two windows (steps 1 and 2), each: start, flush before the window stops, stop, then the
  // writer's final drain before its capture is finalised (the writer thread may do that after
  // the next window started: compare per window).
  const std::vector<std::string> log = fake->log();
  ASSERT_EQ(log.size(), 8u) << ::testing::PrintToString(log);
  std::map<std::string, std::vector<std::string>> by_gen;
  for (const std::string& l : log) {
    const size_t sp = l.rfind(' ');
    by_gen[l.substr(sp + 1)].push_back(l.substr(0, sp));
  }
  ASSERT_EQ(by_gen.size(), 2u);
  for (const auto& [gen, calls] : by_gen)
    EXPECT_EQ(calls, (std::vector<std::string>{"start", "flush", "stop", "drain-final"})) << gen;
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 2u);
  for (const std::string& dir : caps) {
    auto cap = format::ReadRaw(dir + "/events.rlp");
    ASSERT_TRUE(cap.ok()) << cap.status().ToString();
    int kernels = 0;
    for (const auto& e : cap->events) {
      if (e.category != format::Category::kKernel) continue;
      ++kernels;
      EXPECT_EQ(cap->str(e.name), "fake_kernel");
      EXPECT_EQ(e.arg0, 42u);
      const format::TrackEntry* t = nullptr;
      for (const auto& tr : cap->tracks)
        if (tr.id == e.track) t = &tr;
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->kind, format::TrackKind::kDeviceStream);
      EXPECT_EQ(t->os_id, 7u);
    }
    EXPECT_EQ(kernels, 1);
    const nlohmann::json m = ReadManifest(dir);
    EXPECT_EQ(m["sources"]["fake_device"]["records"], 1);
    EXPECT_EQ(m["sources"]["fake_device"]["status"], "on");
    EXPECT_EQ(m["counts"]["source_events"], 1);
  }
}

TEST(SourceTest, ASourceThePlanDoesNotWantNeverRuns) {
  auto fake = std::make_shared<FakeSource>("fake_unwanted");
  Registered reg(fake);
  const std::string save = FreshDir("src-unwanted");
  auto s = SessionImpl::Create(MakePlan(save, {1}), Quiet("unwanted"), NoEnv);  // no device
  ASSERT_TRUE(s->enabled());
  EXPECT_EQ(s->SourceNames(), std::vector<std::string>{"samples"});  // built in: every session has it
  RunSteps(*s, 1);
  s->Shutdown();
  EXPECT_TRUE(fake->log().empty());
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_FALSE(ReadManifest(caps[0]).contains("sources"));
}

TEST(SourceTest, ASourceThatThrowsIsSwitchedOffAloneAndTheCaptureGoesOn) {
  auto bad = std::make_shared<FakeSource>("fake_bad", /*throw_in_start=*/true);
  auto good = std::make_shared<FakeSource>("fake_good");
  Registered r1(bad), r2(good);
  const std::string save = FreshDir("src-throw");
  config::Plan plan = MakePlan(save, {1, 2});
  plan.roles[0].contents.device = true;
  auto s = SessionImpl::Create(plan, Quiet("throw"), NoEnv);
  ASSERT_TRUE(s->enabled());
  RunSteps(*s, 2);
  s->Shutdown();
  EXPECT_EQ(bad->log().size(), 1u);  // the start that threw, nothing after
  EXPECT_EQ(good->log().size(), 8u);
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 2u);
  const nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["complete"], true);
  EXPECT_EQ(m["sources"]["fake_bad"]["status"], "failed in Start: boom");
  EXPECT_EQ(m["sources"]["fake_good"]["records"], 1);
}

TEST(SourceTest, MemoryIsABuiltInSourceWithItsCountersInTheManifest) {
  const std::string save = FreshDir("src-mem");
  config::Plan plan = MakePlan(save, {1});
  plan.roles[0].contents.memory = true;
  plan.memory_interval_s = 0;  // boundaries only
  auto s = SessionImpl::Create(plan, Quiet("mem"), NoEnv);
  EXPECT_EQ(s->SourceNames(), (std::vector<std::string>{"memory", "samples"}));
  RunSteps(*s, 1);
  s->Shutdown();
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  // BeginStep, BeginStage, EndStage, EndStep: four boundaries inside the window.
  EXPECT_EQ(ReadManifest(caps[0])["sources"]["memory"]["samples"], 4);
}

// ---- The C API (rlprof.h): a source made of function pointers. ----

struct CLog {
  std::mutex mu;
  std::vector<std::string> calls;
  uint32_t name = 0;
  bool destroyed = false;
  void Add(std::string s) {
    std::lock_guard<std::mutex> l(mu);
    calls.push_back(std::move(s));
  }
};

TEST(SourceTest, TheCApiRegistersASourceThatRecordsThroughRlprofEmit) {
  static CLog log;  // outlives the source (destroy is called when the last user lets go)
  rlprof_source src;
  rlprof_source_init(&src);
  src.name = "c_ops";
  src.contents = RLPROF_CONTENTS_OPS;
  src.user = &log;
  src.configure = [](void* u, uint32_t contents, const char* level) {
    static_cast<CLog*>(u)->Add("configure " + std::to_string(contents) + " " + level);
    return 0;
  };
  src.start = [](void* u, uint32_t w) {
    static_cast<CLog*>(u)->Add("start");
    // An operator recorded on this (the training) thread while the window is open.
    rlprof_event e{};
    e.ts = static_cast<int64_t>(rlprof_ticks());
    e.payload = 10;
    e.name = rlprof_intern("aten::mm", 8);
    e.kind = RLPROF_EVENT_COMPLETE;
    e.category = static_cast<uint8_t>(format::Category::kOperator);
    EXPECT_EQ(rlprof_emit(w, &e), 1);
    EXPECT_EQ(rlprof_emit(w + 1, &e), 0);  // not the open window
  };
  src.stop = [](void* u, uint32_t) { static_cast<CLog*>(u)->Add("stop"); };
  src.counters = [](void*, uint32_t, rlprof_counter_add_fn add, void* ctx) { add(ctx, "ops", 1); };
  src.destroy = [](void* u) { static_cast<CLog*>(u)->destroyed = true; };
  ASSERT_EQ(rlprof_register_source(&src), RLPROF_OK);
  EXPECT_EQ(rlprof_register_source(&src), RLPROF_ERROR_STATE);  // the name is taken
  rlprof_source nameless;
  rlprof_source_init(&nameless);
  EXPECT_EQ(rlprof_register_source(&nameless), RLPROF_ERROR_INVALID_ARGUMENT);

  const std::string save = FreshDir("src-c");
  config::Plan plan = MakePlan(save, {1});
  plan.roles[0].contents.ops = true;
  plan.roles[0].level = "level1";
  auto s = SessionImpl::Create(plan, Quiet("c"), NoEnv);
  RunSteps(*s, 1);
  s->Shutdown();
  s.reset();
  EXPECT_EQ(rlprof_unregister_source("c_ops"), RLPROF_OK);
  EXPECT_EQ(rlprof_unregister_source("c_ops"), RLPROF_ERROR_STATE);
  EXPECT_TRUE(log.destroyed);
  ASSERT_EQ(log.calls.size(), 3u) << ::testing::PrintToString(log.calls);
  EXPECT_EQ(log.calls[0], "configure " + std::to_string(RLPROF_CONTENTS_CPU | RLPROF_CONTENTS_OPS) + " level1");
  EXPECT_EQ(log.calls[1], "start");
  EXPECT_EQ(log.calls[2], "stop");
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  int ops = 0;
  for (const auto& e : cap->events)
    if (e.category == format::Category::kOperator && cap->str(e.name) == "aten::mm") ++ops;
  EXPECT_EQ(ops, 1);
  EXPECT_EQ(ReadManifest(caps[0])["sources"]["c_ops"]["ops"], 1);
}

// configure_with: the process's plan beyond contents and level (ops_sampling), and the
// manifest of an operator capture says the share it holds.
TEST(SourceTest, ConfigureWithHandsTheSourceTheOpsSamplingAndTheManifestSaysIt) {
  static CLog log;
  rlprof_source src;
  rlprof_source_init(&src);
  src.name = "c_sampled_ops";
  src.contents = RLPROF_CONTENTS_OPS;
  src.user = &log;
  src.configure = [](void* u, uint32_t, const char*) {
    static_cast<CLog*>(u)->Add("configure");  // not called: configure_with is set
    return 0;
  };
  src.configure_with = [](void* u, const rlprof_source_config* c) {
    static_cast<CLog*>(u)->Add("configure_with " + std::to_string(c->contents) + " " + c->level +
                                " " + std::to_string(c->ops_sampling) + " " +
                                std::to_string(c->struct_size == sizeof(rlprof_source_config)));
    return 0;
  };
  ASSERT_EQ(rlprof_register_source(&src), RLPROF_OK);
  const std::string save = FreshDir("src-sampled");
  config::Plan plan = MakePlan(save, {1});
  plan.roles[0].contents.ops = true;
  plan.roles[0].ops_sampling = 0.25;
  auto s = SessionImpl::Create(plan, Quiet("sampled"), NoEnv);
  RunSteps(*s, 1);
  s->Shutdown();
  s.reset();
  EXPECT_EQ(rlprof_unregister_source("c_sampled_ops"), RLPROF_OK);
  ASSERT_EQ(log.calls.size(), 1u) << ::testing::PrintToString(log.calls);
  EXPECT_EQ(log.calls[0], "configure_with " +
                              std::to_string(RLPROF_CONTENTS_CPU | RLPROF_CONTENTS_OPS) +
                              " level0 0.250000 1");
  const std::vector<std::string> caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_EQ(ReadManifest(caps[0])["ops_sampling"], 0.25);
  EXPECT_EQ(ReadManifest(caps[0])["config"]["process"]["ops_sampling"], 0.25);
}

TEST(SourceTest, ASourceRegisteredWhileASessionLivesJoinsItAndLeavesWhenUnregistered) {
  const std::string save = FreshDir("src-late");
  config::Plan plan = MakePlan(save, {1, 2});
  plan.roles[0].contents.device = true;
  auto s = SessionImpl::Create(plan, Quiet("late"), NoEnv);
  auto fake = std::make_shared<FakeSource>("fake_late");
  ASSERT_TRUE(SourceRegistry::Get().Register(fake));
  EXPECT_EQ(s->SourceNames(), (std::vector<std::string>{"samples", "fake_late"}));
  RunSteps(*s, 1);
  ASSERT_TRUE(s->Flush(10));  // step 1's capture finalised (its final drain done)
  SourceRegistry::Get().Unregister("fake_late");
  EXPECT_EQ(s->SourceNames(), std::vector<std::string>{"samples"});
  s->BeginStep(2);
  s->EndStep();
  s->Shutdown();
  EXPECT_EQ(fake->log().size(), 4u);  // step 1's window only
}

}  // namespace
}  // namespace rlprof::runtime
