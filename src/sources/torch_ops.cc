#include "src/sources/torch_ops.h"

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <time.h>

#include <charconv>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "rlprof/format/event.h"

namespace rlprof::sources {
namespace {

using format::Category;
using format::EventKind;

constexpr uint32_t kNoSequence = UINT32_MAX;  // torch's seqNr() == -1

// What the callbacks do; written by Configure() only while the callback is not registered.
TorchOpsOptions g_opt;
StackFn g_stack_fn = nullptr;
// External correlation ids (TorchOptions::correlate): 32-bit (the capture keeps 32 bits of the
// id a launch carried), never 0.
std::atomic<uint32_t> g_next_external{0};

inline uint32_t OpenWindow() { return RuntimeWindow(); }
inline uint64_t ReadTicks() { return RuntimeTicks(); }

// ---- Per-thread state: name cache, shapes buffer ----

// Transparent hashing so that lookups by string_view do not build a std::string.
struct TextHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TextMap = std::unordered_map<std::string, uint32_t, TextHash, std::equal_to<>>;

struct NameInfo {
  uint32_t id = 0;
  bool communication = false;
};

// Operator names: aten names live as long as the operator, but user scopes and backward node
// names are owned by the RecordFunction, so a pointer may come back with other text. The
// direct-mapped cache is keyed by pointer and verified against its own copy of the text
// (strcmp of a short name, no hashing); misses go to a content map. Both are dropped when the
// window changes (string ids are per session, and window generations are never reused).
struct NameSlot {
  const char* ptr = nullptr;
  const char* text = nullptr;  // the key stored in `by_text`
  NameInfo info;
};
constexpr size_t kNameSlots = 512;

struct ThreadState {
  uint32_t gen = 0;
  NameSlot slots[kNameSlots];
  std::unordered_map<std::string, NameInfo, TextHash, std::equal_to<>> by_text;
  std::string shapes;  // reused: formatting allocates only when a longer text appears
  TextMap shape_ids;
  uint32_t external_name = 0;  // string id of "external_id" in window `gen` (0: not yet)
};

// A trivially destructible thread_local pointer (one TLS load on the hot path); the state is
// freed at thread exit by a second thread_local that exists only on threads that made one.
thread_local ThreadState* t_state = nullptr;
struct StateReaper {
  ~StateReaper() {
    delete t_state;
    t_state = nullptr;
  }
};

ThreadState* State(uint32_t gen) {
  ThreadState* s = t_state;
  if (s == nullptr) {
    thread_local StateReaper reaper;
    (void)reaper;
    s = t_state = new ThreadState;
  }
  if (s->gen != gen) {
    for (NameSlot& slot : s->slots) slot = NameSlot{};
    s->by_text.clear();
    s->shape_ids.clear();
    s->external_name = 0;
    s->gen = gen;
  }
  return s;
}

NameInfo LookupName(ThreadState* s, const char* name) {
  const auto v = reinterpret_cast<uintptr_t>(name);
  NameSlot& slot = s->slots[((v >> 3) ^ (v >> 13)) & (kNameSlots - 1)];
  if (slot.ptr == name && std::strcmp(slot.text, name) == 0) return slot.info;
  const std::string_view text(name);
  auto it = s->by_text.find(text);
  if (it == s->by_text.end()) {
    NameInfo info;
    info.id = RuntimeIntern(text);
    info.communication = IsCommunicationOp(text);
    it = s->by_text.emplace(std::string(text), info).first;
  }
  slot.ptr = name;
  slot.text = it->first.c_str();
  slot.info = it->second;
  return it->second;
}

// ---- Shapes (only with `shapes`) ----

void AppendInt(std::string* out, int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendShape(const at::Tensor& t, std::string* out, uint64_t* bytes) {
  out->push_back('[');
  if (t.defined()) {
    const auto sizes = t.sizes();
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (i) out->append(", ");
      AppendInt(out, sizes[i]);
    }
    *bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
  }
  out->push_back(']');
}

void AppendShape(const c10::IValue& v, std::string* out, uint64_t* bytes) {
  if (v.isTensor()) {
    AppendShape(v.toTensor(), out, bytes);
  } else if (v.isTensorList()) {
    out->push_back('[');
    bool first = true;
    for (const at::Tensor& t : v.toTensorList()) {  // a List handle: no vector copy
      if (!first) out->append(", ");
      first = false;
      AppendShape(t, out, bytes);
    }
    out->push_back(']');
  } else {
    out->append("[]");
  }
}

// ---- Contexts: one per recorded op, from a per-thread free list ----

// torch owns the context through a unique_ptr<ObserverContext> and deletes it through the
// base's virtual destructor, which uses this class's operator delete: the memory goes back to
// the free list of the thread that ends the op (async ops end on another thread; the list is
// capped so such a thread does not hoard).
struct OpContext final : at::ObserverContext {
  uint64_t t0 = 0;
  uint32_t gen = 0;
  uint32_t shapes = 0;  // string id
  uint32_t bytes = 0;   // saturated
  uint32_t parent_op = 0;  // the thread's operator context before this op (tracked only)
  bool async = false;   // ends on another thread (c10d work): counted in flight
  bool tracked = false; // entered the thread's operator context / depth (synchronous ops only)
  bool user = false;    // a record_function scope: does not count as an enclosing operator
  uint32_t external = 0;  // external correlation id pushed at the start (0: none)

  static void* operator new(size_t n);
  static void operator delete(void* p) noexcept;
};

struct FreeNode {
  FreeNode* next;
};
constexpr uint32_t kMaxFree = 1024;
thread_local FreeNode* t_free = nullptr;  // leaked at thread exit (at most kMaxFree small blocks)
thread_local uint32_t t_free_count = 0;

void* OpContext::operator new(size_t n) {
  if (FreeNode* f = t_free; f != nullptr && n == sizeof(OpContext)) {
    t_free = f->next;
    --t_free_count;
    return f;
  }
  return ::operator new(sizeof(OpContext));
}

void OpContext::operator delete(void* p) noexcept {
  if (t_free_count >= kMaxFree) {
    ::operator delete(p);
    return;
  }
  auto* f = static_cast<FreeNode*>(p);
  f->next = t_free;
  t_free = f;
  ++t_free_count;
}

// ---- Operator context (memory) and depth (stack), per thread ----

thread_local uint32_t t_current_op = 0;  // name id of the innermost tracked op, window t_op_gen
thread_local uint32_t t_op_gen = 0;
thread_local int32_t t_depth = 0;        // enclosing tracked ops that are not user scopes

// ---- Callbacks ----

std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction& fn) {
  const uint32_t gen = OpenWindow();
  if (gen == 0) return nullptr;
  auto ctx = std::unique_ptr<OpContext>(new OpContext);
  ctx->gen = gen;
  if (fn.isAsync()) {
    ctx->async = true;
    TorchOps::Get().async_in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  uint32_t stack = 0;
  if (!ctx->async && (g_opt.context || g_opt.stack)) {
    ctx->tracked = true;
    ctx->user = fn.scope() == at::RecordScope::USER_SCOPE;
    if (g_opt.context) {
      ctx->parent_op = t_op_gen == gen ? t_current_op : 0;
      const char* name = fn.name();
      t_current_op = name != nullptr ? LookupName(State(gen), name).id : 0;
      t_op_gen = gen;
    }
    // The Python stack of an operator no other (non-scope) operator encloses: nested aten
    // calls share their caller's stack and do not pay for it.
    if (g_opt.stack && g_opt.record && t_depth == 0 && g_stack_fn != nullptr) stack = g_stack_fn();
    if (!ctx->user) ++t_depth;
  }
  const auto inputs = fn.inputs();  // empty unless registered with needsInputs (shapes on)
  if (!inputs.empty()) {
    ThreadState* s = State(gen);
    std::string& text = s->shapes;
    text.assign("[");
    uint64_t bytes = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i) text.append(", ");
      AppendShape(inputs[i], &text, &bytes);
    }
    text.push_back(']');
    auto it = s->shape_ids.find(std::string_view(text));
    if (it == s->shape_ids.end()) it = s->shape_ids.emplace(text, RuntimeIntern(text)).first;
    ctx->shapes = it->second;
    ctx->bytes = bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(bytes);
  }
  if (g_opt.correlate && g_opt.record && !ctx->async) {  // async ops end on another thread
    uint32_t id = g_next_external.fetch_add(1, std::memory_order_relaxed) + 1;
    if (id == 0) id = g_next_external.fetch_add(1, std::memory_order_relaxed) + 1;
    ctx->external = id;
    rlprof_correlation_push(id);
  }
  ctx->t0 = ReadTicks();  // last: formatting is not the operator's time
  if (ctx->external != 0) {  // the operator's id, at its begin on its thread (reader pairs)
    ThreadState* s = State(gen);
    if (s->external_name == 0) s->external_name = RuntimeIntern("external_id");
    format::Event e{};
    e.ts_ns = static_cast<int64_t>(ctx->t0);
    e.name = s->external_name;
    e.kind = EventKind::kInstant;
    e.category = Category::kCapture;
    e.arg0 = ctx->external;
    RuntimeEmit(gen, e);
    TorchOps::Get().correlated.fetch_add(1, std::memory_order_relaxed);
  }
  if (stack != 0) {  // at the operator's begin, on its thread: the reader pairs the two
    format::Event e{};
    e.ts_ns = static_cast<int64_t>(ctx->t0);
    e.name = stack;
    e.kind = EventKind::kInstant;
    e.category = Category::kStack;
    RuntimeEmit(gen, e);
    TorchOps::Get().stacks_recorded.fetch_add(1, std::memory_order_relaxed);
  }
  return ctx;
}

void OnExit(const at::RecordFunction& fn, at::ObserverContext* raw) {
  if (raw == nullptr) return;
  const uint64_t t1 = ReadTicks();
  auto* ctx = static_cast<OpContext*>(raw);
  struct AsyncDone {  // after the event is stored: WaitForAsync() then sees it recorded
    bool on;
    ~AsyncDone() {
      if (on) TorchOps::Get().async_in_flight.fetch_sub(1, std::memory_order_release);
    }
  } done{ctx->async};
  if (ctx->external != 0) rlprof_correlation_pop();  // also when the window closed meanwhile
  if (ctx->tracked) {  // synchronous: the thread that entered it
    if (g_opt.context) t_current_op = ctx->parent_op;
    if (!ctx->user && t_depth > 0) --t_depth;
  }
  if (OpenWindow() != ctx->gen) return;  // the window closed meanwhile
  if (!g_opt.record) return;             // context only (memory without ops)
  const char* name = fn.name();
  const NameInfo info = name != nullptr ? LookupName(State(ctx->gen), name) : NameInfo{};
  format::Event e{};
  e.ts_ns = static_cast<int64_t>(ctx->t0);
  e.payload = static_cast<int64_t>(t1 - ctx->t0);
  e.name = info.id;
  e.kind = EventKind::kComplete;
  if (info.communication) {
    e.category = Category::kCommunication;
    e.arg0 = ctx->bytes;
    TorchOps::Get().comm_recorded.fetch_add(1, std::memory_order_relaxed);
  } else {
    e.category = Category::kOperator;
    const int64_t seq = fn.seqNr();
    e.arg0 = seq >= 0 && seq < kNoSequence ? static_cast<uint32_t>(seq) : kNoSequence;
    e.arg1 = ctx->shapes;
    TorchOps::Get().ops_recorded.fetch_add(1, std::memory_order_relaxed);
  }
  RuntimeEmit(ctx->gen, e);
}

// SetFloorCallback's: torch's machinery around a callback, with nothing done in it.
std::unique_ptr<at::ObserverContext> FloorEnter(const at::RecordFunction&) { return nullptr; }
void FloorExit(const at::RecordFunction&, at::ObserverContext*) {}

at::RecordFunctionCallback WithOurScopes(at::RecordFunctionCallback cb) {
  return cb.scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                    at::RecordScope::TORCHSCRIPT_FUNCTION, at::RecordScope::USER_SCOPE});
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace


uint32_t CurrentOperator() {
  const uint32_t gen = OpenWindow();
  return gen != 0 && t_op_gen == gen ? t_current_op : 0;
}

bool IsCommunicationOp(std::string_view name) {
  return StartsWith(name, "c10d::") || StartsWith(name, "gloo:") || StartsWith(name, "nccl:") ||
         StartsWith(name, "mpi:") || StartsWith(name, "ucc:") || StartsWith(name, "hccl:") ||
         name == "record_param_comms";
}

TorchOps& TorchOps::Get() {
  static TorchOps* ops = new TorchOps;  // never destroyed: callbacks may run during exit
  return *ops;
}

void TorchOps::Sync(bool want, bool shapes) {
  TorchOpsOptions o;
  o.record = true;
  o.shapes = shapes;
  Configure(want, o);
}

void TorchOps::SetStackFunction(StackFn fn) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!enabled_) g_stack_fn = fn;
}

void TorchOps::Configure(bool want, const TorchOpsOptions& options) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!want) {
    if (enabled_) at::disableCallback(handle_);
    enabled_ = false;
    return;
  }
  if (handle_ != 0 && !(options == opt_)) {
    at::removeCallback(handle_);
    handle_ = 0;
    enabled_ = false;
  }
  if (handle_ == 0) {
    opt_ = options;
    g_opt = options;  // before registration: the callbacks never see it change
    // No needsIds: the callbacks use the sequence number (always set) but not torch's
    // per-RecordFunction handle, which costs a global atomic increment per op. Inputs only
    // for shapes: asking for them makes the dispatcher box every op's arguments.
    at::RecordFunctionCallback cb(&OnEnter, &OnExit);
    cb.needsInputs(options.shapes && options.record);
    if (options.record && options.sampling > 0 && options.sampling < 1)
      cb.samplingProb(options.sampling);
    handle_ = at::addGlobalCallback(WithOurScopes(cb));
    enabled_ = true;
    return;
  }
  if (!enabled_) at::reenableCallback(handle_);
  enabled_ = true;
}

bool TorchOps::Correlating() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rlprof_correlation_active() != 0;
}

bool TorchOps::WaitForAsync(int64_t timeout_us) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(timeout_us);
  while (async_in_flight.load(std::memory_order_acquire) > 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

void TorchOps::Uninstall() {
  std::lock_guard<std::mutex> lock(mu_);
  if (handle_ != 0) at::removeCallback(handle_);
  handle_ = 0;
  enabled_ = false;
}

void TorchOps::SetFloorCallback(bool on, int scopes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (on && floor_handle_ == 0) {
    at::RecordFunctionCallback cb(&FloorEnter, &FloorExit);
    floor_handle_ = at::addGlobalCallback(scopes == 1 ? cb.scopes({at::RecordScope::FUNCTION})
                                                      : WithOurScopes(cb));
  } else if (!on && floor_handle_ != 0) {
    at::removeCallback(floor_handle_);
    floor_handle_ = 0;
  }
}

TorchOpsStats TorchOps::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TorchOpsStats s;
  s.ops = ops_recorded.load(std::memory_order_relaxed);
  s.communication = comm_recorded.load(std::memory_order_relaxed);
  s.installed = handle_ != 0;
  s.enabled = enabled_;
  s.shapes = opt_.shapes;
  s.bound = true;  // always: the runtime is librlprof, linked
  s.stacks = stacks_recorded.load(std::memory_order_relaxed);
  s.correlated = correlated.load(std::memory_order_relaxed);
  return s;
}

}  // namespace rlprof::sources
