// CuptiRecordConverter: CUPTI activity records → rlprof events (the writer thread's hot loop of
// the CUPTI source; bench/cupti_convert_bench.cc measures it).
//
//   CuptiRecordConverter conv(&sink, &api);            // sink: the writer's (runtime/source.h)
//   format::Event e;
//   if (conv.Convert(record, &e)) sink.Emit(gen, e, runtime::TimeBase::kMonotonicNs);
//
// Mapping (docs/runtime.md, "CUPTI"): kernels → kKernel on the track of (device, stream), arg0 =
// correlation id, arg1 = a "launch" string (collective=<name> for NCCL kernels, grid, block,
// registers, shared memory, context, graph node); memcpy → kMemcpy (arg0 = bytes saturated,
// arg1 = direction "HtoD"…); memset → kMemset (arg0 = bytes); synchronisation → kSync on the
// stream; runtime / driver API → kRuntime on the calling thread's track (arg0 = correlation,
// arg1 = external correlation id when one was pushed); overhead → kCapture on its thread; CUDA
// graph launches → kKernel "CUDA graph <id>". External-correlation records are remembered
// (correlation → external id) and attached to the matching API record.
// Names, tracks and launch strings are cached (pointer + content check for names), so the
// steady state interns nothing.
// Thread-safety: one converter per drain thread (the writer).
#ifndef RLPROF_SRC_SOURCES_CUPTI_RECORDS_H_
#define RLPROF_SRC_SOURCES_CUPTI_RECORDS_H_

#include <cupti.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "rlprof/format/event.h"
#include "src/runtime/source.h"
#include "src/sources/cupti_api.h"

namespace rlprof::sources {

// "AllReduce" for ncclDevKernel_AllReduce_Sum_f32_RING_LL(…) or ncclKernel_AllReduce_RING_LL_…,
// "SendRecv" for ncclDevKernel_SendRecv(…); "" when `kernel` is not an NCCL kernel.
std::string_view NcclCollective(std::string_view kernel);

struct CuptiCounts {
  uint64_t kernels = 0, nccl_kernels = 0, memcpy = 0, memset = 0, sync = 0, runtime_api = 0,
           driver_api = 0, overhead = 0, graphs = 0, external_correlation = 0, other = 0,
           bad_time = 0;
  uint64_t total() const {
    return kernels + memcpy + memset + sync + runtime_api + driver_api + overhead + graphs;
  }
  CuptiCounts& operator+=(const CuptiCounts& a);
};

// Counts record `r` by its CUPTI kind in `c` (`collective`: an NCCL kernel). The converter
// counts every record it is given this way; the CUPTI source also per window.
void CountRecord(const CUpti_Activity* r, bool collective, CuptiCounts* c);

// Appends `r` as one line of the fake CUPTI's text format (test/data/cupti/README.md, what
// cupti_fake.cc replays): times as `t` = record start + offset_ns - origin_ns (rlprof's clock,
// relative to the window's opening) and `d`; the thread `main_tid` as tid=MAIN. Kernel names
// are written mangled, as CUPTI gives them. Returns false (appends nothing) for kinds the fake
// does not replay. For RLPROF_CUPTI_RECORD_DIR (cupti_source.h): real records kept as test data.
bool AppendRecordText(const CUpti_Activity* r, int64_t offset_ns, int64_t origin_ns, uint32_t main_tid,
                      std::string* out);

class CuptiRecordConverter {
 public:
  // `api` may be null (no callback names: "runtime api <cbid>").
  CuptiRecordConverter(runtime::SourceSink* sink, const CuptiApi* api) : sink_(sink), api_(api) {}
  // Fills `out` (ts in the record's clock plus `offset_ns`); false for records that are not
  // events (external correlation, unknown kinds), which are counted.
  bool Convert(const CUpti_Activity* r, int64_t offset_ns, format::Event* out);
  const CuptiCounts& counts() const { return counts_; }
  // Whether the last record converted was an NCCL kernel.
  bool last_was_collective() const { return last_collective_; }
  void set_sink(runtime::SourceSink* sink) { sink_ = sink; }
  // Forget cached track / string ids (a new session numbers them anew).
  void Reset();

 private:
  bool ConvertRecord(const CUpti_Activity* r, int64_t offset_ns, format::Event* out);
  uint32_t KernelName(const char* name, std::string_view* text);
  uint16_t StreamTrack(uint32_t device, uint32_t stream);
  uint16_t ThreadTrack(uint32_t tid);
  uint32_t ApiName(CUpti_CallbackDomain domain, uint32_t cbid);
  uint32_t LaunchString(const CUpti_ActivityKernel10& k, uint32_t name, std::string_view collective);
  uint32_t Intern(std::string_view s) { return sink_->Intern(s); }

  runtime::SourceSink* sink_;
  const CuptiApi* api_;
  CuptiCounts counts_;
  bool last_collective_ = false;
  struct NameEntry {
    uint32_t id;
    std::string text;  // as CUPTI gave it (checked: a pointer may be reused for another name)
    std::string_view collective;  // into text
  };
  std::unordered_map<const char*, NameEntry> names_;
  std::unordered_map<uint64_t, uint16_t> stream_tracks_;
  std::unordered_map<uint32_t, uint16_t> thread_tracks_;
  std::unordered_map<uint64_t, uint32_t> api_names_;
  struct LaunchKey {
    uint32_t name, regs, ctx, graph;
    int32_t grid[3], block[3], smem_static, smem_dynamic;
    uint64_t graph_node;
    bool operator==(const LaunchKey&) const = default;
  };
  struct LaunchHash {
    size_t operator()(const LaunchKey& k) const;
  };
  std::unordered_map<LaunchKey, uint32_t, LaunchHash> launch_strings_;
  std::unordered_map<uint32_t, uint32_t> context_device_;
  std::unordered_map<uint32_t, uint64_t> external_;  // correlation → external id
  std::unordered_map<uint32_t, uint32_t> fixed_;     // small fixed strings: key → id
  std::string scratch_;
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_CUPTI_RECORDS_H_
