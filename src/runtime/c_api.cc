// The C API (include/rlprof/rlprof.h): session handles over SessionImpl, the process-global
// default session, and the marker entry points. librlprof.so exports these functions and
// nothing else; rlprof.hpp, the Python extensions and the NVTX injection library call them.
//
// No exception crosses this boundary (C callers cannot catch one): every function that can
// fail catches everything and returns RLPROF_ERROR_INTERNAL with the message.
#include "rlprof/rlprof.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "src/base/strings.h"
#include "src/base/version.h"
#include "src/config/loader.h"
#include "src/config/stages.h"
#include "src/runtime/session.h"
#include "src/runtime/thread_buffer.h"

struct rlprof_session {
  std::unique_ptr<rlprof::runtime::SessionImpl> impl;
  std::atomic<bool> down{false};  // counted out of g_open (rlprof_session_count)
  // rlprof_session_info's strings, owned here.
  std::string host, roles, rank_source, run_id, run_dir, mode, stages, level;
  rlprof_session_info info{};
};

namespace {

using rlprof::runtime::SessionImpl;

thread_local std::string tls_error;

int Fail(int code, std::string message) noexcept {
  tls_error = std::move(message);  // a move: no allocation
  return code;
}

// The handler of every C entry point that can fail.
int Internal() noexcept {
  try {
    throw;
  } catch (const std::exception& e) {
    try {
      return Fail(RLPROF_ERROR_INTERNAL, std::string("rlprof: ") + e.what());
    } catch (...) {
    }
  } catch (...) {
  }
  return RLPROF_ERROR_INTERNAL;
}

int NotInitialised() noexcept { return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised"); }

const char* GetEnv(const char* key) { return std::getenv(key); }

std::optional<rlprof::config::SubStepKind> KindOf(int kind) {
  switch (kind) {
    case RLPROF_SUB_STEP_DECODE: return rlprof::config::SubStepKind::kDecode;
    case RLPROF_SUB_STEP_MICRO_BATCH: return rlprof::config::SubStepKind::kMicroBatch;
    case RLPROF_SUB_STEP_MINI_BATCH: return rlprof::config::SubStepKind::kMiniBatch;
    case RLPROF_SUB_STEP_STEP: return rlprof::config::SubStepKind::kStep;
    default: return std::nullopt;
  }
}

uint32_t ContentsBits(const rlprof::config::Contents& c) {
  return (c.cpu ? RLPROF_CONTENTS_CPU : 0) | (c.device ? RLPROF_CONTENTS_DEVICE : 0) |
         (c.ops ? RLPROF_CONTENTS_OPS : 0) | (c.shapes ? RLPROF_CONTENTS_SHAPES : 0) |
         (c.memory ? RLPROF_CONTENTS_MEMORY : 0) | (c.stack ? RLPROF_CONTENTS_STACK : 0) |
         (c.module ? RLPROF_CONTENTS_MODULE : 0);
}

// The caller's options, completed with the defaults of the fields its struct lacks.
rlprof_options ReadOptions(const rlprof_options* options) {
  rlprof_options o;
  rlprof_options_init(&o);
  if (options != nullptr)
    std::memcpy(&o, options,
                std::min<size_t>(sizeof o, options->struct_size ? options->struct_size : sizeof o));
  return o;
}

rlprof::SessionOptions ToSessionOptions(const rlprof_options& o) {
  rlprof::SessionOptions so;
  if (o.rank >= 0) so.rank = o.rank;
  if (o.local_rank >= 0) so.local_rank = o.local_rank;
  if (o.world_size > 0) so.world_size = o.world_size;
  if (o.roles != nullptr) {
    std::vector<std::string> roles;
    for (const std::string& r : rlprof::base::Split(o.roles, ','))
      if (auto t = rlprof::base::Trim(r); !t.empty()) roles.emplace_back(t);
    so.roles = roles;
  }
  if (o.replica >= 0) so.replica = o.replica;
  if (o.run_id != nullptr) so.run_id = o.run_id;
  so.install_signal_handlers = o.install_signal_handlers != 0;
  so.allow_tsc = o.allow_tsc != 0;
  so.quiet = o.quiet != 0;
  return so;
}

void FillInfo(rlprof_session& s) {
  const rlprof::Identity& id = s.impl->identity();
  const rlprof::config::ProcessPlan& p = s.impl->process_plan();
  s.host = id.host;
  s.roles = rlprof::base::Join(id.roles, ",");
  s.rank_source = id.source;
  s.run_id = s.impl->run_id();
  s.run_dir = s.impl->run_dir();
  s.mode = rlprof::config::CaptureModeName(p.mode);
  s.stages = rlprof::base::Join(p.stages, ",");
  s.level = p.level;
  rlprof_session_info& i = s.info;
  i.struct_size = sizeof i;
  i.rank = id.rank;
  i.local_rank = id.local_rank;
  i.world_size = id.world_size;
  i.pid = id.pid;
  i.replica = id.replica ? *id.replica : -1;
  i.host = s.host.c_str();
  i.roles = s.roles.c_str();
  i.rank_source = s.rank_source.c_str();
  i.run_id = s.run_id.c_str();
  i.run_dir = s.run_dir.c_str();
  i.selected = p.enabled ? 1 : 0;
  i.mode = s.mode.c_str();
  i.stages = s.stages.c_str();
  i.contents = ContentsBits(p.contents);
  i.level = s.level.c_str();
}

// A session that shuts itself down when the next one opens (rlprof_options.yield_to_next).
std::atomic<rlprof_session*> g_yielding{nullptr};
// Sessions opened and not shut down (rlprof_session_count).
std::atomic<int> g_open{0};

void ShutdownOnce(rlprof_session* s) {
  if (!s->down.exchange(true)) g_open.fetch_sub(1);
  s->impl->Shutdown();
}

// Loads the plan (from a file or text) and makes a session: RLPROF_OK, or the config's error.
int Open(const char* path, const char* text, const char* origin, const char* const* overrides,
         size_t n_overrides, const rlprof_options* options, rlprof_session** out) {
  if (out == nullptr) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: out is null");
  *out = nullptr;
  if (path == nullptr && text == nullptr)
    return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: path is null");
  if (n_overrides > 0 && overrides == nullptr)
    return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: overrides is null");
  std::vector<std::string> ovr;
  for (size_t i = 0; i < n_overrides; ++i) {
    if (overrides[i] == nullptr)
      return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: override " + std::to_string(i) + " is null");
    ovr.emplace_back(overrides[i]);
  }
  const rlprof_options o = ReadOptions(options);
  const rlprof::SessionOptions so = ToSessionOptions(o);
  rlprof::config::LoadOptions lo;
  if (so.world_size) lo.world_size = *so.world_size;
  auto plan = text != nullptr
                  ? rlprof::config::LoadPlanFromString(text, origin != nullptr ? origin : "<text>", ovr, lo)
                  : rlprof::config::LoadPlan(path, ovr, lo);
  if (!plan.ok()) return Fail(RLPROF_ERROR_CONFIG, "rlprof: " + plan.status().message());
  // A session opened on the program's behalf steps aside for the program's own.
  if (rlprof_session* y = g_yielding.exchange(nullptr)) ShutdownOnce(y);
  auto s = std::make_unique<rlprof_session>();
  s->impl = SessionImpl::Create(*plan, so, GetEnv);  // never throws: faults disable it
  FillInfo(*s);
  g_open.fetch_add(1);
  if (o.yield_to_next != 0) g_yielding.store(s.get());
  *out = s.release();
  tls_error.clear();
  return RLPROF_OK;
}

// ---- The default session ----

std::mutex g_default_mu;
std::atomic<rlprof_session*> g_default{nullptr};

void ShutdownAtExit() { rlprof_shutdown(); }

template <typename F>
int WithSession(rlprof_session* s, F f) {
  try {
    if (s == nullptr || s->impl == nullptr) return NotInitialised();
    return f(*s->impl);
  } catch (...) {
    return Internal();
  }
}

int CopyOut(const std::string& v, char* buf, size_t size) {
  if (buf == nullptr || size == 0) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: buffer is null");
  const size_t n = std::min(size - 1, v.size());
  std::memcpy(buf, v.data(), n);
  buf[n] = '\0';
  return RLPROF_OK;
}

}  // namespace

extern "C" {

void rlprof_options_init(rlprof_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->rank = o->local_rank = o->world_size = -1;
  o->install_signal_handlers = 1;
  o->replica = -1;
  o->allow_tsc = 1;
}

const char* rlprof_version(void) { return rlprof::base::Version(); }

int rlprof_session_open(const char* path, const char* const* overrides, size_t n_overrides,
                        const rlprof_options* options, rlprof_session** out) {
  try {
    return Open(path, nullptr, nullptr, overrides, n_overrides, options, out);
  } catch (...) {
    return Internal();
  }
}

int rlprof_session_open_text(const char* text, const char* origin, const char* const* overrides,
                             size_t n_overrides, const rlprof_options* options,
                             rlprof_session** out) {
  try {
    if (text == nullptr) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: text is null");
    return Open(nullptr, text, origin, overrides, n_overrides, options, out);
  } catch (...) {
    return Internal();
  }
}

int rlprof_session_shutdown(rlprof_session* s) {
  try {
    if (s == nullptr || s->impl == nullptr) return NotInitialised();
    ShutdownOnce(s);
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_session_count(void) { return g_open.load(); }

void rlprof_session_close(rlprof_session* s) {
  if (s == nullptr) return;
  rlprof_session* self = s;
  g_yielding.compare_exchange_strong(self, nullptr);
  if (s->impl) ShutdownOnce(s);
  delete s;
}

rlprof_session* rlprof_default_session(void) { return g_default.load(); }

int rlprof_session_enabled(const rlprof_session* s) {
  return s != nullptr && s->impl != nullptr && !s->down.load() && s->impl->enabled() ? 1 : 0;
}

int rlprof_session_step_begin(rlprof_session* s, int64_t step) {
  return WithSession(s, [step](SessionImpl& i) -> int {
    i.BeginStep(step);
    return RLPROF_OK;
  });
}

int rlprof_session_step_end(rlprof_session* s) {
  return WithSession(s, [](SessionImpl& i) -> int {
    i.EndStep();
    return RLPROF_OK;
  });
}

int rlprof_session_stage_begin(rlprof_session* s, const char* role, const char* stage) {
  if (role == nullptr || stage == nullptr)
    return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: role or stage is null");
  return WithSession(s, [role, stage](SessionImpl& i) -> int {
    i.BeginStage(role, stage, std::nullopt);
    return RLPROF_OK;
  });
}

int rlprof_session_stage_end(rlprof_session* s) {
  return WithSession(s, [](SessionImpl& i) -> int {
    i.EndStage();
    return RLPROF_OK;
  });
}

int rlprof_session_sub_step(rlprof_session* s, int kind) {
  const std::optional<rlprof::config::SubStepKind> k = KindOf(kind);
  if (!k) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: unknown sub-step kind " + std::to_string(kind));
  return WithSession(s, [k](SessionImpl& i) -> int {
    i.SubStep(*k);
    return RLPROF_OK;
  });
}

int rlprof_session_capture_start(rlprof_session* s, const char* scope) {
  return WithSession(s, [scope](SessionImpl& i) -> int {
    if (i.StartCapture(scope != nullptr ? scope : "manual")) return RLPROF_OK;
    return Fail(RLPROF_ERROR_STATE, "rlprof: a window is open or the session is disabled");
  });
}

int rlprof_session_capture_stop(rlprof_session* s) {
  return WithSession(s, [](SessionImpl& i) -> int {
    i.StopCapture();
    return RLPROF_OK;
  });
}

int rlprof_session_flush(rlprof_session* s, double timeout_s) {
  return WithSession(s, [timeout_s](SessionImpl& i) -> int {
    return i.Flush(timeout_s) ? RLPROF_OK : Fail(RLPROF_ERROR_INTERNAL, "rlprof: flush timed out");
  });
}

int rlprof_session_set_clock_offset(rlprof_session* s, int64_t offset_ns) {
  return WithSession(s, [offset_ns](SessionImpl& i) -> int {
    i.SetClockOffsetToRank0(offset_ns);
    return RLPROF_OK;
  });
}

int rlprof_session_get_info(const rlprof_session* s, rlprof_session_info* out) {
  if (out == nullptr || out->struct_size == 0)
    return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: info is null or its struct_size is 0");
  if (s == nullptr) return NotInitialised();
  const uint32_t n = std::min<uint32_t>(out->struct_size, sizeof(rlprof_session_info));
  std::memcpy(out, &s->info, n);
  out->struct_size = n;
  return RLPROF_OK;
}

size_t rlprof_session_capture_count(const rlprof_session* s) {
  try {
    return s == nullptr || s->impl == nullptr ? 0 : s->impl->Captures().size();
  } catch (...) {
    return 0;
  }
}

int rlprof_session_capture_dir(const rlprof_session* s, size_t i, char* buf, size_t size) {
  try {
    if (s == nullptr || s->impl == nullptr) return NotInitialised();
    const std::vector<std::string> c = s->impl->Captures();
    if (i >= c.size()) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: no capture " + std::to_string(i));
    return CopyOut(c[i], buf, size);
  } catch (...) {
    return Internal();
  }
}

int rlprof_canonical_stage(const char* stage, char* buf, size_t size) {
  try {
    if (stage == nullptr) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: stage is null");
    return CopyOut(rlprof::config::CanonicalStage(stage), buf, size);
  } catch (...) {
    return Internal();
  }
}

int rlprof_stage_role(const char* stage, char* buf, size_t size) {
  try {
    if (stage == nullptr) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: stage is null");
    return CopyOut(rlprof::config::StageRole(stage), buf, size);
  } catch (...) {
    return Internal();
  }
}

// ---- The default session ----

int rlprof_init_from_config(const char* path, const char* const* overrides, size_t n_overrides,
                            const rlprof_options* options) {
  try {
    if (path == nullptr) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: path is null");
    std::lock_guard<std::mutex> lock(g_default_mu);
    if (g_default.load() != nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: already initialised");
    rlprof_session* s = nullptr;
    const int rc = Open(path, nullptr, nullptr, overrides, n_overrides, options, &s);
    if (rc != RLPROF_OK) return rc;
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(ShutdownAtExit); });
    g_default.store(s);
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_shutdown(void) {
  try {
    std::lock_guard<std::mutex> lock(g_default_mu);
    rlprof_session* s = g_default.exchange(nullptr);
    if (s == nullptr) return NotInitialised();
    rlprof_session_close(s);
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_enabled(void) { return rlprof_session_enabled(g_default.load()); }

int rlprof_recording(void) { return rlprof::internal::OpenWindow() != 0 ? 1 : 0; }

const char* rlprof_last_error(void) { return tls_error.c_str(); }

int rlprof_flush(double timeout_s) { return rlprof_session_flush(g_default.load(), timeout_s); }

int rlprof_run_dir(char* buf, size_t size) {
  try {
    if (buf == nullptr || size == 0) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: buffer is null");
    rlprof_session* s = g_default.load();
    if (s == nullptr) return NotInitialised();
    return CopyOut(s->run_dir, buf, size);
  } catch (...) {
    return Internal();
  }
}

int rlprof_step_begin(int64_t step) { return rlprof_session_step_begin(g_default.load(), step); }
int rlprof_step_end(void) { return rlprof_session_step_end(g_default.load()); }

int rlprof_stage_begin(const char* role, const char* stage) {
  return rlprof_session_stage_begin(g_default.load(), role, stage);
}

int rlprof_stage_begin_ex(const char* role, const char* stage, int counts_kind) {
  if (counts_kind != 0 && !KindOf(counts_kind))
    return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: unknown sub-step kind " + std::to_string(counts_kind));
  return rlprof_session_stage_begin(g_default.load(), role, stage);
}

int rlprof_stage_end(void) { return rlprof_session_stage_end(g_default.load()); }
int rlprof_sub_step(int kind) { return rlprof_session_sub_step(g_default.load(), kind); }

// ---- Markers ----

rlprof_range_id rlprof_range_start(const char* name) {
  const uint32_t g = rlprof::internal::OpenWindow();
  return g != 0 ? rlprof::internal::EmitBegin(g, name, rlprof::internal::ReadTicks()) : 0;
}

void rlprof_range_end(rlprof_range_id id) {
  if (id == 0) return;
  if (const uint32_t g = rlprof::internal::OpenWindow())
    rlprof::internal::EmitEnd(g, id, rlprof::internal::ReadTicks());
}

void rlprof_mark(const char* name) {
  if (const uint32_t g = rlprof::internal::OpenWindow())
    rlprof::internal::EmitInstant(g, name, rlprof::internal::ReadTicks());
}

void rlprof_counter(const char* track, double value) {
  if (const uint32_t g = rlprof::internal::OpenWindow())
    rlprof::internal::EmitCounter(g, track, value, rlprof::internal::ReadTicks());
}

void rlprof_emit_complete(uint32_t window, const char* name, uint64_t t0, uint64_t t1) {
  if (window != 0) rlprof::internal::EmitComplete(window, name, t0, t1);
}

void rlprof_set_thread_name(const char* name) {
  if (name != nullptr) rlprof::runtime::SetThreadName(name);
}

const char* rlprof_intern_name(const char* name) {
  return name == nullptr ? nullptr : rlprof::runtime::InternName(name);
}

}  // extern "C"
