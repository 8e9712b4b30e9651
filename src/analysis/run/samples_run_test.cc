#include "src/analysis/run/samples_run.h"

#include <gtest/gtest.h>

#include <string>
#include <variant>

namespace rlprof::analysis {
namespace {

constexpr int64_t kMs = 1'000'000;

InputResult Process(const std::string& name, int64_t rank, const std::string& role) {
  InputResult r;
  r.input = r.name = name;
  r.analysis.rank = rank;
  r.analysis.role = role;
  return r;
}

// An engine's record of one request: submit, first / last token, tokens.
SampleRecord Request(const std::string& id, int64_t submit_ms, int64_t first_ms, int64_t last_ms, int64_t prompt,
                     int64_t completion, const std::string& finish) {
  SampleRecord s;
  s.id = id;
  s.submit = submit_ms * kMs;
  s.scheduled = submit_ms * kMs;
  s.first_token = first_ms * kMs;
  s.last_token = s.end = last_ms * kMs;
  s.prompt_tokens = prompt;
  s.completion_tokens = completion;
  s.cached_tokens = 0;
  s.preemptions = 0;
  s.finish_reason = finish;
  s.step = 3;
  return s;
}

size_t Col(const Table& t, const std::string& name) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].name == name) return i;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

template <typename T>
T At(const Table& t, size_t row, const std::string& col) {
  const Cell& c = t.rows.at(row).at(Col(t, col));
  EXPECT_TRUE(std::holds_alternative<T>(c)) << col;
  return std::holds_alternative<T>(c) ? std::get<T>(c) : T{};
}

// A multi-turn trajectory of verl's agent loop: the engine's process records its two requests
// (the same id), the controller records the loop's side (tool call between the turns, reward,
// versions, group) and the trainer's use. One sample, at home in the engine's process.
TEST(SamplesRunTest, RecordsOfOneIdFromEveryProcessAreOneSample) {
  std::vector<InputResult> in;
  in.push_back(Process("controller", 0, "controller"));
  in.push_back(Process("engine", 1, "rollout"));
  SampleRecord loop;
  loop.id = "t1";
  loop.submit = 5 * kMs;
  loop.end = 140 * kMs;
  loop.group = "uid-7";
  loop.version_first = 3;
  loop.version_last = 3;
  loop.step = 3;
  loop.spans.push_back({"tool", "search", 60 * kMs, 80 * kMs});
  loop.spans.push_back({"reward", "", 120 * kMs, 140 * kMs});
  in[0].analysis.samples.push_back(loop);
  in[0].analysis.sample_uses.push_back({"t1", "consumed", 200 * kMs, 3, 3});
  in[1].analysis.samples.push_back(Request("t1", 10, 20, 60, 32, 40, "stop"));    // turn 1
  in[1].analysis.samples.push_back(Request("t2", 10, 25, 50, 30, 25, "length"));  // another trajectory
  in[1].analysis.samples.push_back(Request("t1", 80, 85, 115, 90, 30, "length"));  // turn 2, after the tool

  const std::vector<JoinedSample> joined = JoinSamples(in);
  ASSERT_EQ(joined.size(), 2u);
  EXPECT_EQ(joined[0].s.id, "t1");
  EXPECT_EQ(joined[0].records, 3);
  EXPECT_EQ(joined[0].input, &in[1]);  // the engine's process, not the controller's
  EXPECT_EQ(joined[1].records, 1);

  const Table t = SamplesTable(in);
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(At<std::string>(t, 0, "id"), "t1");  // submit order: t1 at 5 ms, t2 at 10 ms
  EXPECT_EQ(At<int64_t>(t, 0, "rank"), 1);
  EXPECT_EQ(At<std::string>(t, 0, "role"), "rollout");
  EXPECT_EQ(At<std::string>(t, 0, "group"), "uid-7");
  EXPECT_EQ(At<int64_t>(t, 0, "prompt_tokens"), 32);        // the first turn's prompt
  EXPECT_EQ(At<int64_t>(t, 0, "completion_tokens"), 70);    // both turns' outputs
  EXPECT_EQ(At<std::string>(t, 0, "finish_reason"), "length");  // the last turn's
  EXPECT_DOUBLE_EQ(At<double>(t, 0, "ttft"), 15'000.0);     // loop submit (5 ms) → first token (20 ms)
  EXPECT_DOUBLE_EQ(At<double>(t, 0, "e2e"), 135'000.0);     // 5 ms → the reward's end, 140 ms
  EXPECT_DOUBLE_EQ(At<double>(t, 0, "tool"), 20'000.0);
  EXPECT_EQ(At<int64_t>(t, 0, "tool_calls"), 1);
  EXPECT_DOUBLE_EQ(At<double>(t, 0, "reward"), 20'000.0);
  EXPECT_EQ(At<std::string>(t, 0, "outcome"), "consumed");
  EXPECT_EQ(At<int64_t>(t, 0, "staleness"), 0);
  EXPECT_EQ(At<std::string>(t, 1, "id"), "t2");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[1][Col(t, "outcome")]));

  const Table o = SampleOutcomesTable(in);
  ASSERT_GE(o.rows.size(), 2u);
  EXPECT_EQ(At<std::string>(o, 0, "value"), "consumed");
  EXPECT_EQ(At<int64_t>(o, 0, "samples"), 1);
  EXPECT_EQ(At<std::string>(o, 1, "value"), "unused");
  EXPECT_EQ(At<int64_t>(o, 1, "samples"), 1);

  const Table tail = SampleTailTable(in);
  ASSERT_EQ(tail.rows.size(), 1u);  // one replica (the engine's rank): one row
  EXPECT_EQ(At<int64_t>(tail, 0, "samples"), 2);
  EXPECT_EQ(At<int64_t>(tail, 0, "tokens"), 95);
}

// Ids seen once (every source but verl's agent loop) are left as they are.
TEST(SamplesRunTest, DistinctIdsAreNotJoined) {
  std::vector<InputResult> in;
  in.push_back(Process("engine", 0, "rollout"));
  for (int i = 0; i < 5; ++i)
    in[0].analysis.samples.push_back(Request("r" + std::to_string(i), i, i + 1, i + 9, 8, 16, "stop"));
  const std::vector<JoinedSample> joined = JoinSamples(in);
  ASSERT_EQ(joined.size(), 5u);
  for (const JoinedSample& j : joined) {
    EXPECT_EQ(j.records, 1);
    EXPECT_EQ(j.s.completion_tokens, 16);
  }
}

}  // namespace
}  // namespace rlprof::analysis
