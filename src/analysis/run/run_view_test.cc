#include "src/analysis/run/run_view.h"

#include <gtest/gtest.h>

#include <regex>
#include <tuple>

#include "src/analysis/model/test_traces.h"

namespace rlprof::analysis {
namespace {

using testing::kUs;
using testing::TraceBuilder;

// One analysed capture of `rank` holding `step` = [s_us, e_us) and the given stages.
struct StageSpec {
  std::string role, name;
  int64_t s_us, e_us;
};

InputResult Capture(const std::string& name, int64_t rank, int64_t s_us, int64_t e_us,
                    const std::vector<StageSpec>& stages, bool discrete, bool sampled = false,
                    int64_t step = 2) {
  TraceBuilder b;
  b.Step(step, s_us, e_us);
  for (const auto& st : stages) b.Stage(step, st.role, st.name, st.s_us, st.e_us);
  b.HostOp(b.host(), "aten::mm", "cpu_op", s_us, e_us);
  Trace t = b.Build();
  t.rank = rank;
  t.step_is_capture_window = discrete;
  t.stage_is_capture_window = sampled;
  InputResult r;
  r.input = r.name = name;
  r.analysis = AnalyseTrace(t, Classifier::Default(), {});
  return r;
}

const RunViewRow* Find(const RunView& v, RunViewKind kind, const std::string& stage) {
  for (const auto& r : v.rows)
    if (r.kind == kind && r.stage == stage) return &r;
  return nullptr;
}

int64_t At(const RunViewRow* r, size_t lane) {
  EXPECT_NE(r, nullptr);
  if (r == nullptr || lane >= r->per_lane.size() || !r->per_lane[lane]) return -1;
  return *r->per_lane[lane];
}

// Two ranks, two discrete stage captures each: rank 1 generates slower, rank 0 updates slower.
std::vector<InputResult> DiscreteRun() {
  return {Capture("gen-r0", 0, 100, 300, {{"rollout", "generate", 100, 300}}, true),
          Capture("gen-r1", 1, 100, 400, {{"rollout", "generate", 100, 400}}, true),
          Capture("upd-r0", 0, 350, 900, {{"actor", "update", 360, 900}}, true),
          Capture("upd-r1", 1, 420, 800, {{"actor", "update", 420, 800}}, true)};
}

TEST(RunViewTest, DiscreteCapturesOfTwoRanksBecomeOneStepOfStagesGapsAndSpan) {
  RunView v = BuildRunView(DiscreteRun());
  ASSERT_EQ(v.lanes, (std::vector<std::string>{"rank0", "rank1"}));
  std::vector<std::pair<RunViewKind, std::string>> got;
  for (const auto& r : v.rows) got.emplace_back(r.kind, r.stage);
  // No capture holds the whole step: no step_window row, the span stands for the step time.
  EXPECT_EQ(got, (std::vector<std::pair<RunViewKind, std::string>>{
                     {RunViewKind::kStage, "generate"},
                     {RunViewKind::kGap, "update"},
                     {RunViewKind::kStage, "update"},
                     {RunViewKind::kStageSpan, "(first start → last end)"}}));
  EXPECT_EQ(At(Find(v, RunViewKind::kStage, "generate"), 0), 200 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStage, "generate"), 1), 300 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStage, "update"), 0), 540 * kUs);
  // Gap: the next stage's start minus the previous stage's end, on the same rank.
  EXPECT_EQ(At(Find(v, RunViewKind::kGap, "update"), 0), 60 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kGap, "update"), 1), 20 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStageSpan, "(first start → last end)"), 0), 800 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStageSpan, "(first start → last end)"), 1), 700 * kUs);
  // Starts from the step's origin (earliest stage start: no step window).
  EXPECT_EQ(*Find(v, RunViewKind::kStage, "update")->start, 260 * kUs);
  EXPECT_TRUE(v.diagnostics.empty());
}

TEST(RunViewTest, TableHasOneColumnPerRankAndTheCriticalRankOfEachStage) {
  Table t = RunViewTable(BuildRunView(DiscreteRun()));
  std::vector<std::string> names;
  for (const auto& c : t.columns) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"step", "kind", "role", "stage", "start", "ranks", "rank0",
                                             "rank1", "min", "mean", "max", "critical_rank", "partial"}));
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(std::get<std::string>(t.rows[0][1]), "stage");
  EXPECT_EQ(std::get<int64_t>(t.rows[0][5]), 2);
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][8]), 200.0);   // min
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][9]), 250.0);   // mean
  EXPECT_DOUBLE_EQ(std::get<double>(t.rows[0][10]), 300.0);  // max
  EXPECT_EQ(std::get<std::string>(t.rows[0][11]), "rank1");  // generate: rank 1 is slower
  EXPECT_EQ(std::get<std::string>(t.rows[2][11]), "rank0");  // update: rank 0 is slower
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[1][11]));  // a gap has none
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[1][4]));   // nor a start
  // The terminal keeps the first lanes only; the aggregates still cover every rank.
  Table narrow = RunViewTable(BuildRunView(DiscreteRun()), 1);
  EXPECT_EQ(narrow.columns.size(), t.columns.size() - 1);
  EXPECT_DOUBLE_EQ(std::get<double>(narrow.rows[0][9]), 300.0);
  EXPECT_EQ(std::get<std::string>(narrow.rows[0][10]), "rank1");
}

TEST(RunViewTest, EndToEndCaptureGivesTheStepWindowAndGapsAtBothEndsNeverNegative) {
  // Step [0, 1000) µs; "outer" [100, 600) holds "inner" [200, 300) (nested: gap 0, not −400);
  // "last" [700, 950).
  RunView v = BuildRunView({Capture("e2e-r0", 0, 0, 1000,
                                    {{"actor", "outer", 100, 600}, {"actor", "inner", 200, 300},
                                     {"actor", "last", 700, 950}},
                                    false)});
  EXPECT_EQ(At(Find(v, RunViewKind::kGap, "outer"), 0), 100 * kUs);  // from the step's start
  EXPECT_EQ(At(Find(v, RunViewKind::kGap, "inner"), 0), 0);
  EXPECT_EQ(At(Find(v, RunViewKind::kGap, "last"), 0), 100 * kUs);  // after outer's end, not inner's
  EXPECT_EQ(At(Find(v, RunViewKind::kGap, "(end of step)"), 0), 50 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStepWindow, "(step window)"), 0), 1000 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStageSpan, "(first start → last end)"), 0), 850 * kUs);
  EXPECT_EQ(Find(v, RunViewKind::kStage, "(none)"), nullptr);
  EXPECT_EQ(*Find(v, RunViewKind::kStage, "outer")->start, 100 * kUs);
}

TEST(RunViewTest, SampledStageIsPartialAndSoAreTheGapsBesideIt) {
  // A scheduled capture of "generate": its stage window is the capture window only.
  RunView w = BuildRunView({Capture("gen", 0, 0, 100, {{"rollout", "generate", 0, 100}}, true,
                                     /*sampled=*/true),
                            Capture("upd", 0, 150, 300, {{"actor", "update", 150, 300}}, true)});
  EXPECT_TRUE(Find(w, RunViewKind::kStage, "generate")->partial);
  EXPECT_FALSE(Find(w, RunViewKind::kStage, "update")->partial);
  EXPECT_TRUE(Find(w, RunViewKind::kGap, "update")->partial);
  EXPECT_EQ(At(Find(w, RunViewKind::kGap, "update"), 0), 50 * kUs);
  EXPECT_TRUE(Find(w, RunViewKind::kStageSpan, "(first start → last end)")->partial);
}

TEST(RunViewTest, StageSeenByTwoCapturesOfOneRankIsKeptOnceTheWholeOnePreferred) {
  RunView v = BuildRunView(
      {Capture("sampled", 0, 120, 180, {{"rollout", "generate", 120, 180}}, true, true),
       Capture("e2e", 0, 0, 1000, {{"rollout", "generate", 100, 400}}, false)});
  const RunViewRow* gen = Find(v, RunViewKind::kStage, "generate");
  EXPECT_EQ(At(gen, 0), 300 * kUs);
  EXPECT_FALSE(gen->partial);
  EXPECT_EQ(v.diagnostics.Get("run_view_duplicate_stage_windows"), 1u);
}

// Two whole captures of one rank with the same stage (verl's reward loop worker, whose calls
// wait for the served reward model, and that model's engine): the wider, enclosing one is kept
// whatever the order the inputs come in.
TEST(RunViewTest, StageSeenByTwoWholeCapturesOfOneRankKeepsTheEnclosingOneInAnyOrder) {
  auto worker = [] {
    return Capture("worker", 0, 0, 1000, {{"reward", "compute_rm_score", 100, 500}}, false);
  };
  auto engine = [] {
    return Capture("engine", 0, 0, 1000, {{"reward", "compute_rm_score", 200, 300}}, false);
  };
  for (const auto& inputs : {std::vector<InputResult>{worker(), engine()},
                             std::vector<InputResult>{engine(), worker()}}) {
    RunView v = BuildRunView(inputs);
    const RunViewRow* st = Find(v, RunViewKind::kStage, "compute_rm_score");
    EXPECT_EQ(At(st, 0), 400 * kUs);
    EXPECT_EQ(*st->start, 100 * kUs);
    EXPECT_EQ(v.diagnostics.Get("run_view_duplicate_stage_windows"), 1u);
  }
}

TEST(RunViewTest, InputsWithoutRankAreLanesOfTheirOwnAndFailedInputsAreLeftOut) {
  InputResult bad;
  bad.input = bad.name = "broken.json";
  bad.status = base::DataLoss("truncated");
  RunView v = BuildRunView({Capture("b.json", -1, 0, 100, {{"", "fwd", 10, 50}}, false),
                            Capture("a.json", -1, 0, 100, {{"", "fwd", 20, 90}}, false), bad,
                            Capture("r3", 3, 0, 100, {{"", "fwd", 0, 100}}, false)});
  EXPECT_EQ(v.lanes, (std::vector<std::string>{"rank3", "input:a.json", "input:b.json"}));
  EXPECT_EQ(v.lane_ranks, (std::vector<int64_t>{3, -1, -1}));
  EXPECT_EQ(At(Find(v, RunViewKind::kStage, "fwd"), 1), 70 * kUs);
  EXPECT_EQ(At(Find(v, RunViewKind::kStage, "fwd"), 2), 40 * kUs);
}

TEST(RunViewTest, TwoStepsOfDiscreteCapturesGiveOneBlockPerStepInStepOrder) {
  RunView v = BuildRunView({Capture("s3-a", 0, 1000, 1100, {{"actor", "a", 1000, 1100}}, true, false, 3),
                            Capture("s2-b", 0, 150, 300, {{"actor", "b", 150, 300}}, true, false, 2),
                            Capture("s3-b", 0, 1120, 1300, {{"actor", "b", 1120, 1300}}, true, false, 3),
                            Capture("s2-a", 0, 0, 100, {{"actor", "a", 0, 100}}, true, false, 2)});
  std::vector<std::tuple<int64_t, RunViewKind, std::string, int64_t>> got;
  for (const auto& r : v.rows) got.emplace_back(r.step, r.kind, r.stage, *r.per_lane[0]);
  using K = RunViewKind;
  EXPECT_EQ(got, (std::vector<std::tuple<int64_t, RunViewKind, std::string, int64_t>>{
                     {2, K::kStage, "a", 100 * kUs}, {2, K::kGap, "b", 50 * kUs},
                     {2, K::kStage, "b", 150 * kUs}, {2, K::kStageSpan, "(first start → last end)", 300 * kUs},
                     {3, K::kStage, "a", 100 * kUs}, {3, K::kGap, "b", 20 * kUs},
                     {3, K::kStage, "b", 180 * kUs}, {3, K::kStageSpan, "(first start → last end)", 300 * kUs}}));
}

TEST(RunViewTest, UserStepMarkersAreRealStepsEvenInADiscreteCapture) {
  TraceBuilder b;
  b.HostOp(b.host(), "train_step_4", "user_annotation", 0, 500);
  Trace t = b.Build();
  t.step_is_capture_window = true;
  ASSERT_EQ(ApplyStepMarker(&t, std::regex("^train_step_")), 1u);
  EXPECT_FALSE(t.step_is_capture_window);
}

TEST(RunViewTest, NoInputsGiveAnEmptyTableWithItsColumns) {
  Table t = RunViewTable(BuildRunView({}));
  EXPECT_TRUE(t.rows.empty());
  EXPECT_EQ(t.name, "run_view");
  EXPECT_EQ(t.columns.size(), 11u);
}

}  // namespace
}  // namespace rlprof::analysis
