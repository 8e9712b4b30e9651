// The report's compact data model (ReportData): columnar across inputs, aggregated operators
// and communication, per-input detail only below the threshold, a page that grows with ranks ×
// steps × stages and not with each input's tables.
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "src/analysis/run/run.h"
#include "src/report/html_report.h"

namespace rlprof::report {
namespace {

using analysis::InputResult;

// `n` inputs (one per rank) of `steps` steps × 2 stages, an operator and a group each.
std::vector<InputResult> Inputs(size_t n, int64_t steps) {
  std::vector<InputResult> out(n);
  for (size_t k = 0; k < n; ++k) {
    InputResult& r = out[k];
    r.input = "run/rank" + std::to_string(k);
    r.name = "rank" + std::to_string(k);
    analysis::TraceAnalysis& a = r.analysis;
    a.rank = static_cast<int64_t>(k);
    for (int64_t s = 1; s <= steps; ++s) {
      for (const char* stage : {"rollout_generate", "actor_update"}) {
        analysis::StageResult st;
        st.step = s;
        st.role = stage[0] == 'r' ? "rollout" : "actor";
        st.name = stage;
        st.start = s * 1'000'000 + (stage[0] == 'r' ? 0 : 500'000);
        st.duration = 400'000 + static_cast<int64_t>(k);
        st.end = st.start + st.duration;
        a.stages.push_back(st);
      }
      a.comm_by_group.push_back({s, "dp", 2, 1000, 250});
    }
    analysis::OpStat op;
    op.name = "aten::mm";
    op.count = 3;
    op.total = 3000;
    op.self = 2000;
    a.host_ops.push_back(op);
    if (k == 1) a.diagnostics.Add("raw_bad_checksum_chunks", 2);
  }
  return out;
}

TEST(ReportModelTest, StagesAreOneColumnarTableAcrossInputsWithDictionaryStrings) {
  const auto in = Inputs(3, 2);
  const nlohmann::json d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  EXPECT_EQ(d["model"], "rlprof-report");
  EXPECT_FALSE(d.contains("summary"));
  const auto& st = d["stages"];
  ASSERT_EQ(st["input"].size(), 3u * 2 * 2);
  EXPECT_EQ(st["input"][4], 1);  // rank 1's first stage
  const auto role = st["role"][0].get<size_t>();
  EXPECT_EQ(d["dict"][role], "rollout");
  EXPECT_EQ(st["duration"][0], 400);  // µs
  EXPECT_EQ(st["duration"][4], 400.001);
  EXPECT_EQ(d["inputs"]["rank"], nlohmann::json({0, 1, 2}));
  EXPECT_EQ(d["inputs"]["ops_sampling"], nlohmann::json::parse("[null, null, null]"));
  // Communication and operators are summed over the run.
  ASSERT_EQ(d["comm"].size(), 1u);
  EXPECT_EQ(d["comm"][0]["ranks"], 3);
  EXPECT_EQ(d["comm"][0]["ops"], 12);
  ASSERT_EQ(d["ops"].size(), 1u);
  EXPECT_EQ(d["ops"][0]["count"], 9);
  EXPECT_EQ(d["ops"][0]["total"], 9);
  // A small run keeps each input's top operators; diagnostics are kept per input, sparse.
  EXPECT_EQ(d["input_ops"].size(), 3u);
  EXPECT_FALSE(d["input_ops_left_out"].get<bool>());
  EXPECT_EQ(d["input_diagnostics"], nlohmann::json::parse(R"([[1, "raw_bad_checksum_chunks", 2]])"));
}

// A capture that recorded a share of the operator calls says so per input: the page marks its
// operators as estimates (an unreadable input has no share).
TEST(ReportModelTest, EachInputSaysTheShareOfOperatorCallsItRecorded) {
  auto in = Inputs(3, 1);
  in[1].analysis.ops_sampling = 0.1;
  in[2].status = base::Internal("unreadable");
  const nlohmann::json d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  EXPECT_EQ(d["inputs"]["ops_sampling"], nlohmann::json::parse("[null, 0.1, null]"));
}

TEST(ReportModelTest, ABigRunLeavesOutPerInputDetailAndGrowsLinearly) {
  const auto small = Inputs(kReportDetailInputs * 2, 4), big = Inputs(kReportDetailInputs * 8, 4);
  const nlohmann::json ds = ReportData(small, analysis::SummaryJson(small, {}), "t", "v");
  const nlohmann::json db = ReportData(big, analysis::SummaryJson(big, {}), "t", "v");
  EXPECT_TRUE(db["input_ops"].empty());
  // Diagnostics: one row per name (count, inputs, up to 3 examples), not one per input.
  EXPECT_TRUE(db["input_diagnostics"].empty());
  EXPECT_EQ(db["diagnostics_by_name"], nlohmann::json::parse(R"([["raw_bad_checksum_chunks", 2, 1, [1]]])"));
  EXPECT_TRUE(db["input_ops_left_out"].get<bool>());
  // The run view keeps kReportRunViewLanes rank columns (+ step, kind, …, min, mean, max …).
  EXPECT_EQ(db["run"]["run_view_lanes_left_out"], kReportDetailInputs * 8 - kReportRunViewLanes);
  const size_t cols = db["run"]["run_view"]["columns"].size();
  EXPECT_EQ(cols, 6 + kReportRunViewLanes + 5);
  for (const auto& row : db["run"]["run_view"]["rows"]) EXPECT_EQ(row.size(), cols);
  // Bytes per rank-step stay flat from 128 to 512 ranks (within 25 %) and small.
  const double per_small = static_cast<double>(ScriptSafeJson(ds).size()) / (kReportDetailInputs * 2 * 4);
  const double per_big = static_cast<double>(ScriptSafeJson(db).size()) / (kReportDetailInputs * 8 * 4);
  EXPECT_LT(per_big, per_small * 1.25) << per_small << " " << per_big;
  EXPECT_LT(per_big, 400.0);
}

TEST(ReportModelTest, ActivityLanesAreColumnarJoinedByDictionaryAndBudgeted) {
  auto in = Inputs(2, 1);
  // Rank 0: one device lane of 3 spans; rank 1: a host lane of 1 span.
  analysis::ActivityLane dev{true, "device 0 stream 7", 30'000, 3, {}};
  for (int64_t i = 0; i < 3; ++i)
    dev.spans.push_back({1'000'000 + i * 20'000, 1'010'000 + i * 20'000, 10'000, 1,
                         i == 1 ? analysis::WorkClass::kCommunication : analysis::WorkClass::kCompute,
                         i == 1 ? "ncclDevKernel_AllReduce" : "gemm", 10'000});
  in[0].analysis.activity.push_back(dev);
  in[0].analysis.activity_lanes_left_out = 2;
  in[1].analysis.activity.push_back({false, "thread 7 (main)", 5'000, 4, {{1'000'000, 1'008'000, 5'000, 4, analysis::WorkClass::kHost, "gemm", 2'000}}});
  nlohmann::json d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  const auto& a = d["activity"];
  EXPECT_EQ(a["lanes"]["input"], nlohmann::json({0, 1}));
  EXPECT_EQ(a["lanes"]["device"], nlohmann::json({true, false}));
  EXPECT_EQ(a["lanes"]["busy"], nlohmann::json({30, 5}));
  EXPECT_EQ(a["lanes_left_out"], 2);
  EXPECT_EQ(a["spans"]["lane"], nlohmann::json({0, 0, 0, 1}));
  EXPECT_EQ(a["spans"]["start"][1], 1020);  // µs on the trace clock
  EXPECT_EQ(a["spans"]["end"][1], 1030);
  EXPECT_EQ(a["classes"][a["spans"]["cls"][1].get<size_t>()], "communication");
  EXPECT_EQ(a["names"][a["spans"]["top"][1].get<size_t>()], "ncclDevKernel_AllReduce");
  EXPECT_EQ(a["spans"]["top"][0], a["spans"]["top"][3]);  // "gemm" once in the dictionary
  EXPECT_FALSE(a["coarsened"].get<bool>());
  // Past the page's budget every lane is coarsened to its share (busy time kept).
  in = Inputs(2, 1);
  for (auto& r : in) {
    analysis::ActivityLane l{true, "device 0 stream 7", 0, 0, {}};
    for (int64_t i = 0; i < static_cast<int64_t>(kReportActivitySpans); ++i) {
      l.spans.push_back({i * 100, i * 100 + 50, 50, 1, analysis::WorkClass::kCompute, "k", 50});
      l.busy += 50;
      ++l.events;
    }
    r.analysis.activity.push_back(std::move(l));
  }
  d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  EXPECT_TRUE(d["activity"]["coarsened"].get<bool>());
  EXPECT_LE(d["activity"]["spans"]["lane"].size(), kReportActivitySpans);
  int64_t count = 0;
  for (const auto& c : d["activity"]["spans"]["count"]) count += c.get<int64_t>();
  EXPECT_EQ(count, 2 * static_cast<int64_t>(kReportActivitySpans));
  // A big run's page has no lanes, and says so.
  auto big = Inputs(kReportDetailInputs + 1, 1);
  big[0].analysis.activity.push_back(dev);
  d = ReportData(big, analysis::SummaryJson(big, {}), "t", "v");
  EXPECT_TRUE(d["activity"]["spans"]["lane"].empty());
  EXPECT_TRUE(d["activity"]["left_out_inputs"].get<bool>());
}

// Sample records (issue 33): the samples section — sample_tail's "all" rows, and per step the
// samples longest first with their phase times in µs from the step's first submit. A run
// without them has no section.
TEST(ReportModelTest, SampleRecordsGetTheSamplesSectionLongestFirstRelativeToTheFirstSubmit) {
  auto in = Inputs(2, 1);
  nlohmann::json d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  EXPECT_FALSE(d.contains("samples"));
  const std::string without = d.dump();
  auto rec = [](const char* id, int64_t step, int64_t submit, int64_t queued, int64_t scheduled, int64_t first,
                int64_t last, int64_t end, const char* finish, int64_t replica) {
    analysis::SampleRecord s;
    s.id = id;
    s.step = step;
    s.submit = submit;
    s.queued = queued;
    s.scheduled = scheduled;
    s.first_token = first;
    s.last_token = last;
    s.end = end;
    s.finish_reason = finish;
    s.replica = replica;
    s.completion_tokens = 10;
    return s;
  };
  auto& samples = in[1].analysis.samples;  // rank 1's process
  samples.push_back(rec("a", 1, 1'000'000, 1'000'000, 1'200'000, 2'000'000, 9'000'000, 10'000'000, "length", 3));
  samples.back().spans = {{"tool", "search", 3'000'000, 4'000'000}, {"reward", "", 9'500'000, 10'000'000}};
  samples.push_back(rec("b", 1, 1'000'000, -1, 1'100'000, 1'500'000, 3'000'000, -1, "stop", -1));
  samples.push_back(rec("c", 1, -1, 2'000'000, 2'000'500, 2'600'000, 5'000'000, 5'000'000, "stop", 0));
  samples.push_back(rec("d", 2, 20'000'000, 20'000'000, 20'000'000, 20'100'000, 21'000'000, 21'000'000, "stop", 0));
  d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  ASSERT_TRUE(d.contains("samples"));
  const auto& sm = d["samples"];
  ASSERT_EQ(sm["steps"].size(), 2u);
  const auto& s1 = sm["steps"][0];
  EXPECT_EQ(s1["step"], 1);
  EXPECT_EQ(s1["t0"], 1000);  // µs on the run's timeline
  EXPECT_EQ(s1["samples"], 3);
  EXPECT_EQ(s1["left_out"], 0);
  EXPECT_EQ(s1["id"], nlohmann::json({"a", "c", "b"}));       // 9 ms, 3 ms, 2 ms
  EXPECT_EQ(s1["replica"], nlohmann::json({3, 0, 1}));        // b: the process's rank
  EXPECT_EQ(s1["start"], nlohmann::json({0, 1000, 0}));       // c: no submit, its queued time
  EXPECT_EQ(s1["queued"], nlohmann::json::parse("[0, 1000, null]"));
  EXPECT_EQ(s1["scheduled"], nlohmann::json({200, 1000.5, 100}));
  EXPECT_EQ(s1["first"], nlohmann::json({1000, 1600, 500}));
  EXPECT_EQ(s1["last"], nlohmann::json({8000, 4000, 2000}));
  EXPECT_EQ(s1["end"], nlohmann::json({9000, 4000, 2000}));   // b: no end, its last token
  const auto& dict = sm["dict"];
  EXPECT_EQ(dict[s1["finish"][0].get<size_t>()], "length");
  EXPECT_EQ(dict[s1["finish"][1].get<size_t>()], "stop");
  // Spans: [row, phase, label, start, end].
  ASSERT_EQ(s1["spans"].size(), 10u);
  EXPECT_EQ(s1["spans"][0], 0);
  EXPECT_EQ(dict[s1["spans"][1].get<size_t>()], "tool");
  EXPECT_EQ(dict[s1["spans"][2].get<size_t>()], "search");
  EXPECT_EQ(s1["spans"][3], 2000);
  EXPECT_EQ(s1["spans"][4], 3000);
  EXPECT_EQ(dict[s1["spans"][6].get<size_t>()], "reward");
  EXPECT_TRUE(s1["spans"][7].is_null());
  EXPECT_EQ(sm["steps"][1]["id"], nlohmann::json({"d"}));
  EXPECT_EQ(sm["steps"][1]["t0"], 20000);
  // The tail figures: one "all" row per step (sample_tail's numbers), no replica rows.
  const auto& tail = sm["tail"];
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < tail["columns"].size(); ++i) col[tail["columns"][i]["name"]] = i;
  ASSERT_EQ(tail["rows"].size(), 2u);
  const auto& t1 = tail["rows"][0];
  EXPECT_EQ(t1[col["step"]], 1);
  EXPECT_EQ(t1[col["replica"]], "all");
  EXPECT_EQ(t1[col["samples"]], 3);
  EXPECT_EQ(t1[col["p50"]], 4000.0);   // nearest rank of {2000, 4000, 9000} µs
  EXPECT_EQ(t1[col["p90"]], 9000.0);
  EXPECT_EQ(t1[col["p100"]], 9000.0);
  EXPECT_EQ(t1[col["ttft_p50"]], 600.0);  // nearest rank of {500, 600, 1000}
  EXPECT_TRUE(sm["outcomes"].contains("rows"));
  EXPECT_EQ(sm["cap"], 2000);
  // The rest of the model is as without samples (the findings aside: the samples are a rule's).
  d.erase("samples");
  d["findings"] = nlohmann::json::parse(without)["findings"];
  d["generated"] = nlohmann::json::parse(without)["generated"];
  EXPECT_EQ(d.dump(), without);
}

// A step of more samples than the page draws keeps the longest and says how many were left out.
TEST(ReportModelTest, ABigStepKeepsItsLongestSamples) {
  auto in = Inputs(1, 1);
  for (int64_t i = 0; i < 2500; ++i) {
    analysis::SampleRecord s;
    s.id = "s" + std::to_string(i);
    s.step = 1;
    s.submit = 0;
    s.end = 1'000'000 + i * 1000;
    in[0].analysis.samples.push_back(s);
  }
  const nlohmann::json d = ReportData(in, analysis::SummaryJson(in, {}), "t", "v");
  const auto& st = d["samples"]["steps"][0];
  EXPECT_EQ(st["samples"], 2500);
  EXPECT_EQ(st["left_out"], 500);
  ASSERT_EQ(st["id"].size(), 2000u);
  EXPECT_EQ(st["id"][0], "s2499");
  EXPECT_EQ(st["id"][1999], "s500");
  EXPECT_TRUE(st["scheduled"][0].is_null());
}

}  // namespace
}  // namespace rlprof::report
