// What the injection library makes of NVTX names (nvtx_names.h).
#include "src/sources/nvtx_names.h"

#include <cstring>
#include <string>

#include <gtest/gtest.h>

namespace rlprof::sources::nvtx {
namespace {

NameEntry Of(const char* s) {
  NameEntry e;
  e.copy = s;
  e.len = static_cast<uint32_t>(std::strlen(s));
  Classify(&e);
  return e;
}

TEST(NvtxNamesTest, VocabularyNamesAndAliasesAreStagesWithTheirRole) {
  EXPECT_STREQ(Of("rollout_generate").stage, "rollout_generate");
  EXPECT_STREQ(Of("rollout_generate").stage_role, "rollout");
  EXPECT_STREQ(Of("update_actor").stage, "actor_update");  // verl's marked_timer name
  EXPECT_STREQ(Of("update_actor").stage_role, "actor");
  EXPECT_STREQ(Of("reference_compute_log_prob").stage, "ref_compute_log_prob");
  EXPECT_EQ(Of("forward").stage, nullptr);
  EXPECT_EQ(Of("forward").step, -1);
}

TEST(NvtxNamesTest, StepRangesCarryTheirNumberOrTakeTheNext) {
  EXPECT_EQ(Of("step").step, 0);
  EXPECT_EQ(Of("train_step").step, 0);
  EXPECT_EQ(Of("step 3").step, 3);
  EXPECT_EQ(Of("step_12").step, 12);
  EXPECT_EQ(Of("step:7").step, 7);
  EXPECT_EQ(Of("stepper").step, -1);
  EXPECT_EQ(Of("step 0").step, -1);
  EXPECT_EQ(Of("step 3a").step, -1);
  EXPECT_EQ(Of("steps").step, -1);
}

TEST(NvtxNamesTest, AReusedBufferWithNewTextIsANewName) {
  NameCache cache;
  char buf[32];
  std::strcpy(buf, "first");
  const NameEntry& a = cache.Lookup(buf);
  EXPECT_STREQ(a.copy, "first");
  EXPECT_NE(a.copy, buf) << "the cache keeps its own copy";
  EXPECT_EQ(&cache.Lookup(buf), &a) << "same pointer, same text: a hit";
  std::strcpy(buf, "second");
  EXPECT_STREQ(cache.Lookup(buf).copy, "second");
}

}  // namespace
}  // namespace rlprof::sources::nvtx
