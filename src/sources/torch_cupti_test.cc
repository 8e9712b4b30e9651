// Torch operators push CUPTI external correlation ids while device capture is on, so the
// capture says which operator launched each kernel: the operator's "external_id" instant and
// the launch's kRuntime event (arg1) carry the same id. Against the fake CUPTI replaying
// test/data/cupti/ops.records (external id=@K: the K-th id pushed in the window).
#include <dlfcn.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "src/format/raw.h"
#include "src/runtime/session.h"
#include "src/sources/cupti_source.h"
#include "src/sources/torch_ops.h"

namespace rlprof::sources {
namespace {

namespace fs = std::filesystem;

const char* EnvOf(const char* k) {
  return std::string(k) == "RLPROF_CUPTI_LIBRARY" ? RLPROF_FAKE_CUPTI : nullptr;
}
const char* SessionEnv(const char* k) {
  return std::string(k) == "RLPROF_CLOCK" ? "monotonic" : nullptr;
}

std::string FreshDir(const std::string& tag) {
  std::string d = ::testing::TempDir() + "rlprof-torch-cupti-" + std::to_string(getpid()) + "-" + tag;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

config::Plan Plan(const std::string& save, bool device) {
  config::Plan p;
  p.tool = config::Tool::kRlprof;
  p.steps.kind = config::StepSelection::Kind::kList;
  p.steps.list = {1};
  p.save_path = save;
  config::RolePlan r;
  r.role = "actor";
  r.block_path = "rlprof.roles.actor";
  r.enabled = r.all_ranks = true;
  r.contents.device = device;
  r.contents.ops = true;
  r.level = "level1";  // external correlation is on from level1 (level0: the enclosing rule)
  p.roles.push_back(r);
  return p;
}

SessionOptions Quiet() {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = "xcorr";
  o.quiet = true;
  o.install_signal_handlers = false;
  return o;
}

struct Result {
  std::map<std::string, uint32_t> op_external;        // operator name -> its external id
  std::map<uint32_t, uint32_t> launch_external;       // launch correlation -> external id
  std::map<std::string, uint32_t> kernel_correlation;  // "gemm" / "fill" -> correlation
  int external_instants = 0;
};

// One step in which the user scopes op_a then op_b run (each would launch device work).
Result RunStep(bool device, int* pushed_depth_after = nullptr) {
  const std::string save = FreshDir(device ? "device" : "host");
  TorchOps& ops = TorchOps::Get();
  auto s = runtime::SessionImpl::Create(Plan(save, device), Quiet(), &SessionEnv);
  EXPECT_TRUE(s->enabled());
  s->BeginStep(1);
  TorchOpsOptions o;
  o.record = true;
  o.correlate = ops.Correlating();
  EXPECT_EQ(o.correlate, device);
  ops.Configure(Recording(), o);
  {
    RECORD_USER_SCOPE("op_a");
  }
  {
    RECORD_USER_SCOPE("op_b");
  }
  ops.Configure(false, {});
  if (pushed_depth_after != nullptr) {
    void* h = dlopen(RLPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    auto depth = h ? reinterpret_cast<int (*)(uint64_t*)>(dlsym(h, "fake_cupti_external_depth")) : nullptr;
    uint64_t top = 0;
    *pushed_depth_after = depth ? depth(&top) : -1;
  }
  s->EndStep();
  s->Shutdown();
  Result r;
  std::vector<std::string> caps;
  for (auto& e : fs::recursive_directory_iterator(save))
    if (e.path().filename() == "events.rlp") caps.push_back(e.path().string());
  EXPECT_EQ(caps.size(), 1u);
  if (caps.size() != 1) return r;
  auto cap = format::ReadRaw(caps[0]);
  EXPECT_TRUE(cap.ok());
  if (!cap.ok()) return r;
  std::map<std::pair<uint16_t, int64_t>, uint32_t> instants;  // (track, ts) -> id
  for (const auto& e : cap->events)
    if (e.kind == format::EventKind::kInstant && e.category == format::Category::kCapture &&
        cap->str(e.name) == "external_id") {
      instants[{e.track, e.ts_ns}] = e.arg0;
      ++r.external_instants;
    }
  for (const auto& e : cap->events) {
    if (e.kind != format::EventKind::kComplete) continue;
    if (e.category == format::Category::kOperator) {
      auto it = instants.find({e.track, e.ts_ns});
      r.op_external[cap->str(e.name)] = it == instants.end() ? 0 : it->second;
    } else if (e.category == format::Category::kRuntime) {
      r.launch_external[e.arg0] = e.arg1;
    } else if (e.category == format::Category::kKernel) {
      r.kernel_correlation[cap->str(e.name).find("gemm") != std::string::npos ? "gemm" : "fill"] = e.arg0;
    }
  }
  return r;
}

class TorchCuptiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("RLPROF_FAKE_CUPTI_RECORDS", RLPROF_CUPTI_DATA_DIR "/ops.records", 1);
    CuptiSourceOptions o;
    o.env = &EnvOf;
    source_ = std::make_shared<CuptiSource>(o);
    ASSERT_TRUE(runtime::SourceRegistry::Get().Register(source_));
  }
  void TearDown() override {
    runtime::SourceRegistry::Get().Unregister("cupti");
    source_.reset();
  }
  std::shared_ptr<CuptiSource> source_;
};

TEST_F(TorchCuptiTest, KernelsAreAttributedToTheOperatorThatPushedTheirExternalId) {
  int depth = -1;
  const Result r = RunStep(/*device=*/true, &depth);
  EXPECT_EQ(depth, 0);  // every push was popped
  ASSERT_EQ(r.op_external.count("op_a"), 1u);
  ASSERT_EQ(r.op_external.count("op_b"), 1u);
  const uint32_t a = r.op_external.at("op_a"), b = r.op_external.at("op_b");
  EXPECT_NE(a, 0u);
  EXPECT_NE(b, 0u);
  EXPECT_NE(a, b);
  EXPECT_EQ(r.external_instants, 2);
  // The GEMM's launch (corr 301) carries op_b's id, the fill kernel's (corr 302) op_a's.
  ASSERT_EQ(r.kernel_correlation.count("gemm"), 1u);
  ASSERT_EQ(r.kernel_correlation.count("fill"), 1u) << r.kernel_correlation.size();
  EXPECT_EQ(r.launch_external.at(r.kernel_correlation.at("gemm")), b);
  EXPECT_EQ(r.launch_external.at(r.kernel_correlation.at("fill")), a);
}

TEST_F(TorchCuptiTest, WithoutDeviceCaptureOperatorsPushNothing) {
  const Result r = RunStep(/*device=*/false);
  EXPECT_EQ(r.op_external.count("op_a"), 1u);
  EXPECT_EQ(r.op_external.at("op_a"), 0u);
  EXPECT_EQ(r.external_instants, 0);
  EXPECT_TRUE(r.launch_external.empty());
}

}  // namespace
}  // namespace rlprof::sources
