// `rlprof trigger` and the `analyse --ray` hand-over, in-process.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "src/cli/cli_test_util.h"
#include "src/cli/ray_handoff.h"
#include "src/runtime/trigger.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

class TriggerCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("rlprof_trigger_cmd_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_, out_, err_;
};

TEST_F(TriggerCommandTest, UsageErrorsAreExitOne) {
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_}, &out_, &err_), kExitUsage);
  EXPECT_NE(err_.find("--steps N or --decode-steps N"), std::string::npos);
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "1", "--decode-steps", "2"}, &out_, &err_), kExitUsage);
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "1", "--ranks", "3-1"}, &out_, &err_), kExitUsage);
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "1", "--ranks", "x"}, &out_, &err_), kExitUsage);
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "0"}, &out_, &err_), kExitUsage);
  EXPECT_FALSE(fs::exists(dir_));
}

TEST_F(TriggerCommandTest, WritesAPrivateRequestThatTheRuntimeReads) {
  ASSERT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "2", "--ranks", "0,4-6", "--run", "r1", "--json"}, &out_,
                    &err_),
            kExitOk)
      << err_;
  const auto doc = nlohmann::json::parse(out_);
  const std::string file = doc["request"];
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(file).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  std::ifstream f(file);
  std::stringstream s;
  s << f.rdbuf();
  auto r = runtime::ParseTriggerRequest(s.str());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->id, doc["id"]);
  EXPECT_EQ(r->ranks, (std::vector<int64_t>{0, 4, 5, 6}));
  EXPECT_EQ(r->run, "r1");
  EXPECT_EQ(r->steps, 2);
  EXPECT_NEAR(r->expires_s - r->created_s, 600, 1e-6);
}

TEST_F(TriggerCommandTest, WaitsForTheSessionsToAcknowledge) {
  // A session's inbox on another thread, as the writer thread polls it.
  Identity me;
  me.rank = 5;
  me.host = "hostA";
  me.pid = 77;
  std::thread session([&] {
    runtime::TriggerInbox inbox(dir_, 0, 0);
    for (int i = 0; i < 3000; ++i) {  // up to 30 s: a loaded machine can hold either thread back
      const double now =
          std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      if (!inbox.Poll(me, "r1", now).empty()) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const int rc = RunArgs({"trigger", "--dir", dir_, "--decode-steps", "8", "--ranks", "5", "--wait", "30", "--expect",
                          "1"},
                         &out_, &err_);
  session.join();
  EXPECT_EQ(rc, kExitOk) << err_;
  EXPECT_NE(out_.find("acknowledged by 1 process(es):\n  hostA rank 5 pid 77"), std::string::npos) << out_;
  // Nobody polls any more: --expect 1 is not met.
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "1", "--wait", "0.2", "--expect", "1"}, &out_, &err_),
            kExitBadInput);
  EXPECT_NE(err_.find("0 of 1 expected"), std::string::npos);
}

TEST_F(TriggerCommandTest, ADirectoryOthersCanWriteIsAnOutputError) {
  fs::create_directories(dir_);
  ::chmod(dir_.c_str(), 0777);
  EXPECT_EQ(RunArgs({"trigger", "--dir", dir_, "--steps", "1"}, &out_, &err_), kExitOutputError);
  EXPECT_NE(err_.find("group or others"), std::string::npos) << err_;
}

TEST(AnalyseRayTest, ExportIsRefusedAndTheHandOverRunsThePythonGiven) {
  std::string out, err;
  EXPECT_EQ(RunArgs({"analyse", "somewhere", "--export", "text", "--ray"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("--export reads the traces"), std::string::npos);
  ::setenv("RLPROF_PYTHON", "/opt/py/bin/python3", 1);
  EXPECT_EQ(PythonAnalyseCommand({"RUN", "--ray", "auto"}),
            (std::vector<std::string>{"/opt/py/bin/python3", "-m", "rlprof", "analyse", "RUN", "--ray", "auto"}));
  ::unsetenv("RLPROF_PYTHON");
  EXPECT_EQ(PythonAnalyseCommand({}).front(), "python3");
  // A Python that cannot be started: exit 1 naming RLPROF_PYTHON (this process is not replaced).
  ::setenv("RLPROF_PYTHON", "/nonexistent/python", 1);
  EXPECT_EQ(RunArgs({"analyse", "somewhere", "--ray", "127.0.0.1:1"}, &out, &err), kExitUsage);
  ::unsetenv("RLPROF_PYTHON");
  EXPECT_NE(err.find("RLPROF_PYTHON"), std::string::npos) << err;
}

}  // namespace
}  // namespace rlprof::cli
