// The reader of torch_npu's text outputs over test/data/ascend_text (the events of the
// test/data/ascend_db databases written as kernel_details.csv / communication.json by its
// make_fixtures.py): the text folder must give what the database of the same events gives.
#include "src/analysis/readers/ascend_text_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <vector>

#include "src/analysis/passes/analyse.h"
#include "src/analysis/readers/ascend_db_reader.h"
#include "src/analysis/readers/readers.h"
#include "src/analysis/passes/views.h"

namespace rlprof::analysis {
namespace {

std::string Data(const std::string& rel) { return std::string(RLPROF_SOURCE_DIR) + "/test/data/" + rel; }
const std::string kRank0 = "multi_rank/node-a_41000_20251126094000123_ascend_pt";
const std::string kRank1 = "multi_rank/node-a_41001_20251126094000123_ascend_pt";

// (start, dur, name, category, stream) of the slices whose category passes `keep`.
template <typename Keep>
std::vector<std::tuple<int64_t, int64_t, std::string, std::string, int64_t>> Rows(const Trace& t, Keep keep) {
  std::vector<std::tuple<int64_t, int64_t, std::string, std::string, int64_t>> out;
  for (size_t i = 0; i < t.size(); ++i) {
    const std::string cat = t.str(t.category[i]);
    if (!keep(cat)) continue;
    const Track& tr = t.tracks[t.track[i]];
    out.emplace_back(t.ts[i], t.dur[i], t.str(t.name[i]), cat, cat == "communication" ? -1 : tr.stream);
  }
  std::sort(out.begin(), out.end());
  return out;
}
bool Compute(const std::string& c) {
  return c == "AI_CORE" || c == "AI_VECTOR_CORE" || c == "AI_CPU" || c == "MIX_AIC" || c == "kernel";
}
bool Comm(const std::string& c) { return c == "communication"; }

TEST(AscendTextReader, AFolderOfTextOutputsGivesWhatTheDatabaseOfTheSameEventsGives) {
  for (int rank = 0; rank < 2; ++rank) {
    const std::string rel = rank == 0 ? kRank0 : kRank1;
    auto f = FindAscendFolder(Data("ascend_text/" + rel));
    ASSERT_TRUE(f.has_value());
    EXPECT_TRUE(f->file.empty());
    EXPECT_EQ(std::filesystem::path(f->text_dir).filename(), "ASCEND_PROFILER_OUTPUT");
    auto text = ReadTrace(Data("ascend_text/" + rel));
    auto db = ReadTrace(Data("ascend_db/" + rel));
    ASSERT_TRUE(text.ok()) << text.status().ToString();
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(text->format, "ascend-text");
    EXPECT_EQ(text->rank, rank);
    EXPECT_TRUE(text->diagnostics.counts.empty()) << text->diagnostics.Lines().front();
    const auto kernels = Rows(*text, Compute);
    EXPECT_EQ(kernels.size(), 18u);
    EXPECT_EQ(kernels, Rows(*db, Compute));
    const auto comm = Rows(*text, Comm);
    EXPECT_EQ(comm.size(), 2u);  // a send or a receive, an all-reduce
    EXPECT_EQ(comm, Rows(*db, Comm));
    for (size_t i = 0; i < text->size(); ++i) {
      if (text->str(text->collective[i]) == "allReduce") EXPECT_EQ(text->bytes[i], 8388608 * 2);
    }
    // Hence the msprof view: every column equal.
    const MsprofRow a = MsprofFromStep(AnalyseTrace(*text, Classifier::Default(), {}).steps.at(0));
    const MsprofRow b = MsprofFromStep(AnalyseTrace(*db, Classifier::Default(), {}).steps.at(0));
    EXPECT_EQ(a.computing, b.computing);
    EXPECT_EQ(a.communication, b.communication);
    EXPECT_EQ(a.comm_not_overlapped, b.comm_not_overlapped);
    EXPECT_EQ(a.overlapped, b.overlapped);
    EXPECT_EQ(a.free, b.free);
    EXPECT_EQ(a.stage, b.stage);
    EXPECT_EQ(a.bubble, b.bubble);
    EXPECT_EQ(rank == 1, a.bubble > 0);
  }
}

TEST(AscendTextReader, StepIdsMakeStepsThatEqualTheDatabaseAssignedByLaunch) {
  auto text = ReadTrace(Data("ascend_text/steps/node-a_42000_20251126094000123_ascend_pt"));
  auto db = ReadTrace(Data("ascend_db/steps/ascend_pytorch_profiler_0.db"));
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  ASSERT_TRUE(db.ok());
  ASSERT_EQ(text->steps.size(), 3u);
  AnalysisOptions by_launch;
  by_launch.assign = AssignMode::kByLaunch;
  TraceAnalysis a = AnalyseTrace(*text, Classifier::Default(), {});
  TraceAnalysis b = AnalyseTrace(*db, Classifier::Default(), by_launch);
  ASSERT_EQ(a.steps.size(), 3u);
  ASSERT_EQ(b.steps.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    const MsprofRow x = MsprofFromStep(a.steps[k]), y = MsprofFromStep(b.steps[k]);
    EXPECT_EQ(a.steps[k].window.step, static_cast<int64_t>(k + 1));
    EXPECT_EQ(x.computing, y.computing) << k;
    EXPECT_EQ(x.communication, y.communication) << k;
    EXPECT_EQ(x.comm_not_overlapped, y.comm_not_overlapped) << k;
    EXPECT_EQ(x.overlapped, y.overlapped) << k;
  }
}

// torch_npu's Python writes communication.json with json.dump: the µs start of a double, which
// holds 0.25 µs steps at today's epoch. The disagreement with the database is that rounding, no more.
TEST(AscendTextReader, DoubleRoundedCommunicationStartsMoveByUnderAnEighthOfAMicrosecond) {
  auto text = ReadTrace(Data("ascend_text/double_times/node-a_41001_20251126094000123_ascend_pt"));
  auto db = ReadTrace(Data("ascend_db/" + kRank1));
  ASSERT_TRUE(text.ok() && db.ok());
  const auto a = Rows(*text, Comm), b = Rows(*db, Comm);
  ASSERT_EQ(a.size(), b.size());
  bool moved = false;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_LE(std::abs(std::get<0>(a[i]) - std::get<0>(b[i])), 125) << i;
    EXPECT_EQ(std::get<1>(a[i]), std::get<1>(b[i])) << i;  // "Elapse Time(ms)" survives a double
    moved |= std::get<0>(a[i]) != std::get<0>(b[i]);
  }
  EXPECT_TRUE(moved);  // the fixture does show the class
  EXPECT_EQ(Rows(*text, Compute), Rows(*db, Compute));  // kernel_details.csv is exact text
  const MsprofRow x = MsprofFromStep(AnalyseTrace(*text, Classifier::Default(), {}).steps.at(0));
  const MsprofRow y = MsprofFromStep(AnalyseTrace(*db, Classifier::Default(), {}).steps.at(0));
  EXPECT_EQ(x.communication, y.communication);
  EXPECT_EQ(x.bubble, y.bubble);
  EXPECT_LE(std::abs(x.overlapped - y.overlapped), 2 * 125 * static_cast<int64_t>(a.size()));
  EXPECT_EQ(x.computing, y.computing);
}

TEST(AscendTextReader, DamagedFilesGiveThePartThatIsReadableWithNamedCounts) {
  auto t = ReadTrace(Data("ascend_text/damaged/node-a_41002_20251126094000123_ascend_pt"));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->rank, 2);
  // A start that is no number, a row cut short, an unterminated quote.
  EXPECT_EQ(t->diagnostics.Get("ascend_text_bad_row"), 3u);
  EXPECT_EQ(t->diagnostics.Get("negative_duration"), 1u);  // kept, as zero
  EXPECT_EQ(t->diagnostics.Get("ascend_text_corrupt"), 1u);
  EXPECT_EQ(Rows(*t, Compute).size(), 18u - 2u);  // the bad start, the row cut short
  EXPECT_LE(Rows(*t, Comm).size(), 1u);  // the file is cut inside its second operator
  EXPECT_FALSE(t->diagnostics.details.empty());
}

TEST(AscendTextReader, ReadsTheRealKernelDetailsSampleExactly) {
  std::ifstream f(Data("fixtures/ascend/kernel_details.csv"));
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string csv = ss.str();
  Trace t;
  ASSERT_TRUE(ReadAscendTextBytes(csv, "sample", {}, &t).ok());
  const size_t lines = static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')) + (csv.back() != '\n');
  EXPECT_EQ(t.size(), lines - 1);  // every row but the header
  EXPECT_EQ(t.diagnostics.Get("ascend_text_bad_row"), 0u);
  EXPECT_EQ(t.diagnostics.Get("ascend_text_missing_file"), 1u);  // no communication.json given
  // "1736413971558972.912\t" µs, 185.504 µs: exact, no double on the way.
  bool seen = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.ts[i] != 1736413971558972912) continue;
    EXPECT_EQ(t.dur[i], 185504);
    EXPECT_EQ(t.str(t.name[i]), "aclnnMatmul_MatMulCommon_MatMulV2");
    EXPECT_EQ(t.str(t.category[i]), "AI_CORE");
    EXPECT_EQ(t.str(t.shapes[i]), "81920,4096;8192,512");
    EXPECT_EQ(t.tracks[t.track[i]].stream, 2);
    seen = true;
  }
  EXPECT_TRUE(seen);
  ASSERT_EQ(t.steps.size(), 1u);  // every row says Step Id 19
  EXPECT_EQ(t.steps[0].step, 19);
}

// A real torch_npu text folder (Apache-2.0 sample of lishanni/npu-mfu-analyzer, 200 kernel rows of a
// Qwen run on device 4; no communication.json, no trace_view.json: PROVENANCE.md). Expected
// values computed with Python's csv and decimal modules from the file.
TEST(AscendTextReader, ReadsARealTextOnlyFolderWithItsHcclOperatorsFromKernelDetails) {
  const std::string dir = Data("ascend_text/real/npu_mfu_analyzer/ascend_sample_rank0");
  auto f = FindAscendFolder(dir);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->rank, 0);
  auto t = ReadTrace(dir);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, "ascend-text");
  EXPECT_EQ(t->rank, 0);
  EXPECT_EQ(t->diagnostics.Get("ascend_text_bad_row"), 0u);
  EXPECT_EQ(t->diagnostics.Get("ascend_text_missing_file"), 1u);  // communication.json
  const auto kernels = Rows(*t, [](const std::string& c) { return c != "communication"; });
  const auto comm = Rows(*t, Comm);
  ASSERT_EQ(kernels.size(), 159u);
  ASSERT_EQ(comm.size(), 41u);  // the COMMUNICATION rows: hcom_allGather__503_*
  EXPECT_EQ(std::get<0>(kernels.front()), 1777097775243356820);  // "1777097775243356.820\t", unquoted
  EXPECT_EQ(std::get<4>(kernels.front()), 47);
  int64_t comm_sum = 0;
  for (size_t i = 0; i < t->size(); ++i) {
    if (t->str(t->category[i]) != "communication") {
      EXPECT_EQ(t->tracks[t->track[i]].device, 4);
      continue;
    }
    comm_sum += t->dur[i];
    EXPECT_EQ(t->str(t->collective[i]), "allGather");
    EXPECT_EQ(t->tracks[t->track[i]].name, "HCCL #503");
  }
  EXPECT_EQ(comm_sum, 85158560);
  const MsprofRow m = MsprofFromStep(AnalyseTrace(*t, Classifier::Default(), {}).steps.at(0));
  EXPECT_EQ(m.computing, 3636780);      // the union of the compute rows (none overlap)
  EXPECT_EQ(m.communication, 85158560);
}

TEST(AscendTextReader, OverlappingStepRangesGiveTheOverlapToTheEarlierStep) {
  // Step 1's all-reduce (stream-less lane) runs until 30 µs; step 2's first kernel starts at 25 µs.
  const std::string text =
      "Step Id,Stream ID,Name,Accelerator Core,Start Time(us),Duration(us)\n"
      "1,2,MatMul,AI_CORE,10.000,10.000\n"
      "2,2,Add,AI_VECTOR_CORE,25.000,10.000\n"
      "\n\x1e\n"
      "{\"step1\": {\"collective\": {\"hcom_allReduce__1_0_1@g\": {\"Communication Time Info\": "
      "{\"Start Timestamp(us)\": 20.000, \"Elapse Time(ms)\": 0.010}}}, \"p2p\": {}}}";
  Trace t;
  ASSERT_TRUE(ReadAscendTextBytes(text, "x", {}, &t).ok());
  ASSERT_EQ(t.steps.size(), 2u);
  EXPECT_EQ(t.steps[0].start_ns, 10000);
  EXPECT_EQ(t.steps[0].end_ns, 30000);  // torch_npu's ranges: [10, 30) and [25, 35)
  EXPECT_EQ(t.steps[1].start_ns, 25000);
  TraceAnalysis a = AnalyseTrace(t, Classifier::Default(), {});
  ASSERT_EQ(a.steps.size(), 2u);
  EXPECT_EQ(a.steps[0].window.end, 30000);
  EXPECT_EQ(a.steps[1].window.start, 30000);  // windows never overlap
  const MsprofRow x = MsprofFromStep(a.steps[0]), y = MsprofFromStep(a.steps[1]);
  EXPECT_EQ(x.computing, 15000);  // MatMul and 5 µs of Add
  EXPECT_EQ(y.computing, 5000);
  EXPECT_EQ(x.overlapped, 5000);
}

TEST(AscendTextReader, MissingColumnsFilesAndGarbageAreCountedNotFatal) {
  Trace a;
  ASSERT_TRUE(ReadAscendTextBytes("Name,Duration(us)\nMatMul,3.0\n", "x", {}, &a).ok());
  EXPECT_EQ(a.diagnostics.Get("ascend_text_missing_column"), 1u);
  EXPECT_EQ(a.size(), 0u);
  Trace e;  // an empty kernel_details.csv (a killed writer): named, not silently nothing
  ASSERT_TRUE(ReadAscendTextBytes("", "x", {}, &e).ok());
  EXPECT_EQ(e.diagnostics.Get("ascend_text_missing_column"), 1u);
  // The older op_summary-style header.
  Trace v1;
  ASSERT_TRUE(ReadAscendTextBytes("Op Name,OP Type,Task Type,Task Start Time(us),Task Duration(us)\n"
                                  "MatMul,MatMul,AI_CORE,\"10.5\t\",2.25\n",
                                  "x", {}, &v1).ok());
  ASSERT_EQ(v1.size(), 1u);
  EXPECT_EQ(v1.ts[0], 10500);
  EXPECT_EQ(v1.dur[0], 2250);
  EXPECT_EQ(v1.str(v1.name[0]), "MatMul");
  EXPECT_EQ(v1.str(v1.category[0]), "AI_CORE");
  Trace b;
  ASSERT_TRUE(ReadAscendTextBytes("\n\x1e\n{\"step\": {\"collective\": {\"hcom_allGather__9_0_1@g\": "
                                  "{\"Communication Time Info\": {\"Start Timestamp(us)\": 1e3, "
                                  "\"Elapse Time(ms)\": 0.5}}}}}",
                                  "x", {}, &b).ok());
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b.ts[0], 1000000);
  EXPECT_EQ(b.dur[0], 500000);
  EXPECT_EQ(b.str(b.collective[0]), "allGather");
  EXPECT_EQ(b.str(b.group[0]), "g");
  EXPECT_EQ(b.bytes[0], -1);
  for (const char* junk : {"", "\n\x1e\n", "\xEF\xBB\xBF\"", "\n\x1e\n[[[[[[", "\n\x1e\n{\"a\":{\"b\":{\"c\":{}}}}",
                           "Start Time(us),Duration(us)\n1e400,1\n-9223372036854775808,5\n1,1e19\n"}) {
    Trace t;
    EXPECT_TRUE(ReadAscendTextBytes(junk, "junk", {}, &t).ok()) << junk;
  }
  Trace c;
  AscendTextFiles none;
  EXPECT_FALSE(ReadAscendText(none, "empty", {}, &c).ok());
}

// Issue 35: data lost without a word. CR-only line ends read every row; a row cut short (a
// killed writer) is a bad row, not a kernel with a cut number; a header without rows and a
// communication.json that is null, a list or a string are named.
TEST(AscendTextReader, CutRowsLoneCrLineEndsAndEmptyOrNonObjectFilesAreNamed) {
  const std::string header = "Step Id,Name,Accelerator Core,Start Time(us),Duration(us),Input Shapes\n";
  Trace cr;
  std::string cr_text = header + "1,MatMul,AI_CORE,10,2,\"1,2\"\n1,Add,AI_VECTOR_CORE,20,3,\"4\"\n";
  std::replace(cr_text.begin(), cr_text.end(), '\n', '\r');
  ASSERT_TRUE(ReadAscendTextBytes(cr_text, "cr", {}, &cr).ok());
  EXPECT_EQ(cr.size(), 2u) << ::testing::PrintToString(cr.diagnostics.Lines());
  Trace crlf;
  std::string crlf_text;
  for (char c : header + "1,MatMul,AI_CORE,10,2,\"1,2\"\n") crlf_text += c == '\n' ? std::string("\r\n") : std::string(1, c);
  ASSERT_TRUE(ReadAscendTextBytes(crlf_text, "crlf", {}, &crlf).ok());
  EXPECT_EQ(crlf.size(), 1u);
  EXPECT_EQ(crlf.diagnostics.Get("ascend_text_bad_row"), 0u) << ::testing::PrintToString(crlf.diagnostics.Lines());

  Trace cut;  // the last row cut inside its duration: "2.5" became "2"
  ASSERT_TRUE(ReadAscendTextBytes(header + "1,MatMul,AI_CORE,10,2,\"1\"\n1,Add,AI_CORE,20,2", "cut", {}, &cut).ok());
  EXPECT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut.diagnostics.Get("ascend_text_bad_row"), 1u);

  Trace only_header;
  ASSERT_TRUE(ReadAscendTextBytes(header, "h", {}, &only_header).ok());
  EXPECT_EQ(only_header.size(), 0u);
  EXPECT_EQ(only_header.diagnostics.Get("ascend_text_empty"), 1u);

  for (const char* comm : {"null", "[]", "[{\"a\": 1}]", "\"text\"", "42"}) {
    Trace t;
    ASSERT_TRUE(ReadAscendTextBytes(std::string("\n\x1e\n") + comm, "comm", {}, &t).ok()) << comm;
    EXPECT_EQ(t.diagnostics.Get("ascend_text_corrupt"), 1u) << comm;
    ASSERT_FALSE(t.diagnostics.details.empty());
    EXPECT_NE(t.diagnostics.details.back().find("where an object of steps was expected"), std::string::npos)
        << t.diagnostics.details.back();
  }
  Trace no_ops;
  ASSERT_TRUE(ReadAscendTextBytes("\n\x1e\n{\"step1\": {}}", "comm", {}, &no_ops).ok());
  EXPECT_EQ(no_ops.diagnostics.Get("ascend_text_empty"), 1u);
}

}  // namespace
}  // namespace rlprof::analysis
