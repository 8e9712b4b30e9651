#include "src/runtime/thread_buffer.h"

#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>
#include <new>

// The markers' hot state (include/rlprof/rlprof.h): one cache line of its own.
extern "C" {
alignas(64) rlprof_hot_state rlprof_hot = {0, 0};
}

namespace rlprof::runtime {
namespace {

using format::Category;
using format::EventKind;

// Initial-exec: librlprof.so is linked by programs and by the Python extensions (dlopen'ed),
// and glibc keeps static TLS room for a few such variables; the hot path then reads its buffer
// with one %fs-relative load instead of a __tls_get_addr call.
__attribute__((tls_model("initial-exec"))) thread_local ThreadBuffer* tls_tb = nullptr;

// Separate from tls_tb so that the hot path reads a trivial thread-local (no init guard);
// this one only exists to hand the buffer back when the thread exits.
struct ThreadOwner {
  ThreadBuffer* tb = nullptr;
  std::string name;  // SetThreadName before the thread's first event
  ~ThreadOwner() {
    if (tb != nullptr) Recorder::Get().ThreadExit(tb);
    tls_tb = nullptr;
  }
};
thread_local ThreadOwner tls_owner;

size_t PageSize() {
  static const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return page;
}

uint32_t CurrentTid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

std::string CurrentThreadOsName() {
  char buf[64] = {0};
  if (pthread_getname_np(pthread_self(), buf, sizeof buf) != 0) return {};
  return buf;
}

inline ThreadBuffer* BufferFor(uint32_t gen) {
  ThreadBuffer* tb = tls_tb;
  if (__builtin_expect(tb != nullptr && tb->gen == gen, 1)) return tb;
  return Recorder::Get().Attach(gen);
}

}  // namespace

// ---- Chunk ----

Chunk* Chunk::Allocate(uint32_t capacity) {
  const size_t page = PageSize();
  const size_t bytes = (kHeaderBytes + size_t{capacity} * sizeof(Record) + page - 1) / page * page;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE,
                 -1, 0);
  if (p == MAP_FAILED) return nullptr;
  // MAP_POPULATE may be ignored (e.g. under memory pressure); a write per page makes sure the
  // pages exist and are private before any record lands there.
  for (size_t off = 0; off < bytes; off += page) static_cast<volatile char*>(p)[off] = 0;
  auto* c = new (p) Chunk;
  c->capacity = capacity;
  c->map_bytes = bytes;
  return c;
}

void Chunk::Free(Chunk* c) {
  if (c == nullptr) return;
  const size_t bytes = c->map_bytes;
  c->~Chunk();
  munmap(c, bytes);
}

// ---- ThreadBuffer ----

Record* ThreadBuffer::Reserve() {
  if (__builtin_expect(pos < chunk->capacity, 1)) return &chunk->records()[pos];
  Chunk* c = Recorder::Get().OnFull(this);
  return c != nullptr ? &c->records()[0] : nullptr;
}

uint32_t ThreadBuffer::NameId(const char* name) {
  if (name == nullptr) return 0;
  uint32_t id = names.Lookup(name);
  if (__builtin_expect(id == NameCache::kMiss, 0)) {
    // Called from the noexcept markers: an allocation failure records the event unnamed
    // instead of terminating the job.
    try {
      id = Recorder::Get().interner().InternPointer(name);
      names.Insert(name, id);
    } catch (...) {
      id = 0;
    }
  }
  return id;
}

// ---- Recorder ----

Recorder& Recorder::Get() {
  static Recorder* r = new Recorder;  // never destroyed: thread exits may outlive statics
  return *r;
}

uint64_t Recorder::BeginSession(const RecorderConfig& config) {
  // A forked child (DataLoader workers…) inherits the open-window flag but not the writer
  // thread: its markers must stay off.
  static std::once_flag atfork;
  std::call_once(atfork, [] {
    pthread_atfork(nullptr, nullptr, [] { internal::StoreWindow(0, __ATOMIC_RELAXED); });
  });
  interner_.Reset();
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    id = session_ = next_session_++;
    config_ = config;
    if (config_.capacity == 0) config_.capacity = 1;
    stats_ = {};
    tracks_.clear();
    tracks_.push_back({0, format::TrackKind::kThread, 0, 0, ""});
    tracks_.push_back({kAsyncTrack, format::TrackKind::kAsync, 0, static_cast<uint32_t>(getpid()),
                       "async ranges"});
  }
  RefillPool();
  return id;
}

void Recorder::EndSession() {
  std::vector<Chunk*> to_free;
  {
    std::lock_guard<std::mutex> lock(mu_);
    internal::StoreWindow(0, __ATOMIC_RELEASE);
    session_ = 0;
    to_free.swap(pool_);
  }
  for (Chunk* c = TakeHandoffs(); c != nullptr;) {
    Chunk* next = c->next;
    to_free.push_back(c);
    c = next;
  }
  for (Chunk* c : to_free) Chunk::Free(c);
}

bool Recorder::session_live() const {
  std::lock_guard<std::mutex> lock(mu_);
  return session_ != 0;
}

uint32_t Recorder::OpenWindow() {
  std::lock_guard<std::mutex> lock(mu_);
  if (session_ == 0) return 0;
  if (next_gen_ == 0) next_gen_ = 1;
  const uint32_t gen = next_gen_++;
  internal::StoreWindow(gen, __ATOMIC_RELEASE);
  return gen;
}

bool Recorder::CloseWindow(uint32_t gen) {
  uint32_t expected = gen;
  return gen != 0 && internal::ClearWindowIf(expected);
}

Chunk* Recorder::PopPoolLocked() {
  if (pool_.empty()) return nullptr;
  Chunk* c = pool_.back();
  pool_.pop_back();
  return c;
}

void Recorder::PrepareLocked(ThreadBuffer* tb, Chunk* c, uint32_t gen) {
  c->count.store(0, std::memory_order_relaxed);
  c->dropped.store(0, std::memory_order_relaxed);
  c->consumed = 0;
  c->dropped_seen = 0;
  c->gen = gen;
  c->next = nullptr;
  tb->chunk = c;
  tb->pos = 0;
  tb->gen = gen;
  tb->current.store(c, std::memory_order_release);
}

void Recorder::PushHandoff(Chunk* c) {
  Chunk* head = handoffs_.load(std::memory_order_relaxed);
  do {
    c->next = head;
  } while (!handoffs_.compare_exchange_weak(head, c, std::memory_order_release,
                                            std::memory_order_relaxed));
}

void Recorder::Wake() {
  const int fd = wake_fd_.load(std::memory_order_relaxed);
  if (fd >= 0) {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(fd, &one, sizeof one);
  }
}

// Called from the noexcept markers: any exception (an allocation) means "no buffer": the
// event is not recorded.
ThreadBuffer* Recorder::Attach(uint32_t gen) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (session_ == 0 || internal::OpenWindow() != gen) return nullptr;
  ThreadBuffer* tb = tls_tb;
  if (tb == nullptr) {
    for (ThreadBuffer* t : threads_)
      if (!t->in_use) {
        tb = t;
        break;
      }
    if (tb == nullptr) {
      tb = new ThreadBuffer;
      threads_.push_back(tb);
    }
    tb->in_use = true;
    tb->tid = CurrentTid();
    tb->session = 0;
    tls_tb = tb;
    tls_owner.tb = tb;
  }
  if (tb->session != session_) {
    // Left over from an ended session: nobody else can see it any more.
    if (tb->chunk != nullptr) Chunk::Free(tb->chunk);
    tb->chunk = nullptr;
    tb->current.store(nullptr, std::memory_order_relaxed);
    tb->session = session_;
    tb->names.Clear();
    tb->range_seq = 0;
    tb->async_track = 0;
    tb->drop_when_full = config_.policy == config::BufferPolicy::kDrop;
    const std::string& name = tls_owner.name.empty() ? CurrentThreadOsName() : tls_owner.name;
    tb->track = static_cast<uint16_t>(tracks_.size() < 0xFFFF ? tracks_.size() : 0);
    if (tb->track != 0)
      tracks_.push_back({tb->track, format::TrackKind::kThread, tb->tid,
                         static_cast<uint32_t>(getpid()), name});
    ++stats_.threads;
  }
  Chunk* old = tb->chunk;
  Chunk* c = PopPoolLocked();
  if (c == nullptr) {
    c = Chunk::Allocate(config_.capacity);
    if (c == nullptr) return nullptr;
    ++stats_.chunks_allocated;
    ++stats_.late_allocations;
  }
  PrepareLocked(tb, c, gen);
  if (old != nullptr) PushHandoff(old);  // after `current` moved on (see the header)
  if (pool_.size() < config_.spare_chunks) Wake();
  return tb;
} catch (...) {
  return nullptr;
}

Chunk* Recorder::OnFull(ThreadBuffer* tb) {
  Chunk* old = tb->chunk;
  if (tb->drop_when_full) {
    old->dropped.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(mu_);
  Chunk* c = session_ == tb->session ? PopPoolLocked() : nullptr;
  if (c == nullptr) {
    old->dropped.fetch_add(1, std::memory_order_relaxed);
    Wake();
    return nullptr;
  }
  PrepareLocked(tb, c, tb->gen);
  PushHandoff(old);
  ++stats_.handoffs;
  Wake();
  return c;
}

void Recorder::ThreadExit(ThreadBuffer* tb) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tb->chunk != nullptr) {
    if (tb->session == session_ && session_ != 0) {
      tb->current.store(nullptr, std::memory_order_release);
      PushHandoff(tb->chunk);
      Wake();
    } else {
      Chunk::Free(tb->chunk);
    }
  }
  tb->chunk = nullptr;
  tb->current.store(nullptr, std::memory_order_relaxed);
  tb->gen = 0;
  tb->session = 0;
  tb->in_use = false;
}

Chunk* Recorder::TakeHandoffs() { return handoffs_.exchange(nullptr, std::memory_order_acquire); }

void Recorder::Recycle(Chunk* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (session_ == 0 || c->capacity != config_.capacity) {
    Chunk::Free(c);
    return;
  }
  pool_.push_back(c);
}

void Recorder::ForEachCurrentChunk(const std::function<void(Chunk*)>& fn) {
  std::vector<Chunk*> chunks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (ThreadBuffer* t : threads_)
      if (t->in_use && t->session == session_)
        if (Chunk* c = t->current.load(std::memory_order_acquire)) chunks.push_back(c);
  }
  // Safe outside the lock: only the writer (this caller) recycles chunks of a live session.
  for (Chunk* c : chunks) fn(c);
}

size_t Recorder::RefillPool() {
  size_t want;
  uint32_t capacity;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (session_ == 0) return 0;
    size_t live = 0;
    for (ThreadBuffer* t : threads_)
      if (t->in_use && t->session == session_) ++live;
    const size_t target = std::max<size_t>(live, 1) + config_.spare_chunks;
    want = pool_.size() < target ? target - pool_.size() : 0;
    capacity = config_.capacity;
  }
  size_t added = 0;
  for (size_t i = 0; i < want; ++i) {
    Chunk* c = Chunk::Allocate(capacity);
    if (c == nullptr) break;
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.chunks_allocated;
    if (session_ == 0 || capacity != config_.capacity) {
      Chunk::Free(c);
      break;
    }
    pool_.push_back(c);
    ++added;
  }
  return added;
}

size_t Recorder::pool_size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pool_.size();
}

RecorderStats Recorder::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

uint16_t Recorder::AddTrack(format::TrackKind kind, uint64_t os_id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tracks_.size() >= 0xFFFF) return 0;
  const auto id = static_cast<uint16_t>(tracks_.size());
  tracks_.push_back({id, kind, os_id, static_cast<uint32_t>(getpid()), name});
  return id;
}

uint16_t Recorder::ThreadTrack(uint64_t tid) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = tracks_.size(); i-- > 2;)
    if (tracks_[i].kind == format::TrackKind::kThread && tracks_[i].os_id == tid)
      return static_cast<uint16_t>(i);
  if (tracks_.size() >= 0xFFFF) return 0;
  const auto id = static_cast<uint16_t>(tracks_.size());
  tracks_.push_back({id, format::TrackKind::kThread, tid, static_cast<uint32_t>(getpid()),
                     "thread " + std::to_string(tid)});
  return id;
}

uint16_t Recorder::NamedTrack(format::TrackKind kind, uint64_t os_id, const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (session_ == 0) return 0;
  for (size_t i = tracks_.size(); i-- > 2;)
    if (tracks_[i].kind == kind && tracks_[i].os_id == os_id && tracks_[i].name == name)
      return static_cast<uint16_t>(i);
  if (tracks_.size() >= 0xFFFF) return 0;
  const auto id = static_cast<uint16_t>(tracks_.size());
  tracks_.push_back({id, kind, os_id, static_cast<uint32_t>(getpid()), name});
  return id;
}

uint16_t Recorder::AsyncTrackFor(ThreadBuffer* tb) try {
  std::lock_guard<std::mutex> lock(mu_);
  if (tracks_.size() >= 0xFFFF || tb->track >= tracks_.size()) return kAsyncTrack;
  const auto id = static_cast<uint16_t>(tracks_.size());
  tracks_.push_back({id, format::TrackKind::kAsync, tb->tid, static_cast<uint32_t>(getpid()),
                     tracks_[tb->track].name + " (async)"});
  return id;
} catch (...) {  // from the noexcept markers: the shared async track instead
  return kAsyncTrack;
}

format::TrackEntry Recorder::TrackInfo(uint16_t id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return id < tracks_.size() ? tracks_[id] : format::TrackEntry{};
}

void Recorder::SetCurrentThreadName(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  tls_owner.name = name;
  ThreadBuffer* tb = tls_tb;
  if (tb != nullptr && tb->session == session_ && session_ != 0 && tb->track != 0 &&
      tb->track < tracks_.size())
    tracks_[tb->track].name = name;
}

// ---- Recording (called by the inline markers in rlprof.hpp) ----

void EmitRecord(uint32_t gen, const Record& e) noexcept {
  ThreadBuffer* tb = BufferFor(gen);
  if (tb == nullptr) return;
  Record* r = tb->Reserve();
  if (r == nullptr) return;
  *r = e;
  r->track = tb->track;
  tb->Commit();
}

void EmitRecordOnTrack(uint32_t gen, const Record& e) noexcept {
  ThreadBuffer* tb = BufferFor(gen);
  if (tb == nullptr) return;
  Record* r = tb->Reserve();
  if (r == nullptr) return;
  *r = e;
  if (e.track == 0) r->track = tb->track;
  tb->Commit();
}

}  // namespace rlprof::runtime

namespace rlprof::internal {

using runtime::ThreadBuffer;
using runtime::Record;
using format::Category;
using format::EventKind;

namespace {
inline void Fill(Record* r, int64_t ts, int64_t payload, uint32_t name, uint16_t track,
                 EventKind kind) {
  r->ts_ns = ts;
  r->payload = payload;
  r->name = name;
  r->track = track;
  r->kind = kind;
  r->category = Category::kUser;
  r->arg0 = 0;
  r->arg1 = 0;
}
}  // namespace

void EmitComplete(uint32_t gen, const char* name, uint64_t t0, uint64_t t1) noexcept {
  ThreadBuffer* tb = runtime::BufferFor(gen);
  if (tb == nullptr) return;
  const uint32_t id = tb->NameId(name);
  Record* r = tb->Reserve();
  if (r == nullptr) return;
  Fill(r, static_cast<int64_t>(t0), static_cast<int64_t>(t1 - t0), id, tb->track,
       EventKind::kComplete);
  tb->Commit();
}

void EmitInstant(uint32_t gen, const char* name, uint64_t t) noexcept {
  ThreadBuffer* tb = runtime::BufferFor(gen);
  if (tb == nullptr) return;
  const uint32_t id = tb->NameId(name);
  Record* r = tb->Reserve();
  if (r == nullptr) return;
  Fill(r, static_cast<int64_t>(t), 0, id, tb->track, EventKind::kInstant);
  tb->Commit();
}

void EmitCounter(uint32_t gen, const char* name, double value, uint64_t t) noexcept {
  ThreadBuffer* tb = runtime::BufferFor(gen);
  if (tb == nullptr) return;
  const uint32_t id = tb->NameId(name);
  Record* r = tb->Reserve();
  if (r == nullptr) return;
  Fill(r, static_cast<int64_t>(t), 0, id, tb->track, EventKind::kCounter);
  r->set_counter_value(value);
  tb->Commit();
}

uint64_t EmitBegin(uint32_t gen, const char* name, uint64_t t) noexcept {
  ThreadBuffer* tb = runtime::BufferFor(gen);
  if (tb == nullptr) return 0;
  const uint32_t id = tb->NameId(name);
  if (__builtin_expect(tb->async_track == 0, 0))
    tb->async_track = runtime::Recorder::Get().AsyncTrackFor(tb);
  Record* r = tb->Reserve();
  if (r == nullptr) return 0;
  // Unique within the window: generation tag | async track | per-thread sequence. The end
  // (maybe on another thread) takes its track from the id.
  const uint64_t range = (uint64_t{gen & 0xFFFF} << 48) | (uint64_t{tb->async_track} << 32) |
                         uint64_t{++tb->range_seq};
  Fill(r, static_cast<int64_t>(t), static_cast<int64_t>(range), id, tb->async_track,
       EventKind::kBegin);
  tb->Commit();
  return range;
}

void EmitEnd(uint32_t gen, uint64_t id, uint64_t t) noexcept {
  if ((id >> 48) != (gen & 0xFFFF)) return;  // begun in another window
  ThreadBuffer* tb = runtime::BufferFor(gen);
  if (tb == nullptr) return;
  Record* r = tb->Reserve();
  if (r == nullptr) return;
  Fill(r, static_cast<int64_t>(t), static_cast<int64_t>(id), 0,
       static_cast<uint16_t>((id >> 32) & 0xFFFF), EventKind::kEnd);
  tb->Commit();
}

}  // namespace rlprof::internal

namespace rlprof::runtime {

// Never throw into the caller (an allocation failure loses the name).
const char* InternName(std::string_view name) {
  try {
    return runtime::StableName(name);
  } catch (...) {
    return "";
  }
}

void SetThreadName(const std::string& name) {
  try {
    runtime::Recorder::Get().SetCurrentThreadName(name);
  } catch (...) {
  }
}

}  // namespace rlprof::runtime
