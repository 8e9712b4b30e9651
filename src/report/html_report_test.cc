// The HTML report page: the embedded asset, the data slot, and escaping of hostile names.
#include "src/report/html_report.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "src/base/files.h"

namespace rlprof::report {
namespace {

std::string DataOf(const std::string& page) {
  const std::string open = "<script id=\"rlprof-data\" type=\"application/json\">";
  const size_t a = page.find(open);
  const size_t b = page.find("</script>", a);
  EXPECT_NE(a, std::string::npos);
  EXPECT_NE(b, std::string::npos);
  return page.substr(a + open.size(), b - a - open.size());
}

TEST(HtmlReportTest, EmbedsTheDataOnceInASelfContainedPage) {
  nlohmann::json data = {{"title", "run 7"}, {"summary", {{"inputs", nlohmann::json::array()}}}};
  const std::string page = RenderHtmlReport(data);
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(page.find("@RLPROF_REPORT_DATA@"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(DataOf(page)), data);
  // Nothing is fetched: no external scripts, styles or images.
  EXPECT_EQ(page.find("src=\"http"), std::string::npos);
  EXPECT_EQ(page.find("href=\"http"), std::string::npos);
  EXPECT_EQ(page.find("@import"), std::string::npos);
}

TEST(HtmlReportTest, HostileNamesCannotCloseTheDataElement) {
  const std::string evil = "</script><script>alert(1)</script>&amp;\xE2\x80\xA8";
  nlohmann::json data = {{"title", evil}, {"summary", {{"inputs", {{{"name", evil}}}}}}};
  const std::string page = RenderHtmlReport(data);
  const std::string json = DataOf(page);
  EXPECT_EQ(json.find('<'), std::string::npos);
  EXPECT_EQ(json.find('&'), std::string::npos);
  EXPECT_EQ(json.find("\xE2\x80\xA8"), std::string::npos);
  EXPECT_EQ(nlohmann::json::parse(json)["title"], evil);  // the value itself survives
}

TEST(HtmlReportTest, InvalidUtf8IsReplacedNotFatal) {
  nlohmann::json data = {{"title", std::string("bad \xFF byte")}};
  const std::string json = DataOf(RenderHtmlReport(data));
  EXPECT_NE(nlohmann::json::parse(json)["title"].get<std::string>().find("bad"), std::string::npos);
}

TEST(HtmlReportTest, WritesAtomicallyAndReportsAnUnwritablePath) {
  const std::string dir = (std::filesystem::temp_directory_path() / "rlprof_report_test").string();
  std::filesystem::create_directories(dir);
  ASSERT_TRUE(WriteHtmlReport(dir + "/r.html", {{"title", "x"}}).ok());
  EXPECT_TRUE(std::filesystem::file_size(dir + "/r.html") > 1000);
  EXPECT_FALSE(WriteHtmlReport("/proc/rlprof_no/r.html", {{"title", "x"}}).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rlprof::report
