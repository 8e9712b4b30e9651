#include "src/base/version.h"

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

namespace rlprof::base {
namespace {

// The version has one source, the root CMakeLists.txt's project(VERSION): the manifest, the
// CLI, the report and the Python package all print base::Version().
TEST(VersionTest, IsTheProjectVersionOfCMakeLists) {
  std::ifstream f(std::string(RLPROF_SOURCE_DIR) + "/CMakeLists.txt");
  std::stringstream text;
  text << f.rdbuf();
  std::smatch m;
  const std::string s = text.str();
  ASSERT_TRUE(std::regex_search(s, m, std::regex(R"(project\(rlprof\s+VERSION\s+([0-9.]+))")));
  EXPECT_EQ(std::string(Version()), m[1].str());
  EXPECT_TRUE(std::regex_match(std::string(Version()), std::regex(R"([0-9]+\.[0-9]+\.[0-9]+)")));
}

}  // namespace
}  // namespace rlprof::base
