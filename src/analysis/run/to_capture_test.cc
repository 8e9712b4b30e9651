// Traces as captures (to_capture.h): what `rlprof export` writes for Kineto / torch / Ascend.
#include "src/analysis/run/to_capture.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "src/analysis/readers/readers.h"
#include "src/analysis/model/test_traces.h"
#include "src/format/export.h"

namespace rlprof::analysis {
namespace {

using format::Category;
const std::string kInputs = std::string(RLPROF_SOURCE_DIR) + "/test/golden/analysis/inputs/";

TEST(CaptureFromTraceTest, KeepsSlicesTracksAndCategoriesWithTheirArguments) {
  testing::TraceBuilder b;
  b.Step(3, 0, 100);
  b.Launch(42, 5);
  const size_t k = b.Kernel(7, "gemm", 10, 30, 42);
  Trace& t = b.trace();
  const size_t nccl = b.Kernel(20, "ncclDevKernel_AllReduce", 30, 50);
  t.bytes[nccl] = 4096;
  t.group[nccl] = t.Intern("tp");
  b.HostOp(b.host(), "aten::mm", "cpu_op", 8, 9);
  Track counter;  // a counter series, as the readers make them
  counter.type = TrackType::kCounter;
  counter.pid = 1;
  counter.name = "allocated";
  t.tracks.push_back(counter);
  t.counters.push_back({static_cast<uint32_t>(t.tracks.size() - 1), 20 * testing::kUs, 2.5});
  Trace tr = b.Build();
  format::Capture c = CaptureFromTrace(tr, Classifier::Default());
  ASSERT_EQ(c.raw.events.size(), tr.size() + 1);
  std::map<std::string, const format::Event*> by_name;
  for (const auto& e : c.raw.events) by_name[c.raw.str(e.name)] = &e;
  ASSERT_TRUE(by_name.count("gemm"));
  EXPECT_EQ(by_name["gemm"]->category, Category::kKernel);
  EXPECT_EQ(by_name["gemm"]->arg0, 42u);
  EXPECT_EQ(by_name["gemm"]->payload, 20 * testing::kUs);
  EXPECT_EQ(by_name["ncclDevKernel_AllReduce"]->category, Category::kCommunication);
  EXPECT_EQ(by_name["ncclDevKernel_AllReduce"]->arg0, 4096u);
  EXPECT_EQ(c.raw.str(by_name["ncclDevKernel_AllReduce"]->arg1), "tp");
  EXPECT_EQ(by_name["cudaLaunchKernel"]->category, Category::kRuntime);
  EXPECT_EQ(by_name["aten::mm"]->category, Category::kOperator);
  EXPECT_EQ(by_name["allocated"]->kind, format::EventKind::kCounter);
  EXPECT_DOUBLE_EQ(by_name["allocated"]->counter_value(), 2.5);
  // Device streams keep (device, stream); events are in time order.
  bool stream7 = false;
  for (const auto& tk : c.raw.tracks)
    stream7 = stream7 || (tk.kind == format::TrackKind::kDeviceStream && (tk.os_id & 0xffffffff) == 7);
  EXPECT_TRUE(stream7);
  for (size_t i = 1; i < c.raw.events.size(); ++i) EXPECT_LE(c.raw.events[i - 1].ts_ns, c.raw.events[i].ts_ns);
}

TEST(CaptureFromTraceTest, AKinetoTraceExportsToPftraceJsonAndSqlite) {
  auto t = ReadTrace(kInputs + "tracelens_h100_falconsai.json.gz");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  format::Capture c = CaptureFromTrace(*t, Classifier::Default());
  EXPECT_EQ(c.raw.events.size(), t->size() + t->counters.size());
  const std::string dir = (std::filesystem::temp_directory_path() / "rlprof_to_capture_test").string();
  std::filesystem::create_directories(dir);
  for (auto [f, ext] : {std::pair{format::ExportFormat::kPftrace, ".pftrace"},
                        std::pair{format::ExportFormat::kChromeJson, ".json"},
                        std::pair{format::ExportFormat::kSqlite, ".db"}}) {
    auto s = format::ExportCaptures({&c, 1}, f, dir + "/t" + ext);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->events, c.raw.events.size()) << ext;
    EXPECT_GT(s->bytes, 1000u) << ext;
  }
  // The Chrome JSON it wrote reads back with the same slices.
  auto back = ReadTrace(dir + "/t.json");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->size(), t->size());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace rlprof::analysis
