#include "src/config/device.h"

#include <gtest/gtest.h>

namespace rlprof::config {
namespace {

ProcessPlan With(bool device, const std::string& level) {
  ProcessPlan p;
  p.contents.device = device;
  p.level = level;
  return p;
}

TEST(DeviceActivitiesTest, NothingWithoutDeviceContentsOrAtLevelNone) {
  EXPECT_FALSE(DeviceActivitiesFor(With(false, "level2")).any());
  EXPECT_FALSE(DeviceActivitiesFor(With(true, "level_none")).any());
  EXPECT_TRUE(DeviceActivitiesFor(With(true, "level_none")).Names().empty());
}

TEST(DeviceActivitiesTest, EachLevelAddsToThePreviousOne) {
  using V = std::vector<std::string>;
  EXPECT_EQ(DeviceActivitiesFor(With(true, "level0")).Names(),
            (V{"kernels", "memcpy", "memset", "launch_api"}));
  EXPECT_EQ(DeviceActivitiesFor(With(true, "level1")).Names(),
            (V{"kernels", "memcpy", "memset", "runtime_api", "sync", "external_correlation"}));
  EXPECT_EQ(DeviceActivitiesFor(With(true, "level2")).Names(),
            (V{"kernels", "memcpy", "memset", "runtime_api", "sync", "driver_api", "overhead",
               "external_correlation"}));
  // An unknown level (validated elsewhere) records what level0 does.
  EXPECT_EQ(DeviceActivitiesFor(With(true, "levelX")).Names(),
            DeviceActivitiesFor(With(true, "level0")).Names());
}

}  // namespace
TEST(DeviceActivitiesTest, EveryNameHasItsFieldAndOnlyThose) {
  std::string all = DeviceActivities::AllNames();
  size_t from = 0, n = 0;
  while (from < all.size()) {
    size_t end = all.find(", ", from);
    if (end == std::string::npos) end = all.size();
    const std::string name = all.substr(from, end - from);
    from = end + 2;
    DeviceActivities a;
    bool* f = a.Field(name);
    ASSERT_NE(f, nullptr) << name;
    *f = true;
    EXPECT_EQ(a.Names(), std::vector<std::string>{name}) << name;
    ++n;
  }
  EXPECT_EQ(n, 9u);
  DeviceActivities a;
  EXPECT_EQ(a.Field("bogus"), nullptr);
  EXPECT_EQ(a.Field(""), nullptr);
}

}  // namespace rlprof::config
