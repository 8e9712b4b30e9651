#include "src/cli/cli.h"
#include "src/cli/cli_test_util.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace rlprof::cli {
namespace {

TEST(CliTest, VersionPrintsTheProjectVersion) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"version"}, &out, &err), kExitOk);
  EXPECT_EQ(out.rfind("rlprof ", 0), 0u) << out;
  EXPECT_EQ(RunArgs({"version", "--json"}, &out, &err), kExitOk);
  EXPECT_NE(out.find("\"version\""), std::string::npos);
}

TEST(CliTest, UnknownSubcommandIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"frobnicate"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("rlprof --help"), std::string::npos);
}

TEST(CliTest, NoSubcommandIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(RunArgs({}, &out, &err), kExitUsage);
}

}  // namespace
}  // namespace rlprof::cli
