#include "src/cli/cli.h"
#include "src/cli/cli_test_util.h"
#include "src/cli/command.h"

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

TEST(CliTest, DashDashVersionPrintsWhatVersionPrints) {
  std::string v, out, err;
  ASSERT_EQ(RunArgs({"version"}, &v, &err), kExitOk);
  for (const char* flag : {"--version", "-V"}) {
    out.clear();
    EXPECT_EQ(RunArgs({flag}, &out, &err), kExitOk) << flag << ": " << err;
    EXPECT_EQ(out, v) << flag;
  }
  out.clear();
  ASSERT_EQ(RunArgs({"--help"}, &out, &err), kExitOk);
  EXPECT_NE(out.find("--version"), std::string::npos);
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

TEST(CliTest, ReportStatusPrefixesEveryLineAndMapsTheCodeToTheExitCode) {
  std::ostringstream out, err;
  Io io{out, err};
  EXPECT_EQ(ReportStatus(base::Status::Ok(), "analyse", io), kExitOk);
  EXPECT_EQ(err.str(), "");
  EXPECT_EQ(ReportStatus(base::NotFound("no trace found under x\nx/y: permission denied"), "analyse", io),
            kExitBadInput);
  EXPECT_EQ(err.str(), "rlprof analyse: no trace found under x\nrlprof analyse: x/y: permission denied\n");
  EXPECT_EQ(ReportStatus(base::IoError("out/a.csv: read-only"), "analyse", io), kExitOutputError);
  EXPECT_EQ(ReportStatus(base::Internal("bug"), "analyse", io), kExitAnalysisError);
}

TEST(CliTest, AnUnknownExportTypeIsAUsageError) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"analyse", "x.json", "--export", "text,xml"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("xml"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlprof::cli
