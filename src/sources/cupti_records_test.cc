// CuptiRecordConverter: CUPTI structs → events, one kind at a time; NCCL collective names.
#include "src/sources/cupti_records.h"

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rlprof::sources {
namespace {

// A sink that numbers strings and tracks itself.
class RecordingSink : public runtime::SourceSink {
 public:
  bool Emit(uint32_t, const format::Event&, runtime::TimeBase) override { return true; }
  uint16_t AddTrack(format::TrackKind kind, uint64_t os_id, const std::string& name) override {
    tracks.push_back({kind, os_id, name});
    return static_cast<uint16_t>(tracks.size() + 10);
  }
  uint16_t ThreadTrack(uint64_t tid) override { return static_cast<uint16_t>(1000 + tid); }
  uint32_t Intern(std::string_view s) override {
    auto it = ids.find(std::string(s));
    if (it != ids.end()) return it->second;
    strings.emplace_back(s);
    return ids[std::string(s)] = static_cast<uint32_t>(strings.size());
  }
  bool Accepting(uint32_t) const override { return true; }
  std::string str(uint32_t id) const { return id == 0 ? "" : strings.at(id - 1); }
  struct Track {
    format::TrackKind kind;
    uint64_t os_id;
    std::string name;
  };
  std::vector<Track> tracks;
  std::vector<std::string> strings;
  std::map<std::string, uint32_t> ids;
};

TEST(NcclCollectiveTest, ParsesTheCollectiveOfBothNcclKernelNamings) {
  EXPECT_EQ(NcclCollective("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "AllReduce");
  EXPECT_EQ(NcclCollective("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)"), "AllGather");
  EXPECT_EQ(NcclCollective("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), "SendRecv");
  EXPECT_EQ(NcclCollective("ncclDevKernel_ReduceScatter_Sum_f32_RING_SIMPLE"), "ReduceScatter");
  EXPECT_EQ(NcclCollective("ncclDevKernel_Generic_1"), "Generic");
  EXPECT_EQ(NcclCollective("ampere_sgemm_128x64_nn"), "");
  EXPECT_EQ(NcclCollective("ncclDevKernel_"), "");
}

TEST(CuptiRecordConverterTest, AKernelLandsOnItsStreamWithCorrelationAndLaunchDetails) {
  RecordingSink sink;
  CuptiRecordConverter conv(&sink, nullptr);
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 1000;
  k.end = 1400;
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 13;
  k.gridX = 32, k.gridY = 1, k.gridZ = 1;
  k.blockX = 640, k.blockY = 1, k.blockZ = 1;
  k.registersPerThread = 96;
  k.dynamicSharedMemory = 4096;
  k.correlationId = 77;
  k.graphId = 5;
  k.graphNodeId = 9;
  k.name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  format::Event e;
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&k), 50, &e));
  EXPECT_EQ(e.ts_ns, 1050);
  EXPECT_EQ(e.payload, 400);
  EXPECT_EQ(e.kind, format::EventKind::kComplete);
  EXPECT_EQ(e.category, format::Category::kKernel);
  EXPECT_EQ(e.arg0, 77u);
  EXPECT_EQ(sink.str(e.arg1),
            "collective=AllReduce grid=32x1x1 block=640x1x1 regs=96 smem=0+4096 ctx=3 graph=5 node=9");
  ASSERT_EQ(sink.tracks.size(), 1u);
  EXPECT_EQ(sink.tracks[0].kind, format::TrackKind::kDeviceStream);
  EXPECT_EQ(sink.tracks[0].os_id, (uint64_t{1} << 32) | 13);
  EXPECT_EQ(sink.tracks[0].name, "GPU 1 stream 13");
  // The same launch again: nothing new interned, no new track.
  const size_t strings = sink.strings.size();
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&k), 0, &e));
  EXPECT_EQ(sink.strings.size(), strings);
  EXPECT_EQ(sink.tracks.size(), 1u);
  EXPECT_EQ(conv.counts().kernels, 2u);
  EXPECT_EQ(conv.counts().nccl_kernels, 2u);
}

TEST(CuptiRecordConverterTest, MangledKernelNamesAreDemangledAndAReusedNamePointerIsRechecked) {
  RecordingSink sink;
  CuptiRecordConverter conv(&sink, nullptr);
  char name[64];
  std::strcpy(name, "_Z6kernelPf");
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.end = 1;
  k.name = name;
  format::Event e;
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&k), 0, &e));
  EXPECT_EQ(sink.str(e.name), "kernel(float*)");
  std::strcpy(name, "other_kernel");  // CUPTI reused the memory for another name
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&k), 0, &e));
  EXPECT_EQ(sink.str(e.name), "other_kernel");
}

TEST(CuptiRecordConverterTest, CopiesSetsSyncsApiCallsAndExternalIds) {
  RecordingSink sink;
  CuptiRecordConverter conv(&sink, nullptr);
  format::Event e;
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  m.bytes = uint64_t{1} << 40;  // saturates
  m.start = 10;
  m.end = 30;
  m.streamId = 7;
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&m), 0, &e));
  EXPECT_EQ(e.category, format::Category::kMemcpy);
  EXPECT_EQ(sink.str(e.name), "Memcpy DtoH");
  EXPECT_EQ(sink.str(e.arg1), "DtoH");
  EXPECT_EQ(e.arg0, UINT32_MAX);

  CUpti_ActivityMemset4 s{};
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 4096;
  s.end = 5;
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&s), 0, &e));
  EXPECT_EQ(e.category, format::Category::kMemset);
  EXPECT_EQ(e.arg0, 4096u);

  CUpti_ActivityExternalCorrelation x{};
  x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  x.externalId = 12;
  x.correlationId = 5;
  EXPECT_FALSE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&x), 0, &e));  // remembered only

  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000;
  a.start = 100;
  a.end = 104;
  a.threadId = 42;
  a.correlationId = 5;
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&a), 0, &e));
  EXPECT_EQ(e.category, format::Category::kRuntime);
  EXPECT_EQ(sink.str(e.name), "runtime api 211");  // no CUPTI to name it here
  EXPECT_EQ(e.track, 1042);                        // the calling thread's track
  EXPECT_EQ(e.arg0, 5u);
  EXPECT_EQ(e.arg1, 12u);  // the external id pushed around the launch

  CUpti_ActivitySynchronization2 y{};
  y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  y.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  y.start = 200;
  y.end = 100;  // end before start: kept with no duration, counted
  ASSERT_TRUE(conv.Convert(reinterpret_cast<CUpti_Activity*>(&y), 0, &e));
  EXPECT_EQ(e.category, format::Category::kSync);
  EXPECT_EQ(sink.str(e.name), "cudaStreamSynchronize");
  EXPECT_EQ(e.payload, 0);
  EXPECT_EQ(conv.counts().bad_time, 1u);

  CUpti_Activity unknown{CUPTI_ACTIVITY_KIND_PC_SAMPLING};
  EXPECT_FALSE(conv.Convert(&unknown, 0, &e));
  EXPECT_EQ(conv.counts().other, 1u);
}

}  // namespace
}  // namespace rlprof::sources
