// Golden tests of `rlprof plan`: every shipped example config (text and JSON) and every bad
// config case with its exact message. Regenerate with RLPROF_UPDATE_GOLDEN=1 and review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/base/files.h"
#include "src/base/golden_test_util.h"
#include "src/base/strings.h"
#include "src/cli/cli.h"
#include "src/cli/cli_test_util.h"

namespace rlprof {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc;
  std::string out, err;
};

Result RunRlprof(std::vector<std::string> args) {
  Result r;
  r.rc = cli::RunArgs(std::move(args), &r.out, &r.err);
  return r;
}

std::vector<std::string> Words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

void CompareGolden(const std::string& path, const std::string& actual) { EXPECT_GOLDEN(path, actual); }

class GoldenPlanTest : public ::testing::Test {
 protected:
  void SetUp() override { fs::current_path(RLPROF_SOURCE_DIR); }
};

std::vector<fs::path> Sorted(const fs::path& dir, const std::string& ext) {
  std::vector<fs::path> v;
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ext) v.push_back(e.path());
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(GoldenPlanTest, ExampleConfigsProduceThePinnedPlans) {
  // test/golden/plan/<name>.args holds the command line; <name>.txt and <name>.json the output.
  auto cases = Sorted("test/golden/plan", ".args");
  ASSERT_GE(cases.size(), 6u);
  for (const auto& args_path : cases) {
    SCOPED_TRACE(args_path.string());
    auto args = Words(*base::ReadFile(args_path.string()));
    args.insert(args.begin(), "plan");
    Result text = RunRlprof(args);
    EXPECT_EQ(text.rc, 0) << text.err;
    fs::path stem = args_path;
    stem.replace_extension("");
    CompareGolden(stem.string() + ".txt", text.out);
    args.push_back("--json");
    Result json = RunRlprof(args);
    EXPECT_EQ(json.rc, 0) << json.err;
    CompareGolden(stem.string() + ".json", json.out);
  }
}

TEST_F(GoldenPlanTest, BadConfigsFailWithTheirExactMessages) {
  auto cases = Sorted("test/golden/config_errors", ".yaml");
  ASSERT_GE(cases.size(), 25u);
  for (const auto& yaml : cases) {
    SCOPED_TRACE(yaml.string());
    std::vector<std::string> args = {"plan", yaml.string()};
    fs::path stem = yaml;
    stem.replace_extension("");
    if (fs::exists(stem.string() + ".args"))
      for (auto& w : Words(*base::ReadFile(stem.string() + ".args"))) args.push_back(w);
    Result r = RunRlprof(args);
    EXPECT_EQ(r.rc, 2) << r.out;
    EXPECT_TRUE(r.out.empty()) << "a failed plan prints nothing on stdout";
    CompareGolden(stem.string() + ".expected", "exit " + std::to_string(r.rc) + "\n" + r.err);
  }
}

TEST_F(GoldenPlanTest, MissingConfigFileIsBadInput) {
  Result r = RunRlprof({"plan", "test/golden/does_not_exist.yaml"});
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("does_not_exist.yaml: no such file"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace rlprof
