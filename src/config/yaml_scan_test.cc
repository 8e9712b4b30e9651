#include "src/config/yaml_scan.h"

#include <gtest/gtest.h>

namespace rlprof::config {
namespace {

TEST(YamlScanTest, EnclosingKeyPathFollowsIndentation) {
  const char* text =
      "global_profiler:\n"            // 0
      "  tool: npu\n"                 // 1
      "  global_tool_config:\n"       // 2
      "    nsys:\n"                   // 3
      "      discrete: true\n"        // 4
      "  steps: [1]\n"                // 5
      "actor_rollout_ref:\n";         // 6
  EXPECT_EQ(EnclosingKeyPath(text, 0, 0), "");
  EXPECT_EQ(EnclosingKeyPath(text, 4, 2), "global_profiler.global_tool_config.nsys");
  // The key on the error line counts when the error comes after its ':'.
  EXPECT_EQ(EnclosingKeyPath(text, 4, 16), "global_profiler.global_tool_config.nsys.discrete");
  // A line at a smaller indentation closes the deeper mappings.
  EXPECT_EQ(EnclosingKeyPath(text, 5, 2), "global_profiler");
  EXPECT_EQ(EnclosingKeyPath(text, 6, 0), "");
}

TEST(YamlScanTest, OverIndentedLineBelongsToThePreviousKey) {
  // yaml-cpp reads "   steps: [1]" as a continuation of tool's value: the error is in tool.
  EXPECT_EQ(EnclosingKeyPath("global_profiler:\n  tool: npu\n   steps: [1]\n", 2, 8),
            "global_profiler.tool");
}

TEST(YamlScanTest, ListItemsCommentsBlockScalarsAndFlowCollectionsAreSkipped) {
  const char* text =
      "# comment: not a key\n"        // 0
      "a:\n"                          // 1
      "  - name: x\n"                 // 2
      "    opts:\n"                   // 3
      "      k: 1\n"                  // 4
      "  - cmd: |\n"                  // 5
      "      not: a key\n"            // 6
      "b:\n"                          // 7
      "  list: [1,\n"                 // 8
      "    c: 2\n"                    // 9
      "  d: 3\n";                     // 10
  EXPECT_EQ(EnclosingKeyPath(text, 4, 8), "a.opts.k");
  EXPECT_EQ(EnclosingKeyPath(text, 7, 0), "");
  EXPECT_EQ(EnclosingKeyPath(text, 6, 6), "a.cmd");
  // An unclosed flow list: every later line is inside it.
  EXPECT_EQ(EnclosingKeyPath(text, 10, 2), "b.list");
}

TEST(YamlScanTest, AliasNameAndAnchorLine) {
  std::string text = "x: &p 1\nb:\n  d: *q\n  e: [*p, 2]\ny: &q 3\n";
  EXPECT_EQ(AliasNameAt(text, text.find("*q")), "q");
  EXPECT_EQ(AliasNameAt(text, text.find("*p")), "p");
  EXPECT_EQ(AliasNameAt(text, 0), "");  // no '*' on line 1
  EXPECT_EQ(AnchorLine(text, "p"), 1);
  EXPECT_EQ(AnchorLine(text, "q"), 5);
  EXPECT_EQ(AnchorLine(text, "z"), -1);
  EXPECT_EQ(AnchorLine("a: b&c\n", "c"), -1);  // '&' inside a word is not an anchor
}

TEST(YamlScanTest, DuplicateKeysAreFoundWithBothLines) {
  YAML::Node n = YAML::Load(
      "a:\n"
      "  b: 1\n"
      "  c: 2\n"
      "  b: 3\n"
      "l:\n"
      "  - {k: 1, k: 2}\n"
      "a2: {x: 1}\n");
  auto d = FindDuplicateKeys(n);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].path, "a.b");
  EXPECT_EQ(d[0].line, 4);
  EXPECT_EQ(d[0].first_line, 2);
  EXPECT_EQ(d[1].path, "l[0].k");
  EXPECT_EQ(d[1].line, 6);
  EXPECT_EQ(d[1].first_line, 6);
  EXPECT_TRUE(FindDuplicateKeys(YAML::Load("a: 1\nb: {a: 2}\n")).empty());
}

TEST(YamlScanTest, MergeKeysAndAliasedSubtreesAreNotReportedTwice) {
  YAML::Node n = YAML::Load(
      "base: &b {x: 1, x: 2}\n"
      "one: *b\n"
      "two:\n"
      "  <<: *b\n"
      "  <<: *b\n");
  auto d = FindDuplicateKeys(n);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].path, "base.x");
}

}  // namespace
}  // namespace rlprof::config
