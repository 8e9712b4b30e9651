#include "src/sources/cupti_records.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

namespace rlprof::sources {
namespace {

using format::Category;
using format::EventKind;

constexpr std::string_view kNcclPrefixes[] = {"ncclDevKernel_", "ncclKernel_"};

const char* CopyKindName(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA: return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD: return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return "PtoP";
    default: return "unknown";
  }
}

const char* SyncName(CUpti_ActivitySynchronizationType t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return "cudaEventSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return "cudaStreamWaitEvent";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return "cudaStreamSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return "cudaDeviceSynchronize";
    default: return "cuda synchronization";
  }
}

const char* OverheadName(CUpti_ActivityOverheadKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "CUPTI overhead: driver compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "CUPTI overhead: buffer flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "CUPTI overhead: instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "CUPTI overhead: resource";
    default: return "CUPTI overhead";
  }
}

uint32_t Saturate(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

// ts / duration from a (start, end) pair in the record's clock.
bool Times(uint64_t start, uint64_t end, int64_t offset, format::Event* e, CuptiCounts* c) {
  e->ts_ns = static_cast<int64_t>(start) + offset;
  if (end < start) {
    ++c->bad_time;
    e->payload = 0;
    return end != 0 || start != 0;
  }
  e->payload = static_cast<int64_t>(end - start);
  return true;
}

void AppendTimes(std::string* o, const char* word, uint64_t start, uint64_t end, int64_t shift) {
  *o += word;
  *o += " t=" + std::to_string(static_cast<int64_t>(start) + shift);
  *o += " d=" + std::to_string(end >= start ? static_cast<int64_t>(end - start) : int64_t{0});
}

void AppendField(std::string* o, const char* key, int64_t v) {
  *o += ' ';
  *o += key;
  *o += '=';
  *o += std::to_string(v);
}

// Where device work ran and which launch it came from: dev= ctx= stream= corr=.
void AppendPlace(std::string* o, uint32_t dev, uint32_t ctx, uint32_t stream, uint32_t corr) {
  AppendField(o, "dev", dev);
  AppendField(o, "ctx", ctx);
  AppendField(o, "stream", stream);
  AppendField(o, "corr", corr);
}

void AppendTid(std::string* o, uint32_t tid, uint32_t main_tid) {
  *o += tid == main_tid ? std::string(" tid=MAIN") : " tid=" + std::to_string(tid);
}

}  // namespace

bool AppendRecordText(const CUpti_Activity* r, int64_t offset_ns, int64_t origin_ns, uint32_t main_tid,
                      std::string* out) {
  const int64_t shift = offset_ns - origin_ns;
  std::string& o = *out;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      AppendTimes(&o, "kernel", k.start, k.end, shift);
      AppendPlace(&o, k.deviceId, k.contextId, k.streamId, k.correlationId);
      o += " grid=" + std::to_string(k.gridX) + "," + std::to_string(k.gridY) + "," + std::to_string(k.gridZ);
      o += " block=" + std::to_string(k.blockX) + "," + std::to_string(k.blockY) + "," + std::to_string(k.blockZ);
      AppendField(&o, "regs", k.registersPerThread);
      AppendField(&o, "smem", k.staticSharedMemory);
      AppendField(&o, "dsmem", k.dynamicSharedMemory);
      if (k.graphId != 0 || k.graphNodeId != 0) {
        AppendField(&o, "graph", k.graphId);
        AppendField(&o, "node", static_cast<int64_t>(k.graphNodeId));
      }
      o += " name=";
      o += k.name != nullptr ? k.name : "";
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      AppendTimes(&o, "memcpy", m.start, m.end, shift);
      o += " copy=";
      o += CopyKindName(m.copyKind);
      AppendField(&o, "bytes", static_cast<int64_t>(m.bytes));
      AppendPlace(&o, m.deviceId, m.contextId, m.streamId, m.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      AppendTimes(&o, "memset", m.start, m.end, shift);
      AppendField(&o, "bytes", static_cast<int64_t>(m.bytes));
      AppendPlace(&o, m.deviceId, m.contextId, m.streamId, m.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
      AppendTimes(&o, "sync", s.start, s.end, shift);
      AppendField(&o, "type", static_cast<int64_t>(s.type));
      AppendField(&o, "stream", s.streamId);
      AppendField(&o, "ctx", s.contextId);
      AppendField(&o, "corr", s.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = *reinterpret_cast<const CUpti_ActivityAPI*>(r);
      AppendTimes(&o, r->kind == CUPTI_ACTIVITY_KIND_DRIVER ? "driver" : "runtime", a.start, a.end, shift);
      AppendTid(&o, a.threadId, main_tid);
      AppendField(&o, "cbid", a.cbid);
      AppendField(&o, "corr", a.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& v = *reinterpret_cast<const CUpti_ActivityOverhead3*>(r);
      if (v.objectKind != CUPTI_ACTIVITY_OBJECT_THREAD && v.objectKind != CUPTI_ACTIVITY_OBJECT_PROCESS)
        return false;  // the fake replays thread overheads only
      AppendTimes(&o, "overhead", v.start, v.end, shift);
      AppendTid(&o, v.objectId.pt.threadId, main_tid);
      AppendField(&o, "kind", static_cast<int64_t>(v.overheadKind));
      break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      const auto& g = *reinterpret_cast<const CUpti_ActivityGraphTrace2*>(r);
      AppendTimes(&o, "graph", g.start, g.end, shift);
      AppendField(&o, "graph", g.graphId);
      AppendPlace(&o, g.deviceId, g.contextId, g.streamId, g.correlationId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& x = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
      o += "external";
      AppendField(&o, "id", static_cast<int64_t>(x.externalId));
      AppendField(&o, "corr", x.correlationId);
      break;
    }
    default: return false;
  }
  o += '\n';
  return true;
}

std::string_view NcclCollective(std::string_view k) {
  for (std::string_view p : kNcclPrefixes) {
    if (!k.starts_with(p)) continue;
    k.remove_prefix(p.size());
    const size_t end = k.find_first_of("_(<");
    return k.substr(0, end);
  }
  return {};
}

size_t CuptiRecordConverter::LaunchHash::operator()(const LaunchKey& k) const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(k.name);
  mix(k.regs);
  mix(k.ctx);
  mix(k.graph);
  for (int i = 0; i < 3; ++i) mix(static_cast<uint32_t>(k.grid[i]) | (uint64_t{static_cast<uint32_t>(k.block[i])} << 32));
  mix(static_cast<uint32_t>(k.smem_static) | (uint64_t{static_cast<uint32_t>(k.smem_dynamic)} << 32));
  mix(k.graph_node);
  return static_cast<size_t>(h);
}

void CuptiRecordConverter::Reset() {
  names_.clear();
  stream_tracks_.clear();
  thread_tracks_.clear();
  api_names_.clear();
  launch_strings_.clear();
  fixed_.clear();
}

uint32_t CuptiRecordConverter::KernelName(const char* name, std::string_view* collective) {
  if (name == nullptr) name = "(unnamed kernel)";
  auto it = names_.find(name);
  if (it != names_.end() && std::strcmp(it->second.text.c_str(), name) == 0) {
    *collective = it->second.collective;
    return it->second.id;
  }
  NameEntry e;
  e.text = name;
  // C++ kernels arrive mangled; op statistics group by the readable name.
  std::string shown = e.text;
  if (shown.starts_with("_Z")) {
    int status = 0;
    char* d = abi::__cxa_demangle(shown.c_str(), nullptr, nullptr, &status);
    if (status == 0 && d != nullptr) shown = d;
    std::free(d);
  }
  e.id = Intern(shown);
  e.collective = NcclCollective(e.text);
  auto& slot = names_[name];
  slot = std::move(e);
  // The string_view pointed into the moved-from string: point it at the stored copy.
  slot.collective = NcclCollective(slot.text);
  *collective = slot.collective;
  return slot.id;
}

uint16_t CuptiRecordConverter::StreamTrack(uint32_t device, uint32_t stream) {
  const uint64_t key = (uint64_t{device} << 32) | stream;
  auto it = stream_tracks_.find(key);
  if (it != stream_tracks_.end()) return it->second;
  const std::string name = stream == UINT32_MAX
                               ? "GPU " + std::to_string(device) + " (all streams)"
                               : "GPU " + std::to_string(device) + " stream " + std::to_string(stream);
  const uint16_t t = sink_->AddTrack(format::TrackKind::kDeviceStream, key, name);
  stream_tracks_.emplace(key, t);
  return t;
}

uint16_t CuptiRecordConverter::ThreadTrack(uint32_t tid) {
  auto it = thread_tracks_.find(tid);
  if (it != thread_tracks_.end()) return it->second;
  const uint16_t t = sink_->ThreadTrack(tid);
  thread_tracks_.emplace(tid, t);
  return t;
}

uint32_t CuptiRecordConverter::ApiName(CUpti_CallbackDomain domain, uint32_t cbid) {
  const uint64_t key = (uint64_t{static_cast<uint32_t>(domain)} << 32) | cbid;
  auto it = api_names_.find(key);
  if (it != api_names_.end()) return it->second;
  const char* n = nullptr;
  std::string name;
  if (api_ != nullptr && api_->GetCallbackName != nullptr &&
      api_->GetCallbackName(domain, cbid, &n) == CUPTI_SUCCESS && n != nullptr) {
    name = n;
    // cudaLaunchKernel_v7000 → cudaLaunchKernel (as Kineto shows it).
    if (size_t v = name.rfind("_v"); v != std::string::npos && v + 2 < name.size() &&
                                     name.find_first_not_of("0123456789", v + 2) == std::string::npos)
      name.resize(v);
  } else {
    name = (domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver api " : "runtime api ") + std::to_string(cbid);
  }
  const uint32_t id = Intern(name);
  api_names_.emplace(key, id);
  return id;
}

uint32_t CuptiRecordConverter::LaunchString(const CUpti_ActivityKernel10& k, uint32_t name,
                                            std::string_view collective) {
  LaunchKey key{name, k.registersPerThread, k.contextId, k.graphId,
                {k.gridX, k.gridY, k.gridZ}, {k.blockX, k.blockY, k.blockZ},
                k.staticSharedMemory, k.dynamicSharedMemory, k.graphNodeId};
  auto it = launch_strings_.find(key);
  if (it != launch_strings_.end()) return it->second;
  scratch_.clear();
  if (!collective.empty()) {
    scratch_ += "collective=";
    scratch_ += collective;
    scratch_ += ' ';
  }
  scratch_ += "grid=" + std::to_string(k.gridX) + "x" + std::to_string(k.gridY) + "x" + std::to_string(k.gridZ);
  scratch_ += " block=" + std::to_string(k.blockX) + "x" + std::to_string(k.blockY) + "x" + std::to_string(k.blockZ);
  scratch_ += " regs=" + std::to_string(k.registersPerThread);
  scratch_ += " smem=" + std::to_string(k.staticSharedMemory) + "+" + std::to_string(k.dynamicSharedMemory);
  scratch_ += " ctx=" + std::to_string(k.contextId);
  if (k.graphId != 0 || k.graphNodeId != 0)
    scratch_ += " graph=" + std::to_string(k.graphId) + " node=" + std::to_string(k.graphNodeId);
  const uint32_t id = Intern(scratch_);
  launch_strings_.emplace(key, id);
  return id;
}

void CountRecord(const CUpti_Activity* r, bool collective, CuptiCounts* c) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      ++c->kernels;
      if (collective) ++c->nccl_kernels;
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: ++c->memcpy; break;
    case CUPTI_ACTIVITY_KIND_MEMSET: ++c->memset; break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: ++c->sync; break;
    case CUPTI_ACTIVITY_KIND_RUNTIME: ++c->runtime_api; break;
    case CUPTI_ACTIVITY_KIND_DRIVER: ++c->driver_api; break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: ++c->overhead; break;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: ++c->graphs; break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: ++c->external_correlation; break;
    default: ++c->other; break;
  }
}

CuptiCounts& CuptiCounts::operator+=(const CuptiCounts& a) {
  kernels += a.kernels, nccl_kernels += a.nccl_kernels, memcpy += a.memcpy, memset += a.memset;
  sync += a.sync, runtime_api += a.runtime_api, driver_api += a.driver_api, overhead += a.overhead;
  graphs += a.graphs, external_correlation += a.external_correlation, other += a.other;
  bad_time += a.bad_time;
  return *this;
}

bool CuptiRecordConverter::Convert(const CUpti_Activity* r, int64_t off, format::Event* e) {
  last_collective_ = false;
  const bool converted = ConvertRecord(r, off, e);
  CountRecord(r, last_collective_, &counts_);
  return converted;
}

// Reads CUDA 13.0's record structs whatever libcupti filled them: every field read here (and in
// AppendRecordText, LaunchString) must lie at the same offset in each release rlprof accepts —
// listed in test/data/cupti/make_layouts.sh and CuptiLayoutTest's kFields, checked there.
bool CuptiRecordConverter::ConvertRecord(const CUpti_Activity* r, int64_t off, format::Event* e) {
  *e = format::Event{};
  e->kind = EventKind::kComplete;
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto& k = *reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      if (!Times(k.start, k.end, off, e, &counts_)) return false;
      std::string_view collective;
      e->name = KernelName(k.name, &collective);
      e->track = StreamTrack(k.deviceId, k.streamId);
      e->category = Category::kKernel;
      e->arg0 = k.correlationId;
      e->arg1 = LaunchString(k, e->name, collective);
      context_device_[k.contextId] = k.deviceId;
      last_collective_ = !collective.empty();
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      if (!Times(m.start, m.end, off, e, &counts_)) return false;
      const uint32_t key = 0x100u | m.copyKind;
      auto it = fixed_.find(key);
      if (it == fixed_.end())
        it = fixed_.emplace(key, Intern(std::string("Memcpy ") + CopyKindName(m.copyKind))).first;
      e->name = it->second;
      auto dir = fixed_.find(0x200u | m.copyKind);
      if (dir == fixed_.end()) dir = fixed_.emplace(0x200u | m.copyKind, Intern(CopyKindName(m.copyKind))).first;
      e->arg1 = dir->second;
      e->track = StreamTrack(m.deviceId, m.streamId);
      e->category = Category::kMemcpy;
      e->arg0 = Saturate(m.bytes);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto& m = *reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      if (!Times(m.start, m.end, off, e, &counts_)) return false;
      auto it = fixed_.find(0x300u);
      if (it == fixed_.end()) it = fixed_.emplace(0x300u, Intern("Memset")).first;
      e->name = it->second;
      e->track = StreamTrack(m.deviceId, m.streamId);
      e->category = Category::kMemset;
      e->arg0 = Saturate(m.bytes);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto& s = *reinterpret_cast<const CUpti_ActivitySynchronization2*>(r);
      if (!Times(s.start, s.end, off, e, &counts_)) return false;
      const uint32_t key = 0x400u | static_cast<uint32_t>(s.type);
      auto it = fixed_.find(key);
      if (it == fixed_.end()) it = fixed_.emplace(key, Intern(SyncName(s.type))).first;
      e->name = it->second;
      auto dev = context_device_.find(s.contextId);
      e->track = StreamTrack(dev == context_device_.end() ? 0 : dev->second, s.streamId);
      e->category = Category::kSync;
      e->arg0 = s.correlationId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto& a = *reinterpret_cast<const CUpti_ActivityAPI*>(r);
      if (!Times(a.start, a.end, off, e, &counts_)) return false;
      const bool driver = r->kind == CUPTI_ACTIVITY_KIND_DRIVER;
      e->name = ApiName(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, a.cbid);
      e->track = ThreadTrack(a.threadId);
      e->category = Category::kRuntime;
      e->arg0 = a.correlationId;
      if (auto it = external_.find(a.correlationId); it != external_.end()) {
        e->arg1 = Saturate(it->second);
        external_.erase(it);
      }
      return true;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = *reinterpret_cast<const CUpti_ActivityOverhead3*>(r);
      if (!Times(o.start, o.end, off, e, &counts_)) return false;
      const uint32_t key = 0x500u ^ static_cast<uint32_t>(o.overheadKind);
      auto it = fixed_.find(key);
      if (it == fixed_.end()) it = fixed_.emplace(key, Intern(OverheadName(o.overheadKind))).first;
      e->name = it->second;
      e->track = o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
                     ? ThreadTrack(o.objectId.pt.threadId)
                     : StreamTrack(o.objectId.dcs.deviceId, o.objectId.dcs.streamId);
      e->category = Category::kCapture;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      const auto& g = *reinterpret_cast<const CUpti_ActivityGraphTrace2*>(r);
      if (!Times(g.start, g.end, off, e, &counts_)) return false;
      e->name = Intern("CUDA graph " + std::to_string(g.graphId));
      e->track = StreamTrack(g.deviceId, g.streamId);
      e->category = Category::kKernel;
      e->arg0 = g.correlationId;
      return true;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto& x = *reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
      // Bounded: an id whose API record never comes (API records off) must not pile up.
      if (external_.size() > (1u << 16)) external_.clear();
      external_[x.correlationId] = x.externalId;
      return false;
    }
    default:
      return false;
  }
}

}  // namespace rlprof::sources
