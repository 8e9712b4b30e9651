// The torch operator hook against the real runtime and libtorch: operators run inside a
// capture window land with their names and categories, collectives are communication, and
// nothing outside the window is recorded.
#include "src/sources/torch_ops.h"

#include "src/sources/torch_memory.h"
#include "src/sources/torch_modules.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"
#include "src/runtime/session.h"

namespace rlprof::sources {
namespace {

using runtime::testing_util::FindCaptures;
using runtime::testing_util::FreshDir;
using runtime::testing_util::MakePlan;

// Names of the window's complete events with their categories.
std::multimap<std::string, format::Category> Recorded(const std::string& cap_dir) {
  auto cap = format::ReadRaw(cap_dir + "/events.rlp");
  EXPECT_TRUE(cap.ok());
  std::multimap<std::string, format::Category> out;
  if (!cap.ok()) return out;
  for (const auto& e : cap->events)
    if (e.kind == format::EventKind::kComplete) out.emplace(cap->str(e.name), e.category);
  return out;
}

TEST(TorchOpsTest, RecordsOperatorsAndCollectivesOnlyInsideTheWindow) {
  TorchOps& ops = TorchOps::Get();
  const std::string save = FreshDir("torch_ops");
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = "ops";
  o.quiet = true;
  o.install_signal_handlers = false;
  auto s = runtime::SessionImpl::Create(MakePlan(save, {99}), o,
                                        [](const char*) -> const char* { return nullptr; });
  ASSERT_TRUE(s->enabled());
  const at::Tensor a = at::ones({4, 4});

  ops.Sync(true, false);  // enabled, but no window yet: nothing is recorded
  at::sub(a, 1);
  ops.Sync(false, false);

  ASSERT_TRUE(s->StartCapture("ops"));
  ops.Sync(Recording(), false);
  const uint64_t before = ops.stats().ops;
  at::mm(a, a).relu();
  {
    RECORD_USER_SCOPE("c10d::allreduce_");  // how c10d names a collective's scope
  }
  {
    RECORD_USER_SCOPE("gloo:all_reduce");
  }
  {
    RECORD_USER_SCOPE("my_scope");
  }
  const uint64_t recorded = ops.stats().ops - before;
  s->StopCapture();
  ops.Sync(Recording(), false);
  EXPECT_FALSE(ops.stats().enabled);
  at::mul(a, 2);  // after the window
  s->Shutdown();

  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  const auto got = Recorded(caps[0]);
  ASSERT_EQ(got.count("aten::mm"), 1u);
  EXPECT_EQ(got.find("aten::mm")->second, format::Category::kOperator);
  ASSERT_EQ(got.count("aten::relu"), 1u);
  EXPECT_EQ(got.find("aten::relu")->second, format::Category::kOperator);
  ASSERT_EQ(got.count("my_scope"), 1u);
  EXPECT_EQ(got.find("my_scope")->second, format::Category::kOperator);
  ASSERT_EQ(got.count("c10d::allreduce_"), 1u);
  EXPECT_EQ(got.find("c10d::allreduce_")->second, format::Category::kCommunication);
  ASSERT_EQ(got.count("gloo:all_reduce"), 1u);
  EXPECT_EQ(got.find("gloo:all_reduce")->second, format::Category::kCommunication);
  EXPECT_EQ(got.count("aten::sub"), 0u);
  EXPECT_EQ(got.count("aten::mul"), 0u);
  size_t operators = 0;
  for (const auto& [name, cat] : got) operators += cat == format::Category::kOperator;
  EXPECT_EQ(operators, recorded);
}

std::unique_ptr<runtime::SessionImpl> Session(const std::string& save) {
  SessionOptions o;
  o.roles = std::vector<std::string>{"actor"};
  o.run_id = "contents";
  o.quiet = true;
  o.install_signal_handlers = false;
  return runtime::SessionImpl::Create(MakePlan(save, {99}), o,
                                      [](const char*) -> const char* { return nullptr; });
}

// Allocations inside the window land as kAllocation instants with their size (negative for a
// free), device and the operator they happen in, plus the device's allocated counter; none
// outside the window or after the reporter is removed.
TEST(TorchMemoryTest, AllocatorEventsWithTheirOperatorOnlyInsideTheWindow) {
  TorchOps& ops = TorchOps::Get();
  const std::string save = FreshDir("torch_memory");
  auto s = Session(save);
  ASSERT_TRUE(s->enabled());
  TorchOpsOptions context;  // context only: no operator events, but allocations know their op
  context.context = true;
  ASSERT_TRUE(s->StartCapture("mem"));
  ops.Configure(true, context);
  ASSERT_TRUE(TorchMemory::Get().Sync(true));
  const uint64_t before = TorchMemory::Get().stats().events;
  { at::Tensor t = at::ones({256, 256}); }  // 256 KiB allocated in aten::ones, then freed
  const uint64_t recorded = TorchMemory::Get().stats().events - before;
  TorchMemory::Get().Sync(false);
  ops.Configure(false, context);
  EXPECT_FALSE(TorchMemory::Get().stats().installed);
  s->StopCapture();
  { at::Tensor t = at::ones({64}); }  // after the window: not recorded
  s->Shutdown();

  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  int64_t alloc = 0, freed = 0;
  size_t allocations = 0, counters = 0;
  bool in_ones = false;
  for (const auto& e : cap->events) {
    if (e.category == format::Category::kAllocation) {
      ++allocations;
      EXPECT_EQ(cap->str(e.name), "cpu");
      if (e.payload > 0) alloc += e.payload; else freed += e.payload;
      if (e.payload == 256 * 256 * 4) in_ones = cap->str(e.arg1) == "aten::empty" ||
                                                 cap->str(e.arg1) == "aten::ones";
    }
    if (e.kind == format::EventKind::kCounter && cap->str(e.name) == "allocated_bytes cpu")
      ++counters;
    EXPECT_NE(e.category, format::Category::kOperator);  // context only
  }
  EXPECT_EQ(allocations, recorded);
  EXPECT_GE(alloc, 256 * 256 * 4);
  EXPECT_LE(freed, -256 * 256 * 4);
  EXPECT_TRUE(in_ones);
  EXPECT_EQ(counters, allocations);
}

// Module ranges nest, carry depth and class, and a range whose end was missed is dropped
// (counted) when its parent ends; an exit for a module never entered is ignored.
TEST(ModuleRangesTest, NestedRangesWithDepthAndClass) {
  const std::string save = FreshDir("torch_modules");
  auto s = Session(save);
  ModuleRanges::Exit(7);  // before any window: nothing
  ASSERT_TRUE(s->StartCapture("mod"));
  const uint64_t dropped = ModuleRanges::dropped();
  ModuleRanges::Enter(1, "Net", "Net");
  ModuleRanges::Enter(2, "Net.layers.0", "Block");
  ModuleRanges::Exit(2);
  ModuleRanges::Enter(3, "Net.head", "Linear");  // raises: its end never comes
  ModuleRanges::Exit(99);                        // never entered
  ModuleRanges::Exit(1);
  EXPECT_EQ(ModuleRanges::dropped() - dropped, 1u);
  s->StopCapture();
  s->Shutdown();
  const auto caps = FindCaptures(save);
  ASSERT_EQ(caps.size(), 1u);
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  std::map<std::string, std::pair<uint32_t, std::string>> got;
  for (const auto& e : cap->events)
    if (e.category == format::Category::kModule) got[cap->str(e.name)] = {e.arg0, cap->str(e.arg1)};
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got["Net"], std::make_pair(0u, std::string("Net")));
  EXPECT_EQ(got["Net.layers.0"], std::make_pair(1u, std::string("Block")));
}

TEST(TorchOpsTest, NamesAreRecognisedAsCommunication) {
  EXPECT_TRUE(IsCommunicationOp("c10d::broadcast_"));
  EXPECT_TRUE(IsCommunicationOp("nccl:all_gather"));
  EXPECT_TRUE(IsCommunicationOp("record_param_comms"));
  EXPECT_FALSE(IsCommunicationOp("aten::mm"));
  EXPECT_FALSE(IsCommunicationOp("c10"));
}

}  // namespace
}  // namespace rlprof::sources
