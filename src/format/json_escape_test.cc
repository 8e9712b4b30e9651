#include "src/format/json_escape.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "src/format/sample_capture.h"

namespace rlprof::format {
namespace {

std::string Json(std::string_view s) {
  std::string out;
  AppendJsonString(&out, s);
  return out;
}

TEST(JsonEscapeTest, EscapesQuotesBackslashesAndControlCharacters) {
  EXPECT_EQ(Json("plain"), "\"plain\"");
  EXPECT_EQ(Json("a\"b"), "\"a\\\"b\"");
  EXPECT_EQ(Json("a\\b"), "\"a\\\\b\"");
  EXPECT_EQ(Json("\n\t\r\b\f"), "\"\\n\\t\\r\\b\\f\"");
  EXPECT_EQ(Json(std::string("\x01\x1f\0", 3)), "\"\\u0001\\u001f\\u0000\"");
  EXPECT_EQ(Json("\x7f"), "\"\x7f\"");  // DEL is legal in JSON strings
  EXPECT_EQ(Json(""), "\"\"");
}

TEST(JsonEscapeTest, KeepsValidUtf8AndReplacesEachInvalidByte) {
  EXPECT_EQ(Json("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
  EXPECT_EQ(Json("\xf0\x9f\x9a\x80"), "\"\xf0\x9f\x9a\x80\"");
  EXPECT_EQ(Json("a\xff" "b"), "\"a\xef\xbf\xbd" "b\"");
  EXPECT_EQ(Json("\xe2\x82"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");              // truncated
  EXPECT_EQ(Json("\xc0\xaf"), "\"\xef\xbf\xbd\xef\xbf\xbd\"");              // overlong '/'
  EXPECT_EQ(Json("\xed\xa0\x80"), "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  // surrogate
  EXPECT_EQ(Json("\xf4\x90\x80\x80").size(), 2 + 4 * 3u);                     // > U+10FFFF
}

TEST(JsonEscapeTest, SanitizeUtf8MatchesTheEscapersRepair) {
  EXPECT_TRUE(IsValidUtf8("caf\xc3\xa9"));
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_EQ(SanitizeUtf8("a\xff" "b"), "a\xef\xbf\xbd" "b");
  EXPECT_EQ(SanitizeUtf8("ok"), "ok");
}

TEST(JsonEscapeTest, EveryHostileNameParsesBackWithAStrictParser) {
  for (const std::string& name : HostileNames()) {
    std::string doc = "{\"k\":" + Json(name) + "}";
    auto j = nlohmann::json::parse(doc, nullptr, false);  // rejects invalid UTF-8
    ASSERT_FALSE(j.is_discarded()) << doc.substr(0, 80);
    EXPECT_EQ(j["k"].get<std::string>(), SanitizeUtf8(name));
  }
}

TEST(JsonEscapeTest, EveryByteValueRoundTripsOrIsReplaced) {
  for (int b = 0; b < 256; ++b) {
    std::string s(1, static_cast<char>(b));
    auto j = nlohmann::json::parse("[" + Json(s) + "]", nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << b;
    EXPECT_EQ(j[0].get<std::string>(), b < 0x80 ? s : std::string("\xef\xbf\xbd")) << b;
  }
}

}  // namespace
}  // namespace rlprof::format
