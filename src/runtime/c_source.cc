// The C API's sources (include/rlprof/rlprof.h, rlprof_register_source): a Source (source.h)
// that forwards each lifecycle call to a table of C function pointers.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <exception>
#include <string>

#include "rlprof/format/event.h"
#include "rlprof/rlprof.h"
#include "rlprof/rlprof.hpp"
#include "src/runtime/sample_source.h"
#include "src/runtime/source.h"
#include "src/runtime/thread_buffer.h"

struct rlprof_sink {
  rlprof::runtime::SourceSink* impl;
};

namespace rlprof::runtime {
namespace {

static_assert(sizeof(rlprof_event) == sizeof(format::Event), "rlprof_event mirrors format::Event");
static_assert(offsetof(rlprof_event, track) == offsetof(format::Event, track));
static_assert(offsetof(rlprof_event, arg0) == offsetof(format::Event, arg0));

format::Event ToEvent(const rlprof_event& c) {
  format::Event e;
  std::memcpy(&e, &c, sizeof e);
  return e;
}

uint32_t ContentsBits(const config::Contents& c) {
  return (c.cpu ? RLPROF_CONTENTS_CPU : 0) | (c.device ? RLPROF_CONTENTS_DEVICE : 0) |
         (c.ops ? RLPROF_CONTENTS_OPS : 0) | (c.shapes ? RLPROF_CONTENTS_SHAPES : 0) |
         (c.memory ? RLPROF_CONTENTS_MEMORY : 0) | (c.stack ? RLPROF_CONTENTS_STACK : 0) |
         (c.module ? RLPROF_CONTENTS_MODULE : 0);
}

class CSource final : public Source {
 public:
  explicit CSource(const rlprof_source& s) : name_(s.name) {
    std::memset(&v_, 0, sizeof v_);
    std::memcpy(&v_, &s, std::min<size_t>(sizeof v_, s.struct_size));
    v_.name = name_.c_str();
  }
  ~CSource() override {
    if (v_.destroy != nullptr) v_.destroy(v_.user);
  }
  std::string_view name() const override { return name_; }
  bool Wanted(const config::ProcessPlan& p) const override {
    return v_.contents == 0 || (ContentsBits(p.contents) & v_.contents) != 0;
  }
  bool Configure(const SourceContext& ctx) override {
    if (v_.configure_with != nullptr) {
      rlprof_source_config c;
      std::memset(&c, 0, sizeof c);
      c.struct_size = sizeof c;
      c.contents = ContentsBits(ctx.process->contents);
      c.level = ctx.process->level.c_str();
      c.ops_sampling = ctx.process->contents.RecordsOperators() ? ctx.process->ops_sampling : 1.0;
      return v_.configure_with(v_.user, &c) == 0;
    }
    if (v_.configure == nullptr) return true;
    return v_.configure(v_.user, ContentsBits(ctx.process->contents), ctx.process->level.c_str()) == 0;
  }
  void Start(uint32_t gen) override { if (v_.start) v_.start(v_.user, gen); }
  void Boundary(uint32_t gen) override { if (v_.boundary) v_.boundary(v_.user, gen); }
  void Flush(uint32_t gen) override { if (v_.flush) v_.flush(v_.user, gen); }
  void Stop(uint32_t gen) override { if (v_.stop) v_.stop(v_.user, gen); }
  void Tick(uint32_t gen) override { if (v_.tick) v_.tick(v_.user, gen); }
  void Drain(SourceSink& sink, uint32_t final_gen) override {
    if (v_.drain == nullptr) return;
    rlprof_sink s{&sink};
    v_.drain(v_.user, &s, final_gen);
  }
  SourceCounters Counters(uint32_t gen) override {
    SourceCounters out;
    if (v_.counters == nullptr) return out;
    v_.counters(
        v_.user, gen,
        [](void* ctx, const char* key, int64_t value) {
          if (key == nullptr) return;
          try {
            static_cast<SourceCounters*>(ctx)->emplace_back(key, value);
          } catch (...) {  // a C caller cannot take an exception: the entry is left out
          }
        },
        &out);
    return out;
  }

 private:
  std::string name_;
  rlprof_source v_;
};

}  // namespace
}  // namespace rlprof::runtime

extern "C" {

void rlprof_source_init(rlprof_source* source) {
  if (source == nullptr) return;
  std::memset(source, 0, sizeof *source);
  source->struct_size = sizeof *source;
}

int rlprof_register_source(const rlprof_source* source) {
  try {
    if (source == nullptr || source->name == nullptr || source->name[0] == '\0' ||
        source->struct_size < offsetof(rlprof_source, configure))
      return RLPROF_ERROR_INVALID_ARGUMENT;
    auto s = std::make_shared<rlprof::runtime::CSource>(*source);
    return rlprof::runtime::SourceRegistry::Get().Register(std::move(s)) ? RLPROF_OK
                                                                         : RLPROF_ERROR_STATE;
  } catch (...) {
    return RLPROF_ERROR_INTERNAL;
  }
}

int rlprof_unregister_source(const char* name) {
  try {
    if (name == nullptr) return RLPROF_ERROR_INVALID_ARGUMENT;
    return rlprof::runtime::SourceRegistry::Get().Unregister(name) != nullptr ? RLPROF_OK
                                                                              : RLPROF_ERROR_STATE;
  } catch (...) {
    return RLPROF_ERROR_INTERNAL;
  }
}

void rlprof_sample_init(rlprof_sample* s) {
  if (s == nullptr) return;
  std::memset(s, 0, sizeof *s);
  s->struct_size = sizeof *s;
  s->prompt_tokens = s->completion_tokens = s->cached_tokens = s->preemptions = -1;
  s->version_first = s->version_last = s->replica = -1;
}

int rlprof_sample_record(const rlprof_sample* s) {
  if (s == nullptr || s->struct_size < sizeof(rlprof_sample) || rlprof::internal::OpenWindow() == 0) return 0;
  try {
    auto src = rlprof::runtime::SampleSource::Current();
    return src != nullptr ? src->Record(*s) : 0;
  } catch (...) {
    return 0;
  }
}

int rlprof_sample_use(const char* id, const char* outcome, int64_t step, int64_t version, int64_t at_ns) {
  if (rlprof::internal::OpenWindow() == 0) return 0;
  try {
    auto src = rlprof::runtime::SampleSource::Current();
    return src != nullptr ? src->Use(id, outcome, step, version, at_ns) : 0;
  } catch (...) {
    return 0;
  }
}

int rlprof_sample_kept(const char* id) {
  if (id == nullptr) return 0;
  try {
    auto src = rlprof::runtime::SampleSource::Current();
    return rlprof::runtime::SampleKept(id, src != nullptr ? src->rate() : 1.0) ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

uint32_t rlprof_window(void) { return rlprof::internal::OpenWindow(); }
uint64_t rlprof_ticks(void) { return rlprof::internal::ReadTicks(); }

uint32_t rlprof_intern(const char* s, size_t n) {
  if (s == nullptr || n == 0) return 0;
  try {
    return rlprof::runtime::Recorder::Get().interner().InternString(std::string_view(s, n));
  } catch (...) {
    return 0;
  }
}

int rlprof_emit(uint32_t window, const rlprof_event* e) {
  if (e == nullptr || window == 0 || rlprof::internal::OpenWindow() != window) return 0;
  rlprof::runtime::EmitRecord(window, rlprof::runtime::ToEvent(*e));
  return 1;
}

uint16_t rlprof_track(int kind, uint64_t os_id, const char* name) {
  if (name == nullptr || kind < 0 || kind > 3) return 0;
  try {
    return rlprof::runtime::Recorder::Get().NamedTrack(static_cast<rlprof::format::TrackKind>(kind),
                                                       os_id, name);
  } catch (...) {
    return 0;
  }
}

int rlprof_emit_track(uint32_t window, const rlprof_event* e) {
  if (e == nullptr || window == 0 || rlprof::internal::OpenWindow() != window) return 0;
  rlprof::runtime::EmitRecordOnTrack(window, rlprof::runtime::ToEvent(*e));
  return 1;
}

void rlprof_correlation_push(uint64_t id) { rlprof::runtime::PushCorrelation(id); }
void rlprof_correlation_pop(void) { rlprof::runtime::PopCorrelation(); }
int rlprof_correlation_active(void) { return rlprof::runtime::CorrelationActive() ? 1 : 0; }

int rlprof_sink_emit(rlprof_sink* sink, uint32_t window, const rlprof_event* e, int time_base) {
  if (sink == nullptr || sink->impl == nullptr || e == nullptr) return 0;
  try {
    return sink->impl->Emit(window, rlprof::runtime::ToEvent(*e),
                            time_base == RLPROF_TIME_MONOTONIC_NS
                                ? rlprof::runtime::TimeBase::kMonotonicNs
                                : rlprof::runtime::TimeBase::kTicks)
               ? 1
               : 0;
  } catch (...) {
    return 0;
  }
}

uint16_t rlprof_sink_add_track(rlprof_sink* sink, int kind, uint64_t os_id, const char* name) {
  if (sink == nullptr || sink->impl == nullptr || kind < 0 || kind > 3) return 0;
  try {
    return sink->impl->AddTrack(static_cast<rlprof::format::TrackKind>(kind), os_id,
                                name != nullptr ? name : "");
  } catch (...) {
    return 0;
  }
}

}  // extern "C"
