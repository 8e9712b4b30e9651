#include "src/sources/torch_memory.h"

#include <c10/core/Allocator.h>
#include <c10/core/Device.h>
#include <c10/util/ThreadLocalDebugInfo.h>

#include <string>

#include "rlprof/format/event.h"
#include "src/sources/torch_ops.h"

namespace rlprof::sources {
namespace {

using format::Category;
using format::EventKind;

// Per thread: string ids of a device's name and counter series, valid for one window.
struct DeviceIds {
  int8_t type = -1;
  int8_t index = -1;
  uint32_t gen = 0;
  uint32_t name = 0, allocated = 0, reserved = 0;
  size_t last_reserved = 0;
};
constexpr int kDeviceSlots = 8;
thread_local DeviceIds t_devices[kDeviceSlots];
thread_local int t_next_slot = 0;

DeviceIds& IdsFor(const c10::Device& d, uint32_t gen) {
  const auto type = static_cast<int8_t>(d.type());
  const int8_t index = d.index();
  for (DeviceIds& ids : t_devices)
    if (ids.gen == gen && ids.type == type && ids.index == index) return ids;
  DeviceIds& ids = t_devices[t_next_slot];
  t_next_slot = (t_next_slot + 1) % kDeviceSlots;
  const std::string dev = d.str();  // "cpu", "cuda:0"
  ids = DeviceIds{};
  ids.type = type;
  ids.index = index;
  ids.gen = gen;
  ids.name = RuntimeIntern(dev);
  ids.allocated = RuntimeIntern("allocated_bytes " + dev);
  ids.reserved = RuntimeIntern("reserved_bytes " + dev);
  return ids;
}

void Counter(uint32_t gen, uint32_t name, uint64_t t, size_t value) {
  format::Event e{};
  e.ts_ns = static_cast<int64_t>(t);
  e.name = name;
  e.kind = EventKind::kCounter;
  e.category = Category::kMemory;
  e.set_counter_value(static_cast<double>(value));
  RuntimeEmit(gen, e);
}

class Reporter final : public c10::MemoryReportingInfoBase {
 public:
  bool memoryProfilingEnabled() const override {
    return TorchMemory::Get().active.load(std::memory_order_relaxed) &&
           RuntimeWindow() != 0;
  }

  void reportMemoryUsage(void* /*ptr*/, int64_t alloc_size, size_t total_allocated,
                         size_t total_reserved, c10::Device device) override {
    Record(alloc_size, total_allocated, total_reserved, device, /*oom=*/false);
  }

  void reportOutOfMemory(int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                         c10::Device device) override {
    Record(alloc_size, total_allocated, total_reserved, device, /*oom=*/true);
  }

 private:
  static void Record(int64_t bytes, size_t allocated, size_t reserved, const c10::Device& device,
                     bool oom) {
    if (!TorchMemory::Get().active.load(std::memory_order_relaxed)) return;
    const uint32_t gen = RuntimeWindow();
    if (gen == 0) return;
    const uint64_t t = RuntimeTicks();
    DeviceIds& ids = IdsFor(device, gen);
    format::Event e{};
    e.ts_ns = static_cast<int64_t>(t);
    e.payload = bytes;
    e.name = ids.name;
    e.kind = EventKind::kInstant;
    e.category = Category::kAllocation;
    e.arg0 = oom ? 1 : 0;
    e.arg1 = CurrentOperator();
    RuntimeEmit(gen, e);
    Counter(gen, ids.allocated, t, allocated);
    if (reserved != ids.last_reserved) {
      Counter(gen, ids.reserved, t, reserved);
      ids.last_reserved = reserved;
    }
    (oom ? TorchMemory::Get().oom : TorchMemory::Get().events)
        .fetch_add(1, std::memory_order_relaxed);
  }
};

}  // namespace

TorchMemory& TorchMemory::Get() {
  static TorchMemory* m = new TorchMemory;  // never destroyed: allocations may report at exit
  return *m;
}

bool TorchMemory::Sync(bool want) {
  std::lock_guard<std::mutex> lock(mu_);
  using c10::DebugInfoKind;
  using c10::ThreadLocalDebugInfo;
  const bool on_owner = reporter_ != nullptr && owner_ == std::this_thread::get_id();
  if (!want) {
    active.store(false, std::memory_order_relaxed);
    // Removed only from its own thread and only when it is the innermost PROFILER_STATE (a
    // torch.profiler started inside the window sits above it): otherwise it stays, inactive.
    if (on_owner && static_cast<const void*>(ThreadLocalDebugInfo::get(DebugInfoKind::PROFILER_STATE)) == reporter_base_) {
      try {
        ThreadLocalDebugInfo::_pop(DebugInfoKind::PROFILER_STATE);
        reporter_.reset();
        reporter_base_ = nullptr;
      } catch (const std::exception&) {  // another kind on top: leave it, inactive
      }
    }
    return true;
  }
  if (reporter_ != nullptr && !on_owner) {
    // Installed on another thread (a window opened there): move it to this one if we can.
    active.store(false, std::memory_order_relaxed);
    return false;
  }
  if (reporter_ == nullptr) {
    if (ThreadLocalDebugInfo::get(DebugInfoKind::PROFILER_STATE) != nullptr) {
      conflict_ = true;  // torch.profiler (profile_memory / any Kineto session) holds it
      return false;
    }
    auto r = std::make_shared<Reporter>();
    ThreadLocalDebugInfo::_push(DebugInfoKind::PROFILER_STATE, r);
    reporter_ = r;
    reporter_base_ = static_cast<const c10::DebugInfoBase*>(r.get());
    owner_ = std::this_thread::get_id();
  }
  conflict_ = false;
  active.store(true, std::memory_order_relaxed);
  return true;
}

TorchMemoryStats TorchMemory::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TorchMemoryStats s;
  s.events = events.load(std::memory_order_relaxed);
  s.out_of_memory = oom.load(std::memory_order_relaxed);
  s.installed = reporter_ != nullptr;
  s.active = active.load(std::memory_order_relaxed);
  s.conflict = conflict_;
  return s;
}

}  // namespace rlprof::sources
