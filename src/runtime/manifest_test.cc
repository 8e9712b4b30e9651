// The manifest written by the runtime, read back by the format reader (one contract).
#include "src/runtime/manifest.h"

#include <gtest/gtest.h>

#include "src/format/capture.h"

namespace rlprof::runtime {
namespace {

TEST(ManifestTest, SamplingRoundTripsThroughTheCaptureReader) {
  ManifestData m;
  m.run_id = "r";
  m.scope = "actor_update.part2";
  m.mode = "discrete";
  m.stage = "actor_update";
  m.steps = {3};
  m.close_reason = "stage_end";
  m.close_ns = 10;
  m.sampling_json =
      R"({"unit":"micro_batch","first":7,"count":1,"complete":false,"schedule":{"active":2},"from":"a"})";
  std::vector<std::string> diag;
  format::Manifest back = format::ParseManifest(ManifestJson(m), &diag);
  EXPECT_TRUE(diag.empty()) << diag.front();
  EXPECT_EQ(back.scope, "actor_update.part2");
  EXPECT_EQ(back.sampling_unit, "micro_batch");
  EXPECT_EQ(back.sampling_first, 7);
  EXPECT_EQ(back.sampling_count, 1);
  EXPECT_FALSE(back.sampling_complete);
  EXPECT_EQ(back.close_reason, "stage_end");
}

TEST(ManifestTest, WholeWindowCapturesHaveNoSampling) {
  ManifestData m;
  m.scope = "e2e";
  m.close_reason = "step_end";
  std::vector<std::string> diag;
  format::Manifest back = format::ParseManifest(ManifestJson(m), &diag);
  EXPECT_EQ(back.sampling_unit, "");
  EXPECT_EQ(ManifestJson(m).find("sampling"), std::string::npos);
  EXPECT_EQ(back.trigger, "");
  EXPECT_EQ(ManifestJson(m).find("trigger"), std::string::npos);
}

TEST(ManifestTest, TheTriggerThatOpenedAWindowRoundTrips) {
  ManifestData m;
  m.scope = "e2e";
  m.trigger = "t0123abcd";
  std::vector<std::string> diag;
  format::Manifest back = format::ParseManifest(ManifestJson(m), &diag);
  EXPECT_TRUE(diag.empty());
  EXPECT_EQ(back.trigger, "t0123abcd");
}

}  // namespace
}  // namespace rlprof::runtime
