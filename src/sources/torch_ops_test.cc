// The torch operator hook against the real runtime and libtorch: operators run inside a
// capture window land with their names and categories, collectives are communication, and
// nothing outside the window is recorded.
#include "src/sources/torch_ops.h"

#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <map>
#include <string>

#include <gtest/gtest.h>

#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"
#include "src/runtime/session.h"
#include "src/sources/runtime_link.h"

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
  ASSERT_TRUE(ops.Bind(LocalRuntimeLink()));
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

TEST(TorchOpsTest, NamesAreRecognisedAsCommunication) {
  EXPECT_TRUE(IsCommunicationOp("c10d::broadcast_"));
  EXPECT_TRUE(IsCommunicationOp("nccl:all_gather"));
  EXPECT_TRUE(IsCommunicationOp("record_param_comms"));
  EXPECT_FALSE(IsCommunicationOp("aten::mm"));
  EXPECT_FALSE(IsCommunicationOp("c10"));
}

TEST(TorchOpsTest, RefusesARuntimeLinkOfAnotherLayout) {
  RuntimeLink l = LocalRuntimeLink();
  l.abi = RuntimeLink::kAbi + 1;
  EXPECT_FALSE(TorchOps::Get().Bind(l));
  l = LocalRuntimeLink();
  l.emit = nullptr;
  EXPECT_FALSE(TorchOps::Get().Bind(l));
}

}  // namespace
}  // namespace rlprof::sources
