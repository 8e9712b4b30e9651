// Readers over the shared fixtures (real traces written by torch.profiler / Kineto, a PyTorch
// build without Kineto, torch_npu) plus hand-made hostile inputs. Expected counts were
// obtained independently with Python's json module (see docs/formats.md, "Analysis readers").
#include "src/analysis/readers/readers.h"

#include <gtest/gtest.h>

#include <cctype>
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "src/format/test_util.h"

namespace rlprof::analysis {
namespace {

namespace fs = std::filesystem;

std::string Fixture(const std::string& rel) { return std::string(RLPROF_FIXTURES_DIR) + "/" + rel; }

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::string Gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

std::string WriteFile(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::string p = dir + "/" + name;
  std::ofstream(p, std::ios::binary) << bytes;
  return p;
}

size_t CountIf(const Trace& t, const std::function<bool(size_t)>& pred) {
  size_t n = 0;
  for (size_t i = 0; i < t.size(); ++i) n += pred(i) ? 1 : 0;
  return n;
}

std::vector<int64_t> StepNumbers(const Trace& t) {
  std::vector<int64_t> v;
  for (const Marker& m : t.steps) v.push_back(m.step);
  return v;
}

struct FixtureCase {
  const char* path;
  const char* format;
  size_t slices;  // X + i events with a ts (Python json)
  std::vector<int64_t> steps;
  int64_t rank, world_size;
  size_t device_slices;  // kernel / gpu_memcpy / gpu_memset / gpu_user_annotation
};

class FixtureTest : public ::testing::TestWithParam<FixtureCase> {};

TEST_P(FixtureTest, ReadsEveryEventWithItsStepsAndIdentity) {
  const FixtureCase& c = GetParam();
  auto t = ReadTrace(Fixture(c.path));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->format, c.format);
  EXPECT_EQ(t->size(), c.slices);
  EXPECT_EQ(StepNumbers(*t), c.steps);
  EXPECT_EQ(t->rank, c.rank);
  EXPECT_EQ(t->world_size, c.world_size);
  size_t dev = CountIf(*t, [&](size_t i) {
    return t->tracks[t->track[i]].type == TrackType::kDeviceStream;
  });
  EXPECT_EQ(dev, c.device_slices);
  EXPECT_EQ(t->diagnostics.Get("truncated_input"), 0u);
  EXPECT_EQ(t->diagnostics.Get("json_syntax_error"), 0u);
  EXPECT_EQ(t->diagnostics.Get("invalid_utf8_bytes"), 0u);
}

INSTANTIATE_TEST_SUITE_P(
    SharedFixtures, FixtureTest,
    ::testing::Values(
        FixtureCase{"kineto/hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz", "kineto", 115,
                    {1, 2}, -1, -1, 18},
        FixtureCase{"kineto/hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", "kineto", 18,
                    {551}, 34, 300, 0},
        FixtureCase{"kineto/hta_nccl_parser_config_nccl_data.json.gz", "kineto", 26935, {4, 5, 6}, 0, 2,
                    3804},
        FixtureCase{"kineto/hta_trace_compare_base_base.json.gz", "kineto", 33, {1009, 1010}, 1, -1, 18},
        FixtureCase{"kineto/hta_trace_compare_test_test.json.gz", "kineto", 34, {1009, 1010}, 1, -1, 17},
        FixtureCase{"kineto/hta_trace_diff_control_control.json.gz", "kineto", 74939,
                    {1009, 1010, 1011, 1012, 1013, 1014}, 3, 8, 9450},
        FixtureCase{"kineto/hta_trace_diff_test_test.json.gz", "kineto", 68326,
                    {1009, 1010, 1011, 1012, 1013, 1014}, 1, 2, 15632},
        FixtureCase{"kineto/tracelens_h100_falconsai/trace.json.gz", "kineto", 4539, {6}, -1, -1, 157},
        // torch.profiler of the GRPO example on an H100 (no schedule: no ProfilerStep#).
        FixtureCase{"kineto/grpo_tiny_h100_torch_step2.json.gz", "kineto", 20586, {}, -1, -1, 3006},
        FixtureCase{"torch113_legacy_gloo_ddp_rank0.json", "torch-legacy", 6158,
                    {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, -1, -1, 0},
        // Ascend: 276 "Ascend Hardware" tasks are device activity.
        FixtureCase{"ascend/trace_view.json", "ascend", 2212, {1}, -1, -1, 276}),
    // Readable test names: the fixture file's base name, letters and digits only.
    [](const ::testing::TestParamInfo<FixtureCase>& info) {
      std::string name = info.param.path;
      name = name.substr(name.find_last_of('/') + 1);
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name + "_" + std::to_string(info.index);
    });

TEST(KinetoReader, LinksKernelsToLaunchesAndKeepsShapesBytesAndGroups) {
  auto t = ReadTrace(Fixture("kineto/hta_nccl_parser_config_nccl_data.json.gz"));
  ASSERT_TRUE(t.ok());
  // Every kernel carries the correlation id of its launch, and a runtime call has the same id.
  std::set<int64_t> runtime_corr;
  size_t kernels = 0, linked = 0;
  for (size_t i = 0; i < t->size(); ++i)
    if (t->str(t->category[i]) == "cuda_runtime" && t->correlation[i] >= 0)
      runtime_corr.insert(t->correlation[i]);
  for (size_t i = 0; i < t->size(); ++i) {
    if (t->str(t->category[i]) != "kernel") continue;
    ++kernels;
    linked += runtime_corr.count(t->correlation[i]);
  }
  EXPECT_EQ(kernels, 2700u);
  EXPECT_EQ(linked, kernels);
  // 1074 copies/memsets with args.bytes; NCCL kernels get In msg nelems × dtype size.
  size_t with_bytes = CountIf(*t, [&](size_t i) { return t->bytes[i] >= 0; });
  EXPECT_GE(with_bytes, 1074u);
  size_t nccl_bytes = CountIf(*t, [&](size_t i) {
    return t->str(t->category[i]) == "kernel" && t->bytes[i] > 0 &&
           t->str(t->name[i]).find("nccl") != std::string::npos;
  });
  EXPECT_GT(nccl_bytes, 0u);
  size_t grouped = CountIf(*t, [&](size_t i) { return t->group[i] != 0; });
  EXPECT_GT(grouped, 0u);
  // GPU streams are named and belong to a device.
  for (const Track& tr : t->tracks)
    if (tr.type == TrackType::kDeviceStream) {
      EXPECT_GE(tr.device, 0);
      EXPECT_FALSE(tr.name.empty());
    }
}

TEST(KinetoReader, KeepsInputDimsAsCompactShapes) {
  auto t = ReadTrace(Fixture("kineto/tracelens_h100_falconsai/trace.json.gz"));
  ASSERT_TRUE(t.ok());
  size_t shaped = CountIf(*t, [&](size_t i) { return t->shapes[i] != 0; });
  EXPECT_EQ(shaped, 1258u);  // every cpu_op with "Input Dims"
  bool linear = false;
  for (size_t i = 0; i < t->size(); ++i)
    if (t->str(t->name[i]) == "aten::linear" &&
        t->str(t->shapes[i]) == "[[4,197,768],[768,768],[768]]")
      linear = true;
  EXPECT_TRUE(linear);
}

TEST(LegacyReader, MapsCpuFunctionsAndClampsOneMicrosecondOverhangs) {
  auto t = ReadTrace(Fixture("torch113_legacy_gloo_ddp_rank0.json"));
  ASSERT_TRUE(t.ok());
  // One process ("CPU functions"), threads 1, 2, 3 (gloo workers).
  std::set<int64_t> tids;
  for (const Track& tr : t->tracks) {
    EXPECT_EQ(tr.process_name, "CPU functions");
    tids.insert(tr.tid);
  }
  EXPECT_EQ(tids, (std::set<int64_t>{1, 2, 3}));
  // rl/rollout, rl/forward, rl/backward, rl/optim: 20 each.
  std::map<std::string, int> stages;
  for (const Marker& m : t->stages) ++stages[m.name];
  EXPECT_EQ(stages, (std::map<std::string, int>{{"backward", 20}, {"forward", 20}, {"optim", 20},
                                                {"rollout", 20}}));
  for (const Marker& m : t->stages) EXPECT_GE(m.step, 1);
  size_t cpu_ops = CountIf(*t, [&](size_t i) { return t->str(t->category[i]) == "cpu_op"; });
  size_t gloo = CountIf(*t, [&](size_t i) { return t->str(t->name[i]) == "gloo:all_reduce"; });
  EXPECT_GT(cpu_ops, 5000u);
  EXPECT_GT(gloo, 0u);
  EXPECT_EQ(t->diagnostics.Get("improper_nesting"), 0u);
  // Integer-µs relative timestamps → ns.
  EXPECT_EQ(t->ts[0] % 1000, 0);
}

TEST(AscendReader, ParsesStringMicrosecondsExactly) {
  auto t = ReadTrace(Fixture("ascend/trace_view.json"));
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->steps.size(), 1u);
  // "ts": "1704161511420289.011", "dur": 14091.97
  EXPECT_EQ(t->steps[0].start_ns, 1704161511420289011);
  EXPECT_EQ(t->steps[0].end_ns, 1704161511420289011 + 14091970);
  EXPECT_EQ(t->diagnostics.Get("string_ts"), 0u);  // normal for Ascend
}

TEST(JsonReader, ParsesMicrosecondTextIntoExactNanoseconds) {
  std::string dir = format::TestDir();
  std::string p = WriteFile(dir, "t.json",
                            R"({"traceEvents": [
      {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 1723456789012.345, "dur": 0.001},
      {"ph": "X", "name": "b", "pid": 1, "tid": 1, "ts": "1723456789012.999", "dur": 1.0005},
      {"ph": "X", "name": "c", "pid": 1, "tid": 1, "ts": 1723456789013, "dur": 2e0}]})");
  auto t = ReadTrace(p);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ(t->ts[0], 1723456789012345);
  EXPECT_EQ(t->dur[0], 1);
  EXPECT_EQ(t->ts[1], 1723456789012999);
  EXPECT_EQ(t->dur[1], 1001);  // half rounds away from zero
  EXPECT_EQ(t->ts[2], 1723456789013000);
  EXPECT_EQ(t->dur[2], 2000);
  EXPECT_EQ(t->diagnostics.Get("string_ts"), 1u);
}

TEST(JsonReader, NamesEveryProblemOfAHostileFile) {
  std::string dir = format::TestDir();
  std::string text = R"({"traceEvents": [
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": "10.5", "dur": "2",},
    {"ph": "X", "name": "b)" "\xff\xfe" R"(", "pid": 1, "tid": 1, "ts": 20, "dur": 1},
    {"ph": "Z", "name": "weird", "pid": 1, "tid": 1, "ts": 30},
    {"ph": "P", "name": "sample", "pid": 1, "tid": 1, "ts": 31},
    {"ph": "B", "name": "open", "pid": 1, "tid": 2, "ts": 40},
    {"ph": "E", "pid": 1, "tid": 3, "ts": 50},
    {"ph": "X", "name": "nan", "pid": 1, "tid": 1, "ts": NaN, "dur": 1},
    {"ph": "X", "name": "neg", "pid": 1, "tid": 1, "ts": 60, "dur": -5},
    {"ph": "X", "name": "nodur", "pid": 1, "tid": 1, "ts": 70},
    {"ph": "X", "name": "labels", "pid": "Spans", "tid": "lane A", "ts": 80, "dur": 1},
    {"ph": "C", "name": "mem", "pid": 1, "ts": 90, "args": {"used": 5, "free": "7.5"}},
    {"ph": "b", "cat": "io", "id": "0x1", "name": "read", "pid": 1, "tid": 1, "ts": 100},
    {"ph": "e", "cat": "io", "id": "0x1", "pid": 1, "tid": 4, "ts": 130},
    17,
  ],
  "distributedInfo": {"rank": 3, "world_size": 8},})";
  auto t = ReadTrace(WriteFile(dir, "hostile.json", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  const Diagnostics& d = t->diagnostics;
  EXPECT_EQ(d.Get("trailing_commas"), 3u);
  EXPECT_EQ(d.Get("invalid_utf8_bytes"), 2u);
  EXPECT_EQ(d.Get("string_ts"), 1u);
  EXPECT_EQ(d.Get("unknown_phase"), 2u);
  EXPECT_EQ(d.Get("unmatched_begin"), 1u);
  EXPECT_EQ(d.Get("unmatched_end"), 1u);
  EXPECT_EQ(d.Get("invalid_ts"), 1u);
  EXPECT_EQ(d.Get("negative_duration"), 1u);
  EXPECT_EQ(d.Get("missing_dur"), 1u);
  EXPECT_EQ(d.Get("non_object_event"), 1u);
  EXPECT_EQ(d.Get("json_syntax_error"), 0u);
  // a, b, neg, nodur, labels, read (async).
  EXPECT_EQ(t->size(), 6u);
  std::set<std::string> names;
  for (size_t i = 0; i < t->size(); ++i) names.insert(t->str(t->name[i]));
  EXPECT_EQ(names, (std::set<std::string>{"a", "b??", "neg", "nodur", "labels", "read"}));
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->world_size, 8);
  ASSERT_EQ(t->counters.size(), 2u);
  // String pids/tids keep their text as labels.
  bool found = false;
  for (const Track& tr : t->tracks)
    if (tr.process_name == "Spans" && tr.name == "lane A") found = true;
  EXPECT_TRUE(found);
}

TEST(JsonReader, KeepsEveryCompleteEventBeforeATruncation) {
  const std::string full = Slurp(Fixture("torch113_legacy_gloo_ddp_rank0.json"));
  ASSERT_EQ(full.size(), 671897u);
  std::string dir = format::TestDir();
  // Complete events before each cut, counted with Python's json.JSONDecoder.raw_decode.
  const std::pair<size_t, size_t> cases[] = {
      {100000, 923}, {333333, 3061}, {600000, 5499}, {671896, 6158}};
  for (auto [cut, expect] : cases) {
    std::string p = WriteFile(dir, "cut" + std::to_string(cut) + ".json", full.substr(0, cut));
    auto t = ReadTrace(p);
    ASSERT_TRUE(t.ok()) << cut;
    EXPECT_EQ(t->size(), expect) << cut;
    EXPECT_EQ(t->diagnostics.Get("truncated_input"), 1u) << cut;
    EXPECT_EQ(t->format, "torch-legacy");
  }
}

TEST(JsonReader, ReadsAPrefixOfATruncatedKinetoObjectAndItsLeadingMetadata) {
  const std::string full = Gunzip(Fixture("kineto/hta_nccl_parser_config_nccl_data.json.gz"));
  std::string dir = format::TestDir();
  size_t last = 0;
  for (size_t cut : {full.size() / 4, full.size() / 2, full.size() - 200}) {
    std::string p = WriteFile(dir, "cut" + std::to_string(cut) + ".json", full.substr(0, cut));
    auto t = ReadTrace(p);
    ASSERT_TRUE(t.ok());
    EXPECT_GT(t->size(), last);
    EXPECT_LE(t->size(), 26935u);
    EXPECT_EQ(t->diagnostics.Get("truncated_input"), 1u);
    EXPECT_EQ(t->diagnostics.Get("json_syntax_error"), 0u);
    EXPECT_EQ(t->rank, 0);  // distributedInfo precedes traceEvents here
    last = t->size();
  }
  // A cut gzip stream: the inflated prefix is read and the cut is reported once.
  const std::string gz = Slurp(Fixture("kineto/hta_nccl_parser_config_nccl_data.json.gz"));
  auto t = ReadTrace(WriteFile(dir, "cut.json.gz", gz.substr(0, gz.size() / 2)));
  ASSERT_TRUE(t.ok());
  EXPECT_GT(t->size(), 1000u);
  EXPECT_LT(t->size(), 26935u);
  EXPECT_EQ(t->diagnostics.Get("truncated_input"), 1u);
  EXPECT_EQ(t->diagnostics.Get("truncated_gzip"), 1u);
}

TEST(JsonReader, RejectsWhatIsNotATrace) {
  std::string dir = format::TestDir();
  EXPECT_FALSE(ReadTrace(dir + "/missing.json").ok());
  EXPECT_FALSE(ReadTrace(WriteFile(dir, "empty.json", "")).ok());
  EXPECT_FALSE(ReadTrace(WriteFile(dir, "text.json", "hello world")).ok());
  EXPECT_FALSE(ReadTrace(dir).ok());  // a directory that is no capture
  // A JSON object without events is read (with a diagnostic), not rejected.
  auto t = ReadTrace(WriteFile(dir, "meta.json", R"({"schemaVersion": 1})"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 0u);
  EXPECT_EQ(t->diagnostics.Get("no_trace_events"), 1u);
}

TEST(JsonReader, PairsBeginEndPerThreadAndBindsFlowsToSlices) {
  std::string dir = format::TestDir();
  auto t = ReadTrace(WriteFile(dir, "be.json", R"([
    {"ph": "B", "name": "outer", "pid": 1, "tid": 1, "ts": 0},
    {"ph": "B", "name": "inner", "pid": 1, "tid": 1, "ts": 1},
    {"ph": "B", "name": "other", "pid": 1, "tid": 2, "ts": 2},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 3},
    {"ph": "E", "pid": 1, "tid": 2, "ts": 4},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 5},
    {"ph": "X", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 6, "dur": 1},
    {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 1, "tid": 1, "ts": 6},
    {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 9, "dur": 2},
    {"ph": "f", "cat": "ac2g", "name": "ac2g", "id": 77, "pid": 0, "tid": 7, "ts": 9, "bp": "e"}
  ])"));
  ASSERT_TRUE(t.ok());
  std::map<std::string, std::pair<int64_t, int64_t>> got;  // name → (dur, correlation)
  for (size_t i = 0; i < t->size(); ++i) got[t->str(t->name[i])] = {t->dur[i], t->correlation[i]};
  EXPECT_EQ(got["outer"].first, 5000);
  EXPECT_EQ(got["inner"].first, 2000);
  EXPECT_EQ(got["other"].first, 2000);
  EXPECT_EQ(got["cudaLaunchKernel"].second, 77);
  EXPECT_EQ(got["k"].second, 77);
  EXPECT_EQ(t->format, "chrome");
  EXPECT_TRUE(t->diagnostics.counts.empty());
}

TEST(JsonReader, DropsInstantsWhenAsked) {
  std::string dir = format::TestDir();
  std::string p = WriteFile(dir, "i.json", R"([
    {"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": 0, "dur": 5},
    {"ph": "i", "name": "mark", "pid": 1, "tid": 1, "ts": 1, "s": "t"},
    {"ph": "n", "cat": "c", "id": 1, "name": "async mark", "pid": 1, "tid": 1, "ts": 2}])");
  auto all = ReadTrace(p);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 3u);
  auto some = ReadTrace(p, {.keep_instants = false});
  ASSERT_TRUE(some.ok());
  ASSERT_EQ(some->size(), 1u);
  EXPECT_EQ(some->str(some->name[0]), "a");
}

TEST(JsonReader, ReadsManyChunksOfALargeGzipTraceLikeOneChunk) {
  // The diff fixture is 33 MiB of JSON: ~265 chunks of 128 KiB, every event kept.
  auto t = ReadTrace(Fixture("kineto/hta_trace_diff_control_control.json.gz"));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), 74939u);
  EXPECT_EQ(t->diagnostics.Get("json_syntax_error"), 0u);
  // 8568 kernels, each linked to its launch through the async_cpu_to_gpu flows.
  size_t kernels = 0, linked = 0;
  for (size_t i = 0; i < t->size(); ++i) {
    if (t->str(t->category[i]) != "kernel") continue;
    ++kernels;
    linked += t->correlation[i] >= 0 ? 1 : 0;
  }
  EXPECT_EQ(kernels, 8568u);
  EXPECT_EQ(linked, kernels);
}

TEST(JsonReader, RepairsInvalidUtf8InAnyChunkAndInTheMetadata) {
  // Simdjson validates each 128 KiB chunk as it indexes it: bad bytes far into the events
  // array and in the metadata are repaired and counted, and no event is lost.
  std::string dir = format::TestDir();
  std::string text = "{\"distributedInfo\": {\"rank\": 2, \"x\": \"\xff\"},\n\"traceEvents\": [\n";
  const int n = 20000;  // ≈ 1.5 MiB: a dozen chunks
  for (int i = 0; i < n; ++i) {
    std::string name = "op" + std::to_string(i);
    if (i == 15000) name += "\xc3(";   // a lead byte without its continuation
    if (i == 19999) name += "\xe2\x82";  // truncated three-byte sequence
    text += "{\"ph\": \"X\", \"name\": \"" + name + "\", \"pid\": 1, \"tid\": 1, \"ts\": " +
            std::to_string(i * 10) + ", \"dur\": 5}";
    text += i + 1 < n ? ",\n" : "\n";
  }
  text += "]}";
  auto t = ReadTrace(WriteFile(dir, "utf8.json", text));
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->size(), static_cast<size_t>(n));
  EXPECT_EQ(t->rank, 2);
  EXPECT_EQ(t->diagnostics.Get("json_syntax_error"), 0u);
  EXPECT_EQ(t->diagnostics.Get("invalid_utf8_bytes"), 4u);  // 1 + 1 + 2
  EXPECT_EQ(t->str(t->name[15000]), "op15000?(");
  EXPECT_EQ(t->str(t->name[19999]), "op19999??");
}

TEST(JsonReader, SurvivesRandomDamageWithoutCrashing) {
  // Deterministic mutations of a small real trace: flipped bytes, cut ranges, inserted
  // quotes/brackets/commas. Each read must return (ok, or an error Status), never crash.
  const std::string base = Gunzip(Fixture("kineto/hta_trace_compare_base_base.json.gz"));
  ASSERT_GT(base.size(), 1000u);
  std::string dir = format::TestDir();
  uint64_t x = 0x9E3779B97F4A7C15ull;
  auto next = [&x]() {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  const char kNoise[] = "\"{}[],:\\\xff\x80 0e-";
  size_t ok = 0;
  for (int round = 0; round < 300; ++round) {
    std::string s = base;
    int edits = 1 + static_cast<int>(next() % 4);
    for (int k = 0; k < edits && !s.empty(); ++k) {
      size_t at = next() % s.size();
      switch (next() % 3) {
        case 0:
          s[at] = kNoise[next() % (sizeof kNoise - 1)];
          break;
        case 1:
          s.erase(at, 1 + next() % 64);
          break;
        default:
          s.insert(at, 1, kNoise[next() % (sizeof kNoise - 1)]);
          break;
      }
    }
    auto t = ReadTrace(WriteFile(dir, "m.json", s));
    if (t.ok()) {
      ++ok;
      EXPECT_LE(t->size(), 40u);
      for (size_t i = 0; i < t->size(); ++i) EXPECT_GE(t->dur[i], 0);
    }
  }
  EXPECT_GT(ok, 250u);  // damage in one event costs that event (or its chunk), not the file
}

TEST(JsonReader, MapsLargeFilesEndingExactlyOnAPageBoundary) {
  // ≥ 1 MiB plain files are memory-mapped; the padding after the last byte must still be
  // readable when the size is a multiple of the page size, complete or cut inside a string.
  std::string dir = format::TestDir();
  std::string body = "[";
  size_t events = 0;
  while (body.size() < (2u << 20) - 200) {
    body += std::string(events ? "," : "") + R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": )" +
            std::to_string(events * 10) + R"(, "dur": 5})";
    ++events;
  }
  std::string complete = body + "]";
  complete.insert(complete.size() - 1, (2u << 20) - complete.size(), ' ');
  ASSERT_EQ(complete.size(), 2u << 20);
  auto t = ReadTrace(WriteFile(dir, "page.json", complete));
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->size(), events);
  EXPECT_TRUE(t->diagnostics.counts.empty());
  std::string cut = body + R"(,{"ph": "X", "name": "unterminated)";
  cut.insert(cut.size() - 5, (2u << 20) - cut.size(), 'x');
  ASSERT_EQ(cut.size(), 2u << 20);
  auto u = ReadTrace(WriteFile(dir, "cut.json", cut));
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->size(), events);
  EXPECT_EQ(u->diagnostics.Get("truncated_input"), 1u);
}

TEST(FindTraceInputs, ExpandsDirectoriesToCapturesAndTraceFiles) {
  std::string dir = format::TestDir();
  fs::create_directories(dir + "/run/step1/e2e/rank0-h-1");
  WriteFile(dir + "/run/step1/e2e/rank0-h-1", "manifest.json", "{}");
  WriteFile(dir + "/run/step1/e2e/rank0-h-1", "extra.json", R"({"traceEvents": []})");
  fs::create_directories(dir + "/torch");
  WriteFile(dir + "/torch", "r0.pt.trace.json", R"({"traceEvents": []})");
  WriteFile(dir + "/torch", "config.json", R"({"lr": 1})");
  WriteFile(dir + "/torch", "notes.txt", "x");
  auto in = FindTraceInputs({dir});
  ASSERT_TRUE(in.ok());
  EXPECT_EQ(*in, (std::vector<std::string>{dir + "/run/step1/e2e/rank0-h-1",
                                           dir + "/torch/r0.pt.trace.json"}));
  EXPECT_FALSE(FindTraceInputs({dir + "/nope"}).ok());
  auto fixtures = FindTraceInputs({std::string(RLPROF_FIXTURES_DIR)});
  ASSERT_TRUE(fixtures.ok());
  EXPECT_EQ(fixtures->size(), 12u);  // 10 Kineto, 1 legacy, 1 Ascend; not cluster_communication.json
}

}  // namespace
}  // namespace rlprof::analysis

namespace rlprof::analysis {
namespace {

TEST(KinetoReader, KeepsTheCollectiveNameSoReceivesCanBeFound) {
  std::string dir = format::TestDir();
  std::string p = WriteFile(dir, "recv.json", R"json({"traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_SendRecv(ncclDevComm*)", "pid": 0,
       "tid": 7, "ts": 10.0, "dur": 5.0, "args": {"stream": 7, "device": 0,
       "Collective name": "recv", "correlation": 3}},
      {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)", "pid": 0,
       "tid": 7, "ts": 20.0, "dur": 5.0, "args": {"stream": 7, "device": 0, "correlation": 4}}
  ]})json");
  auto t = ReadTrace(p);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->size(), 2u);
  std::vector<std::string> names;
  for (size_t i = 0; i < t->size(); ++i) names.push_back(t->str(t->collective[i]));
  EXPECT_EQ(names, (std::vector<std::string>{"recv", ""}));
}

}  // namespace
}  // namespace rlprof::analysis
