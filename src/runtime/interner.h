// Name interning for the capture runtime: names become dense uint32 ids (0 = "") that events
// carry; the writer thread emits the id → string table into each capture.
//
//   uint32_t id = interner.InternPointer("forward");      // static names: keyed by pointer
//   uint32_t s = interner.InternString(stage_name);        // run-time names: keyed by content
//   NameCache cache;                                       // per thread, no lock on a hit
//   uint32_t id2 = cache.Lookup(ptr);                      // kMiss → ask the interner
//
// Thread-safety: Interner is internally locked (only cache misses reach it); a NameCache
// belongs to one thread. StableName copies live until the process exits.
#ifndef RLPROF_SRC_RUNTIME_INTERNER_H_
#define RLPROF_SRC_RUNTIME_INTERNER_H_

#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "src/format/raw.h"

namespace rlprof::runtime {

class Interner {
 public:
  Interner();
  // Id of the NUL-terminated string at `p` (null → 0). Equal contents at different addresses
  // share one id.
  uint32_t InternPointer(const char* p);
  uint32_t InternString(std::string_view s);
  // Number of ids handed out so far (ids are 0 .. size()-1).
  uint32_t size() const;
  // Appends the entries of `ids` (each known id once, as given; unknown ones are skipped).
  void CopyIds(const std::vector<uint32_t>& ids, std::vector<format::StringEntry>* out) const;
  std::string Lookup(uint32_t id) const;
  // Forgets every id (a new session starts from 0).
  void Reset();

 private:
  uint32_t InternLocked(std::string_view s);
  mutable std::mutex mu_;
  std::deque<std::string> values_;  // stable storage; index = id
  std::unordered_map<std::string_view, uint32_t> by_value_;
  std::unordered_map<const void*, uint32_t> by_pointer_;
};

// A copy of `s` valid until process exit, one per distinct content.
const char* StableName(std::string_view s);

// A direct-mapped, per-thread pointer → id cache in front of the Interner.
class NameCache {
 public:
  static constexpr uint32_t kMiss = UINT32_MAX;
  static constexpr size_t kSlots = 256;
  uint32_t Lookup(const char* p) const {
    const Slot& s = slots_[Index(p)];
    return s.ptr == p ? s.id : kMiss;
  }
  void Insert(const char* p, uint32_t id) { slots_[Index(p)] = {p, id}; }
  void Clear();

 private:
  static size_t Index(const char* p) {
    const auto v = reinterpret_cast<uintptr_t>(p);
    return ((v >> 3) ^ (v >> 11)) & (kSlots - 1);
  }
  struct Slot {
    const char* ptr = nullptr;
    uint32_t id = 0;
  };
  Slot slots_[kSlots];
};

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_INTERNER_H_
