// A fake libcupti for tests and benchmarks: exports the C entry points the CUPTI source
// resolves (cupti_api.h) and replays activity records, built in CUPTI's own record layouts
// (the structs of the CUPTI headers), from a text file named by $RLPROF_FAKE_CUPTI_RECORDS
// (test/data/cupti/*.records; format in test/data/cupti/README.md). Load it with
// RLPROF_CUPTI_LIBRARY=<path of librlprof_fake_cupti.so>.
//
// Each time activities are enabled after all were disabled (a capture window opening), the
// file's records are due again, their times relative to that moment (the timestamp callback's
// clock, or the fake's own clock — CLOCK_MONOTONIC + 5 s — when the callback is refused). They
// are written into buffers requested from the client at the next cuptiActivityFlushAll (or when
// the next window opens, if no flush came between), and completed in order after all are
// written (so a small client pool starves).
// $RLPROF_FAKE_CUPTI_MODE: "other_subscriber" (cuptiSubscribe answers
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED), "enable_fails" (cuptiActivityEnable does),
// "no_timestamp_callback". $RLPROF_FAKE_CUPTI_RECORDS_PER_BUFFER caps records per buffer.
// $RLPROF_FAKE_CUPTI_REPEAT replays the file's records that many times per window (benchmark).
// $RLPROF_FAKE_CUPTI_VERSION: the API version cuptiGetVersion answers (default: the headers').
// fake_cupti_* functions let tests inspect it. Not thread-safe beyond one mutex around all.
#include <cupti.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Spec {
  CUpti_ActivityKind kind;
  std::map<std::string, std::string> f;
  std::vector<uint8_t> tmpl;  // the record built with base 0 and main tid 0 (built once)
  int64_t I(const char* k, int64_t d = 0) const {
    auto it = f.find(k);
    return it == f.end() ? d : std::strtoll(it->second.c_str(), nullptr, 0);
  }
  std::string S(const char* k) const {
    auto it = f.find(k);
    return it == f.end() ? std::string() : it->second;
  }
};

struct State {
  std::recursive_mutex mu;
  bool loaded = false;
  std::vector<Spec> specs;
  uint64_t dropped_in_file = 0;
  std::deque<std::string> names;  // stable storage for kernel names
  std::set<CUpti_ActivityKind> enabled;
  std::set<CUpti_ActivityKind> window_kinds;  // every kind enabled since the window opened
  // cuptiActivityEnableRuntimeApi: runtime calls selected one by one (now; since the window
  // opened). Without the RUNTIME kind only those calls' records are replayed.
  std::set<uint32_t> runtime_cbids, window_runtime_cbids;
  int subscribers = 0;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  CUpti_TimestampCallbackFunc ts = nullptr;
  bool due = false;        // records of the current window still to be delivered
  uint64_t base = 0;       // the window's time origin
  uint32_t main_tid = 0;   // the thread that enabled activities
  uint64_t pending_dropped = 0;
  uint64_t delivered = 0, replays = 0, flushes = 0;
  std::map<long, uint64_t> flushes_by_thread;  // gettid → cuptiActivityFlushAll calls
  std::vector<uint64_t> ext_stack;
  std::vector<uint64_t> window_pushed;  // external ids pushed since the window opened, in order
};

State& St() {
  static State* s = new State;
  return *s;
}

std::string Env(const char* k) {
  const char* v = std::getenv(k);
  return v ? v : "";
}

uint64_t OwnClock() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec) +
         5000000000ull;
}

uint64_t Now(State& s) { return s.ts != nullptr ? s.ts() : OwnClock(); }

size_t RecordSize(CUpti_ActivityKind k) {
  size_t n = 0;
  switch (k) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: n = sizeof(CUpti_ActivityKernel10); break;
    case CUPTI_ACTIVITY_KIND_MEMCPY: n = sizeof(CUpti_ActivityMemcpy6); break;
    case CUPTI_ACTIVITY_KIND_MEMSET: n = sizeof(CUpti_ActivityMemset4); break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: n = sizeof(CUpti_ActivityAPI); break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: n = sizeof(CUpti_ActivitySynchronization2); break;
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: n = sizeof(CUpti_ActivityExternalCorrelation); break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: n = sizeof(CUpti_ActivityOverhead3); break;
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: n = sizeof(CUpti_ActivityGraphTrace2); break;
    default: n = sizeof(CUpti_Activity); break;
  }
  return (n + 7) & ~size_t{7};
}

void Load(State& s) {
  if (s.loaded) return;
  s.loaded = true;
  std::ifstream in(Env("RLPROF_FAKE_CUPTI_RECORDS"));
  std::string line;
  static const std::map<std::string, CUpti_ActivityKind> kinds = {
      {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
      {"memset", CUPTI_ACTIVITY_KIND_MEMSET},           {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
      {"driver", CUPTI_ACTIVITY_KIND_DRIVER},           {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
      {"external", CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION},
      {"overhead", CUPTI_ACTIVITY_KIND_OVERHEAD},       {"graph", CUPTI_ACTIVITY_KIND_GRAPH_TRACE}};
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "dropped") {
      uint64_t n = 0;
      ls >> n;
      s.dropped_in_file += n;
      continue;
    }
    auto k = kinds.find(word);
    if (k == kinds.end()) continue;
    Spec sp{k->second, {}, {}};
    while (ls >> word) {
      const size_t eq = word.find('=');
      if (eq == std::string::npos) continue;
      std::string key = word.substr(0, eq), value = word.substr(eq + 1);
      if (key == "name") {  // the rest of the line
        std::string rest;
        std::getline(ls, rest);
        value += rest;
      }
      sp.f[key] = value;
    }
    s.specs.push_back(std::move(sp));
  }
}

void Dims(const std::string& v, int32_t* x, int32_t* y, int32_t* z) {
  *x = *y = *z = 1;
  std::sscanf(v.c_str(), "%d,%d,%d", x, y, z);
}

// Writes `sp` as the CUPTI struct of its kind at `p` (RecordSize(kind) zeroed bytes).
void Build(State& s, const Spec& sp, uint8_t* p) {
  const uint64_t t0 = static_cast<uint64_t>(sp.I("t"));
  const uint64_t t1 = t0 + static_cast<uint64_t>(sp.I("d"));
  const uint32_t tid = sp.S("tid") == "MAIN" || sp.S("tid").empty() ? 0  // patched per delivery
                                                                    : static_cast<uint32_t>(sp.I("tid"));
  switch (sp.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(p);
      k->kind = sp.kind;
      k->start = t0;
      k->end = t1;
      k->completed = t1;
      k->deviceId = static_cast<uint32_t>(sp.I("dev"));
      k->contextId = static_cast<uint32_t>(sp.I("ctx", 1));
      k->streamId = static_cast<uint32_t>(sp.I("stream", 7));
      Dims(sp.S("grid"), &k->gridX, &k->gridY, &k->gridZ);
      Dims(sp.S("block"), &k->blockX, &k->blockY, &k->blockZ);
      k->registersPerThread = static_cast<uint16_t>(sp.I("regs", 32));
      k->staticSharedMemory = static_cast<int32_t>(sp.I("smem"));
      k->dynamicSharedMemory = static_cast<int32_t>(sp.I("dsmem"));
      k->correlationId = static_cast<uint32_t>(sp.I("corr"));
      k->graphNodeId = static_cast<uint64_t>(sp.I("node"));
      k->graphId = static_cast<uint32_t>(sp.I("graph"));
      s.names.push_back(sp.S("name"));
      k->name = s.names.back().c_str();
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(p);
      m->kind = sp.kind;
      const std::string c = sp.S("copy");
      static const std::map<std::string, CUpti_ActivityMemcpyKind> copy_kinds = {
          {"HtoD", CUPTI_ACTIVITY_MEMCPY_KIND_HTOD}, {"DtoH", CUPTI_ACTIVITY_MEMCPY_KIND_DTOH},
          {"HtoA", CUPTI_ACTIVITY_MEMCPY_KIND_HTOA}, {"AtoH", CUPTI_ACTIVITY_MEMCPY_KIND_ATOH},
          {"AtoA", CUPTI_ACTIVITY_MEMCPY_KIND_ATOA}, {"AtoD", CUPTI_ACTIVITY_MEMCPY_KIND_ATOD},
          {"DtoA", CUPTI_ACTIVITY_MEMCPY_KIND_DTOA}, {"DtoD", CUPTI_ACTIVITY_MEMCPY_KIND_DTOD},
          {"HtoH", CUPTI_ACTIVITY_MEMCPY_KIND_HTOH}, {"PtoP", CUPTI_ACTIVITY_MEMCPY_KIND_PTOP}};
      auto ck = copy_kinds.find(c);
      m->copyKind = ck != copy_kinds.end() ? ck->second : CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
      m->bytes = static_cast<uint64_t>(sp.I("bytes"));
      m->start = t0;
      m->end = t1;
      m->deviceId = static_cast<uint32_t>(sp.I("dev"));
      m->contextId = static_cast<uint32_t>(sp.I("ctx", 1));
      m->streamId = static_cast<uint32_t>(sp.I("stream", 7));
      m->correlationId = static_cast<uint32_t>(sp.I("corr"));
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(p);
      m->kind = sp.kind;
      m->bytes = static_cast<uint64_t>(sp.I("bytes"));
      m->start = t0;
      m->end = t1;
      m->deviceId = static_cast<uint32_t>(sp.I("dev"));
      m->contextId = static_cast<uint32_t>(sp.I("ctx", 1));
      m->streamId = static_cast<uint32_t>(sp.I("stream", 7));
      m->correlationId = static_cast<uint32_t>(sp.I("corr"));
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<CUpti_ActivityAPI*>(p);
      a->kind = sp.kind;
      a->cbid = static_cast<CUpti_CallbackId>(sp.I("cbid"));
      a->start = t0;
      a->end = t1;
      a->processId = static_cast<uint32_t>(getpid());
      a->threadId = tid;
      a->correlationId = static_cast<uint32_t>(sp.I("corr"));
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* y = reinterpret_cast<CUpti_ActivitySynchronization2*>(p);
      y->kind = sp.kind;
      y->type = static_cast<CUpti_ActivitySynchronizationType>(sp.I("type", 3));
      y->start = t0;
      y->end = t1;
      y->correlationId = static_cast<uint32_t>(sp.I("corr"));
      y->contextId = static_cast<uint32_t>(sp.I("ctx", 1));
      y->streamId = static_cast<uint32_t>(sp.I("stream", 7));
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      auto* x = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(p);
      x->kind = sp.kind;
      x->externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
      x->externalId = static_cast<uint64_t>(sp.I("id"));
      x->correlationId = static_cast<uint32_t>(sp.I("corr"));
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      auto* o = reinterpret_cast<CUpti_ActivityOverhead3*>(p);
      o->kind = sp.kind;
      o->overheadKind = static_cast<CUpti_ActivityOverheadKind>(sp.I("kind", CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH));
      o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
      o->objectId.pt.processId = static_cast<uint32_t>(getpid());
      o->objectId.pt.threadId = tid;
      o->start = t0;
      o->end = t1;
      break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      auto* g = reinterpret_cast<CUpti_ActivityGraphTrace2*>(p);
      g->kind = sp.kind;
      g->correlationId = static_cast<uint32_t>(sp.I("corr"));
      g->start = t0;
      g->end = t1;
      g->deviceId = static_cast<uint32_t>(sp.I("dev"));
      g->graphId = static_cast<uint32_t>(sp.I("graph"));
      g->contextId = static_cast<uint32_t>(sp.I("ctx", 1));
      g->streamId = static_cast<uint32_t>(sp.I("stream", 7));
      break;
    }
    default: break;
  }
}

// Copies `sp`'s record to `p` with the window's time origin and thread.
void Place(State& s, Spec& sp, uint8_t* p) {
  const size_t n = RecordSize(sp.kind);
  if (sp.tmpl.empty()) {
    sp.tmpl.assign(n, 0);
    Build(s, sp, sp.tmpl.data());
  }
  std::memcpy(p, sp.tmpl.data(), n);
  // (packed struct fields: no references to them)
#define RLPROF_FAKE_SHIFT(field) field += s.base
#define RLPROF_FAKE_TID(field) \
  if (field == 0) field = s.main_tid
  switch (sp.kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      auto* k = reinterpret_cast<CUpti_ActivityKernel10*>(p);
      RLPROF_FAKE_SHIFT(k->start), RLPROF_FAKE_SHIFT(k->end), RLPROF_FAKE_SHIFT(k->completed);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      auto* m = reinterpret_cast<CUpti_ActivityMemcpy6*>(p);
      RLPROF_FAKE_SHIFT(m->start), RLPROF_FAKE_SHIFT(m->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      auto* m = reinterpret_cast<CUpti_ActivityMemset4*>(p);
      RLPROF_FAKE_SHIFT(m->start), RLPROF_FAKE_SHIFT(m->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      auto* a = reinterpret_cast<CUpti_ActivityAPI*>(p);
      RLPROF_FAKE_SHIFT(a->start), RLPROF_FAKE_SHIFT(a->end);
      RLPROF_FAKE_TID(a->threadId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      auto* y = reinterpret_cast<CUpti_ActivitySynchronization2*>(p);
      RLPROF_FAKE_SHIFT(y->start), RLPROF_FAKE_SHIFT(y->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      auto* o = reinterpret_cast<CUpti_ActivityOverhead3*>(p);
      RLPROF_FAKE_SHIFT(o->start), RLPROF_FAKE_SHIFT(o->end);
      RLPROF_FAKE_TID(o->objectId.pt.threadId);
      break;
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      auto* g = reinterpret_cast<CUpti_ActivityGraphTrace2*>(p);
      RLPROF_FAKE_SHIFT(g->start), RLPROF_FAKE_SHIFT(g->end);
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      // id=@K: the K-th id the client pushed in this window (0 if it pushed fewer), as CUPTI
      // reports the id on top of the launching thread's stack at the launch.
      const std::string id = sp.S("id");
      if (!id.empty() && id[0] == '@') {
        const size_t k = std::strtoull(id.c_str() + 1, nullptr, 10);
        auto* x = reinterpret_cast<CUpti_ActivityExternalCorrelation*>(p);
        x->externalId = k >= 1 && k <= s.window_pushed.size() ? s.window_pushed[k - 1] : 0;
      }
      break;
    }
    default: break;
  }
#undef RLPROF_FAKE_SHIFT
#undef RLPROF_FAKE_TID
}

bool KindEnabled(State& s, CUpti_ActivityKind k) {
  if (k == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
    return s.window_kinds.count(k) || s.window_kinds.count(CUPTI_ACTIVITY_KIND_KERNEL);
  if (k == CUPTI_ACTIVITY_KIND_RUNTIME && !s.window_runtime_cbids.empty()) return true;
  return s.window_kinds.count(k) != 0;
}

// A record of an enabled kind that is replayed: runtime calls selected one by one (no RUNTIME
// kind) are the only runtime records CUPTI would make.
bool SpecEnabled(State& s, Spec& sp) {
  if (!KindEnabled(s, sp.kind)) return false;
  if (sp.kind == CUPTI_ACTIVITY_KIND_RUNTIME && !s.window_kinds.count(CUPTI_ACTIVITY_KIND_RUNTIME))
    return s.window_runtime_cbids.count(static_cast<uint32_t>(sp.I("cbid"))) != 0;
  return true;
}

void Deliver(State& s) {
  if (!s.due || s.request == nullptr || s.complete == nullptr) return;
  s.due = false;
  ++s.replays;
  const long per = std::atol(Env("RLPROF_FAKE_CUPTI_RECORDS_PER_BUFFER").c_str());
  const long repeat = std::max(1L, std::atol(Env("RLPROF_FAKE_CUPTI_REPEAT").c_str()));
  struct Filled {
    uint8_t* buf;
    size_t size, valid;
  };
  std::vector<Filled> filled;
  Filled cur{nullptr, 0, 0};
  long in_cur = 0;
  uint64_t dropped = s.dropped_in_file;
  for (long r = 0; r < repeat; ++r) {
    for (Spec& sp : s.specs) {
      if (!SpecEnabled(s, sp)) continue;
      const size_t n = RecordSize(sp.kind);
      if (cur.buf != nullptr && (cur.valid + n > cur.size || (per > 0 && in_cur >= per))) {
        filled.push_back(cur);
        cur = {nullptr, 0, 0};
      }
      if (cur.buf == nullptr) {
        size_t max_records = 0;
        cur.size = 0;
        s.request(&cur.buf, &cur.size, &max_records);
        in_cur = 0;
        if (cur.buf == nullptr || cur.size < n) {
          cur = {nullptr, 0, 0};
          ++dropped;  // as CUPTI does without a buffer: the record is lost, and counted
          continue;
        }
      }
      Place(s, sp, cur.buf + cur.valid);
      cur.valid += n;
      ++in_cur;
      ++s.delivered;
    }
  }
  if (cur.buf != nullptr) filled.push_back(cur);
  s.pending_dropped += dropped;
  for (const Filled& f : filled) s.complete(nullptr, 0, f.buf, f.size, f.valid);
}

}  // namespace

extern "C" {

CUptiResult cuptiGetVersion(uint32_t* v) {
  const std::string as = Env("RLPROF_FAKE_CUPTI_VERSION");  // another release's API version
  *v = as.empty() ? CUPTI_API_VERSION : static_cast<uint32_t>(std::strtoul(as.c_str(), nullptr, 10));
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult r, const char** s) {
  switch (r) {
    case CUPTI_SUCCESS: *s = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *s = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    default: *s = "CUPTI_ERROR_UNKNOWN"; break;
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc, void*) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (Env("RLPROF_FAKE_CUPTI_MODE") == "other_subscriber" || s.subscribers > 0)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  ++s.subscribers;
  static int token;
  *h = reinterpret_cast<CUpti_SubscriberHandle>(&token);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (s.subscribers > 0) --s.subscribers;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                           CUpti_BuffersCallbackCompleteFunc done) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  s.request = req;
  s.complete = done;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (Env("RLPROF_FAKE_CUPTI_MODE") == "no_timestamp_callback") {
    s.ts = nullptr;  // records in the fake's own clock
    return CUPTI_ERROR_NOT_SUPPORTED;
  }
  s.ts = f;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* t) {
  *t = OwnClock();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  if (Env("RLPROF_FAKE_CUPTI_MODE") == "enable_fails") return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  Load(s);
  if (s.enabled.empty()) {  // a window opens: its records are due
    // The previous window's records, not flushed yet, complete now with that window's times
    // (CUPTI keeps each record's own timestamps whenever its buffer is handed over).
    Deliver(s);
    s.base = Now(s);
    s.main_tid = static_cast<uint32_t>(syscall(SYS_gettid));
    s.due = true;
    s.window_kinds.clear();
    s.window_runtime_cbids = s.runtime_cbids;
    s.window_pushed.clear();
  }
  s.enabled.insert(k);
  s.window_kinds.insert(k);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  s.enabled.erase(k);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (enable) {
    s.runtime_cbids.insert(cbid);
    s.window_runtime_cbids.insert(cbid);
  } else {
    s.runtime_cbids.erase(cbid);
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t) {
  State& s = St();
  // The records were "collected" while the kinds were enabled: deliver them even if the window
  // has already disabled its kinds (Stop comes before the writer's final flush).
  std::lock_guard<std::recursive_mutex> l(s.mu);
  ++s.flushes;
  ++s.flushes_by_thread[static_cast<long>(syscall(SYS_gettid))];
  Deliver(s);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  uint8_t* p = *record == nullptr ? buffer : reinterpret_cast<uint8_t*>(*record) + RecordSize((*record)->kind);
  if (p + sizeof(CUpti_Activity) > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(p);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  *dropped = s.pending_dropped;
  s.pending_dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t id) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  s.ext_stack.push_back(id);
  s.window_pushed.push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind, uint64_t* id) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (s.ext_stack.empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  *id = s.ext_stack.back();
  s.ext_stack.pop_back();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }

CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (cbid) {
      case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000: *name = "cudaLaunchKernel_v7000"; return CUPTI_SUCCESS;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020: *name = "cudaMemcpyAsync_v3020"; return CUPTI_SUCCESS;
      case CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020: *name = "cudaMemsetAsync_v3020"; return CUPTI_SUCCESS;
      case CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020: *name = "cudaStreamSynchronize_v3020"; return CUPTI_SUCCESS;
      case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000: *name = "cudaGraphLaunch_v10000"; return CUPTI_SUCCESS;
      default: break;
    }
  }
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
    *name = "cuLaunchKernel";
    return CUPTI_SUCCESS;
  }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

// ---- For tests. ----
int fake_cupti_subscribers(void) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  return s.subscribers;
}
uint64_t fake_cupti_delivered(void) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  return s.delivered;
}
// Pushed external correlation ids not yet popped, and the newest of them (0 if none).
int fake_cupti_external_depth(uint64_t* top) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  *top = s.ext_stack.empty() ? 0 : s.ext_stack.back();
  return static_cast<int>(s.ext_stack.size());
}
// Reads $RLPROF_FAKE_CUPTI_RECORDS again at the next window (a test replaying another file).
void fake_cupti_reload(void) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  s.loaded = false;
  s.specs.clear();
  s.dropped_in_file = 0;
}
// Runtime calls selected one by one (cuptiActivityEnableRuntimeApi) now; *runtime_kind: whether
// the RUNTIME kind (every call) is enabled.
int fake_cupti_runtime_cbids(int* runtime_kind) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (runtime_kind != nullptr) *runtime_kind = s.enabled.count(CUPTI_ACTIVITY_KIND_RUNTIME) ? 1 : 0;
  return static_cast<int>(s.runtime_cbids.size());
}
// cuptiActivityFlushAll calls so far: made on thread `tid` (gettid), or by any thread if tid is 0.
uint64_t fake_cupti_flushes(long tid) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  if (tid == 0) return s.flushes;
  const auto it = s.flushes_by_thread.find(tid);
  return it == s.flushes_by_thread.end() ? 0 : it->second;
}
int fake_cupti_enabled_kinds(void) {
  State& s = St();
  std::lock_guard<std::recursive_mutex> l(s.mu);
  return static_cast<int>(s.enabled.size());
}

}  // extern "C"
