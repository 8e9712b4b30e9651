// Every command on every hostile input (test/data/hostile, issue 10): no crash, a result, and
// the one diagnostics sink printed — problems by severity, notes apart — and in --json.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "src/base/files.h"
#include "src/cli/analysis_setup.h"
#include "src/cli/cli.h"
#include "src/cli/cli_test_util.h"

namespace rlprof::cli {
namespace {

namespace fs = std::filesystem;

class HostileCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = (fs::temp_directory_path() / ("rlprof_hostile_cli_" + std::to_string(::getpid())) /
             info->name())
                .string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(fs::path(root_).parent_path()); }
  static std::string Hostile(const std::string& name) {
    return std::string(RLPROF_SOURCE_DIR) + "/test/data/hostile/" + name;
  }
  std::string root_;
};

TEST_F(HostileCommandTest, EveryCommandTakesEveryHostileFile) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(Hostile("")))
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  ASSERT_GE(files.size(), 9u);
  for (const std::string& f : files) {
    SCOPED_TRACE(f);
    std::string out, err;
    EXPECT_EQ(RunArgs({"summary", f}, &out, &err), kExitOk) << err;
    EXPECT_NE(out.find("diagnostics"), std::string::npos) << out;
    EXPECT_EQ(RunArgs({"summary", f, "--view", "all", "--json"}, &out, &err), kExitOk) << err;
    EXPECT_TRUE(nlohmann::json::parse(out, nullptr, false).is_object());
    EXPECT_EQ(RunArgs({"summary", f, "--view", "rl"}, &out, &err), kExitOk) << err;
    EXPECT_NE(out.find("-- run_view"), std::string::npos) << out;
    EXPECT_EQ(RunArgs({"analyse", f, "-o", root_ + "/a"}, &out, &err), kExitOk) << err;
    for (const char* ext : {".json", ".pftrace", ".db"}) {
      EXPECT_EQ(RunArgs({"export", f, "-o", root_ + "/x" + ext, "--json"}, &out, &err), kExitOk) << err;
      auto j = nlohmann::json::parse(out, nullptr, false);
      ASSERT_TRUE(j.is_object()) << out;
      EXPECT_TRUE(j["diagnostics"].is_object()) << out;
    }
    EXPECT_EQ(RunArgs({"report", f, "-o", root_ + "/r.html"}, &out, &err), kExitOk) << err;
    EXPECT_NE(out.find("diagnostics (all inputs)"), std::string::npos) << out;
    EXPECT_EQ(RunArgs({"compare", f, f}, &out, &err), kExitOk) << err;
    EXPECT_EQ(RunArgs({"cluster", f}, &out, &err), kExitOk) << err;
  }
}

// The flow-only trace of the audit, through the commands it crashed.
TEST_F(HostileCommandTest, AFlowPointAloneNamesTheUnboundFlow) {
  std::string out, err;
  ASSERT_EQ(RunArgs({"summary", Hostile("flow_start_alone.json")}, &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("flow_unbound=1"), std::string::npos) << out;
  ASSERT_EQ(RunArgs({"export", Hostile("flow_start_alone.json"), "-o", root_ + "/f.pftrace"}, &out, &err),
            kExitOk)
      << err;
  EXPECT_NE(out.find("flow_unbound=1"), std::string::npos) << out;  // export shows its reader's counts
}

// Hostile times: no absurd durations, and the losses are named (was: 9.2e18 µs and
// "diagnostics: none").
TEST_F(HostileCommandTest, HostileTimesAreNamedAndNoDurationIsAbsurd) {
  std::string out, err;
  ASSERT_EQ(RunArgs({"summary", Hostile("hostile_times.json"), "--view", "all", "--json"}, &out, &err), kExitOk)
      << err;
  auto j = nlohmann::json::parse(out);
  const auto& d = j["inputs"][0]["diagnostics"];
  EXPECT_EQ(d["invalid_ts"], 8);
  EXPECT_GE(d["duration_clamped"].get<int>(), 1);
  // No step lasts longer than the valid range (2^62 ns ≈ 4.6e12 s = 4.6e15 µs).
  for (const auto& row : j["inputs"][0]["tables"]["step_trace_time"]["rows"]) {
    for (const auto& v : row) {
      if (v.is_number()) {
        EXPECT_LT(std::abs(v.get<double>()), 9.3e15) << row.dump();
      }
    }
  }
  // Nor does any value of the run view (durations, gaps, spans, starts).
  ASSERT_EQ(RunArgs({"summary", Hostile("hostile_times.json"), "--view", "rl", "--json"}, &out, &err), kExitOk)
      << err;
  j = nlohmann::json::parse(out);
  ASSERT_FALSE(j["run_view"]["rows"].empty());
  for (const auto& row : j["run_view"]["rows"])
    for (const auto& v : row)
      if (v.is_number()) {
        EXPECT_LT(std::abs(v.get<double>()), 9.3e15) << row.dump();
        EXPECT_GE(v.get<double>(), 0) << row.dump();
      }
}

// Informational notes are not problems: a capture whose step came from the manifest prints
// "diagnostics: none" and the note on its own line.
TEST_F(HostileCommandTest, NotesAreNotShownAsProblems) {
  analysis::Diagnostics d;
  d.Add("step_from_manifest");
  std::ostringstream o, e;
  Io io{o, e};
  PrintDiagnostics(io, d);
  EXPECT_EQ(o.str(), "diagnostics: none\nnotes: step_from_manifest=1\n");
  std::ostringstream o2;
  Io io2{o2, e};
  d.Add("raw_skipped_bytes", 7);
  d.Add("negative_duration");
  PrintDiagnostics(io2, d, "all inputs");
  EXPECT_EQ(o2.str(),
            "diagnostics (all inputs): [data_loss] raw_skipped_bytes=7 [warning] negative_duration=1\n"
            "notes: step_from_manifest=1\n");
}

// Unreadable folders, empty files and events without a manifest are named by every command.
TEST_F(HostileCommandTest, SkippedInputsAreNamed) {
  fs::create_directories(root_ + "/run/a");
  fs::copy_file(Hostile("instant_alone.json"), root_ + "/run/a/t.json");
  { std::ofstream(root_ + "/run/a/empty.json"); }
  std::string out, err;
  ASSERT_EQ(RunArgs({"summary", root_ + "/run"}, &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("input_empty_file=1"), std::string::npos) << out;
  EXPECT_NE(out.find("empty.json"), std::string::npos) << out;
  ASSERT_EQ(RunArgs({"export", root_ + "/run", "-o", root_ + "/x.json"}, &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("input_empty_file=1"), std::string::npos) << out;
  ASSERT_EQ(RunArgs({"analyse", root_ + "/run", "-o", root_ + "/out", "--json"}, &out, &err), kExitOk) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["diagnostics"]["input_empty_file"], 1);
  ASSERT_EQ(RunArgs({"cluster", root_ + "/run", "--json"}, &out, &err), kExitOk) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["diagnostics"]["input_empty_file"], 1);
  ASSERT_EQ(RunArgs({"compare", root_ + "/run", root_ + "/run", "--json"}, &out, &err), kExitOk) << err;
  EXPECT_EQ(nlohmann::json::parse(out)["diagnostics"]["input_empty_file"], 2);  // both sides
}

// Issue 10: a capture whose events.rlp is a directory aborted every command (std::bad_alloc).
TEST_F(HostileCommandTest, ACaptureWhoseEventsAreADirectoryIsPartialNotFatal) {
  const std::string cap = root_ + "/cap";
  fs::create_directories(cap + "/events.rlp");
  { std::ofstream(cap + "/manifest.json") << R"({"identity": {"rank": 0, "host": "h", "pid": 7}})"; }
  const std::vector<std::vector<std::string>> commands = {
      {"summary", cap},
      {"analyse", cap, "-o", root_ + "/a"},
      {"export", cap, "-o", root_ + "/x.pftrace"},
      {"report", cap, "-o", root_ + "/r.html"},
      {"compare", cap, cap},
      {"cluster", cap}};
  for (const auto& args : commands) {
    SCOPED_TRACE(args[0]);
    std::string out, err;
    EXPECT_EQ(RunArgs(args, &out, &err), kExitOk) << err;
    EXPECT_NE(out.find("[data_loss] raw_events_unreadable="), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace rlprof::cli

namespace rlprof::cli {
namespace {

// Inputs that are not what their names claim (issue 35: every command hung on a FIFO, and a
// link to /dev/zero or a sparse multi-GiB file under a capture's names was read whole until
// std::bad_alloc aborted): each is refused with a reason, at once, and every command ends.
class NotAFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() / ("rlprof_notafile_" + std::to_string(::getpid()))).string();
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string Dir(const std::string& name) {
    const std::string d = root_ + "/" + name;
    fs::create_directories(d);
    return d;
  }
  void Fifo(const std::string& path) { ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0) << path; }
  // Every command on `input`: none blocks or crashes; each exits with a result or a reason.
  void EveryCommandEnds(const std::string& input) {
    SCOPED_TRACE(input);
    std::string out, err;
    for (const auto& args : std::vector<std::vector<std::string>>{
             {"summary", input}, {"summary", input, "--view", "rl"}, {"analyse", input, "-o", root_ + "/an"},
             {"export", input, "-o", root_ + "/x.json"}, {"report", input, "-o", root_ + "/r.html"}}) {
      out.clear();
      err.clear();
      const int rc = RunArgs(args, &out, &err);
      EXPECT_TRUE(rc == kExitOk || rc == kExitBadInput) << args[0] << " rc " << rc << ": " << err;
    }
  }
  std::string root_;
};

TEST_F(NotAFileTest, FifosUnderEveryInputNameAreRefusedNotBlockedOn) {
  Fifo(root_ + "/trace.json");
  Fifo(root_ + "/trace.json.gz");
  Fifo(root_ + "/ascend_pytorch_profiler_0.db");
  for (const char* f : {"trace.json", "trace.json.gz", "ascend_pytorch_profiler_0.db"}) {
    std::string out, err;
    EXPECT_EQ(RunArgs({"summary", root_ + "/" + f}, &out, &err), kExitBadInput) << f << err;
    EXPECT_NE(err.find("named pipe (FIFO)"), std::string::npos) << err;
  }
  const std::string cap = Dir("cap_manifest");
  Fifo(cap + "/manifest.json");
  EveryCommandEnds(cap);
  const std::string cap2 = Dir("cap_events");
  std::ofstream(cap2 + "/manifest.json") << R"({"format":"rlprof-capture","format_version":1})";
  Fifo(cap2 + "/events.rlp");
  EveryCommandEnds(cap2);
  const std::string asc = Dir("rank0_ascend_pt/ASCEND_PROFILER_OUTPUT");
  Fifo(asc + "/kernel_details.csv");
  Fifo(asc + "/communication.json");
  EveryCommandEnds(root_ + "/rank0_ascend_pt");
  EveryCommandEnds(root_);  // a folder of them all
}

TEST_F(NotAFileTest, DevZeroAndSparseGiantFilesAreNotReadWhole) {
  const std::string dev = Dir("dev");
  fs::create_symlink("/dev/zero", dev + "/manifest.json");
  fs::create_symlink("/dev/zero", dev + "/events.rlp");
  EveryCommandEnds(dev);
  const std::string sparse = Dir("sparse");
  for (const char* f : {"manifest.json", "events.rlp"}) {  // 3 GiB each, no block allocated
    std::ofstream(sparse + "/" + f).close();
    fs::resize_file(sparse + "/" + f, uint64_t{3} << 30);
  }
  EveryCommandEnds(sparse);
  std::string out, err;
  EXPECT_EQ(RunArgs({"summary", sparse}, &out, &err), kExitBadInput);
  EXPECT_NE(err.find("bad magic"), std::string::npos) << err;  // the header, not 3 GiB, was read
  auto m = base::ReadFile(sparse + "/manifest.json", base::kMaxManifestBytes);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("more than the"), std::string::npos) << m.status().message();
  auto z = base::ReadFile(dev + "/manifest.json");
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("a character device"), std::string::npos) << z.status().message();
}

TEST_F(NotAFileTest, ASymlinkLoopAndADeepManifestAreReportedNotFatal) {
  const std::string loop = Dir("loop");
  fs::create_symlink("manifest.json", loop + "/manifest.json");  // a link to itself
  fs::create_symlink("b", loop + "/a");
  fs::create_symlink("a", loop + "/b");
  EveryCommandEnds(loop);
  // A manifest whose config nests 100,000 levels: the manifest is refused ("nested deeper
  // than 256 levels"), the events still read.
  const std::string deep = Dir("deep");
  std::string text = R"({"format":"rlprof-capture","format_version":1,"config":)";
  text += std::string(100000, '[') + std::string(100000, ']') + "}";
  std::ofstream(deep + "/manifest.json") << text;
  EveryCommandEnds(deep);
  std::string out, err;
  RunArgs({"summary", deep, "--json"}, &out, &err);
  EXPECT_NE((out + err).find("nested deeper than 256"), std::string::npos) << out.substr(0, 2000) << err;
}

}  // namespace
}  // namespace rlprof::cli
