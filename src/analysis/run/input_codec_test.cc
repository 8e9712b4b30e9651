#include "src/analysis/run/input_codec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "src/analysis/run/run_pipeline.h"
#include "src/analysis/tables/tables.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;
const std::string kInputs = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/inputs/";

std::string Dump(const nlohmann::json& j) { return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace); }

// What the driver does: every input's result through bytes, then AssembleRun.
RunAnalysis ThroughBytes(const RunAnalysis& local) {
  std::vector<InputResult> decoded;
  for (const auto& r : local.inputs) {
    auto back = DecodeInputResult(EncodeInputResult(r));
    EXPECT_TRUE(back.ok()) << back.status().message();
    if (back.ok()) decoded.push_back(std::move(*back));
  }
  auto found = DecodeDiagnostics(EncodeDiagnostics(local.found));
  EXPECT_TRUE(found.ok());
  return AssembleRun(local.paths, local.options, found.ok() ? *found : Diagnostics{}, std::move(decoded));
}

TEST(InputCodecTest, ARunAssembledFromEncodedResultsEqualsTheLocalRunTableForTable) {
  const std::string bad = (fs::temp_directory_path() / ("rlprof_codec_bad_" + std::to_string(::getpid()) + ".json")).string();
  std::ofstream(bad) << "this is not a trace";
  for (const char* assign : {"clip", "by_launch"}) {
    RunSettings settings;
    settings.assign = assign;
    auto cfg = MakeRunConfig(settings);
    ASSERT_TRUE(cfg.ok());
    auto local = AnalyseRun({kInputs + "grpo_tiny_step2", kInputs + "kineto_launches.json",
                             kInputs + "hta_cpu_only_rank-34.json.gz", bad},
                            *cfg);
    ASSERT_TRUE(local.ok()) << local.status().message();
    ASSERT_EQ(local->analysed() + 1, local->inputs.size());
    RunAnalysis remote = ThroughBytes(*local);
    std::vector<Table> a = RunTables(*local), b = RunTables(remote);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(a[i].name, b[i].name);
      EXPECT_EQ(ToCsv(a[i]), ToCsv(b[i])) << a[i].name;
    }
    EXPECT_EQ(Dump(RunSummaryJson(*local)), Dump(RunSummaryJson(remote)));
    EXPECT_EQ(local->AllDiagnostics().Lines(), remote.AllDiagnostics().Lines());
    // Per input, the exact ns values too (CSV shows µs).
    for (size_t i = 0; i < local->inputs.size(); ++i) {
      const auto& x = local->inputs[i];
      const auto& y = remote.inputs[i];
      EXPECT_EQ(x.status.code(), y.status.code());
      EXPECT_EQ(x.status.message(), y.status.message());
      ASSERT_EQ(x.analysis.steps.size(), y.analysis.steps.size());
      for (size_t s = 0; s < x.analysis.steps.size(); ++s) {
        EXPECT_EQ(x.analysis.steps[s].hist.time, y.analysis.steps[s].hist.time);
        EXPECT_EQ(x.analysis.steps[s].atoms.sum(), y.analysis.steps[s].atoms.sum());
      }
      ASSERT_EQ(x.analysis.host_ops.size(), y.analysis.host_ops.size());
      for (size_t k = 0; k < x.analysis.host_ops.size(); ++k)
        EXPECT_EQ(x.analysis.host_ops[k].mean, y.analysis.host_ops[k].mean);  // doubles bit-exact
    }
  }
  fs::remove(bad);
}

TEST(InputCodecTest, ResultsAreKilobytesNotTheTrace) {
  auto cfg = MakeRunConfig({});
  ASSERT_TRUE(cfg.ok());
  auto local = AnalyseRun({kInputs + "grpo_tiny_step2"}, *cfg);
  ASSERT_TRUE(local.ok());
  for (const auto& r : local->inputs) EXPECT_LT(EncodeInputResult(r).size(), 64u * 1024) << r.name;
}

TEST(InputCodecTest, TextThatIsNotUtf8AndEveryStatusSurviveTheRoundTrip) {
  InputResult r;
  r.input = "runs/\xff\xfe/rank0";
  r.name = "rank\xc3";
  r.analysis.source = "\x80source";
  OpStat op;
  op.name = "op\xff";
  op.count = 3;
  op.mean = 1.0 / 3.0;
  r.analysis.host_ops.push_back(op);
  r.analysis.diagnostics.Note("negative_duration", "why \xff");
  auto back = DecodeInputResult(EncodeInputResult(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->input, r.input);
  EXPECT_EQ(back->name, r.name);
  EXPECT_EQ(back->analysis.source, r.analysis.source);
  EXPECT_EQ(back->analysis.host_ops.at(0).name, "op\xff");
  EXPECT_EQ(back->analysis.host_ops.at(0).mean, 1.0 / 3.0);
  EXPECT_EQ(back->analysis.diagnostics.details, r.analysis.diagnostics.details);
  r.status = base::DataLoss("node lost");
  back = DecodeInputResult(EncodeInputResult(r));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status.code(), base::StatusCode::kDataLoss);
  EXPECT_EQ(back->status.message(), "node lost");
}

TEST(InputCodecTest, CorruptOrForeignBytesAreInvalidArgumentsNeverAThrow) {
  InputResult r;
  r.input = "x";
  std::string good = EncodeInputResult(r);
  for (size_t cut = 0; cut < good.size(); cut += 3)
    EXPECT_EQ(DecodeInputResult(good.substr(0, cut)).status().code(), base::StatusCode::kInvalidArgument) << cut;
  EXPECT_EQ(DecodeInputResult("not cbor at all").status().code(), base::StatusCode::kInvalidArgument);
  const std::vector<std::uint8_t> other = nlohmann::json::to_cbor({{"v", 999}, {"input", "x"}});
  auto s = DecodeInputResult(std::string(other.begin(), other.end()));
  EXPECT_EQ(s.status().code(), base::StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("another rlprof version"), std::string::npos);
  const std::vector<std::uint8_t> wrong = nlohmann::json::to_cbor({{"v", kInputCodecVersion}, {"input", 5}});
  EXPECT_FALSE(DecodeInputResult(std::string(wrong.begin(), wrong.end())).ok());
  EXPECT_FALSE(DecodeDiagnostics("\xa1").ok());
}

TEST(InputCodecTest, LostNodesBadResultsAndMissingPathsAreCountedAndTheRestIsAssembled) {
  auto cfg = MakeRunConfig({});
  ASSERT_TRUE(cfg.ok());
  auto local = AnalyseRun({kInputs + "grpo_tiny_step2"}, *cfg);
  ASSERT_TRUE(local.ok());
  ASSERT_GE(local->inputs.size(), 3u);
  std::vector<RemoteInput> remote;
  for (const auto& r : local->inputs) remote.push_back({r.input, r.name, EncodeInputResult(r), ""});
  remote[0].result.clear();
  remote[0].lost = "node n2 died";
  remote[1].result = "garbage";
  RunAnalysis run = AssembleRemoteRun(local->paths, local->options, {EncodeDiagnostics(local->found), "bad"}, remote,
                                      {"/nowhere"}, {"node n3: died"});
  ASSERT_EQ(run.inputs.size(), local->inputs.size());
  EXPECT_EQ(run.analysed(), local->inputs.size() - 2);
  EXPECT_EQ(run.inputs[0].status.code(), base::StatusCode::kDataLoss);
  EXPECT_EQ(run.inputs[0].name, local->inputs[0].name);
  const Diagnostics all = run.AllDiagnostics();
  EXPECT_EQ(all.Get("ray_node_lost"), 2u);   // one input, one search
  EXPECT_EQ(all.Get("ray_bad_result"), 2u);  // one result, one search's diagnostics
  EXPECT_EQ(all.Get("ray_input_missing"), 1u);
  EXPECT_EQ(all.Get("unreadable_inputs"), 2u);
  // The inputs that came back are exactly as local.
  for (size_t i = 2; i < run.inputs.size(); ++i)
    EXPECT_EQ(ToCsv(StageTimeTable(run.inputs[i].analysis)), ToCsv(StageTimeTable(local->inputs[i].analysis)));
}

}  // namespace
}  // namespace rlprof::analysis
