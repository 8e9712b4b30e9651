#include "src/sources/torch_ops.h"

#include <ATen/record_function.h>
#include <ATen/core/ivalue.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <unordered_map>

#include "rlprof/format/event.h"
#include "rlprof/rlprof.hpp"
#include "src/runtime/thread_buffer.h"

namespace rlprof::sources {
namespace {

using format::Category;
using format::EventKind;

constexpr uint32_t kNoSequence = UINT32_MAX;  // torch's seqNr() == -1

struct OpContext : at::ObserverContext {
  uint64_t t0 = 0;
  uint32_t gen = 0;
  uint32_t shapes = 0;  // string id
  uint32_t bytes = 0;   // saturated
  bool async = false;   // ends on another thread (c10d work): counted in flight
};

// Operator names: aten names live as long as the operator, but user scopes and backward node
// names are owned by the RecordFunction, so a pointer may come back with other text. The
// cache is keyed by pointer and verified by content; it is dropped when the window changes
// (string ids are per session, and window generations are never reused).
struct NameCacheEntry {
  std::string text;
  uint32_t id = 0;
};
struct ThreadNames {
  uint32_t gen = 0;
  std::unordered_map<const char*, NameCacheEntry> by_ptr;
};

uint32_t NameId(uint32_t gen, const char* name) {
  thread_local ThreadNames names;
  if (names.gen != gen) {
    names.by_ptr.clear();
    names.gen = gen;
  }
  if (name == nullptr) return 0;
  auto it = names.by_ptr.find(name);
  if (it != names.by_ptr.end() && it->second.text == name) return it->second.id;
  NameCacheEntry e;
  e.text = name;
  e.id = runtime::Recorder::Get().interner().InternString(e.text);
  const uint32_t id = e.id;
  names.by_ptr[name] = std::move(e);
  return id;
}

void AppendShape(const c10::IValue& v, std::string* out, uint64_t* bytes) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    out->push_back('[');
    if (t.defined()) {
      const auto sizes = t.sizes();
      for (size_t i = 0; i < sizes.size(); ++i) {
        if (i) out->append(", ");
        out->append(std::to_string(sizes[i]));
      }
      *bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
    }
    out->push_back(']');
  } else if (v.isTensorList()) {
    out->push_back('[');
    bool first = true;
    for (const at::Tensor& t : v.toTensorVector()) {
      if (!first) out->append(", ");
      first = false;
      AppendShape(c10::IValue(t), out, bytes);
    }
    out->push_back(']');
  } else {
    out->append("[]");
  }
}

std::unique_ptr<at::ObserverContext> OnEnter(const at::RecordFunction& fn) {
  const uint32_t gen = internal::OpenWindow();
  if (gen == 0) return nullptr;
  auto ctx = std::make_unique<OpContext>();
  ctx->gen = gen;
  if (fn.isAsync()) {
    ctx->async = true;
    TorchOps::Get().async_in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  const auto inputs = fn.inputs();
  if (!inputs.empty()) {
    std::string shapes = "[";
    uint64_t bytes = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (i) shapes.append(", ");
      AppendShape(inputs[i], &shapes, &bytes);
    }
    shapes.push_back(']');
    ctx->shapes = runtime::Recorder::Get().interner().InternString(shapes);
    ctx->bytes = bytes > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(bytes);
  }
  ctx->t0 = internal::ReadTicks();  // last: formatting is not the operator's time
  return ctx;
}

void OnExit(const at::RecordFunction& fn, at::ObserverContext* raw) {
  if (raw == nullptr) return;
  const uint64_t t1 = internal::ReadTicks();
  auto* ctx = static_cast<OpContext*>(raw);
  struct AsyncDone {  // after the event is stored: WaitForAsync() then sees it recorded
    bool on;
    ~AsyncDone() {
      if (on) TorchOps::Get().async_in_flight.fetch_sub(1, std::memory_order_release);
    }
  } done{ctx->async};
  if (internal::OpenWindow() != ctx->gen) return;  // the window closed meanwhile
  const char* name = fn.name();
  runtime::Record e{};
  e.ts_ns = static_cast<int64_t>(ctx->t0);
  e.payload = static_cast<int64_t>(t1 - ctx->t0);
  e.name = NameId(ctx->gen, name);
  e.kind = EventKind::kComplete;
  if (name != nullptr && IsCommunicationOp(name)) {
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
  runtime::EmitRecord(ctx->gen, e);
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

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
  std::lock_guard<std::mutex> lock(mu_);
  if (!want) {
    if (enabled_) at::disableCallback(handle_);
    enabled_ = false;
    return;
  }
  if (handle_ != 0 && shapes != shapes_) {
    at::removeCallback(handle_);
    handle_ = 0;
    enabled_ = false;
  }
  if (handle_ == 0) {
    handle_ = at::addGlobalCallback(at::RecordFunctionCallback(&OnEnter, &OnExit)
                                        .needsInputs(shapes)
                                        .needsIds(true)
                                        .scopes({at::RecordScope::FUNCTION,
                                                 at::RecordScope::BACKWARD_FUNCTION,
                                                 at::RecordScope::TORCHSCRIPT_FUNCTION,
                                                 at::RecordScope::USER_SCOPE}));
    shapes_ = shapes;
    enabled_ = true;
    return;
  }
  if (!enabled_) at::reenableCallback(handle_);
  enabled_ = true;
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

TorchOpsStats TorchOps::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  TorchOpsStats s;
  s.ops = ops_recorded.load(std::memory_order_relaxed);
  s.communication = comm_recorded.load(std::memory_order_relaxed);
  s.installed = handle_ != 0;
  s.enabled = enabled_;
  s.shapes = shapes_;
  return s;
}

}  // namespace rlprof::sources
