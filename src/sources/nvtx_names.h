// Names of NVTX ranges and marks as the injection library (nvtx_injection.cc) sees them: a
// per-thread, pointer-keyed cache in front of librlprof's string table (rlprof.h), and what a name means
// to rlprof (a stage of the vocabulary, an RL step, or just a range).
//
// NVTX only promises that a message lives for the duration of the call, so a cache hit is
// checked against the name's stable copy (a strcmp of a short string): a buffer reused for
// another text is a miss, never a wrong name.
//
//   NameCache names;                       // thread_local
//   const NameEntry& n = names.Lookup(msg);
//   uint32_t id = names.Id(n, window);
//
// Thread-safety: a NameCache belongs to one thread; StableCopy and Classify are thread-safe.
#ifndef RLPROF_SRC_SOURCES_NVTX_NAMES_H_
#define RLPROF_SRC_SOURCES_NVTX_NAMES_H_

#include <cstdint>
#include <cstring>
#include <string_view>

#include "rlprof/rlprof.h"

namespace rlprof::sources::nvtx {

// A copy of `s` that lives until the process exits (one per distinct content).
const char* StableCopy(std::string_view s);

struct NameEntry {
  const char* ptr = nullptr;   // the caller's pointer (the cache key)
  const char* copy = nullptr;  // stable copy of the text
  uint32_t len = 0;
  uint32_t id = 0;             // id in the runtime's string table of window id_gen
  uint32_t id_gen = 0;
  // What the name means: a stage of the vocabulary (canonical name and owning role), or an RL
  // step (step >= 0: 0 = "the next one", N = step N), or neither.
  const char* stage = nullptr;
  const char* stage_role = nullptr;
  int64_t step = -1;
};

// Fills the meaning fields of `e` from e->copy: `rollout_generate`, `update_actor`, … (every
// name and alias of config/stages.h) → a stage; `step`, `step 3`, `step_3`, `step:3`,
// `train_step` → a step.
void Classify(NameEntry* e);

class NameCache {
 public:
  static constexpr size_t kSlots = 512;
  const NameEntry& Lookup(const char* p) {
    NameEntry& e = slots_[Index(p)];
    if (e.ptr == p && std::strcmp(e.copy, p) == 0) return e;
    return Fill(e, p);
  }
  uint32_t Id(const NameEntry& n, uint32_t gen) {
    auto& e = const_cast<NameEntry&>(n);  // an entry of this cache
    if (e.id_gen != gen) {
      e.id = rlprof_intern(e.copy, e.len);
      e.id_gen = gen;
    }
    return e.id;
  }

 private:
  static size_t Index(const char* p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    return ((v >> 3) ^ (v >> 12)) & (kSlots - 1);
  }
  static const NameEntry& Fill(NameEntry& e, const char* p);
  NameEntry slots_[kSlots];
};

}  // namespace rlprof::sources::nvtx

#endif  // RLPROF_SRC_SOURCES_NVTX_NAMES_H_
