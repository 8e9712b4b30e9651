#include "src/analysis/readers/json_scan.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "src/analysis/readers/decimal.h"

namespace rlprof::analysis {
namespace {

TEST(JsonScan, CutsTheEventsArrayOnlyBetweenElements) {
  std::string s = R"({"deviceProperties": [{"a": 1}], "traceEvents": [{"n": "x],{"}, {"n": "\"},"}, [1], {"n": 3}], "z": {}})";
  JsonLayout l = ScanJson(s.data(), s.size(), 1);
  EXPECT_EQ(l.form, JsonLayout::Form::kObject);
  ASSERT_TRUE(l.has_events);
  EXPECT_EQ(s[l.events_open], '[');
  EXPECT_EQ(s[l.events_close], ']');
  EXPECT_EQ(l.elements, 4u);
  ASSERT_EQ(l.cuts.size(), 5u);  // '[', three commas, ']'
  for (size_t i = 1; i + 1 < l.cuts.size(); ++i) EXPECT_EQ(s[l.cuts[i]], ',');
  EXPECT_FALSE(l.truncated);
}

TEST(JsonScan, BlanksTrailingCommasAndFindsTheLastCompleteElement) {
  std::string s = R"([{"a": 1,}, {"b": [1, 2,],}, {"c": "unterminated)";
  JsonLayout l = ScanJson(s.data(), s.size(), 1 << 20);
  EXPECT_EQ(l.form, JsonLayout::Form::kArray);
  EXPECT_TRUE(l.truncated);
  EXPECT_EQ(l.trailing_commas, 3u);
  EXPECT_EQ(l.elements, 2u);
  EXPECT_EQ(s.substr(0, l.events_close), R"([{"a": 1 }, {"b": [1, 2 ] })");
}

TEST(JsonScan, AgreesWithTheBaselineScannerOnARealTrace) {
  std::string a = std::string(RLPROF_FIXTURES_DIR) + "/torch113_legacy_gloo_ddp_rank0.json";
  FILE* f = std::fopen(a.c_str(), "rb");
  ASSERT_NE(f, nullptr);
  std::string text(700000, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), f));
  std::fclose(f);
  for (size_t cut : {text.size(), text.size() / 3, size_t{12345}}) {
    std::string x = text.substr(0, cut), y = x;
    JsonLayout l1 = ScanJson(x.data(), x.size(), 4096);
    JsonLayout l2 = ScanJsonBaseline(y.data(), y.size(), 4096);
    EXPECT_EQ(l1.cuts, l2.cuts) << cut;
    EXPECT_EQ(l1.elements, l2.elements) << cut;
    EXPECT_EQ(l1.truncated, l2.truncated) << cut;
    EXPECT_EQ(l1.events_close, l2.events_close) << cut;
    EXPECT_GT(l1.cuts.size(), 2u);
  }
}

TEST(JsonScan, ReplacesInvalidUtf8BytesOnly) {
  std::string s = "ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 bad \xFF \xC3 \xED\xA0\x80 end";
  EXPECT_EQ(SanitizeUtf8(s.data(), s.size()), 5u);
  EXPECT_EQ(s, "ok \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 bad ? ? ??? end");
}

TEST(Decimal, ParsesMicrosecondTextWithoutRounding) {
  int64_t ns = 0;
  EXPECT_TRUE(ParseMicrosToNanos("1723456789012.345", &ns));
  EXPECT_EQ(ns, 1723456789012345);
  EXPECT_TRUE(ParseMicrosToNanos(" 1704161511420306.491 ", &ns));
  EXPECT_EQ(ns, 1704161511420306491);
  EXPECT_TRUE(ParseMicrosToNanos("12.77012757357446", &ns));
  EXPECT_EQ(ns, 12770);
  EXPECT_TRUE(ParseMicrosToNanos("-3.5", &ns));
  EXPECT_EQ(ns, -3500);
  EXPECT_TRUE(ParseMicrosToNanos("1.5e3", &ns));
  EXPECT_EQ(ns, 1500000);
  EXPECT_TRUE(ParseMicrosToNanos(".25", &ns));
  EXPECT_EQ(ns, 250);
  for (const char* bad : {"", "NaN", "nan", "inf", "12abc", "-", "1.2.3", "99999999999999999999"})
    EXPECT_FALSE(ParseMicrosToNanos(bad, &ns)) << bad;
  int64_t v = 0;
  EXPECT_TRUE(ParseInteger("18446744073709551615", &v) == false);
  EXPECT_TRUE(ParseInteger("-42", &v));
  EXPECT_EQ(v, -42);
  char buf[64];
  EXPECT_EQ(CompactJson(R"([[2, 3], ["a b"], []])", buf), R"([[2,3],["a b"],[]])");
}

}  // namespace
}  // namespace rlprof::analysis
