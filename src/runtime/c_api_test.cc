#include "rlprof/rlprof.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>

#include "src/format/raw.h"
#include "src/runtime/runtime_test_util.h"

extern "C" int RlprofCRecordStep(int64_t step);

namespace rlprof::runtime {
namespace {

using testing_util::FindCaptures;
using testing_util::FreshDir;
using testing_util::ReadManifest;

TEST(CApiTest, CallsBeforeInitReturnStateErrors) {
  EXPECT_EQ(rlprof_step_begin(1), RLPROF_ERROR_STATE);
  EXPECT_STRNE(rlprof_last_error(), "");
  EXPECT_EQ(rlprof_shutdown(), RLPROF_ERROR_STATE);
  EXPECT_EQ(rlprof_enabled(), 0);
  EXPECT_EQ(rlprof_range_start("x"), 0u);
  rlprof_range_end(0);
  rlprof_mark("x");
  EXPECT_EQ(rlprof_init_from_config(nullptr, nullptr, 0, nullptr), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rlprof_sub_step(42), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rlprof_stage_begin_ex("actor", "x", 42), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(rlprof_stage_begin(nullptr, "x"), RLPROF_ERROR_INVALID_ARGUMENT);
}

TEST(CApiTest, BadConfigReturnsConfigErrorWithMessage) {
  const std::string dir = FreshDir("capi-bad");
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/bad.yaml", "rlprof: [1, 2\n").ok());
  EXPECT_EQ(rlprof_init_from_config((dir + "/bad.yaml").c_str(), nullptr, 0, nullptr),
            RLPROF_ERROR_CONFIG);
  EXPECT_NE(std::string(rlprof_last_error()).find("bad.yaml"), std::string::npos)
      << rlprof_last_error();
  EXPECT_EQ(rlprof_enabled(), 0);
}

TEST(CApiTest, ConfigWithOverridesCapturesTheSelectedStepsOnly) {
  const std::string dir = FreshDir("capi");
  const std::string yaml = "rlprof:\n  steps: [3]\n  save_path: " + dir +
                           "/out\n  roles:\n    actor:\n      all_ranks: true\n";
  ASSERT_TRUE(base::WriteFileAtomic(dir + "/p.yaml", yaml).ok());
  const char* overrides[] = {"rlprof.steps=[2]"};
  rlprof_options o;
  rlprof_options_init(&o);
  o.roles = "actor, ref";
  o.run_id = "capi";
  o.quiet = 1;
  o.install_signal_handlers = 0;
  ASSERT_EQ(rlprof_init_from_config((dir + "/p.yaml").c_str(), overrides, 1, &o), RLPROF_OK)
      << rlprof_last_error();
  EXPECT_EQ(rlprof_init_from_config((dir + "/p.yaml").c_str(), nullptr, 0, &o), RLPROF_ERROR_STATE);
  EXPECT_EQ(rlprof_enabled(), 1);
  char run_dir[4096];
  ASSERT_EQ(rlprof_run_dir(run_dir, sizeof run_dir), RLPROF_OK);
  EXPECT_EQ(std::string(run_dir), dir + "/out/capi");
  for (int64_t step = 1; step <= 3; ++step) EXPECT_EQ(RlprofCRecordStep(step), RLPROF_OK);
  EXPECT_EQ(rlprof_flush(30), RLPROF_OK);
  EXPECT_EQ(rlprof_shutdown(), RLPROF_OK);
  const auto caps = FindCaptures(dir + "/out");
  ASSERT_EQ(caps.size(), 1u);
  EXPECT_NE(caps[0].find("/capi/step2/e2e/"), std::string::npos) << caps[0];
  nlohmann::json m = ReadManifest(caps[0]);
  EXPECT_EQ(m["identity"]["roles"], nlohmann::json::array({"actor", "ref"}));
  auto cap = format::ReadRaw(caps[0] + "/events.rlp");
  ASSERT_TRUE(cap.ok());
  std::multiset<std::string> names;
  for (const auto& e : cap->events) names.insert(cap->str(e.name));
  // step, stage, range begin + end (the end has no name), mark, counter, sub-step.
  EXPECT_EQ(names, (std::multiset<std::string>{"step 2", "actor_update", "c range", "", "c mark",
                                               "c counter", "mini_batch"}));
}

std::string ActorText(const std::string& save, const std::string& steps) {
  return "rlprof:\n  steps: " + steps + "\n  save_path: " + save + "\n  roles:\n    actor: {all_ranks: true}\n";
}

rlprof_options ActorOptions(const char* run_id) {
  rlprof_options o;
  rlprof_options_init(&o);
  o.roles = "actor";
  o.run_id = run_id;
  o.quiet = 1;
  o.install_signal_handlers = 0;
  return o;
}

TEST(CApiTest, SessionHandlesSayWhoTheyAreAndListTheirCaptures) {
  const std::string dir = FreshDir("capi-handles");
  const std::string text = ActorText(dir + "/out", "[2]");
  rlprof_options o = ActorOptions("handles");
  o.rank = 3;
  o.world_size = 4;
  o.replica = 1;
  rlprof_session* s = nullptr;
  ASSERT_EQ(rlprof_session_open_text(text.c_str(), "<test>", nullptr, 0, &o, &s), RLPROF_OK) << rlprof_last_error();
  EXPECT_EQ(rlprof_session_count(), 1);
  rlprof_session_info info{};
  info.struct_size = sizeof info;
  ASSERT_EQ(rlprof_session_get_info(s, &info), RLPROF_OK);
  EXPECT_EQ(info.rank, 3);
  EXPECT_EQ(info.world_size, 4);
  EXPECT_EQ(info.replica, 1);
  EXPECT_STREQ(info.roles, "actor");
  EXPECT_STREQ(info.rank_source, "explicit");
  EXPECT_STREQ(info.run_id, "handles");
  EXPECT_EQ(std::string(info.run_dir), dir + "/out/handles");
  EXPECT_EQ(info.selected, 1);
  EXPECT_STREQ(info.mode, "e2e");
  EXPECT_EQ(info.contents & RLPROF_CONTENTS_CPU, static_cast<uint32_t>(RLPROF_CONTENTS_CPU));
  // A caller with an older, smaller struct gets only its fields.
  rlprof_session_info old{};
  old.struct_size = offsetof(rlprof_session_info, selected);
  ASSERT_EQ(rlprof_session_get_info(s, &old), RLPROF_OK);
  EXPECT_EQ(old.rank, 3);
  EXPECT_EQ(old.mode, nullptr);
  // A manual window, then the config's step 2.
  ASSERT_EQ(rlprof_session_capture_start(s, "probe"), RLPROF_OK);
  EXPECT_EQ(rlprof_session_capture_start(s, "again"), RLPROF_ERROR_STATE);  // one window at a time
  rlprof_mark("in the window");
  ASSERT_EQ(rlprof_session_capture_stop(s), RLPROF_OK);
  for (int64_t step = 1; step <= 2; ++step) {
    ASSERT_EQ(rlprof_session_step_begin(s, step), RLPROF_OK);
    ASSERT_EQ(rlprof_session_stage_begin(s, "actor", "actor_update"), RLPROF_OK);
    ASSERT_EQ(rlprof_session_sub_step(s, RLPROF_SUB_STEP_MICRO_BATCH), RLPROF_OK);
    ASSERT_EQ(rlprof_session_stage_end(s), RLPROF_OK);
    ASSERT_EQ(rlprof_session_step_end(s), RLPROF_OK);
  }
  EXPECT_EQ(rlprof_session_sub_step(s, 99), RLPROF_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(rlprof_session_flush(s, 30), RLPROF_OK);
  ASSERT_EQ(rlprof_session_capture_count(s), 2u);
  char buf[4096];
  std::set<std::string> scopes;
  for (size_t i = 0; i < 2; ++i) {
    ASSERT_EQ(rlprof_session_capture_dir(s, i, buf, sizeof buf), RLPROF_OK);
    scopes.insert(ReadManifest(buf)["scope"].get<std::string>());
  }
  EXPECT_EQ(scopes, (std::set<std::string>{"probe", "e2e"}));
  EXPECT_EQ(rlprof_session_capture_dir(s, 2, buf, sizeof buf), RLPROF_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(rlprof_session_shutdown(s), RLPROF_OK);
  EXPECT_EQ(rlprof_session_enabled(s), 0);  // shut down: records nothing any more
  EXPECT_EQ(rlprof_session_count(), 0);
  rlprof_session_close(s);
  rlprof_session_close(nullptr);
  EXPECT_EQ(rlprof_session_step_begin(nullptr, 1), RLPROF_ERROR_STATE);
}

TEST(CApiTest, ASecondSessionRecordsNothingUnlessTheFirstYields) {
  const std::string dir = FreshDir("capi-yield");
  rlprof_options first = ActorOptions("first"), second = ActorOptions("second");
  rlprof_session *a = nullptr, *b = nullptr;
  const std::string text = ActorText(dir + "/out", "[1]");
  ASSERT_EQ(rlprof_session_open_text(text.c_str(), nullptr, nullptr, 0, &first, &a), RLPROF_OK);
  testing::internal::CaptureStderr();
  ASSERT_EQ(rlprof_session_open_text(text.c_str(), nullptr, nullptr, 0, &second, &b), RLPROF_OK);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(rlprof_session_enabled(a), 1);
  EXPECT_EQ(rlprof_session_enabled(b), 0) << "one session records at a time";
  EXPECT_NE(err.find("another rlprof session"), std::string::npos) << err;
  rlprof_session_close(b);
  rlprof_session_close(a);
  // A session opened with yield_to_next steps aside for the next one (the NVTX library's own).
  first.yield_to_next = 1;
  ASSERT_EQ(rlprof_session_open_text(text.c_str(), nullptr, nullptr, 0, &first, &a), RLPROF_OK);
  ASSERT_EQ(rlprof_session_open_text(text.c_str(), nullptr, nullptr, 0, &second, &b), RLPROF_OK);
  EXPECT_EQ(rlprof_session_enabled(a), 0);
  EXPECT_EQ(rlprof_session_enabled(b), 1);
  EXPECT_EQ(rlprof_session_count(), 1);
  rlprof_session_close(a);
  rlprof_session_close(b);
}

TEST(CApiTest, TheStageVocabularyAndTheVersionAreThere) {
  char buf[256];
  ASSERT_EQ(rlprof_canonical_stage("update_actor", buf, sizeof buf), RLPROF_OK);
  EXPECT_STREQ(buf, "actor_update");
  ASSERT_EQ(rlprof_stage_role("update_actor", buf, sizeof buf), RLPROF_OK);
  EXPECT_STREQ(buf, "actor");
  ASSERT_EQ(rlprof_stage_role("my_stage", buf, sizeof buf), RLPROF_OK);
  EXPECT_STREQ(buf, "");
  EXPECT_EQ(rlprof_canonical_stage(nullptr, buf, sizeof buf), RLPROF_ERROR_INVALID_ARGUMENT);
  EXPECT_STRNE(rlprof_version(), "");
  EXPECT_EQ(rlprof_window(), rlprof_window_inline());
}

}  // namespace
}  // namespace rlprof::runtime
