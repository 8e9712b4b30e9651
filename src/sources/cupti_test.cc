// The CUPTI source end to end against the fake CUPTI (cupti_fake.cc) replaying
// test/data/cupti/step.records: records → capture → `rlprof summary` / `rlprof export`; and the
// ways it must degrade: no libcupti, another subscriber, a starved buffer pool, no timestamp
// callback.
#include "src/sources/cupti_source.h"

#include <dlfcn.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "rlprof/rlprof.h"
#include "src/base/golden_test_util.h"
#include "src/format/raw.h"
#include "src/sources/cupti_api.h"
#include "src/runtime/clock.h"
#include "src/runtime/session.h"
#include "src/runtime/thread_buffer.h"

namespace rlprof::sources {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::map<std::string, std::string>& TestEnv() {
  static std::map<std::string, std::string> env;
  return env;
}
const char* EnvOf(const char* k) {
  auto it = TestEnv().find(k);
  return it == TestEnv().end() ? nullptr : it->second.c_str();
}
// The session's environment: CLOCK_MONOTONIC ticks (= ns), so the test can place host ranges.
const char* SessionEnv(const char* k) {
  return std::string(k) == "RLPROF_CLOCK" ? "monotonic" : nullptr;
}

// The fake's count of cuptiActivityFlushAll calls (on thread `tid`; every thread's with 0); the
// fake is the library the source loaded (TestEnv), already in the process once a source ran.
uint64_t FakeFlushes(long tid) {
  void* h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW);
  if (h == nullptr) return 0;
  auto flushes = reinterpret_cast<uint64_t (*)(long)>(dlsym(h, "fake_cupti_flushes"));
  const uint64_t n = flushes != nullptr ? flushes(tid) : 0;
  dlclose(h);
  return n;
}

std::string FreshDir(const std::string& tag) {
  static int n = 0;
  std::string d = ::testing::TempDir() + "rlprof-cupti-" + std::to_string(getpid()) + "-" + tag +
                  "-" + std::to_string(n++);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

config::Plan DevicePlan(const std::string& save, const std::string& level) {
  config::Plan p;
  p.tool = config::Tool::kRlprof;
  p.steps.kind = config::StepSelection::Kind::kList;
  p.steps.list = {1};
  p.save_path = save;
  config::RolePlan r;
  r.role = "actor";
  r.block_path = "rlprof.roles.actor";
  r.enabled = r.all_ranks = true;
  r.contents.device = true;
  r.level = level;
  p.roles.push_back(r);
  return p;
}

SessionOptions Quiet() {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = "cupti";
  o.quiet = true;
  o.install_signal_handlers = false;
  return o;
}

std::vector<std::string> Captures(const std::string& root) {
  std::vector<std::string> out;
  for (auto& e : fs::recursive_directory_iterator(root))
    if (e.path().filename() == "manifest.json") out.push_back(e.path().parent_path().string());
  return out;
}

json Manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.json");
  return json::parse(in);
}

// The capture's events, counted by category.
std::map<format::Category, int> Categories(const std::string& dir) {
  std::map<format::Category, int> n;
  auto cap = format::ReadRaw(dir + "/events.rlp");
  EXPECT_TRUE(cap.ok()) << dir;
  if (cap.ok())
    for (const auto& e : cap->events) ++n[e.category];
  return n;
}

// `s` single-quoted for sh (paths under a clone may hold spaces and any other character).
std::string Q(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string Shell(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = pclose(p);
  return out;
}

// One CuptiSource registered for the test, with its own environment.
class CuptiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TestEnv() = {{"RLPROF_CUPTI_LIBRARY", RLPROF_FAKE_CUPTI}};
    setenv("RLPROF_FAKE_CUPTI_RECORDS", RLPROF_CUPTI_DATA_DIR "/step.records", 1);
    unsetenv("RLPROF_FAKE_CUPTI_MODE");
    unsetenv("RLPROF_FAKE_CUPTI_RECORDS_PER_BUFFER");
    unsetenv("RLPROF_FAKE_CUPTI_VERSION");
  }
  void TearDown() override {
    runtime::SourceRegistry::Get().Unregister("cupti");
    source_.reset();
  }
  void Register(CuptiSourceOptions o = {}) {
    o.env = &EnvOf;
    source_ = std::make_shared<CuptiSource>(o);
    ASSERT_TRUE(runtime::SourceRegistry::Get().Register(source_));
  }
  // One step (the capture window) holding an operator on this thread that covers the device
  // work's launches (3 ms). Returns the capture directory. `flushes_in_end_step`: the fake's
  // cuptiActivityFlushAll calls made on this thread while EndStep ran.
  std::string RunStep(const std::string& level, uint64_t* flushes_in_end_step = nullptr) {
    save_ = FreshDir(level);
    auto s = runtime::SessionImpl::Create(DevicePlan(save_, level), Quiet(), &SessionEnv);
    EXPECT_TRUE(s->enabled());
    s->BeginStep(1);
    const int64_t t0 = runtime::MonotonicNowNs();  // the records start 200 µs after the window
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    if (const uint32_t gen = internal::OpenWindow(); gen != 0) {
      runtime::Record op{};
      op.ts_ns = t0;
      op.payload = runtime::MonotonicNowNs() - t0;
      op.name = runtime::Recorder::Get().interner().InternString("aten::linear");
      op.kind = format::EventKind::kComplete;
      op.category = format::Category::kOperator;
      runtime::EmitRecord(gen, op);
    }
    const long tid = static_cast<long>(syscall(SYS_gettid));
    const uint64_t f0 = FakeFlushes(tid);
    s->EndStep();
    if (flushes_in_end_step != nullptr) *flushes_in_end_step = FakeFlushes(tid) - f0;
    s->Shutdown();
    const std::vector<std::string> caps = Captures(save_);
    EXPECT_EQ(caps.size(), 1u);
    return caps.empty() ? std::string() : caps[0];
  }
  std::shared_ptr<CuptiSource> source_;
  std::string save_;
};

TEST_F(CuptiTest, DeviceRecordsBecomeACaptureWithStreamsCorrelationAndCounters) {
  Register();
  const std::string dir = RunStep("level2");
  auto cap = format::ReadRaw(dir + "/events.rlp");
  ASSERT_TRUE(cap.ok()) << cap.status().ToString();
  std::map<format::Category, int> by_cat;
  uint16_t step_track = 0;
  std::vector<const format::Event*> kernels;
  for (const auto& e : cap->events) {
    ++by_cat[e.category];
    if (e.category == format::Category::kStep) step_track = e.track;
    if (e.category == format::Category::kKernel) kernels.push_back(&e);
  }
  EXPECT_EQ(by_cat[format::Category::kKernel], 4);
  EXPECT_EQ(by_cat[format::Category::kMemcpy], 1);
  EXPECT_EQ(by_cat[format::Category::kMemset], 1);
  EXPECT_EQ(by_cat[format::Category::kRuntime], 7);
  EXPECT_EQ(by_cat[format::Category::kSync], 1);
  EXPECT_EQ(by_cat[format::Category::kCapture], 1);  // CUPTI's overhead record
  // Runtime API calls sit on the thread that launched (this one: the step's track).
  const uint32_t tid = static_cast<uint32_t>(syscall(SYS_gettid));
  for (const auto& e : cap->events) {
    if (e.category != format::Category::kRuntime) continue;
    EXPECT_EQ(e.track, step_track);
    if (cap->str(e.name) == "cudaLaunchKernel") {
      EXPECT_NE(e.arg1, 0u);  // external id
    }
  }
  std::map<uint16_t, format::TrackEntry> tracks;
  for (const auto& t : cap->tracks) tracks[t.id] = t;
  EXPECT_EQ(tracks[step_track].os_id, tid);
  int nccl = 0;
  for (const format::Event* k : kernels) {
    const format::TrackEntry& t = tracks[k->track];
    EXPECT_EQ(t.kind, format::TrackKind::kDeviceStream);
    if (cap->str(k->name).starts_with("ncclDevKernel_AllReduce")) {
      ++nccl;
      EXPECT_EQ(t.name, "GPU 0 stream 13");
      EXPECT_TRUE(cap->str(k->arg1).starts_with("collective=AllReduce grid=32x1x1 block=640x1x1"));
      EXPECT_EQ(k->arg0, 102u);
    }
  }
  EXPECT_EQ(nccl, 1);
  // Demangled.
  bool demangled = false;
  for (const format::Event* k : kernels)
    demangled |= cap->str(k->name).starts_with("void at::native::vectorized_elementwise_kernel<4");
  EXPECT_TRUE(demangled);

  const json m = Manifest(dir);
  const json& c = m["sources"]["cupti"];
  EXPECT_EQ(c["status"], "on");
  EXPECT_EQ(c["library"], RLPROF_FAKE_CUPTI);
  EXPECT_EQ(c["clock"], "timestamp callback");
  EXPECT_EQ(c["records"], 15);
  EXPECT_EQ(c["kernels"], 4);
  EXPECT_EQ(c["nccl_kernels"], 1);
  EXPECT_EQ(c["external_correlation"], 5);
  EXPECT_EQ(c["dropped_by_cupti"], 3);
  EXPECT_EQ(c["buffer_starved"], 0);
  EXPECT_EQ(c["activities"], "kernels,memcpy,memset,runtime_api,sync,driver_api,overhead,external_correlation");
  EXPECT_EQ(m["counts"]["source_events"], 15);
  // Every device event lies inside the window.
  const int64_t open = m["window"]["open_ns"], close = m["window"]["close_ns"];
  for (const format::Event* k : kernels) {
    EXPECT_GE(k->ts_ns, open);
    EXPECT_LE(k->ts_ns + k->payload, close);
  }
}

// The device-derived part of `rlprof summary --view all --json` (host times vary from run to run:
// the step's length, host classes, idle) against test/data/cupti/step.summary.golden.
// RLPROF_UPDATE_GOLDEN=1 rewrites the golden file.
std::string DeviceSummary(const json& j) {
  static const std::map<std::string, std::vector<std::string>> kKeep = {
      {"step_trace_time", {"Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication"}},
      {"step_atoms", {"step", "compute_only", "comm_only", "overlap", "memory_only", "memcpy_only",
                      "memset_only", "kernels", "launches"}},
      {"comm_by_group", {"group", "ops", "communication", "comm_not_overlapped"}},
      {"gpu_timeline", {"type", "time ms"}},
      {"classes", {"class", "count", "total"}},
  };
  std::string out;
  for (const auto& in : j["inputs"]) {
    for (const auto& [table, cols] : kKeep) {
      if (!in["tables"].contains(table)) {
        out += table + ": missing\n";
        continue;
      }
      const json& t = in["tables"][table];
      std::vector<size_t> idx;
      for (const std::string& c : cols)
        for (size_t i = 0; i < t["columns"].size(); ++i)
          if (t["columns"][i]["name"] == c) idx.push_back(i);
      out += "-- " + table + "\n";
      for (const auto& row : t["rows"]) {
        if (table == "classes" && (row[0] == "host" || row[0] == "marker")) continue;
        for (size_t k = 0; k < idx.size(); ++k) out += (k ? "  " : "") + row[idx[k]].dump();
        out += "\n";
      }
    }
  }
  out += "diagnostics: " + j["diagnostics"].dump() + "\n";
  return out;
}

TEST_F(CuptiTest, SummaryShowsComputeCommunicationOverlapAndIdleFromDeviceWork) {
  Register();
  const std::string dir = RunStep("level0");
  int rc = 0;
  const std::string out = Shell(Q(RLPROF_CLI) + " summary --view all --json " + Q(dir), &rc);
  ASSERT_EQ(rc, 0) << out;
  const json j = json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  const std::string got = DeviceSummary(j);
  const std::string golden_path = RLPROF_CUPTI_DATA_DIR "/step.summary.golden";
  EXPECT_GOLDEN(golden_path, got);
  // Not a cpu-only capture, and the step has idle device time (it lasts 3 ms, the work 1.6 ms).
  const std::string text = Shell(Q(RLPROF_CLI) + " summary " + Q(dir), &rc);
  EXPECT_EQ(text.find("cpu-only"), std::string::npos) << text;
  const json& st = j["inputs"][0]["tables"]["step_trace_time"];
  for (size_t i = 0; i < st["columns"].size(); ++i)
    if (st["columns"][i]["name"] == "Free") {
      EXPECT_GT(st["rows"][0][i].get<double>(), 1000.0) << text;
    }
}

TEST_F(CuptiTest, ExportShowsDeviceStreamsAsPerfettoTracks) {
  Register();
  const std::string dir = RunStep("level0");
  int rc = 0;
  const std::string trace = save_ + "/trace.pftrace";
  const std::string out = Shell(Q(RLPROF_CLI) + " export " + Q(dir) + " -o " + Q(trace), &rc);
  ASSERT_EQ(rc, 0) << out;
  std::ifstream in(trace, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(bytes.find("GPU 0 stream 7"), std::string::npos);
  EXPECT_NE(bytes.find("GPU 0 stream 13"), std::string::npos);
  EXPECT_NE(bytes.find("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), std::string::npos);
}

// The report's timeline has a device lane per stream the fake CUPTI recorded (issue 12): the
// compute stream and the NCCL stream, with the collective's class.
TEST_F(CuptiTest, ReportHasADeviceLanePerStream) {
  Register();
  const std::string dir = RunStep("level0");
  int rc = 0;
  const std::string page = save_ + "/report.html";
  const std::string out = Shell(Q(RLPROF_CLI) + " report " + Q(dir) + " -o " + Q(page), &rc);
  ASSERT_EQ(rc, 0) << out;
  std::ifstream in(page);
  const std::string html((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string open = "<script id=\"rlprof-data\" type=\"application/json\">";
  const size_t a = html.find(open), b = html.find("</script>", a);
  ASSERT_NE(a, std::string::npos);
  const json d = json::parse(html.substr(a + open.size(), b - a - open.size()), nullptr, false);
  ASSERT_FALSE(d.is_discarded());
  const json& lanes = d["activity"]["lanes"];
  std::map<std::string, bool> device;
  for (size_t i = 0; i < lanes["name"].size(); ++i) device[lanes["name"][i]] = lanes["device"][i];
  EXPECT_TRUE(device["device 0 stream 7"]) << lanes.dump();
  EXPECT_TRUE(device["device 0 stream 13"]) << lanes.dump();
  const json& spans = d["activity"]["spans"];
  bool nccl = false;
  for (size_t i = 0; i < spans["lane"].size(); ++i) {
    const std::string cls = d["activity"]["classes"][spans["cls"][i].get<size_t>()];
    const std::string top = d["activity"]["names"][spans["top"][i].get<size_t>()];
    nccl |= cls == "communication" && top.starts_with("ncclDevKernel_AllReduce");
  }
  EXPECT_TRUE(nccl) << spans.dump();
}

TEST_F(CuptiTest, WithoutLibcuptiTheHostCaptureGoesOnAndTheManifestSaysWhy) {
  TestEnv()["RLPROF_CUPTI_LIBRARY"] = "/nonexistent/libcupti.so.13";
  Register();
  testing::internal::CaptureStderr();
  const std::string dir = RunStep("level0");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rlprof: info: no device capture: libcupti not found"), std::string::npos) << err;
  const json m = Manifest(dir);
  EXPECT_EQ(m["complete"], true);
  EXPECT_TRUE(m["sources"]["cupti"]["status"].get<std::string>().starts_with("off: libcupti not found"));
  auto n = Categories(dir);
  EXPECT_EQ(n[format::Category::kStep], 1);
  EXPECT_EQ(n[format::Category::kKernel], 0);
}

TEST_F(CuptiTest, AnotherSubscriberKeepsHostCaptureWarnsOnceAndIsInTheManifest) {
  setenv("RLPROF_FAKE_CUPTI_MODE", "other_subscriber", 1);
  Register();
  testing::internal::CaptureStderr();
  const std::string dir = RunStep("level1");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rlprof: warning: no device capture: another CUPTI subscriber"), std::string::npos)
      << err;
  const json m = Manifest(dir);
  EXPECT_EQ(m["complete"], true);
  EXPECT_EQ(m["sources"]["cupti"]["status"],
            "off: another CUPTI subscriber (torch.profiler/Kineto, nsys, …) holds CUPTI");
  EXPECT_GT(m["counts"]["events"].get<int>(), 0);
}

TEST_F(CuptiTest, ActivityApiHeldByAnotherClientIsDetectedAtWindowOpen) {
  setenv("RLPROF_FAKE_CUPTI_MODE", "enable_fails", 1);
  Register();
  testing::internal::CaptureStderr();
  const std::string dir = RunStep("level0");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("another CUPTI client holds the activity API"), std::string::npos) << err;
  EXPECT_TRUE(Manifest(dir)["sources"]["cupti"]["status"].get<std::string>().starts_with(
      "off: another CUPTI client holds the activity API"));
}

// Another CUPTI client in the process, as the test sees the fake: subscribe / register its own
// buffer callbacks / enable / flush, counting the buffers CUPTI hands it.
struct OtherClient {
  void* h = nullptr;
  CUptiResult (*subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult (*unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) = nullptr;
  CUptiResult (*enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult (*flush)(uint32_t) = nullptr;
  int (*enabled_kinds)() = nullptr;
  CUpti_SubscriberHandle handle = nullptr;
  static inline std::vector<uint8_t> buffer = std::vector<uint8_t>(1 << 20);
  static inline int completed = 0;

  OtherClient() {
    h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    if (h == nullptr) h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW);
    if (h == nullptr) return;
    subscribe = reinterpret_cast<decltype(subscribe)>(dlsym(h, "cuptiSubscribe"));
    unsubscribe = reinterpret_cast<decltype(unsubscribe)>(dlsym(h, "cuptiUnsubscribe"));
    register_callbacks = reinterpret_cast<decltype(register_callbacks)>(dlsym(h, "cuptiActivityRegisterCallbacks"));
    enable = reinterpret_cast<decltype(enable)>(dlsym(h, "cuptiActivityEnable"));
    disable = reinterpret_cast<decltype(disable)>(dlsym(h, "cuptiActivityDisable"));
    flush = reinterpret_cast<decltype(flush)>(dlsym(h, "cuptiActivityFlushAll"));
    enabled_kinds = reinterpret_cast<decltype(enabled_kinds)>(dlsym(h, "fake_cupti_enabled_kinds"));
    completed = 0;
  }
  ~OtherClient() {
    if (h != nullptr) dlclose(h);
  }
  CUptiResult Subscribe() {
    auto noop = [](void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {};
    return subscribe(&handle, noop, nullptr);
  }
  void Unsubscribe() { unsubscribe(handle); }
  // Polls until CUPTI is free (the writer releases it after the window's flush): true when taken.
  bool SubscribeWithin(std::chrono::seconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (Subscribe() != CUPTI_SUCCESS) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    return true;
  }
  void RegisterOwnCallbacks() {
    register_callbacks(
        [](uint8_t** b, size_t* size, size_t* max) {
          *b = buffer.data();
          *size = buffer.size();
          *max = 0;
        },
        [](CUcontext, uint32_t, uint8_t*, size_t, size_t valid) { completed += valid > 0; });
  }
};

// CUPTI is rlprof's only while a window is open (and until its records are flushed): torch.
// profiler's Kineto subscribes once, at its first profile, and never tries again, so a
// subscription held for the whole session would leave every torch.profiler trace of the
// process without device activity (found on an H200, 2026-11-26: docs/runtime.md).
TEST_F(CuptiTest, CuptiIsFreeBetweenWindowsAndHeldDuringOne) {
  Register();
  OtherClient other;
  ASSERT_NE(other.subscribe, nullptr);
  const std::string save = FreshDir("claim");
  config::Plan plan = DevicePlan(save, "level0");
  plan.steps.list = {1, 2};
  auto s = runtime::SessionImpl::Create(plan, Quiet(), &SessionEnv);
  ASSERT_EQ(other.Subscribe(), CUPTI_SUCCESS) << "the session holds CUPTI before any window";
  other.Unsubscribe();
  s->BeginStep(1);
  EXPECT_GT(other.enabled_kinds(), 0);
  EXPECT_EQ(other.Subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  s->EndStep();
  EXPECT_EQ(other.enabled_kinds(), 0);  // closed window: nothing left enabled
  ASSERT_TRUE(other.SubscribeWithin(std::chrono::seconds(10))) << "not released after the window";
  other.Unsubscribe();
  s->BeginStep(2);  // claimed again
  EXPECT_EQ(other.Subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  s->EndStep();
  s->Shutdown();
  EXPECT_EQ(other.Subscribe(), CUPTI_SUCCESS);
  other.Unsubscribe();
  for (const std::string& dir : Captures(save)) {
    const json c = Manifest(dir)["sources"]["cupti"];
    EXPECT_EQ(c["status"], "on") << c.dump();
    EXPECT_EQ(c["kernels"], 4) << c.dump();
  }
}

// A window whose kinds CUPTI refuses (another client holds the activity API) is host-only and
// gives CUPTI back once the writer has finished it, within the session.
TEST_F(CuptiTest, AWindowWhoseKindsAreRefusedGivesCuptiBackWithinTheSession) {
  setenv("RLPROF_FAKE_CUPTI_MODE", "enable_fails", 1);
  Register();
  OtherClient other;
  ASSERT_NE(other.subscribe, nullptr);
  const std::string save = FreshDir("refused");
  auto s = runtime::SessionImpl::Create(DevicePlan(save, "level0"), Quiet(), &SessionEnv);
  testing::internal::CaptureStderr();
  s->BeginStep(1);
  EXPECT_EQ(other.Subscribe(), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);  // claimed
  s->EndStep();
  EXPECT_TRUE(other.SubscribeWithin(std::chrono::seconds(10))) << "kept after the window";
  other.Unsubscribe();
  s->Shutdown();
  testing::internal::GetCapturedStderr();
  const std::vector<std::string> caps = Captures(save);
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_TRUE(Manifest(caps[0])["sources"]["cupti"]["status"].get<std::string>().starts_with(
      "off: another CUPTI client holds the activity API"));
}

// A client that takes CUPTI between rlprof's windows (torch.profiler's first profile) keeps it:
// rlprof's next window has no device data and says why, without touching the other client's
// callbacks or kinds; once CUPTI is free again, the window after gets its device data (rlprof
// registers its buffer callbacks again: CUPTI keeps the last registered).
TEST_F(CuptiTest, AClientThatTakesCuptiBetweenWindowsKeepsItAndRlprofSaysSo) {
  Register();
  OtherClient other;
  ASSERT_NE(other.subscribe, nullptr);
  const std::string save = FreshDir("taken");
  config::Plan plan = DevicePlan(save, "level0");
  plan.steps.list = {1, 2, 3};
  auto s = runtime::SessionImpl::Create(plan, Quiet(), &SessionEnv);
  testing::internal::CaptureStderr();
  s->BeginStep(1);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  s->EndStep();
  ASSERT_TRUE(other.SubscribeWithin(std::chrono::seconds(10)));
  other.RegisterOwnCallbacks();
  ASSERT_EQ(other.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), CUPTI_SUCCESS);
  s->BeginStep(2);  // CUPTI taken: a host-only window
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  s->EndStep();
  EXPECT_EQ(other.enabled_kinds(), 1) << "rlprof touched the other client's kinds";
  other.flush(0);
  EXPECT_GT(OtherClient::completed, 0) << "the other client's records went elsewhere";
  other.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  other.Unsubscribe();
  s->BeginStep(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(3));
  s->EndStep();
  s->Shutdown();
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string warning = "rlprof: warning: no device capture: another CUPTI subscriber";
  EXPECT_NE(err.find(warning), std::string::npos) << err;
  EXPECT_EQ(err.find(warning), err.rfind(warning)) << "warned more than once: " << err;
  std::map<int, json> by_step;
  for (const std::string& dir : Captures(save)) {
    const json m = Manifest(dir);
    by_step[m["steps"][0].get<int>()] = m;
  }
  ASSERT_EQ(by_step.size(), 3u);
  EXPECT_EQ(by_step[1]["sources"]["cupti"]["status"], "on");
  EXPECT_EQ(by_step[1]["sources"]["cupti"]["kernels"], 4);
  EXPECT_EQ(by_step[2]["sources"]["cupti"]["status"],
            "off: another CUPTI subscriber (torch.profiler/Kineto, nsys, …) holds CUPTI");
  EXPECT_EQ(by_step[2]["complete"], true);
  EXPECT_GT(by_step[2]["counts"]["events"].get<int>(), 0);  // the host capture
  EXPECT_EQ(by_step[3]["sources"]["cupti"]["status"], "on");
  EXPECT_EQ(by_step[3]["sources"]["cupti"]["kernels"], 4) << by_step[3]["sources"]["cupti"].dump();
}

// RLPROF_CUPTI_OMIT (a diagnostic: what each kind costs) takes kinds out of the level's set; the
// manifest lists what was enabled, and an unknown name is named in one warning.
TEST_F(CuptiTest, OmittedKindsAreNotEnabledAndTheManifestListsWhatWas) {
  TestEnv()["RLPROF_CUPTI_OMIT"] = "external_correlation,launch_api,bogus";
  Register();
  testing::internal::CaptureStderr();
  const std::string dir = RunStep("level0");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("RLPROF_CUPTI_OMIT=external_correlation,launch_api,bogus: ignored bogus (allowed: "),
            std::string::npos) << err;
  const json c = Manifest(dir)["sources"]["cupti"];
  EXPECT_EQ(c["activities"], "kernels,memcpy,memset") << c.dump();
  EXPECT_EQ(c["kernels"], 4) << c.dump();
  EXPECT_EQ(c["runtime_api"], 0) << c.dump();
  EXPECT_EQ(c["external_correlation"], 0) << c.dump();
}

// level0 traces the launch calls alone by selecting them one by one, without the RUNTIME kind
// (which makes CUPTI wrap every runtime call: bench/cost.py measured it on an H200); level1
// enables the kind. Only the launches of the replayed calls (not cudaStreamSynchronize) reach a
// level0 capture, and nothing stays selected after the window.
TEST_F(CuptiTest, Level0SelectsTheLaunchCallsWithoutTheRuntimeKind) {
  Register();
  void* h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW);  // the library the session loads (one copy)
  ASSERT_NE(h, nullptr);
  auto cbids = reinterpret_cast<int (*)(int*)>(dlsym(h, "fake_cupti_runtime_cbids"));
  ASSERT_NE(cbids, nullptr);
  for (const char* level : {"level0", "level1"}) {
    const std::string save = FreshDir(std::string("select-") + level);
    auto s = runtime::SessionImpl::Create(DevicePlan(save, level), Quiet(), &SessionEnv);
    s->BeginStep(1);
    int kind = -1;
    const int selected = cbids(&kind);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    s->EndStep();
    s->Shutdown();
    int kind_after = -1;
    EXPECT_EQ(cbids(&kind_after), 0) << level;
    EXPECT_EQ(kind_after, 0) << level;
    const std::vector<std::string> caps = Captures(save);
    ASSERT_EQ(caps.size(), 1u) << level;
    const json c = Manifest(caps[0])["sources"]["cupti"];
    if (std::string(level) == "level0") {
      EXPECT_EQ(kind, 0);
      EXPECT_EQ(selected, 10);  // the launch calls: kernels, copies, sets, graphs
      EXPECT_EQ(c["runtime_api"], 6) << c.dump();  // 4 kernel launches, a copy, a set
    } else {
      EXPECT_EQ(kind, 1);
      EXPECT_EQ(selected, 0);
      EXPECT_EQ(c["runtime_api"], 7) << c.dump();  // and cudaStreamSynchronize
    }
  }
  dlclose(h);
}

// Back-to-back windows (steps 1..6 captured one by one): each window's records reach its own
// capture, also the next window's first records that the previous window's final flush brings
// before the writer has opened the next capture (they wait for it instead of being dropped).
TEST_F(CuptiTest, BackToBackWindowsEachGetTheirOwnRecords) {
  Register();
  const std::string save = FreshDir("back-to-back");
  config::Plan plan = DevicePlan(save, "level2");
  plan.steps.list = {1, 2, 3, 4, 5, 6};
  auto s = runtime::SessionImpl::Create(plan, Quiet(), &SessionEnv);
  for (int step = 1; step <= 6; ++step) {
    s->BeginStep(step);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));  // the records end 1.95 ms in
    s->EndStep();
  }
  s->Shutdown();
  const std::vector<std::string> caps = Captures(save);
  ASSERT_EQ(caps.size(), 6u);
  for (const std::string& dir : caps) {
    const json m = Manifest(dir);
    const json& c = m["sources"]["cupti"];
    EXPECT_EQ(c["records"], 15) << dir << ": " << c.dump();  // 4 kernels, 2 copies/sets, 7 calls, sync, overhead
    EXPECT_EQ(c["kernels"], 4) << c.dump();
    EXPECT_EQ(c["external_correlation"], 5) << c.dump();
    EXPECT_EQ(c["records_outside_windows"], 0) << c.dump();
  }
}

// RLPROF_CUPTI_RECORD_DIR: the records CUPTI delivered, written in the fake's text format, replay
// as the same device work (how real GPU records become test data: test/data/cupti/README.md).
TEST_F(CuptiTest, RecordedRecordsReplayAsTheSameDeviceWork) {
  const std::string rec_dir = FreshDir("record");
  TestEnv()["RLPROF_CUPTI_RECORD_DIR"] = rec_dir;
  Register();
  const std::string first = RunStep("level2");
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(rec_dir))
    if (e.path().extension() == ".records") files.push_back(e.path().string());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(files[0].find("-w"), std::string::npos);
  std::map<std::string, int> lines;
  std::ifstream in(files[0]);
  std::string line;
  std::string dropped;
  while (std::getline(in, line)) {
    const std::string word = line.substr(0, line.find(' '));
    ++lines[word];
    if (word == "dropped") dropped = line;
    if (word == "runtime") {
      EXPECT_NE(line.find(" tid=MAIN "), std::string::npos) << line;
    }
  }
  EXPECT_EQ(lines["kernel"], 4);
  EXPECT_EQ(lines["memcpy"], 1);
  EXPECT_EQ(lines["memset"], 1);
  EXPECT_EQ(lines["runtime"], 7);
  EXPECT_EQ(lines["sync"], 1);
  EXPECT_EQ(lines["overhead"], 1);
  EXPECT_EQ(lines["external"], 5);
  EXPECT_EQ(dropped, "dropped 3");
  EXPECT_GE(lines["#"], 1);

  // Replay the recorded file in a new session.
  runtime::SourceRegistry::Get().Unregister("cupti");
  source_.reset();
  TestEnv().erase("RLPROF_CUPTI_RECORD_DIR");
  setenv("RLPROF_FAKE_CUPTI_RECORDS", files[0].c_str(), 1);
  void* h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto reload = reinterpret_cast<void (*)()>(dlsym(h, "fake_cupti_reload"));
  ASSERT_NE(reload, nullptr);
  reload();
  Register();
  const std::string second = RunStep("level2");
  setenv("RLPROF_FAKE_CUPTI_RECORDS", RLPROF_CUPTI_DATA_DIR "/step.records", 1);
  reload();  // later tests in this process replay step.records again
  dlclose(h);

  // The same device work: kinds, names, tracks, durations, and times relative to the first.
  auto device_rows = [](const std::string& dir) {
    auto cap = format::ReadRaw(dir + "/events.rlp");
    EXPECT_TRUE(cap.ok());
    std::map<uint16_t, std::string> track_names;
    for (const auto& t : cap->tracks) track_names[t.id] = t.name;
    std::vector<const format::Event*> dev;
    for (const auto& e : cap->events)
      if (e.category == format::Category::kKernel || e.category == format::Category::kMemcpy ||
          e.category == format::Category::kMemset || e.category == format::Category::kSync ||
          e.category == format::Category::kRuntime)
        dev.push_back(&e);
    std::sort(dev.begin(), dev.end(), [](auto* a, auto* b) {
      return a->ts_ns != b->ts_ns ? a->ts_ns < b->ts_ns : a->arg0 < b->arg0;
    });
    std::vector<std::string> rows;
    for (const format::Event* e : dev)
      rows.push_back(std::to_string(static_cast<int>(e->category)) + " " + std::string(cap->str(e->name)) + " @" +
                     std::to_string(e->ts_ns - dev.front()->ts_ns) + " +" + std::to_string(e->payload) + " " +
                     track_names[e->track] + " " +
                     std::to_string(e->arg0));
    return rows;
  };
  const std::vector<std::string> a = device_rows(first), b = device_rows(second);
  EXPECT_EQ(a.size(), 14u);
  EXPECT_EQ(a, b);
  EXPECT_EQ(Manifest(second)["sources"]["cupti"]["dropped_by_cupti"], 3);
  EXPECT_EQ(Manifest(first)["sources"]["cupti"]["kernels"], Manifest(second)["sources"]["cupti"]["kernels"]);
}

// A host-side source (the torch operator hook) pushes external correlation ids through the C API;
// they reach CUPTI only while a window records device activity.
TEST_F(CuptiTest, CorrelationIdsPushedThroughTheCApiReachCuptiInsideWindowsOnly) {
  Register();
  void* h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW);
  ASSERT_NE(h, nullptr);
  auto depth = reinterpret_cast<int (*)(uint64_t*)>(dlsym(h, "fake_cupti_external_depth"));
  ASSERT_NE(depth, nullptr);
  uint64_t top = 0;
  const std::string save = FreshDir("correlation");
  auto s = runtime::SessionImpl::Create(DevicePlan(save, "level1"), Quiet(), &SessionEnv);  // level1: external correlation
  rlprof_correlation_push(41);  // no window: nothing reaches CUPTI
  EXPECT_EQ(depth(&top), 0);
  s->BeginStep(1);
  rlprof_correlation_push(42);
  EXPECT_EQ(depth(&top), 1);
  EXPECT_EQ(top, 42u);
  rlprof_correlation_pop();
  EXPECT_EQ(depth(&top), 0);
  s->EndStep();
  s->Shutdown();
  rlprof_correlation_push(43);  // the session ended: the hooks are gone
  EXPECT_EQ(depth(&top), 0);
  dlclose(h);
}

TEST_F(CuptiTest, AStarvedBufferPoolIsCountedWithCuptisDrops) {
  setenv("RLPROF_FAKE_CUPTI_RECORDS_PER_BUFFER", "2", 1);
  CuptiSourceOptions o;
  o.buffers = 3;  // 6 records fit; the step has 20 at level2
  o.buffer_bytes = 64 * 1024;
  Register(o);
  const std::string dir = RunStep("level2");
  const json c = Manifest(dir)["sources"]["cupti"];
  EXPECT_EQ(c["status"], "on");
  EXPECT_GT(c["buffer_starved"].get<int>(), 0);
  // Each record that found no buffer is one CUPTI drop, plus the 3 the file says.
  EXPECT_EQ(c["records"].get<int>() + c["external_correlation"].get<int>() + c["dropped_by_cupti"].get<int>(),
            15 + 5 + 3);
  EXPECT_LE(c["records"].get<int>() + c["external_correlation"].get<int>(), 6);
}

TEST_F(CuptiTest, WithoutTheTimestampCallbackAMeasuredOffsetPutsDeviceTimeInTheWindow) {
  setenv("RLPROF_FAKE_CUPTI_MODE", "no_timestamp_callback", 1);
  Register();
  const std::string dir = RunStep("level0");
  const json m = Manifest(dir);
  const json& c = m["sources"]["cupti"];
  EXPECT_EQ(c["clock"], "measured offset");
  EXPECT_GE(c["clock_error_ns"].get<int64_t>(), 0);
  EXPECT_LT(c["clock_error_ns"].get<int64_t>(), 1'000'000);
  auto cap = format::ReadRaw(dir + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  const int64_t open = m["window"]["open_ns"], close = m["window"]["close_ns"];
  int kernels = 0;
  for (const auto& e : cap->events) {
    if (e.category != format::Category::kKernel) continue;
    ++kernels;
    EXPECT_GE(e.ts_ns, open);
    EXPECT_LE(e.ts_ns + e.payload, close);
  }
  EXPECT_EQ(kernels, 4);
}

TEST_F(CuptiTest, ClosingTheWindowDoesNotFlushOnTheTrainingThread) {
  Register();
  const uint64_t before = FakeFlushes(0);
  uint64_t on_caller = 1;
  RunStep("level2", &on_caller);
  // EndStep closes the window; CUPTI's flush runs on the writer thread (the benchmark measures
  // what closing costs): none on the training thread, and the window's records were flushed.
  EXPECT_EQ(on_caller, 0u);
  EXPECT_GT(FakeFlushes(0), before);
}

}  // namespace
}  // namespace rlprof::sources

namespace rlprof::sources {
namespace {

// The real libcupti on a machine without a GPU (a CUDA toolkit on a CPU box, as this build
// machine): CUPTI refuses to start and the host capture goes on. Skipped where there is no
// toolkit libcupti, or where there is a GPU.
// CUDA 12.0's CUPTI (API version 18) fills CUpti_ActivityKernel9, … whose fields rlprof reads
// lie where the CUDA 13 structs put them (CuptiLayoutTest): read like 13's.
TEST_F(CuptiTest, ACuda12CuptiIsRead) {
  setenv("RLPROF_FAKE_CUPTI_VERSION", "18", 1);
  Register();
  const json m = Manifest(RunStep("level0"));
  EXPECT_EQ(m["sources"]["cupti"]["status"], "on");
  EXPECT_EQ(m["sources"]["cupti"]["cupti_version"], 18);
  // "the process" when an earlier test of this process loaded the fake (one process per test
  // under ctest: "rlprof").
  const std::string by = m["sources"]["cupti"]["library_loaded_by"];
  EXPECT_TRUE(by == "rlprof" || by == "the process") << by;
  EXPECT_GT(m["sources"]["cupti"]["kernels"].get<int>(), 0);
}

// Older than CUDA 11.7 (API version 17, the oldest release whose layouts were checked): refused,
// said once, and the host capture goes on.
TEST_F(CuptiTest, ACuptiOlderThanCuda11_7IsRefusedAndTheHostCaptureGoesOn) {
  setenv("RLPROF_FAKE_CUPTI_VERSION", "16", 1);
  Register();
  testing::internal::CaptureStderr();
  const std::string dir = RunStep("level0");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rlprof: info: no device capture: no libcupti rlprof can read"), std::string::npos) << err;
  EXPECT_NE(err.find("CUPTI API version 16, older than CUDA 11.7's 17"), std::string::npos) << err;
  const json m = Manifest(dir);
  EXPECT_EQ(m["complete"], true);
  const std::string status = m["sources"]["cupti"]["status"];
  EXPECT_TRUE(status.starts_with("off: no libcupti rlprof can read")) << status;
  auto n = Categories(dir);
  EXPECT_EQ(n[format::Category::kOperator], 1);
  EXPECT_EQ(n[format::Category::kKernel], 0);
}

// A libcupti the process already loaded (PyTorch's) is taken before any other candidate, even
// one earlier in the search order (here the CUDA toolkit's, where the machine has one).
TEST(CuptiApiTest, ALibcuptiAlreadyInTheProcessIsTakenFirst) {
  const std::string site = FreshDir("site");
  fs::create_directories(site + "/nvidia/cuda_cupti/lib");
  const std::string lib = site + "/nvidia/cuda_cupti/lib/libcupti.so.12";
  fs::create_symlink(RLPROF_FAKE_CUPTI, lib);
  TestEnv() = {{"RLPROF_PYTHON_SITE", site}};
  const std::vector<std::string> order = CuptiApi::Candidates(&EnvOf);
  ASSERT_FALSE(order.empty());
  EXPECT_NE(std::find(order.begin(), order.end(), lib), order.end());
  for (const std::string& c : order)
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_NOLOAD); h != nullptr && c != lib) {
      dlclose(h);
      GTEST_SKIP() << c << " is in this process already (an earlier test's): run alone, as ctest does";
    }
  void* torch_loaded = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);  // as PyTorch would
  ASSERT_NE(torch_loaded, nullptr) << dlerror();
  CuptiApi api;
  std::string why;
  ASSERT_TRUE(api.Load(&EnvOf, &why)) << why;
  EXPECT_EQ(api.path, lib);
  EXPECT_TRUE(api.already_loaded);
  // The fake answers as the headers it was built with: CUDA 13.
  EXPECT_GE(api.version, CuptiApi::kMinApiVersion);
}

TEST_F(CuptiTest, ARealLibcuptiWithoutAGpuKeepsTheHostCapture) {
  std::string real;
  for (const char* p : {"/usr/local/cuda/lib64/libcupti.so", "/usr/local/cuda-13.0/lib64/libcupti.so",
                        "/usr/local/cuda/extras/CUPTI/lib64/libcupti.so"})
    if (fs::exists(p)) real = p;
  if (real.empty() || fs::exists("/dev/nvidia0")) GTEST_SKIP() << "needs a CUDA toolkit's libcupti and no GPU";
  TestEnv()["RLPROF_CUPTI_LIBRARY"] = real;
  Register();
  testing::internal::CaptureStderr();
  const std::string dir = RunStep("level1");
  const std::string err = testing::internal::GetCapturedStderr();
  const json m = Manifest(dir);
  EXPECT_EQ(m["complete"], true);
  const std::string status = m["sources"]["cupti"]["status"];
  std::printf("real libcupti without a GPU: %s\n", status.c_str());
  EXPECT_EQ(m["sources"]["cupti"]["library"], real);
  EXPECT_EQ(err.find("warning: internal error"), std::string::npos) << err;
  EXPECT_GT(m["counts"]["events"].get<int>(), 0);
}

}  // namespace
}  // namespace rlprof::sources
