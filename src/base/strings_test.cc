#include "src/base/strings.h"

#include <gtest/gtest.h>

namespace rlprof::base {
namespace {

TEST(StringsTest, SplitKeepsEmptyParts) {
  EXPECT_EQ(Split("a..b", '.'), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_EQ(Split("", '.'), (std::vector<std::string>{""}));
}

TEST(StringsTest, JoinAndTrim) {
  EXPECT_EQ(Join({"a", "b", "c"}, ", "), "a, b, c");
  EXPECT_EQ(Trim("  x y \n"), "x y");
}

TEST(StringsTest, EditDistanceCountsEdits) {
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("same", "same"), 0u);
}

TEST(StringsTest, NearestWordSuggestsPlausibleTyposOnly) {
  std::vector<std::string> keys = {"enable", "all_ranks", "ranks", "tool_config"};
  EXPECT_EQ(NearestWord("enabel", keys), "enable");
  EXPECT_EQ(NearestWord("all_rank", keys), "all_ranks");
  EXPECT_EQ(NearestWord("completely_different", keys), "");
}

TEST(StringsTest, FormatsBytesAndCounts) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(3ull << 30), "3.0 GiB");
  EXPECT_EQ(FormatCount(950), "950");
  EXPECT_EQ(FormatCount(12345), "12.3 k");
}

TEST(StringsTest, FormatShareIsTheShortestTextThatReadsBack) {
  EXPECT_EQ(FormatShare(0.1), "0.1");
  EXPECT_EQ(FormatShare(1.0), "1");
  EXPECT_EQ(FormatShare(0.125), "0.125");
  EXPECT_EQ(FormatShare(1.0 / 3), "0.3333333333333333");
}

TEST(StringsTest, SanitizeForPathReplacesUnsafeCharacters) {
  EXPECT_EQ(SanitizeForPath("actor_rollout/ref x"), "actor_rollout-ref-x");
  EXPECT_EQ(SanitizeForPath(".."), "_");
  EXPECT_EQ(SanitizeForPath(""), "_");
}

}  // namespace
}  // namespace rlprof::base
