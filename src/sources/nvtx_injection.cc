// librlprof_nvtx.so: the NVTX tool library (NVTX_INJECTION64_PATH). NVTX3's header-only
// implementation dlopens it at a process's first NVTX call and calls InitializeInjectionNvtx2,
// which fills NVTX's callback tables with the functions below; from then on every nvtx* call
// of the process (C++, or torch's / vLLM's / Megatron's through their NVTX builds) lands here
// and is recorded by librlprof.so (linked; the one runtime of the process, whoever opened the
// session: the program, the Python package, or this library) — only inside capture windows
// (docs/runtime.md, "NVTX source"):
//   push/pop, start/end   → ranges (push/pop: complete events; start/end: async begin/end)
//   marks                 → instant events
//   domains               → tracks named after the domain: push/pop ranges and marks on the
//                           domain's lane of each thread (format::kMarkerLaneTidBase), start/end
//                           ranges (async) on one track per domain; the default domain's
//                           push/pop and marks stay on the thread, its start/end go to "NVTX"
//   registered strings    → names, copied once (the handle is the copy)
//   categories            → arg0 of the event (the number); named categories are counted
//   resource naming       → an OS thread named by nvtxNameOsThread / a native-thread resource
//                           renames its rlprof thread track; other resources are counted
// With its own session (the standalone mode: no session was open at the process's first NVTX
// call; it yields to one the program opens later), a range
// named like a configured stage (`rollout_generate`, `actor_update`, `update_actor`, …)
// becomes a stage, and an outermost range named `step` / `step N` an RL step, so an
// unmodified program's NVTX structure drives rlprof's capture windows.
// Thread-safety: every callback may run on any thread; per-thread state is thread-local.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cwchar>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "rlprof/format/event.h"
#include "rlprof/rlprof.h"
#include "src/sources/nvtx_names.h"

namespace rlprof::sources::nvtx {
namespace {

// ---- The session this library drives (standalone mode only) ----

// librlprof (the one runtime of the process, linked) records everything; this library opens a
// session of its own only when the process has none when NVTX first calls in (StartStandalone),
// and that session steps aside when the program opens its own (rlprof_options.yield_to_next).
std::atomic<rlprof_session*> g_own{nullptr};
std::once_flag g_once;
// Our session is the process's: set while we open it, cleared when another session configures
// the "nvtx" source (the program opened its own; ours stepped aside). For sources.nvtx.
std::atomic<bool> g_opening{false};
std::atomic<bool> g_standalone{false};

// The session to drive steps and stages from NVTX ranges: ours while it lives, else none.
inline rlprof_session* Driving() {
  rlprof_session* s = g_own.load(std::memory_order_acquire);
  return s != nullptr && rlprof_session_enabled(s) ? s : nullptr;
}

// ---- Counters (manifest sources.nvtx) ----

// One thread's counts: written by that thread only (relaxed load + store: plain moves, no
// locked instruction), read by the writer thread for the manifest.
using Counter = std::atomic<uint64_t>;
struct Counts {
  Counter ranges{0}, marks{0}, stages{0}, steps{0}, unmatched{0}, overflow{0};
};
struct CountsSum {
  uint64_t ranges = 0, marks = 0, stages = 0, steps = 0, unmatched = 0, overflow = 0;
  void Add(const Counts& c) {
    ranges += c.ranges.load(std::memory_order_relaxed);
    marks += c.marks.load(std::memory_order_relaxed);
    stages += c.stages.load(std::memory_order_relaxed);
    steps += c.steps.load(std::memory_order_relaxed);
    unmatched += c.unmatched.load(std::memory_order_relaxed);
    overflow += c.overflow.load(std::memory_order_relaxed);
  }
};
inline void Inc(Counter& c) { c.store(c.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed); }
std::atomic<uint64_t> g_domains{0}, g_strings{0}, g_categories{0}, g_resources{0}, g_wide{0};
std::mutex g_counts_mu;
CountsSum g_dead;                    // threads that exited
std::vector<Counts*> g_live_counts;  // live threads' counts

struct ThreadCounts {
  Counts c;
  bool registered = false;
  void Register() {
    std::lock_guard<std::mutex> lock(g_counts_mu);
    g_live_counts.push_back(&c);
    registered = true;
  }
  ~ThreadCounts() {
    if (!registered) return;
    std::lock_guard<std::mutex> lock(g_counts_mu);
    g_dead.Add(c);
    for (auto& p : g_live_counts)
      if (p == &c) {
        p = g_live_counts.back();
        g_live_counts.pop_back();
        break;
      }
  }
};
thread_local ThreadCounts tls_counts;

inline Counts& MyCounts() {
  if (__builtin_expect(!tls_counts.registered, 0)) tls_counts.Register();
  return tls_counts.c;
}

// ---- Domains ----

struct Domain {
  const char* name;  // stable copy
  uint32_t index;    // 1.. (0 = the default domain)
  std::atomic<uint64_t> async_track{0};  // (window << 16) | track of its start/end ranges
};
constexpr uint32_t kMaxDomains = 256;
Domain g_domains_table[kMaxDomains];
std::mutex g_domain_mu;
std::atomic<uint64_t> g_default_async{0};
std::atomic<uint32_t> g_range_seq{0};

// ---- Per-thread state ----

enum class FrameKind : uint8_t { kSkip, kRange, kStage, kStep };
struct Frame {
  uint64_t t0;
  uint32_t name;
  uint32_t gen;
  uint32_t category;
  uint16_t track;  // 0 = the thread's own; else the domain's lane on this thread
  FrameKind kind;
};
constexpr int kMaxDepth = 128;
struct DomainLane {
  uint32_t gen = 0;  // the window the track id was made for
  uint16_t track = 0;
};
struct ThreadState {
  NameCache names;
  Frame frames[kMaxDepth];
  int depth = 0;
  int overflow = 0;  // pushes past kMaxDepth not yet popped
  DomainLane lanes[kMaxDomains];
  uint32_t tid = 0;
};
thread_local ThreadState* tls_state = nullptr;

ThreadState& State() {
  if (__builtin_expect(tls_state == nullptr, 0)) {
    static thread_local ThreadState s;  // constructed on the thread's first NVTX call
    s.tid = static_cast<uint32_t>(syscall(SYS_gettid));
    tls_state = &s;
  }
  return *tls_state;
}

std::atomic<bool> g_step_open{false};
std::atomic<int64_t> g_last_step{0};

// This thread's lane of domain `d` (format::kMarkerLaneTidBase): its push/pop ranges and marks
// go there, one complete event per range like the default domain's, on a row named after the
// domain. 0 (the thread's own track) for the default domain.
uint16_t DomainLaneTrack(ThreadState& ts, const Domain* d, uint32_t gen) {
  if (d == nullptr) return 0;
  DomainLane& l = ts.lanes[d->index];
  if (__builtin_expect(l.gen != gen, 0)) {
    const uint64_t os_id = format::kMarkerLaneTidBase | (uint64_t{d->index} << 22) | (ts.tid & 0x3FFFFF);
    l.track = rlprof_track(0, os_id, d->name);
    l.gen = gen;
  }
  return l.track;
}

uint16_t AsyncTrack(const Domain* d, uint32_t gen) {
  std::atomic<uint64_t>& slot = d != nullptr ? const_cast<Domain*>(d)->async_track : g_default_async;
  uint64_t v = slot.load(std::memory_order_relaxed);
  if ((v >> 16) == gen) return static_cast<uint16_t>(v & 0xFFFF);
  const uint16_t t = rlprof_track(3, 0, d != nullptr ? d->name : "NVTX");
  slot.store((uint64_t{gen} << 16) | t, std::memory_order_relaxed);
  return t;
}

// A range id unique in the process: each thread takes blocks of 1024 from the shared counter
// (one atomic per 1024 ranges instead of one per range).
uint32_t NextSeq() {
  thread_local uint32_t next = 0, limit = 0;
  if (__builtin_expect(next == limit, 0)) {
    next = g_range_seq.fetch_add(1024, std::memory_order_relaxed);
    limit = next + 1024;
  }
  return next++;
}

// An async range on the track of `d` (the shared "NVTX" track for the default domain). The id
// carries the window (low 16 bits of its generation) and the track, so its end needs neither.
uint64_t BeginAsync(const Domain* d, uint32_t gen, uint32_t name,
                    uint32_t category) {
  const uint16_t track = AsyncTrack(d, gen);
  if (track == 0) return 0;
  const uint64_t id = (uint64_t{gen & 0xFFFF} << 48) | (uint64_t{track} << 32) | NextSeq();
  rlprof_event e;
  std::memset(&e, 0, sizeof e);
  e.ts = static_cast<int64_t>(rlprof_ticks_inline());
  e.payload = static_cast<int64_t>(id);
  e.name = name;
  e.track = track;
  e.kind = RLPROF_EVENT_BEGIN;
  e.arg0 = category;
  return rlprof_emit_track(gen, &e) ? id : 0;
}

void EndAsync(uint64_t id) {
  if (id == 0) return;
  const uint32_t gen = rlprof_window_inline();
  if (gen == 0 || (id >> 48) != (gen & 0xFFFF)) return;  // begun in another window
  rlprof_event e;
  std::memset(&e, 0, sizeof e);
  e.ts = static_cast<int64_t>(rlprof_ticks_inline());
  e.payload = static_cast<int64_t>(id);
  e.track = static_cast<uint16_t>((id >> 32) & 0xFFFF);
  e.kind = RLPROF_EVENT_END;
  if (rlprof_emit_track(gen, &e)) Inc(MyCounts().ranges);
}

// ---- Messages ----

struct Message {
  const char* ascii = nullptr;     // NUL-terminated
  std::string converted;           // from a wide string
  uint32_t category = 0;
};

void ToUtf8(const wchar_t* w, std::string* out) {
  out->clear();
  if (w == nullptr) return;
  for (; *w != 0 && out->size() < 4096; ++w) {
    const auto c = static_cast<uint32_t>(*w);
    if (c < 0x80) {
      out->push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (c >> 6)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (c >> 12)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x110000) {
      out->push_back(static_cast<char>(0xF0 | (c >> 18)));
      out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
}

// Reads what an nvtxEventAttributes_t holds (tolerating older / smaller versions).
void FromAttributes(const nvtxEventAttributes_t* a, Message* m) {
  if (a == nullptr) return;
  const size_t size = a->size;
  if (size >= offsetof(nvtxEventAttributes_t, category) + sizeof(a->category)) m->category = a->category;
  if (size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: m->ascii = a->message.ascii; break;
    case NVTX_MESSAGE_TYPE_REGISTERED:  // our handle is the stable copy
      m->ascii = reinterpret_cast<const char*>(a->message.registered);
      break;
    case NVTX_MESSAGE_TYPE_UNICODE:
      g_wide.fetch_add(1, std::memory_order_relaxed);
      ToUtf8(a->message.unicode, &m->converted);
      m->ascii = StableCopy(m->converted);
      break;
    default: break;
  }
}

const char* WideName(const wchar_t* w) {
  g_wide.fetch_add(1, std::memory_order_relaxed);
  std::string s;
  ToUtf8(w, &s);
  return StableCopy(s);
}

// ---- Ranges ----

int Push(const Domain* d, const char* msg, uint32_t category) {
  ThreadState& ts = State();
  if (ts.depth >= kMaxDepth) {
    ++ts.overflow;
    Inc(MyCounts().overflow);
    return ts.depth + ts.overflow - 1;
  }
  Frame& f = ts.frames[ts.depth];
  f.kind = FrameKind::kSkip;
  if (msg == nullptr) return ts.depth++;
  const NameEntry& n = ts.names.Lookup(msg);
  if (rlprof_session* own = Driving()) {  // this library drives the session: stages and steps
    if (n.stage_role != nullptr) {
      if (rlprof_session_stage_begin(own, n.stage_role, n.stage) == RLPROF_OK) {
        f.kind = FrameKind::kStage;
        Inc(MyCounts().stages);
      }
      return ts.depth++;
    }
    if (n.step >= 0 && !g_step_open.load(std::memory_order_relaxed)) {
      const int64_t step = n.step > 0 ? n.step : g_last_step.load() + 1;
      if (rlprof_session_step_begin(own, step) == RLPROF_OK) {
        g_last_step.store(step);
        g_step_open.store(true);
        f.kind = FrameKind::kStep;
        Inc(MyCounts().steps);
      }
      return ts.depth++;
    }
  }
  const uint32_t gen = rlprof_window_inline();
  if (gen != 0) {
    f.gen = gen;
    f.name = ts.names.Id(n, gen);
    f.category = category;
    f.kind = FrameKind::kRange;
    f.track = DomainLaneTrack(ts, d, gen);
    f.t0 = rlprof_ticks_inline();
  }
  return ts.depth++;
}

int Pop() {
  ThreadState& ts = State();
  if (ts.overflow > 0) {
    --ts.overflow;
    return ts.depth + ts.overflow;
  }
  if (ts.depth == 0) {
    Inc(MyCounts().unmatched);
    return -1;
  }
  const Frame& f = ts.frames[--ts.depth];
  if (f.kind == FrameKind::kSkip) return ts.depth;
  switch (f.kind) {
    case FrameKind::kRange: {
      if (rlprof_window_inline() != f.gen) break;  // the window closed meanwhile
      const uint64_t t1 = rlprof_ticks_inline();
      rlprof_event e;
      std::memset(&e, 0, sizeof e);
      e.ts = static_cast<int64_t>(f.t0);
      e.payload = static_cast<int64_t>(t1 - f.t0);
      e.name = f.name;
      e.track = f.track;
      e.kind = RLPROF_EVENT_COMPLETE;
      e.arg0 = f.category;
      if (f.track != 0 ? rlprof_emit_track(f.gen, &e) : rlprof_emit(f.gen, &e)) Inc(MyCounts().ranges);
      break;
    }
    case FrameKind::kStage:
      rlprof_session_stage_end(g_own.load(std::memory_order_acquire));
      break;
    case FrameKind::kStep:
      rlprof_session_step_end(g_own.load(std::memory_order_acquire));
      g_step_open.store(false);
      break;
    default: break;
  }
  return ts.depth;
}

nvtxRangeId_t Start(const Domain* d, const char* msg, uint32_t category) {
  if (msg == nullptr) return 0;
  const uint32_t gen = rlprof_window_inline();
  if (gen == 0) return 0;
  ThreadState& ts = State();
  const NameEntry& n = ts.names.Lookup(msg);
  return BeginAsync(d, gen, ts.names.Id(n, gen), category);
}

void End(nvtxRangeId_t id) { EndAsync(id); }

void Mark(const Domain* d, const char* msg, uint32_t category) {
  if (msg == nullptr) return;
  const uint32_t gen = rlprof_window_inline();
  if (gen == 0) return;
  ThreadState& ts = State();
  const NameEntry& n = ts.names.Lookup(msg);
  rlprof_event e;
  std::memset(&e, 0, sizeof e);
  e.ts = static_cast<int64_t>(rlprof_ticks_inline());
  e.name = ts.names.Id(n, gen);
  e.track = DomainLaneTrack(ts, d, gen);
  e.kind = RLPROF_EVENT_INSTANT;
  e.arg0 = category;
  if (e.track != 0 ? rlprof_emit_track(gen, &e) : rlprof_emit(gen, &e)) Inc(MyCounts().marks);
}

void NameThread(uint32_t tid, const char* name) {
  g_resources.fetch_add(1, std::memory_order_relaxed);
  if (name == nullptr) return;
  // rlprof names the calling thread's track; another thread's name waits for its first event.
  if (tid == State().tid) rlprof_set_thread_name(name);
}

// ---- NVTX entry points ----

inline const Domain* D(nvtxDomainHandle_t d) { return reinterpret_cast<const Domain*>(d); }

void NVTX_API MarkEx(const nvtxEventAttributes_t* a) {
  Message m;
  FromAttributes(a, &m);
  Mark(nullptr, m.ascii, m.category);
}
void NVTX_API MarkA(const char* s) { Mark(nullptr, s, 0); }
void NVTX_API MarkW(const wchar_t* s) { Mark(nullptr, WideName(s), 0); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  Message m;
  FromAttributes(a, &m);
  return Start(nullptr, m.ascii, m.category);
}
nvtxRangeId_t NVTX_API RangeStartA(const char* s) { return Start(nullptr, s, 0); }
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* s) { return Start(nullptr, WideName(s), 0); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { End(id); }
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) {
  Message m;
  FromAttributes(a, &m);
  return Push(nullptr, m.ascii, m.category);
}
int NVTX_API RangePushA(const char* s) { return Push(nullptr, s, 0); }
int NVTX_API RangePushW(const wchar_t* s) { return Push(nullptr, WideName(s), 0); }
int NVTX_API RangePop() { return Pop(); }
void NVTX_API NameCategoryA(uint32_t, const char*) { g_categories.fetch_add(1, std::memory_order_relaxed); }
void NVTX_API NameCategoryW(uint32_t, const wchar_t*) { g_categories.fetch_add(1, std::memory_order_relaxed); }
void NVTX_API NameOsThreadA(uint32_t tid, const char* name) { NameThread(tid, name); }
void NVTX_API NameOsThreadW(uint32_t tid, const wchar_t* name) { NameThread(tid, WideName(name)); }

void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Message m;
  FromAttributes(a, &m);
  Mark(D(d), m.ascii, m.category);
}
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Message m;
  FromAttributes(a, &m);
  return Start(D(d), m.ascii, m.category);
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { End(id); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  Message m;
  FromAttributes(a, &m);
  return Push(D(d), m.ascii, m.category);
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t) { return Pop(); }

struct Resource {
  int placeholder;
};
Resource g_resource_handle{0};

nvtxResourceHandle_t NVTX_API DomainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t* a) {
  if (a != nullptr && a->size >= offsetof(nvtxResourceAttributes_t, message) + sizeof(a->message) &&
      (a->identifierType == NVTX_RESOURCE_TYPE_GENERIC_THREAD_NATIVE) &&
      a->messageType == NVTX_MESSAGE_TYPE_ASCII) {
    NameThread(static_cast<uint32_t>(a->identifier.ullValue), a->message.ascii);
  } else {
    g_resources.fetch_add(1, std::memory_order_relaxed);
  }
  return reinterpret_cast<nvtxResourceHandle_t>(&g_resource_handle);
}
void NVTX_API DomainResourceDestroy(nvtxResourceHandle_t) {}
void NVTX_API DomainNameCategoryA(nvtxDomainHandle_t, uint32_t, const char*) {
  g_categories.fetch_add(1, std::memory_order_relaxed);
}
void NVTX_API DomainNameCategoryW(nvtxDomainHandle_t, uint32_t, const wchar_t*) {
  g_categories.fetch_add(1, std::memory_order_relaxed);
}
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  g_strings.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(StableCopy(s != nullptr ? s : "")));
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  g_strings.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(WideName(s)));
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  const char* copy = StableCopy(name != nullptr ? name : "");
  std::lock_guard<std::mutex> lock(g_domain_mu);
  const uint32_t used = static_cast<uint32_t>(g_domains.load());
  for (uint32_t i = 1; i <= used; ++i)  // one handle per name
    if (g_domains_table[i].name == copy) return reinterpret_cast<nvtxDomainHandle_t>(&g_domains_table[i]);
  if (used + 1 >= kMaxDomains) return nullptr;  // the default domain (thread tracks) then
  Domain& d = g_domains_table[used + 1];
  d.name = copy;
  d.index = used + 1;
  g_domains.store(used + 1);
  return reinterpret_cast<nvtxDomainHandle_t>(&d);
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) { return DomainCreateA(WideName(name)); }
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}
void NVTX_API Initialize(const void*) {}

// ---- The source (manifest sources.nvtx) ----

void CountersFn(void*, uint32_t, rlprof_counter_add_fn add, void* ctx) {
  CountsSum sum;
  {
    std::lock_guard<std::mutex> lock(g_counts_mu);
    sum = g_dead;
    for (const Counts* c : g_live_counts) sum.Add(*c);
  }
  auto put = [&](const char* k, uint64_t v) { add(ctx, k, static_cast<int64_t>(v)); };
  put("ranges", sum.ranges);
  put("marks", sum.marks);
  put("stages", sum.stages);
  put("steps", sum.steps);
  put("domains", g_domains.load());
  put("registered_strings", g_strings.load());
  put("named_categories", g_categories.load());
  put("named_resources", g_resources.load());
  put("wide_strings", g_wide.load());
  put("unmatched_pops", sum.unmatched);
  put("depth_overflow", sum.overflow);
  put("standalone", g_standalone.load() ? 1 : 0);
}

// The "nvtx" source (its counters go into each capture's manifest, sources.nvtx): registered
// once, with the one runtime, for every session of the process.
void RegisterSource() {
  rlprof_source s;
  rlprof_source_init(&s);
  s.name = "nvtx";
  s.counters = &CountersFn;
  s.configure = [](void*, uint32_t, const char*) {  // a session starts in this process
    g_standalone.store(g_opening.load());
    return 0;
  };
  rlprof_register_source(&s);
}

// Own session: RLPROF_CONFIG (+ RLPROF_OVERRIDES, one per line), like the Python bootstrap.
void StartStandalone() {
  const char* config = std::getenv("RLPROF_CONFIG");
  if (config == nullptr || *config == '\0') return;
  std::vector<std::string> words;
  if (const char* o = std::getenv("RLPROF_OVERRIDES")) {
    std::string text(o);
    size_t start = 0;
    while (start <= text.size()) {
      size_t nl = text.find('\n', start);
      if (nl == std::string::npos) nl = text.size();
      std::string w = text.substr(start, nl - start);
      if (w.find_first_not_of(" \t\r") != std::string::npos) words.push_back(w);
      start = nl + 1;
    }
  }
  std::vector<const char*> ptrs;
  for (const auto& w : words) ptrs.push_back(w.c_str());
  rlprof_options o;
  rlprof_options_init(&o);
  o.yield_to_next = 1;  // the program's own session, if it opens one later, takes over
  rlprof_session* s = nullptr;
  g_opening.store(true);
  const int rc = rlprof_session_open(config, ptrs.data(), ptrs.size(), &o, &s);
  g_opening.store(false);
  if (rc != RLPROF_OK) {
    std::fprintf(stderr, "rlprof: NVTX injection: no capture (%s)\n", rlprof_last_error());
    return;
  }
  g_own.store(s, std::memory_order_release);
  std::atexit([] {
    // An outermost step range still open (the program exits inside it) ends here. The handle
    // is never freed: NVTX calls from other threads may still be running.
    rlprof_session* own = g_own.load();
    if (Driving() != nullptr && g_step_open.exchange(false)) rlprof_session_step_end(own);
    rlprof_session_shutdown(own);
  });
}

template <typename F>
void Set(NvtxFunctionTable table, unsigned size, unsigned id, F fn) {
  if (table != nullptr && id < size && table[id] != nullptr)
    *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

bool FillTables(NvtxGetExportTableFunc_t get) {
  auto cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (cb == nullptr || cb->GetModuleFunctionTable == nullptr) return false;
  NvtxFunctionTable t = nullptr;
  unsigned n = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || t == nullptr) return false;
  Set(t, n, NVTX_CBID_CORE_MarkEx, &MarkEx);
  Set(t, n, NVTX_CBID_CORE_MarkA, &MarkA);
  Set(t, n, NVTX_CBID_CORE_MarkW, &MarkW);
  Set(t, n, NVTX_CBID_CORE_RangeStartEx, &RangeStartEx);
  Set(t, n, NVTX_CBID_CORE_RangeStartA, &RangeStartA);
  Set(t, n, NVTX_CBID_CORE_RangeStartW, &RangeStartW);
  Set(t, n, NVTX_CBID_CORE_RangeEnd, &RangeEnd);
  Set(t, n, NVTX_CBID_CORE_RangePushEx, &RangePushEx);
  Set(t, n, NVTX_CBID_CORE_RangePushA, &RangePushA);
  Set(t, n, NVTX_CBID_CORE_RangePushW, &RangePushW);
  Set(t, n, NVTX_CBID_CORE_RangePop, &RangePop);
  Set(t, n, NVTX_CBID_CORE_NameCategoryA, &NameCategoryA);
  Set(t, n, NVTX_CBID_CORE_NameCategoryW, &NameCategoryW);
  Set(t, n, NVTX_CBID_CORE_NameOsThreadA, &NameOsThreadA);
  Set(t, n, NVTX_CBID_CORE_NameOsThreadW, &NameOsThreadW);
  t = nullptr;
  n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t != nullptr) {
    Set(t, n, NVTX_CBID_CORE2_DomainMarkEx, &DomainMarkEx);
    Set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, &DomainRangeStartEx);
    Set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, &DomainRangeEnd);
    Set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, &DomainRangePushEx);
    Set(t, n, NVTX_CBID_CORE2_DomainRangePop, &DomainRangePop);
    Set(t, n, NVTX_CBID_CORE2_DomainResourceCreate, &DomainResourceCreate);
    Set(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, &DomainResourceDestroy);
    Set(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, &DomainNameCategoryA);
    Set(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, &DomainNameCategoryW);
    Set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, &DomainRegisterStringA);
    Set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, &DomainRegisterStringW);
    Set(t, n, NVTX_CBID_CORE2_DomainCreateA, &DomainCreateA);
    Set(t, n, NVTX_CBID_CORE2_DomainCreateW, &DomainCreateW);
    Set(t, n, NVTX_CBID_CORE2_DomainDestroy, &DomainDestroy);
    Set(t, n, NVTX_CBID_CORE2_Initialize, &Initialize);
  }
  return true;
}

}  // namespace
}  // namespace rlprof::sources::nvtx

using namespace rlprof::sources::nvtx;  // NOLINT: the two exported C entry points below

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get) {
  try {
    if (get == nullptr || !FillTables(get)) return 0;
    std::call_once(g_once, [] {
      RegisterSource();
      // Nothing records in this process yet (no rlprof session): record on our own.
      if (rlprof_session_count() == 0) StartStandalone();
    });
    return 1;
  } catch (...) {
    return 0;  // NVTX unloads the library; the program goes on unprofiled
  }
}
