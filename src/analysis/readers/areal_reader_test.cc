// The AReaL session-trace reader over test/data/areal/sessions-r0.jsonl (synthetic values in
// the layout AReaL's SessionTracer writes, see test/data/areal/README.md): every field of every
// session, damaged and cut files, and what is (not) taken for a session trace.
#include "src/analysis/readers/areal_reader.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "src/analysis/readers/readers.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

const std::string kFixture = std::string(RLPROF_SOURCE_DIR) + "/test/data/areal/sessions-r0.jsonl";
constexpr int64_t kBase = 1763012345000000000;  // the fixture's first submit_ts, in ns
constexpr int64_t kMs = 1000000;

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("rlprof_areal_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void Write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

struct Span {
  std::string phase, label;
  int64_t start, end;
  bool operator==(const Span&) const = default;
};
std::vector<Span> Spans(const SampleRecord& s) {
  std::vector<Span> out;
  for (const SampleSpan& sp : s.spans) out.push_back({sp.phase, sp.label, sp.start, sp.end});
  return out;
}

TEST(ArealReader, ReadsEverySessionOfTheFixture) {
  auto r = ReadTrace(kFixture);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Trace& t = *r;
  EXPECT_EQ(t.format, "areal");
  EXPECT_EQ(t.source, kFixture);
  EXPECT_EQ(t.rank, 0);
  EXPECT_EQ(t.role, "rollout");
  EXPECT_EQ(t.wall_offset_ns, 0);  // time.time() seconds: already wall clock
  EXPECT_EQ(t.size(), 0u);
  EXPECT_TRUE(t.steps.empty());    // AReaL's records carry no training step
  EXPECT_TRUE(t.diagnostics.counts.empty()) << t.diagnostics.counts.begin()->first;
  ASSERT_EQ(t.samples.size(), 8u);

  const SampleRecord& s0 = t.samples[0];
  EXPECT_EQ(s0.id, "r0/s0");
  EXPECT_EQ(s0.group, "r0/t0");
  EXPECT_EQ(s0.finish_reason, "");
  EXPECT_EQ(s0.submit, kBase);
  EXPECT_EQ(s0.end, kBase + 2500 * kMs);
  EXPECT_EQ(s0.queued, -1);
  EXPECT_EQ(s0.scheduled, -1);
  EXPECT_EQ(s0.first_token, -1);
  EXPECT_EQ(s0.last_token, kBase + 2000 * kMs);  // the end of its last generate
  EXPECT_EQ(s0.prompt_tokens, -1);
  EXPECT_EQ(s0.completion_tokens, -1);
  EXPECT_EQ(s0.cached_tokens, -1);
  EXPECT_EQ(s0.preemptions, -1);
  EXPECT_EQ(s0.version_first, -1);
  EXPECT_EQ(s0.version_last, -1);
  EXPECT_EQ(s0.replica, 0);
  EXPECT_EQ(s0.step, -1);
  EXPECT_EQ(Spans(s0), (std::vector<Span>{{"generate", "", kBase + 10 * kMs, kBase + 2000 * kMs},
                                          {"reward", "", kBase + 2000 * kMs, kBase + 2250 * kMs}}));

  // The agent session: two generates around a tool call (AReaL's "toolcall" is rlprof's "tool").
  const SampleRecord& s4 = t.samples[4];
  EXPECT_EQ(s4.id, "r0/s4");
  EXPECT_EQ(s4.group, "r0/t2");
  EXPECT_EQ(s4.submit, kBase + 1000 * kMs);
  EXPECT_EQ(s4.end, kBase + 10000 * kMs);
  EXPECT_EQ(s4.last_token, kBase + 9500 * kMs);
  EXPECT_EQ(Spans(s4), (std::vector<Span>{{"generate", "", kBase + 1000 * kMs, kBase + 3000 * kMs},
                                          {"generate", "", kBase + 4500 * kMs, kBase + 9500 * kMs},
                                          {"reward", "", kBase + 9500 * kMs, kBase + 10000 * kMs},
                                          {"tool", "toolcall", kBase + 3000 * kMs, kBase + 4500 * kMs}}));

  // Still generating when the tracer was flushed at shutdown: no end, no outcome.
  const SampleRecord& s7 = t.samples[7];
  EXPECT_EQ(s7.id, "r0/s7");
  EXPECT_EQ(s7.submit, kBase + 9000 * kMs);
  EXPECT_EQ(s7.end, -1);
  EXPECT_EQ(s7.last_token, -1);
  EXPECT_EQ(Spans(s7), (std::vector<Span>{{"generate", "", kBase + 9000 * kMs, -1}}));

  std::vector<std::tuple<std::string, std::string, int64_t, int64_t, int64_t>> uses;
  for (const SampleUse& u : t.sample_uses) uses.emplace_back(u.id, u.outcome, u.at, u.step, u.version);
  const int64_t a = kBase + 2500 * kMs, b = kBase + 3000 * kMs, c = kBase + 10000 * kMs, d = kBase + 5000 * kMs;
  EXPECT_EQ(uses, (std::vector<std::tuple<std::string, std::string, int64_t, int64_t, int64_t>>{
                      {"r0/s0", "consumed", a, -1, -1},
                      {"r0/s1", "consumed", a, -1, -1},
                      {"r0/s2", "rejected", b, -1, -1},
                      {"r0/s3", "rejected", b, -1, -1},
                      {"r0/s4", "consumed", c, -1, -1},
                      {"r0/s5", "consumed", c, -1, -1},
                      {"r0/s6", "failed:workflow_exception", d, -1, -1}}));
}

TEST(ArealReader, TimesAreExactDecimalSeconds) {
  auto r = ReadArealBytes(
      R"({"task_id": 1, "session_id": 2, "rank": 3, "status": "dropped", "reason": "stale", )"
      R"("submit_ts": 1763012345.123456789, "finalized_ts": 1.7630123461e9})"
      "\n",
      "x.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->samples.size(), 1u);
  EXPECT_EQ(r->samples[0].id, "r3/s2");
  EXPECT_EQ(r->samples[0].replica, 3);
  EXPECT_EQ(r->samples[0].submit, 1763012345123456789);
  EXPECT_EQ(r->samples[0].end, 1763012346100000000);
  ASSERT_EQ(r->sample_uses.size(), 1u);
  EXPECT_EQ(r->sample_uses[0].outcome, "dropped:stale");
  EXPECT_EQ(r->rank, 3);
  EXPECT_TRUE(r->diagnostics.counts.empty());
  // Past the ninth decimal: rounded half away from zero; a negative or NaN-like time is a bad value.
  auto q = ReadArealBytes(R"({"session_id": 1, "status": "accepted", "submit_ts": 1.0000000015, "finalized_ts": -2.0})"
                          "\n"
                          R"({"session_id": 2, "status": "accepted", "submit_ts": 25E-1, "finalized_ts": 1e400})"
                          "\n",
                          "y.jsonl");
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->samples[0].submit, 1000000002);
  EXPECT_EQ(q->samples[0].end, -1);
  EXPECT_EQ(q->samples[1].submit, 2500000000);
  EXPECT_EQ(q->samples[1].id, "s2");
  EXPECT_EQ(q->samples[1].end, -1);  // 1e400 s: past 2^62 ns
  EXPECT_EQ(q->diagnostics.Get("areal_bad_value"), 2u);
}

TEST(ArealReader, PerfCounterSecondsAreNotWallClock) {
  // AReaL before commit 35f39bb02 stamped time.perf_counter() (its docs' example still shows it).
  auto r = ReadArealBytes(R"({"task_id": 23, "session_id": 93, "rank": 0, "status": "accepted", )"
                          R"("submit_ts": 7939251.674969524, "finalized_ts": 7939254.632833603})"
                          "\n",
                          "old.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->wall_offset_ns, INT64_MIN);
  EXPECT_EQ(r->samples[0].submit, 7939251674969524);
  EXPECT_EQ(r->samples[0].end, 7939254632833603);
}

TEST(ArealReader, CorruptLinesAreCountedAndSkipped) {
  std::vector<std::string> lines = Lines(Slurp(kFixture));
  ASSERT_EQ(lines.size(), 8u);
  lines.insert(lines.begin() + 2, R"({"task_id": 9, "session_id": 9, "rank": 0, "stat)");   // cut mid-line
  lines.insert(lines.begin() + 3, "\x01\x02 garbage");
  lines.insert(lines.begin() + 4, R"({"name": "rollout", "ph": "X", "ts": 1, "dur": 2})");  // not a session
  lines.insert(lines.begin() + 5, "");
  lines.insert(lines.begin() + 6,  // bad values: kept, those fields unknown
               R"({"task_id": "x", "session_id": 100, "rank": 0, "status": "accepted", "submit_ts": 1763012345.0, )"
               R"("finalized_ts": "soon", "phases": {"generate": [{"end_ts": 1763012346.0}, )"
               R"({"start_ts": 1763012346.0, "end_ts": 1763012345.5}], "reward": 3}})");
  lines.push_back(lines[0]);  // the tracer was reset: session 0 again
  auto r = ReadArealBytes(Join(lines), "damaged.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->diagnostics.Get("areal_bad_line"), 2u);
  EXPECT_EQ(r->diagnostics.Get("areal_not_session"), 1u);
  // task_id, finalized_ts, a span without start, a span ending before it starts, reward not a list.
  EXPECT_EQ(r->diagnostics.Get("areal_bad_value"), 5u);
  EXPECT_EQ(r->diagnostics.Get("areal_duplicate_session"), 1u);
  EXPECT_EQ(r->diagnostics.Get("truncated_input"), 0u);
  ASSERT_EQ(r->samples.size(), 10u);
  const SampleRecord& bad = r->samples[2];
  EXPECT_EQ(bad.id, "r0/s100");
  EXPECT_EQ(bad.group, "");
  EXPECT_EQ(bad.end, -1);
  EXPECT_EQ(Spans(bad), (std::vector<Span>{{"generate", "", kBase + 1000 * kMs, -1}}));
  EXPECT_EQ(r->samples.back().id, "r0/s0#2");
  EXPECT_EQ(r->samples[3].id, "r0/s2");
}

TEST(ArealReader, ATruncatedFileKeepsTheCompleteSessions) {
  const std::string text = Slurp(kFixture);
  const size_t last = text.rfind('\n', text.size() - 2);
  const std::string cut = text.substr(0, last + 40);  // into the last line
  auto r = ReadArealBytes(cut, "cut.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->samples.size(), 7u);
  EXPECT_EQ(r->diagnostics.Get("truncated_input"), 1u);
  EXPECT_EQ(r->diagnostics.Get("areal_bad_line"), 0u);

  // The file ReadTrace reads, cut the same way.
  fs::path dir = TempDir("cut");
  Write(dir / "sessions-r0.jsonl", cut);
  auto f = ReadTrace((dir / "sessions-r0.jsonl").string());
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->format, "areal");
  EXPECT_EQ(f->samples.size(), 7u);
  EXPECT_EQ(f->diagnostics.Get("truncated_input"), 1u);
  fs::remove_all(dir);
}

TEST(ArealReader, StepsFromRecordsThatCarryOne) {
  auto r = ReadArealBytes(
      R"({"task_id": 0, "session_id": 0, "rank": 0, "status": "accepted", "submit_ts": 1763012345.0, "finalized_ts": 1763012346.0, "global_step": 4})"
      "\n"
      R"({"task_id": 0, "session_id": 1, "rank": 0, "status": "accepted", "submit_ts": 1763012345.5, "finalized_ts": 1763012347.0, "global_step": 4})"
      "\n"
      R"({"task_id": 1, "session_id": 2, "rank": 0, "status": "accepted", "submit_ts": 1763012347.0, "finalized_ts": 1763012349.0, "global_step": 5})"
      "\n",
      "steps.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->steps.size(), 2u);
  EXPECT_EQ(r->steps[0].step, 4);
  EXPECT_EQ(r->steps[0].start_ns, kBase);
  EXPECT_EQ(r->steps[0].end_ns, kBase + 2000 * kMs);
  EXPECT_EQ(r->steps[1].step, 5);
  EXPECT_EQ(r->steps[1].start_ns, kBase + 2000 * kMs);
  EXPECT_EQ(r->steps[1].end_ns, kBase + 4000 * kMs);
  EXPECT_EQ(r->samples[2].step, 5);
  EXPECT_EQ(r->sample_uses[2].step, 5);
}

TEST(ArealReader, DetectsSessionTracesOnly) {
  const std::string fixture = Slurp(kFixture);
  EXPECT_TRUE(LooksLikeArealSessions(fixture));
  EXPECT_TRUE(IsArealSessionsFile(kFixture));
  EXPECT_TRUE(IsArealSessionsBytes(fixture));
  // A damaged first line does not hide the sessions after it.
  EXPECT_TRUE(LooksLikeArealSessions("{\"task_id\": 0, \"sess\n\n" + fixture));

  EXPECT_FALSE(LooksLikeArealSessions(""));
  EXPECT_FALSE(LooksLikeArealSessions("\n\n"));
  // Kineto, pretty-printed and on one line (even one naming session_id in its args).
  EXPECT_FALSE(LooksLikeArealSessions("{\n  \"schemaVersion\": 1,\n  \"traceEvents\": [\n"
                                      "  {\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": 2, \"pid\": 1, \"tid\": 1}\n]}\n"));
  EXPECT_FALSE(LooksLikeArealSessions(
      R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "args": {"session_id": 1, "submit_ts": 2.0, "status": "accepted"}}]})"
      "\n"));
  // Legacy torch / Ascend trace_view.json arrays.
  EXPECT_FALSE(LooksLikeArealSessions(R"([{"ph": "X", "name": "a", "ts": "1.5", "dur": 2, "pid": "CPU functions"}])"));
  // AReaL's perf tracer (traces-r0.jsonl): Chrome events, one a line.
  EXPECT_FALSE(LooksLikeArealSessions(
      R"({"name": "rollout_step", "ph": "X", "ts": 1763012345000000, "dur": 12, "pid": 0, "tid": 1, "cat": "compute", "args": {"global_step": 3}})"
      "\n" +
      fixture));
  // Session-like records without a status, or with a string submit time.
  EXPECT_FALSE(LooksLikeArealSessions(R"({"session_id": 1, "submit_ts": 2.0})" "\n"));
  EXPECT_FALSE(LooksLikeArealSessions(R"({"session_id": 1, "submit_ts": "2.0", "status": "accepted"})" "\n"));
  // Only a cut first line (the head ends inside it): undecided, not claimed.
  EXPECT_FALSE(LooksLikeArealSessions(fixture.substr(0, 60)));

  // The readers' registry: a Kineto trace is still read as Kineto, the fixture as AReaL.
  auto k = ReadTraceBytes(R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 2, "pid": 1, "tid": 1}]})",
                          "k.json");
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_NE(k->format, "areal");
  auto a = ReadTraceBytes(fixture, "sessions-r0.jsonl");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->format, "areal");
  EXPECT_EQ(a->samples.size(), 8u);
}

TEST(ArealReader, FoldersHoldingSessionTracesAreExpanded) {
  fs::path dir = TempDir("dir");
  fs::create_directories(dir / "session_tracer" / "rollout");
  fs::create_directories(dir / "perf_tracer");
  fs::copy_file(kFixture, dir / "session_tracer" / "rollout" / "sessions-r0.jsonl");
  Write(dir / "perf_tracer" / "traces-r0.jsonl",
        R"({"name": "train_step", "ph": "X", "ts": 1, "dur": 2, "pid": 0, "tid": 0})" "\n");
  Write(dir / "notes.jsonl", "{\"a\": 1}\n");
  Diagnostics diag;
  auto in = FindTraceInputs({dir.string()}, &diag);
  ASSERT_TRUE(in.ok()) << in.status().message();
  EXPECT_EQ(*in, (std::vector<std::string>{(dir / "session_tracer" / "rollout" / "sessions-r0.jsonl").string()}));
  fs::remove_all(dir);
}

TEST(ArealReader, NothingButDamageIsAnError) {
  EXPECT_FALSE(ReadArealBytes("", "e.jsonl").ok());
  EXPECT_FALSE(ReadArealBytes("{\"a\": 1}\nxx\n", "e.jsonl").ok());
}

}  // namespace
}  // namespace rlprof::analysis
