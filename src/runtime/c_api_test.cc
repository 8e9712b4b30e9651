#include "rlprof/rlprof.h"

#include <gtest/gtest.h>

#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"

extern "C" int RlprofCRecordStep(int64_t step);

namespace rlprof::runtime {
namespace {

using testing_util::FindCaptures;
using testing_util::FreshDir;
using testing_util::ReadManifest;

TEST(CApiTest, CallsBeforeInitReturnStateErrors) {
  EXPECT_EQ(rlprof_step_begin(1), RLPROF_ERROR_STATE);
  EXPECT_STRNE(rlprof_last_error(), "");
  EXPECT_EQ(rlprof_shutdown(), RLPROF_ERROR_STATE);
  EXPECT_EQ(rlprof_enabled(), 0);
  EXPECT_EQ(rlprof_range_start("x"), 0u);
  rlprof_range_end(0);
  rlprof_mark("x");
  EXPECT_EQ(rlprof_init_from_config(nullptr, nullptr, 0, nullptr), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rlprof_sub_step(42), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rlprof_stage_begin_ex("actor", "x", 42), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rlprof_stage_begin(nullptr, "x"), RLPROF_ERROR_INVALID_ARGUMENT);
}

TEST(CApiTest, BadConfigReturnsConfigErrorWithMessage) {
  const std::string dir = FreshDir("capi-bad");
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/bad.yaml", "rlprof: [1, 2\n").ok());
  EXPECT_EQ(rlprof_init_from_config((dir + "/bad.yaml").c_str(), nullptr, 0, nullptr),
            RLPROF_ERROR_CONFIG);
  EXPECT_NE(std::string(rlprof_last_error()).find("bad.yaml"), std::string::npos)
      << rlprof_last_error();
  EXPECT_EQ(rlprof_enabled(), 0);
}

TEST(CApiTest, ConfigWithOverridesCapturesTheSelectedStepsOnly) {
  const std::string dir = FreshDir("capi");
  const std::string yaml = "rlprof:\n  steps: [3]\n  save_path: " + dir +
                           "/out\n  roles:\n    actor:\n      all_ranks: true\n";
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/p.yaml", yaml).ok());
  const char* overrides[] = {"rlprof.steps=[2]"};
  rlprof_options o;
  rlprof_options_init(&o);
  o.roles = "actor, ref";
  o.run_id = "capi";
  o.quiet = 1;
  o.install_signal_handlers = 0;
  ASSERT_EQ(rlprof_init_from_config((dir + "/p.yaml").c_str(), overrides, 1, &o), RLPROF_OK)
      << rlprof_last_error();
  EXPECT_EQ(rlprof_init_from_config((dir + "/p.yaml").c_str(), nullptr, 0, &o), RLPROF_ERROR_STATE);
  EXPECT_EQ(rlprof_enabled(), 1);
  char run_dir[4096];
  ASSERT_EQ(rlprof_run_dir(run_dir, sizeof run_dir), RLPROF_OK);
  EXPECT_EQ(std::string(run_dir), dir + "/out/capi");
  for (int64_t step = 1; step <= 3; ++step) EXPECT_EQ(RlprofCRecordStep(step), RLPROF_OK);
  EXPECT_EQ(rlprof_flush(30), RLPROF_OK);
  EXPECT_EQ(rlprof_shutdown(), RLPROF_OK);
  const auto caps = FindCaptures(dir + "/out");
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_NE(caps[0].find("/capi/step2/e2e/"), std::string::npos) << caps[0];
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["identity"]["roles"], nlohmann::json::array({"actor", "ref"}));
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  std::multiset<std::string> names;
  for (const auto& e : cap->events) names.insert(cap->str(e.name));
  // step, stage, range begin + end (the end has no name), mark, counter, sub-step.
  EXPECT_EQ(names, (std::multiset<std::string>{"step 2", "actor_update", "c range", "", "c mark",
                                               "c counter", "mini_batch"}));
}

}  // namespace
}  // namespace rlprof::runtime
