// The CUDA profiler API source against the fake libcudart (cudart_fake.cc): with tool nsys,
// cudaProfilerStart / cudaProfilerStop happen exactly at rlprof's capture-window edges, one
// pair per window (so nsys's capture-range-end repeat count is the number of windows); without
// libcudart each window is a counted no-op; other tools never touch CUDA.
#include "src/sources/cuda_profiler.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "src/runtime/clock.h"
#include "src/runtime/session.h"

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

// The stand-in libcudart: the build's, or RLPROF_TEST_FAKE_CUDART (a copy of the test on
// another machine: test/gpu/check_cuda_profiler.sh).
std::string FakeCudart() {
  const char* o = std::getenv("RLPROF_TEST_FAKE_CUDART");
  return o != nullptr && *o != '\0' ? o : RLPROF_FAKE_CUDART;
}

class CudaProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // RLPROF_REAL_CUDART (GPU machines): the stand-in forwards every call to the real libcudart.
    dir_ = ::testing::TempDir() + "rlprof-cudaprof-" + std::to_string(getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    log_ = dir_ + "/cudart.log";
    setenv("RLPROF_FAKE_CUDART_LOG", log_.c_str(), 1);  // read by the fake library
    unsetenv("RLPROF_FAKE_CUDART_ERROR");
    TestEnv().clear();
    TestEnv()["RLPROF_CUDART_LIBRARY"] = FakeCudart();
    source_ = std::make_shared<CudaProfilerSource>(&EnvOf);
    ASSERT_TRUE(runtime::SourceRegistry::Get().Register(source_));
  }
  void TearDown() override { runtime::SourceRegistry::Get().Unregister("cuda_profiler"); }

  config::Plan Plan(config::Tool tool, std::vector<int64_t> steps, bool discrete = false) {
    config::Plan p;
    p.tool = tool;
    p.steps.kind = config::StepSelection::Kind::kList;
    p.steps.list = steps;
    p.save_path = dir_ + "/out";
    config::RolePlan r;
    r.role = "actor";
    r.block_path = "rlprof.roles.actor";
    r.enabled = r.all_ranks = true;
    r.contents.cpu = true;
    if (discrete) {
      r.mode = config::CaptureMode::kDiscrete;
      r.stages = {"actor_update"};
    }
    p.roles.push_back(r);
    return p;
  }
  std::unique_ptr<runtime::SessionImpl> Session(const config::Plan& p) {
    SessionOptions o;
    o.roles = std::vector<std::string>{"actor"};
    o.run_id = "nsys";
    o.quiet = true;
    o.install_signal_handlers = false;
    return runtime::SessionImpl::Create(p, o, [](const char*) -> const char* { return nullptr; });
  }
  // (call, CLOCK_MONOTONIC ns) of each logged call; rcs_ gets their return codes.
  std::vector<std::pair<std::string, int64_t>> Calls() {
    std::vector<std::pair<std::string, int64_t>> v;
    rcs_.clear();
    std::ifstream in(log_);
    std::string what;
    int64_t ns;
    int rc;
    while (in >> what >> ns >> rc) {
      v.emplace_back(what, ns);
      rcs_.push_back(rc);
    }
    return v;
  }
  std::vector<int> rcs_;
  json Manifest(const std::string& capture) {
    std::ifstream in(capture + "/manifest.json");
    return json::parse(in, nullptr, false);
  }

  std::string dir_, log_;
  std::shared_ptr<CudaProfilerSource> source_;
};

TEST_F(CudaProfilerTest, StartAndStopHappenAtTheWindowEdgesOfEachCapturedStep) {
  auto s = Session(Plan(config::Tool::kNsys, {2, 4}));
  ASSERT_TRUE(s->enabled());
  struct Edge { int64_t before, after; };
  std::vector<Edge> opens, closes;
  for (int64_t step = 1; step <= 4; ++step) {
    const int64_t b0 = runtime::MonotonicNowNs();
    s->BeginStep(step);
    const int64_t b1 = runtime::MonotonicNowNs();
    usleep(2000);
    const int64_t e0 = runtime::MonotonicNowNs();
    s->EndStep();
    const int64_t e1 = runtime::MonotonicNowNs();
    if (step == 2 || step == 4) {
      opens.push_back({b0, b1});
      closes.push_back({e0, e1});
    }
  }
  ASSERT_TRUE(s->Flush(10));
  const auto caps = s->Captures();
  s->Shutdown();
  const auto calls = Calls();
  ASSERT_EQ(calls.size(), 4u) << "one start/stop pair per window, none for steps 1 and 3";
  // cudaSuccess from each call (on a GPU machine, RLPROF_REAL_CUDART: the real runtime's).
  EXPECT_EQ(rcs_, (std::vector<int>{0, 0, 0, 0}));
  for (size_t w = 0; w < 2; ++w) {
    EXPECT_EQ(calls[2 * w].first, "start");
    EXPECT_EQ(calls[2 * w + 1].first, "stop");
    EXPECT_GE(calls[2 * w].second, opens[w].before);
    EXPECT_LE(calls[2 * w].second, opens[w].after);
    EXPECT_GE(calls[2 * w + 1].second, closes[w].before);
    EXPECT_LE(calls[2 * w + 1].second, closes[w].after);
  }
  ASSERT_EQ(caps.size(), 2u);
  const json m = Manifest(caps.back());
  const json& c = m["sources"]["cuda_profiler"];
  EXPECT_EQ(c["status"], std::string("on: ") + FakeCudart()) << m["sources"].dump();
  EXPECT_EQ(c["starts"], 2);
  EXPECT_EQ(c["stops"], 2);
  EXPECT_EQ(c["errors"], 0);
}

TEST_F(CudaProfilerTest, DiscreteModeGivesOneRangePerStageCall) {
  auto s = Session(Plan(config::Tool::kNsys, {1}, /*discrete=*/true));
  s->BeginStep(1);
  s->BeginStage("rollout", "rollout_generate", std::nullopt);  // not selected: no range
  s->EndStage();
  for (int i = 0; i < 2; ++i) {
    s->BeginStage("actor", "actor_update", std::nullopt);
    s->EndStage();
  }
  s->EndStep();
  s->Shutdown();
  const auto calls = Calls();
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0].first, "start");
  EXPECT_EQ(calls[3].first, "stop");
}

TEST_F(CudaProfilerTest, WithoutLibcudartEveryWindowIsACountedNoOp) {
  TestEnv()["RLPROF_CUDART_LIBRARY"] = "/nonexistent/libcudart.so.13";
  testing::internal::CaptureStderr();
  auto s = Session(Plan(config::Tool::kNsys, {1, 2}));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rlprof: info: tool nsys: off: libcudart not found"), std::string::npos) << err;
  for (int64_t step = 1; step <= 2; ++step) {
    s->BeginStep(step);
    s->EndStep();
  }
  ASSERT_TRUE(s->Flush(10));
  const auto caps = s->Captures();
  s->Shutdown();
  ASSERT_FALSE(caps.empty());
  const json m = Manifest(caps.back());
  const json& c = m["sources"]["cuda_profiler"];
  EXPECT_TRUE(c["status"].get<std::string>().starts_with("off: libcudart not found")) << c.dump();
  EXPECT_GE(c["skipped_windows"].get<int64_t>(), 1);
  EXPECT_EQ(c["starts"], 0);
  EXPECT_TRUE(Calls().empty());
}

TEST_F(CudaProfilerTest, ErrorsOfTheProfilerApiAreCountedAndTheCaptureGoesOn) {
  setenv("RLPROF_FAKE_CUDART_ERROR", "3", 1);
  auto s = Session(Plan(config::Tool::kNsys, {1}));
  s->BeginStep(1);
  s->EndStep();
  ASSERT_TRUE(s->Flush(10));
  const auto caps = s->Captures();
  s->Shutdown();
  ASSERT_EQ(caps.size(), 1u);
  const json c = Manifest(caps[0])["sources"]["cuda_profiler"];
  EXPECT_EQ(c["errors"], 1) << c.dump();  // start failed: no stop is sent for it
  EXPECT_EQ(c["last_error"], 3);
}

TEST_F(CudaProfilerTest, OtherToolsNeverTouchTheCudaProfilerApi) {
  auto s = Session(Plan(config::Tool::kRlprof, {1}));
  s->BeginStep(1);
  s->EndStep();
  ASSERT_TRUE(s->Flush(10));
  const auto caps = s->Captures();
  s->Shutdown();
  EXPECT_TRUE(Calls().empty());
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_FALSE(Manifest(caps[0])["sources"].contains("cuda_profiler"));
}

// A CUDA 12 PyTorch has loaded its libcudart.so.12; the machine's loader also finds a
// libcudart.so (here the CUDA 13 toolkit's, where it is installed). The source must take the
// process's own, whatever name comes first in its list: a second CUDA runtime would make a
// context of its own, and its profiler state is not the one nsys sees.
TEST(OpenCudartTest, TheLibcudartTheProcessLoadedComesBeforeAnyOther) {
  void* torch_loaded = dlopen(RLPROF_FAKE_CUDART12, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(torch_loaded, nullptr) << dlerror();
  std::string library, tried;
  void* h = OpenCudart([](const char*) -> const char* { return nullptr; }, &library, &tried);
  ASSERT_NE(h, nullptr) << tried;
  EXPECT_EQ(library, "libcudart.so.12");
  EXPECT_EQ(h, torch_loaded);
}

}  // namespace
}  // namespace rlprof::sources
