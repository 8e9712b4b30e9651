#include "src/runtime/trigger.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>

#include "src/runtime/capture_controller_test_util.h"
#include "src/base/files.h"

namespace rlprof::runtime {
namespace {

namespace fs = std::filesystem;
using testing::Harness;

double Now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

class TriggerDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("rlprof_trigger_" + std::to_string(::getpid()))).string();
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  TriggerRequest Request(int64_t steps = 2) {
    TriggerRequest r;
    r.steps = steps;
    r.created_s = Now();
    r.expires_s = r.created_s + 600;
    return r;
  }
  std::string dir_;
};

Identity Me(int64_t rank = 1) {
  Identity id;
  id.rank = rank;
  id.host = "node7";
  id.pid = 4242;
  id.roles = {"actor", "rollout"};
  return id;
}

TEST(TriggerRequestTest, JsonRoundTripsAndBadRequestsAreInvalidArguments) {
  TriggerRequest r;
  r.id = "t1";
  r.run = "run-1";
  r.ranks = {0, 3};
  r.decode_steps = 16;
  r.created_s = 100.5;
  r.expires_s = 700.5;
  auto back = ParseTriggerRequest(TriggerRequestJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->run, "run-1");
  EXPECT_EQ(back->ranks, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(back->decode_steps, 16);
  EXPECT_EQ(back->steps, 0);
  EXPECT_EQ(back->expires_s, 700.5);
  for (const char* bad : {"", "[]", "{", "{\"rlprof_trigger\": 1}",
                          R"({"rlprof_trigger": 2, "id": "a", "steps": 1, "created": 0, "expires": 1})",
                          R"({"rlprof_trigger": 1, "id": "a", "created": 0, "expires": 1})",
                          R"({"rlprof_trigger": 1, "id": "a", "steps": 1, "decode_steps": 1, "created": 0, "expires": 1})",
                          R"({"rlprof_trigger": 1, "id": "a", "steps": -1, "created": 0, "expires": 1})",
                          R"({"rlprof_trigger": 1, "id": "../x", "steps": 1, "created": 0, "expires": 1})",
                          R"({"rlprof_trigger": 1, "id": "a", "steps": "2", "created": 0, "expires": 1})",
                          R"({"rlprof_trigger": 1, "id": "a", "steps": 1, "ranks": "0", "created": 0, "expires": 1})"})
    EXPECT_EQ(ParseTriggerRequest(bad).status().code(), base::StatusCode::kInvalidArgument) << bad;
}

TEST(TriggerRequestTest, SelectsByRunHostPidRankAndRole) {
  TriggerRequest r;
  EXPECT_TRUE(TriggerSelects(r, Me(), "run-1"));  // no selector: everyone
  r.run = "run-2";
  EXPECT_FALSE(TriggerSelects(r, Me(), "run-1"));
  r.run = "run-1";
  r.ranks = {0, 2};
  EXPECT_FALSE(TriggerSelects(r, Me(1), "run-1"));
  EXPECT_TRUE(TriggerSelects(r, Me(2), "run-1"));
  r.host = "node8";
  EXPECT_FALSE(TriggerSelects(r, Me(2), "run-1"));
  r.host = "node7";
  r.pid = 4243;
  EXPECT_FALSE(TriggerSelects(r, Me(2), "run-1"));
  r.pid = 4242;
  r.role = "critic";
  EXPECT_FALSE(TriggerSelects(r, Me(2), "run-1"));
  r.role = "rollout";
  EXPECT_TRUE(TriggerSelects(r, Me(2), "run-1"));
}

TEST_F(TriggerDirTest, ARequestIsActedOnOnceAndAcknowledged) {
  TriggerInbox inbox(dir_, Now() - 1, /*poll_interval_s=*/0);
  EXPECT_TRUE(inbox.Poll(Me(), "run-1", Now()).empty());  // no directory yet: nobody asked
  TriggerRequest r = Request(3);
  r.ranks = {1};
  auto path = WriteTriggerRequest(&r, dir_);
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(fs::status(dir_).permissions() & fs::perms::all, fs::perms::owner_all);
  TriggerRequest other = Request();
  other.ranks = {5};
  ASSERT_TRUE(WriteTriggerRequest(&other, dir_).ok());
  auto got = inbox.Poll(Me(1), "run-1", Now());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, r.id);
  EXPECT_EQ(got[0].steps, 3);
  EXPECT_TRUE(fs::exists(dir_ + "/" + r.id + ".1-4242.ack"));
  EXPECT_TRUE(inbox.Poll(Me(1), "run-1", Now() + 1).empty());  // once
  EXPECT_EQ(inbox.accepted(), 1u);
  // A second request right after (the directory's coarse mtime may not have moved) is seen.
  TriggerRequest next = Request(1);
  ASSERT_TRUE(WriteTriggerRequest(&next, dir_).ok());
  got = inbox.Poll(Me(1), "run-1", Now() + 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, next.id);
  EXPECT_EQ(inbox.malformed(), 0u);
}

TEST_F(TriggerDirTest, MalformedOldExpiredAndForeignRequestsAreIgnoredAndCounted) {
  const double start = Now();
  TriggerInbox inbox(dir_, start, 0);
  TriggerRequest old = Request();
  old.created_s = start - 100;  // before this session: for another process
  ASSERT_TRUE(WriteTriggerRequest(&old, dir_).ok());
  TriggerRequest expired = Request();
  expired.expires_s = start - 1;
  ASSERT_TRUE(WriteTriggerRequest(&expired, dir_).ok());
  std::ofstream(dir_ + "/garbage.trigger") << "{not json";
  std::ofstream(dir_ + "/big.trigger") << std::string(kMaxTriggerRequestBytes + 1, ' ');
  TriggerRequest renamed = Request();
  renamed.id = "inner";
  std::ofstream(dir_ + "/outer.trigger") << TriggerRequestJson(renamed);  // id must match its file
  TriggerRequest target = Request();
  target.id = "target";
  ASSERT_TRUE(WriteTriggerRequest(&target, dir_).ok());
  fs::create_symlink(dir_ + "/target.trigger", dir_ + "/link.trigger");
  std::ofstream(dir_ + "/notes.txt") << "not a request";
  auto got = inbox.Poll(Me(), "run-1", start + 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "target");
  EXPECT_EQ(inbox.malformed(), 2u);  // garbage, outer
  EXPECT_EQ(inbox.refused(), 2u);    // too big, a symlink
}

TEST_F(TriggerDirTest, ADirectoryOthersCanWriteIsRefusedAsAWhole) {
  TriggerRequest r = Request();
  ASSERT_TRUE(WriteTriggerRequest(&r, dir_).ok());
  ::chmod(dir_.c_str(), 0777);
  EXPECT_FALSE(CheckTriggerDir(dir_).ok());
  TriggerInbox inbox(dir_, r.created_s - 1, 0);
  EXPECT_TRUE(inbox.Poll(Me(), "", Now()).empty());
  EXPECT_TRUE(inbox.Poll(Me(), "", Now() + 1).empty());
  EXPECT_EQ(inbox.refused(), 1u);  // once, not per poll
  TriggerRequest again = Request();
  EXPECT_FALSE(WriteTriggerRequest(&again, dir_).ok());  // the command refuses it too
  ::chmod(dir_.c_str(), 0700);
  EXPECT_EQ(inbox.Poll(Me(), "", Now() + 2).size(), 1u);
}

// Issue 35: another user who made /tmp/rlprof-<uid> first made this user's trigger fail
// until RLPROF_TRIGGER_DIR was set; now both sides move to $HOME/.cache/rlprof/trigger.
TEST_F(TriggerDirTest, AFolderAnotherUserMadeFirstIsPassedOverForOneInHome) {
  const std::string base = dir_ + "/tmpbase", home = dir_ + "/home";
  ASSERT_TRUE(base::MakeDirs(base).ok());
  const unsigned me = ::geteuid();
  const std::string tmp = base + "/rlprof-" + std::to_string(me);
  EXPECT_EQ(ChooseTriggerDir("", nullptr, base, home.c_str(), me), tmp);  // free: taken at first use
  EXPECT_EQ(ChooseTriggerDir("/x", "/run/u", base, home.c_str(), me), "/x");
  EXPECT_EQ(ChooseTriggerDir(nullptr, "/run/u", base, home.c_str(), me), "/run/u/rlprof");
  ::mkdir(tmp.c_str(), 0700);
  EXPECT_EQ(ChooseTriggerDir(nullptr, nullptr, base, home.c_str(), me), tmp);  // ours
  ::chmod(tmp.c_str(), 0777);  // open to others (as if a stranger made it for us)
  const std::string fallback = ChooseTriggerDir(nullptr, nullptr, base, home.c_str(), me);
  EXPECT_EQ(fallback, home + "/.cache/rlprof/trigger");
  ::rmdir(tmp.c_str());
  ::symlink("/", tmp.c_str());  // a link planted there
  EXPECT_EQ(ChooseTriggerDir(nullptr, nullptr, base, home.c_str(), me), fallback);
  // The fallback works end to end: the request is written there and the inbox takes it.
  TriggerRequest r = Request();
  ASSERT_TRUE(WriteTriggerRequest(&r, fallback).ok());
  EXPECT_TRUE(CheckTriggerDir(fallback).ok());
  TriggerInbox inbox(fallback, r.created_s - 1, 0);
  EXPECT_EQ(inbox.Poll(Me(), "", Now()).size(), 1u);
  ::unlink(tmp.c_str());
}

TEST(TriggerControllerTest, ATriggerOpensWindowsAtStepsTheConfigDidNotSelect) {
  Harness h(testing::MakePlan(testing::StepList({10})), testing::EndToEnd());
  h.Step(1);
  EXPECT_TRUE(h.ctl().Trigger(2, 0));
  EXPECT_FALSE(h.ctl().Trigger(1, 0));  // one at a time
  h.Step(2).Step(3).Step(4).Step(10);
  EXPECT_EQ(h.Summaries(), (std::vector<std::string>{"e2e [2] step_end", "e2e [3] step_end", "e2e [10] step_end"}));
  EXPECT_TRUE(h.ctl().Trigger(1, 0));  // free again
  h.Step(11);
  EXPECT_EQ(h.captures().back().Summary(), "e2e [11] step_end");
  EXPECT_FALSE(h.ctl().Trigger(0, 0));
  EXPECT_FALSE(h.ctl().Trigger(1, 1));
}

TEST(TriggerControllerTest, ContinuousAndDiscreteModesKeepTheirShape) {
  Harness c(testing::MakePlan(testing::StepList({}), /*continuous=*/true), testing::EndToEnd());
  c.Step(1);
  ASSERT_TRUE(c.ctl().Trigger(3, 0));
  c.Step(2).Step(3).Step(4).Step(5);
  EXPECT_EQ(c.Summaries(), (std::vector<std::string>{"steps2-4 [2,3,4] step_end"}));
  Harness d(testing::MakePlan(testing::StepList({})), testing::Discrete());
  ASSERT_TRUE(d.ctl().Trigger(1, 0));
  d.StepBegin(7).Stage("actor_update").Stage("ref_compute_log_prob").StepEnd();
  d.StepBegin(8).Stage("actor_update").StepEnd();
  EXPECT_EQ(d.Summaries(), (std::vector<std::string>{"actor_update [7] stage_end", "ref_compute_log_prob [7] stage_end"}));
}

TEST(TriggerControllerTest, ADecodeTriggerCapturesNDecodeStepsOfTheNextStep) {
  Harness e(testing::MakePlan(testing::StepList({})), testing::EndToEnd());
  ASSERT_TRUE(e.ctl().Trigger(0, 4));
  e.StepBegin(3).Decodes(10).StepEnd();
  e.Step(4);
  ASSERT_EQ(e.captures().size(), 1u);
  EXPECT_EQ(e.captures()[0].steps, (std::vector<int64_t>{3}));
  EXPECT_EQ(e.captures()[0].sampled, "decode [0, 4)");
  Harness d(testing::MakePlan(testing::StepList({})), testing::Discrete());
  ASSERT_TRUE(d.ctl().Trigger(0, 2));
  d.StepBegin(5).Stage("actor_update").StageBegin("rollout_generate", "rollout").Decodes(5).StageEnd().StepEnd();
  ASSERT_EQ(d.captures().size(), 1u);
  EXPECT_EQ(d.captures()[0].scope, "rollout_generate");
  EXPECT_EQ(d.captures()[0].sampled, "decode [0, 2)");
}

TEST(TriggerControllerTest, OnlyWindowsOpenedByATriggerSaySo) {
  CaptureController ctl(testing::MakePlan(testing::StepList({1})), testing::EndToEnd());
  auto opened = [](const std::vector<WindowAction>& as) {
    for (const auto& a : as)
      if (a.type == WindowAction::Type::kOpen) return std::optional<bool>(a.triggered);
    return std::optional<bool>();
  };
  EXPECT_EQ(opened(ctl.OnStepBegin(1, 10)), std::optional<bool>(false));
  ASSERT_TRUE(ctl.Trigger(1, 0));
  EXPECT_EQ(opened(ctl.OnStepBegin(2, 20)), std::optional<bool>(true));
  EXPECT_EQ(opened(ctl.OnStepBegin(3, 30)), std::nullopt);
}

TEST(TriggerControllerTest, AnInertControllerIgnoresTriggers) {
  config::ProcessPlan off = testing::EndToEnd();
  off.enabled = false;
  Harness h(testing::MakePlan(testing::AllSteps()), off);
  EXPECT_FALSE(h.ctl().Trigger(1, 0));
  Harness s(testing::MakePlan(testing::StepList({})), testing::EndToEnd());
  s.Stop();
  EXPECT_FALSE(s.ctl().Trigger(1, 0));
}

}  // namespace
}  // namespace rlprof::runtime
