// The C API (include/rlprof/rlprof.h) over the default session of rlprof.hpp.
// No exception crosses this boundary (C callers cannot catch one): every function that can
// fail catches everything and returns RLPROF_ERROR_INTERNAL with the message.
#include "rlprof/rlprof.h"

#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <vector>

#include "rlprof/rlprof.hpp"
#include "src/base/strings.h"

namespace {

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

rlprof::Session* Default() { return rlprof::DefaultSession(); }

std::optional<rlprof::config::SubStepKind> KindOf(int kind) {
  switch (kind) {
    case RLPROF_SUB_STEP_DECODE: return rlprof::config::SubStepKind::kDecode;
    case RLPROF_SUB_STEP_MICRO_BATCH: return rlprof::config::SubStepKind::kMicroBatch;
    case RLPROF_SUB_STEP_MINI_BATCH: return rlprof::config::SubStepKind::kMiniBatch;
    default: return std::nullopt;
  }
}

}  // namespace

extern "C" {

void rlprof_options_init(rlprof_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->rank = o->local_rank = o->world_size = -1;
  o->install_signal_handlers = 1;
}

int rlprof_init_from_config(const char* path, const char* const* overrides, size_t n_overrides,
                            const rlprof_options* options) {
  try {
    if (path == nullptr) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: path is null");
    if (n_overrides > 0 && overrides == nullptr)
      return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: overrides is null");
    if (Default() != nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: already initialised");
    std::vector<std::string> ovr;
    for (size_t i = 0; i < n_overrides; ++i) {
      if (overrides[i] == nullptr)
        return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: override " + std::to_string(i) + " is null");
      ovr.emplace_back(overrides[i]);
    }
    rlprof::SessionOptions so;
    rlprof_options o;
    rlprof_options_init(&o);
    if (options != nullptr)
      std::memcpy(&o, options, std::min<size_t>(sizeof o, options->struct_size ? options->struct_size : sizeof o));
    if (o.rank >= 0) so.rank = o.rank;
    if (o.local_rank >= 0) so.local_rank = o.local_rank;
    if (o.world_size > 0) so.world_size = o.world_size;
    if (o.roles != nullptr) {
      std::vector<std::string> roles;
      for (const std::string& r : rlprof::base::Split(o.roles, ','))
        if (auto t = rlprof::base::Trim(r); !t.empty()) roles.emplace_back(t);
      so.roles = roles;
    }
    if (o.run_id != nullptr) so.run_id = o.run_id;
    so.install_signal_handlers = o.install_signal_handlers != 0;
    so.quiet = o.quiet != 0;
    std::string error;
    if (!rlprof::InitFromConfig(path, ovr, so, &error)) {
      const bool state = Default() != nullptr;
      return Fail(state ? RLPROF_ERROR_STATE : RLPROF_ERROR_CONFIG, error);
    }
    tls_error.clear();
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_shutdown(void) {
  try {
    if (Default() == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    rlprof::Shutdown();
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_enabled(void) {
  rlprof::Session* s = Default();
  return s != nullptr && s->enabled() ? 1 : 0;  // noexcept: atomics only
}

int rlprof_recording(void) { return rlprof::Recording() ? 1 : 0; }

const char* rlprof_last_error(void) { return tls_error.c_str(); }

int rlprof_flush(double timeout_s) {
  try {
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    return s->Flush(timeout_s) ? RLPROF_OK : Fail(RLPROF_ERROR_INTERNAL, "rlprof: flush timed out");
  } catch (...) {
    return Internal();
  }
}

int rlprof_run_dir(char* buf, size_t size) {
  try {
    if (buf == nullptr || size == 0) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: buffer is null");
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    const std::string d = s->run_dir();
    const size_t n = std::min(size - 1, d.size());
    std::memcpy(buf, d.data(), n);
    buf[n] = '\0';
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_step_begin(int64_t step) {
  try {
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    s->BeginStep(step);
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_step_end(void) {
  try {
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    s->EndStep();
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_stage_begin(const char* role, const char* stage) {
  return rlprof_stage_begin_ex(role, stage, 0);
}

int rlprof_stage_begin_ex(const char* role, const char* stage, int counts_kind) {
  try {
    if (role == nullptr || stage == nullptr)
      return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: role or stage is null");
    std::optional<rlprof::config::SubStepKind> counts;
    if (counts_kind != 0) {
      counts = KindOf(counts_kind);
      if (!counts)
        return Fail(RLPROF_ERROR_INVALID_ARGUMENT,
                    "rlprof: unknown sub-step kind " + std::to_string(counts_kind));
    }
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    s->BeginStage(role, stage, counts);
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_stage_end(void) {
  try {
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    s->EndStage();
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

int rlprof_sub_step(int kind) {
  try {
    const std::optional<rlprof::config::SubStepKind> k = KindOf(kind);
    if (!k) return Fail(RLPROF_ERROR_INVALID_ARGUMENT, "rlprof: unknown sub-step kind " + std::to_string(kind));
    rlprof::Session* s = Default();
    if (s == nullptr) return Fail(RLPROF_ERROR_STATE, "rlprof: not initialised");
    s->SubStep(*k);
    return RLPROF_OK;
  } catch (...) {
    return Internal();
  }
}

rlprof_range_id rlprof_range_start(const char* name) { return rlprof::RangeStart(name); }
void rlprof_range_end(rlprof_range_id id) { rlprof::RangeEnd(id); }
void rlprof_mark(const char* name) { rlprof::Mark(name); }
void rlprof_counter(const char* track, double value) { rlprof::Counter(track, value); }

void rlprof_set_thread_name(const char* name) {
  if (name != nullptr) rlprof::SetThreadName(name);
}

const char* rlprof_intern_name(const char* name) {
  return name == nullptr ? nullptr : rlprof::InternName(name);
}

}  // extern "C"
