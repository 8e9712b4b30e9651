// The hot path's storage: per-thread buffers of fixed-size event records, pre-faulted chunks,
// and the process-wide Recorder that attaches threads to capture windows.
//
//   Recorder& r = Recorder::Get();
//   r.BeginSession({.capacity = 1 << 16, .policy = BufferPolicy::kFlush});  // pre-faults
//   uint32_t gen = r.OpenWindow();        // markers now record (rlprof_hot.window = gen)
//   ...                                   // producer threads: EmitComplete/… (thread_buffer.cc)
//   r.CloseWindow(gen);
//   // writer thread: r.TakeHandoffs(), r.ForEachCurrentChunk(…), r.Recycle(chunk)
//   r.EndSession();
//
// Lifecycle of a chunk: pool → a thread's current chunk (tagged with the window generation)
// → handed off (full, or the thread moved on to a later window, or exited) → drained by the
// writer → back to the pool. While a chunk is current, its producer publishes each record
// with a release store of `count`; the writer reads up to `count` with acquire and remembers
// how far it got in `consumed` (writer-only), so it can drain a chunk while it is being filled.
//
// Thread-safety: producers touch only their own ThreadBuffer on the fast path; Attach, OnFull
// and thread exit take the Recorder's mutex (once per thread per window, or per full chunk).
// Session-level methods are for the session / writer threads.
#ifndef RLPROF_SRC_RUNTIME_THREAD_BUFFER_H_
#define RLPROF_SRC_RUNTIME_THREAD_BUFFER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/config/plan.h"
#include "rlprof/format/event.h"
#include "rlprof/rlprof.h"
#include "rlprof/rlprof.hpp"
#include "src/format/raw.h"
#include "src/runtime/interner.h"

namespace rlprof::runtime {

// The hot path stores format::Event records with raw ticks in ts_ns (and in payload for
// kComplete); the writer converts them to ns.
using Record = format::Event;
static_assert(sizeof(Record) == 32, "the hot path stores 32-byte records");

struct Chunk {
  static constexpr size_t kHeaderBytes = 128;
  std::atomic<uint32_t> count{0};    // records published by the producer
  std::atomic<uint32_t> dropped{0};  // records lost while this chunk was current and full
  uint32_t capacity = 0;
  uint32_t gen = 0;                  // window generation the records belong to
  uint32_t consumed = 0;             // writer-only: records already drained
  uint32_t dropped_seen = 0;         // writer-only: drops already accounted
  size_t map_bytes = 0;
  Chunk* next = nullptr;             // intrusive link (hand-off list)

  Record* records() { return reinterpret_cast<Record*>(reinterpret_cast<char*>(this) + kHeaderBytes); }
  // mmap(MAP_POPULATE) + a write to every page, so no record store ever page-faults.
  static Chunk* Allocate(uint32_t capacity);
  static void Free(Chunk* c);
};
static_assert(sizeof(Chunk) <= Chunk::kHeaderBytes);

// One per thread that ever recorded; never freed (reused by later threads), so a stale
// pointer in a thread-local can never dangle.
struct ThreadBuffer {
  // Producer-only state.
  uint32_t gen = 0;  // generation `chunk` belongs to
  uint32_t pos = 0;  // next free slot in `chunk`
  Chunk* chunk = nullptr;
  uint64_t session = 0;
  uint16_t track = 0;
  uint16_t async_track = 0;  // this thread's async-range track, made at its first RangeStart
  uint32_t range_seq = 0;
  bool drop_when_full = false;  // BufferPolicy::kDrop
  NameCache names;
  // Shared with the writer.
  std::atomic<Chunk*> current{nullptr};
  // Guarded by the Recorder's mutex.
  uint32_t tid = 0;
  bool in_use = false;

  Record* Reserve();
  void Commit() { chunk->count.store(++pos, std::memory_order_release); }
  uint32_t NameId(const char* name);
};

struct RecorderConfig {
  uint32_t capacity = 1 << 16;  // records per chunk (plan.buffer_events_per_thread)
  config::BufferPolicy policy = config::BufferPolicy::kFlush;
  uint32_t spare_chunks = 2;    // pool target beyond one chunk per known thread
};

struct RecorderStats {
  uint64_t chunks_allocated = 0;       // mmaps, pre-faulted
  uint64_t late_allocations = 0;       // allocations a producer had to make itself (pool empty)
  uint64_t handoffs = 0;               // full chunks swapped for a spare
  uint32_t threads = 0;                // threads attached in this session
};

class Recorder {
 public:
  static Recorder& Get();

  // Starts a session: resets names and tracks, pre-faults the pool. Returns the session id.
  uint64_t BeginSession(const RecorderConfig& config);
  // Ends it: no window may be open; the writer must have stopped.
  void EndSession();
  bool session_live() const;

  // Opens a window: markers record from now on. Returns its generation (never 0).
  uint32_t OpenWindow();
  // Stops recording for `gen` if it is still the open window; true if it was.
  bool CloseWindow(uint32_t gen);

  // Producer slow paths (called from the Emit functions).
  ThreadBuffer* Attach(uint32_t gen);
  Chunk* OnFull(ThreadBuffer* tb);
  void ThreadExit(ThreadBuffer* tb);

  // Writer side.
  Chunk* TakeHandoffs();  // a list linked by Chunk::next
  void Recycle(Chunk* c);
  // Puts a handed-off chunk back for a later TakeHandoffs (its window is not known yet).
  void ReturnHandoff(Chunk* c) { PushHandoff(c); }
  void ForEachCurrentChunk(const std::function<void(Chunk*)>& fn);
  // Allocates chunks until the pool holds its target; returns how many were added.
  size_t RefillPool();
  size_t pool_size() const;
  void set_wake_fd(int fd) { wake_fd_.store(fd, std::memory_order_relaxed); }
  RecorderStats stats() const;

  Interner& interner() { return interner_; }
  // Tracks: ids are dense from 1. Async ranges go on one track per starting thread (so a
  // thread's own requests never overlap another thread's); track 1 is the shared fallback
  // once the 16-bit track ids run out.
  static constexpr uint16_t kAsyncTrack = 1;
  uint16_t AsyncTrackFor(ThreadBuffer* tb);
  uint16_t AddTrack(format::TrackKind kind, uint64_t os_id, const std::string& name);
  format::TrackEntry TrackInfo(uint16_t id) const;
  // The thread track of OS thread `tid` (the newest one with that tid), or a new one named
  // "thread <tid>"; 0 when no ids are left.
  uint16_t ThreadTrack(uint64_t tid);
  // The track with this (kind, os_id, name), made on first use; 0 when no ids are left or no
  // session is live. Sources that place events themselves (NVTX domains) use it.
  uint16_t NamedTrack(format::TrackKind kind, uint64_t os_id, const std::string& name);
  void SetCurrentThreadName(const std::string& name);
  const RecorderConfig& config() const { return config_; }

 private:
  Recorder() = default;
  Chunk* PopPoolLocked();
  void PrepareLocked(ThreadBuffer* tb, Chunk* c, uint32_t gen);
  void PushHandoff(Chunk* c);
  void Wake();

  mutable std::mutex mu_;
  uint64_t session_ = 0;  // 0 = none live
  uint64_t next_session_ = 1;
  uint32_t next_gen_ = 1;
  RecorderConfig config_;
  std::vector<Chunk*> pool_;
  std::vector<ThreadBuffer*> threads_;  // every buffer ever made
  std::vector<format::TrackEntry> tracks_;  // index = id
  RecorderStats stats_;
  std::atomic<Chunk*> handoffs_{nullptr};
  std::atomic<int> wake_fd_{-1};
  Interner interner_;
};

// Records an event whose names are already interned (session-level events: steps, stages,
// sub-steps). `e.ts_ns` and, for kComplete, `e.payload` are in ticks; `e.track` is filled in.
void EmitRecord(uint32_t gen, const Record& e) noexcept;
// EmitRecord keeping `e.track` when it names a track of the session (else the thread's).
void EmitRecordOnTrack(uint32_t gen, const Record& e) noexcept;

// The runtime's own names for the marker entry points (the C API and rlprof.hpp call them).
const char* InternName(std::string_view name);
void SetThreadName(const std::string& name);

}  // namespace rlprof::runtime

namespace rlprof::internal {

// The only writes of the hot state (include/rlprof/rlprof.h, rlprof_hot).
inline void StoreWindow(uint32_t gen, int order) noexcept {
  __atomic_store_n(&rlprof_hot.window, gen, order);
}
// Clears the window if it is still `gen`; true when this call cleared it.
inline bool ClearWindowIf(uint32_t gen) noexcept {
  return __atomic_compare_exchange_n(&rlprof_hot.window, &gen, 0u, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE);
}

// The hot path's records (thread_buffer.cc); `name` is interned by pointer.
void EmitComplete(uint32_t gen, const char* name, uint64_t t0, uint64_t t1) noexcept;
void EmitInstant(uint32_t gen, const char* name, uint64_t t) noexcept;
void EmitCounter(uint32_t gen, const char* name, double value, uint64_t t) noexcept;
uint64_t EmitBegin(uint32_t gen, const char* name, uint64_t t) noexcept;
void EmitEnd(uint32_t gen, uint64_t id, uint64_t t) noexcept;

}  // namespace rlprof::internal

#endif  // RLPROF_SRC_RUNTIME_THREAD_BUFFER_H_
