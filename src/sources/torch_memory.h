// PyTorch allocator events (`contents: [memory]`): a c10::MemoryReportingInfoBase installed in
// the thread-local debug info (DebugInfoKind::PROFILER_STATE) of the thread that opens a
// capture window, the way torch.profiler's profile_memory does. Every allocation and free that
// torch's allocators report on that thread — and on the autograd threads its backward passes
// run on, which inherit the debug info — becomes, while the window is open:
//   - a kAllocation instant: payload = bytes (negative for a free), name = device ("cpu",
//     "cuda:0"), arg1 = the innermost operator running on the thread (TorchOps context);
//     arg0 = 1 marks an out-of-memory report (payload = the bytes asked for);
//   - a kMemory counter "allocated_bytes <device>" (the allocator's total after the event) and,
//     when it changed, "reserved_bytes <device>" (caching allocators; the CPU allocator
//     reports 0 and gets none).
// The CPU allocator counts only allocations made while a reporter was active, so on CPU
// "allocated_bytes" is the window's live allocations, not the process's.
//
//   TorchMemory::Get().Sync(/*want=*/Recording() && contents.memory);   // window open
//   ... torch code ...
//   TorchMemory::Get().Sync(false);                                        // window close
//
// Coexistence: when another reporter (torch.profiler with profile_memory) is already installed
// on the thread, rlprof does not shadow it: Sync returns false and stats().conflict is set.
// Thread-safety: Sync/stats from any thread (serialised); the reporter runs on allocating
// threads and touches thread-local state and relaxed atomics.
#ifndef RLPROF_SRC_SOURCES_TORCH_MEMORY_H_
#define RLPROF_SRC_SOURCES_TORCH_MEMORY_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

namespace rlprof::sources {

struct TorchMemoryStats {
  uint64_t events = 0;        // allocator events recorded
  uint64_t out_of_memory = 0; // out-of-memory reports recorded
  bool installed = false;     // a reporter is in some thread's debug info
  bool active = false;        // and reporting
  bool conflict = false;      // another profiler's reporter held the thread at the last Sync
};

class TorchMemory {
 public:
  static TorchMemory& Get();
  // Installs (want) the reporter on the calling thread, or deactivates and removes it. Returns
  // false when `want` could not be honoured (another reporter holds the thread).
  bool Sync(bool want);
  TorchMemoryStats stats() const;

  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> oom{0};
  std::atomic<bool> active{false};

 private:
  TorchMemory() = default;
  mutable std::mutex mu_;
  std::shared_ptr<void> reporter_;  // the installed reporter (a c10::DebugInfoBase)
  const void* reporter_base_ = nullptr;  // its c10::DebugInfoBase*, as the debug info holds it
  std::thread::id owner_;           // the thread whose debug info holds it
  bool conflict_ = false;
};

}  // namespace rlprof::sources

#endif  // RLPROF_SRC_SOURCES_TORCH_MEMORY_H_
