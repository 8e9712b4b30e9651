// CuptiRecordConverter: CUPTI structs → events, one kind at a time; NCCL collective names.
#include "src/sources/cupti_records.h"

#include <cstddef>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <utility>
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


// Every CUPTI release fills the newest version of each record its headers define
// (CUpti_ActivityKernel7 in CUDA 11.7 … CUpti_ActivityKernel13 in 13.5), and the converter reads
// them as the CUDA 13.0 structs it is built with. test/data/cupti/record_layouts.txt holds where
// each field the converter reads lies in each release (test/data/cupti/make_layouts.sh, from
// the nvidia-cuda-cupti wheels' headers): the build's structs must agree with every one, or a
// libcupti of that release would be misread.
namespace layout {

struct Field {
  const char* family;
  const char* field;
  size_t offset;
  size_t size;
};

#define RLPROF_FIELD(fam, T, f) Field{fam, #f, offsetof(T, f), sizeof(std::declval<T>().f)}
// The fields cupti_records.cc reads (and make_layouts.sh lists).
const Field kFields[] = {
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, kind),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, start),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, end),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, name),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, deviceId),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, streamId),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, contextId),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, correlationId),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, gridX),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, gridY),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, gridZ),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, blockX),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, blockY),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, blockZ),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, registersPerThread),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, staticSharedMemory),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, dynamicSharedMemory),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, graphId),
    RLPROF_FIELD("Kernel", CUpti_ActivityKernel10, graphNodeId),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, kind),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, start),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, end),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, copyKind),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, bytes),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, deviceId),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, contextId),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, streamId),
    RLPROF_FIELD("Memcpy", CUpti_ActivityMemcpy6, correlationId),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, kind),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, start),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, end),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, bytes),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, deviceId),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, contextId),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, streamId),
    RLPROF_FIELD("Memset", CUpti_ActivityMemset4, correlationId),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, kind),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, start),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, end),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, type),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, streamId),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, contextId),
    RLPROF_FIELD("Synchronization", CUpti_ActivitySynchronization2, correlationId),
    RLPROF_FIELD("API", CUpti_ActivityAPI, kind),
    RLPROF_FIELD("API", CUpti_ActivityAPI, start),
    RLPROF_FIELD("API", CUpti_ActivityAPI, end),
    RLPROF_FIELD("API", CUpti_ActivityAPI, threadId),
    RLPROF_FIELD("API", CUpti_ActivityAPI, cbid),
    RLPROF_FIELD("API", CUpti_ActivityAPI, correlationId),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, kind),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, start),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, end),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, overheadKind),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, objectKind),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, objectId.pt.threadId),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, objectId.dcs.deviceId),
    RLPROF_FIELD("Overhead", CUpti_ActivityOverhead3, objectId.dcs.streamId),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, kind),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, start),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, end),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, graphId),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, deviceId),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, contextId),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, streamId),
    RLPROF_FIELD("GraphTrace", CUpti_ActivityGraphTrace2, correlationId),
    RLPROF_FIELD("ExternalCorrelation", CUpti_ActivityExternalCorrelation, kind),
    RLPROF_FIELD("ExternalCorrelation", CUpti_ActivityExternalCorrelation, externalId),
    RLPROF_FIELD("ExternalCorrelation", CUpti_ActivityExternalCorrelation, correlationId),
};
#undef RLPROF_FIELD

TEST(CuptiLayoutTest, EveryReleaseFromCuda11_7To13_5PutsTheFieldsReadWhereTheBuildsStructsDo) {
  std::ifstream in(std::string(RLPROF_CUPTI_DATA_DIR) + "/record_layouts.txt");
  ASSERT_TRUE(in) << "test/data/cupti/record_layouts.txt";
  std::map<std::string, const Field*> want;
  for (const Field& f : kFields) want[std::string(f.family) + " " + f.field] = &f;
  std::map<std::string, size_t> fields_per_release;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string release, api, family, st, field;
    size_t offset = 0, size = 0;
    ASSERT_TRUE(s >> release >> api >> family >> st >> field >> offset >> size) << line;
    auto it = want.find(family + " " + field);
    ASSERT_NE(it, want.end()) << "record_layouts.txt lists a field the test does not: " << line;
    EXPECT_EQ(offset, it->second->offset) << "CUDA " << release << " " << st << "." << field;
    EXPECT_EQ(size, it->second->size) << "CUDA " << release << " " << st << "." << field;
    ++fields_per_release[release];
  }
  // Every release has every field; the releases checked run from 11.7 to 13.5.
  EXPECT_EQ(fields_per_release.size(), 9u);
  for (const auto& [release, n] : fields_per_release) EXPECT_EQ(n, std::size(kFields)) << release;
  EXPECT_TRUE(fields_per_release.count("11.7.101") && fields_per_release.count("13.5.25"));
}

}  // namespace layout
}  // namespace
}  // namespace rlprof::sources
