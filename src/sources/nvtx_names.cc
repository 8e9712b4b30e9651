#include "src/sources/nvtx_names.h"

#include <cctype>
#include <string>

#include "src/config/stages.h"
#include "src/runtime/interner.h"

namespace rlprof::sources::nvtx {

const char* StableCopy(std::string_view s) { return runtime::StableName(s); }

namespace {
// "step", "train_step", "step 3", "step_3", "step:3", "step-3" → 0 / 3; else -1.
int64_t StepNumber(std::string_view s) {
  if (s == "step" || s == "train_step" || s == "training_step") return 0;
  if (s.size() < 6 || s.substr(0, 4) != "step") return -1;
  const char sep = s[4];
  if (sep != ' ' && sep != '_' && sep != ':' && sep != '-') return -1;
  int64_t n = 0;
  for (char c : s.substr(5)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || n > 1'000'000'000) return -1;
    n = n * 10 + (c - '0');
  }
  return n > 0 ? n : -1;
}
}  // namespace

void Classify(NameEntry* e) {
  const std::string_view s(e->copy, e->len);
  e->stage = e->stage_role = nullptr;
  e->step = -1;
  if (const config::StageInfo* st = config::FindStage(s)) {
    e->stage = st->name.c_str();  // a static table: lives as long as the process
    e->stage_role = st->role.c_str();
    return;
  }
  e->step = StepNumber(s);
}

const NameEntry& NameCache::Fill(NameEntry& e, const char* p) {
  const std::string_view s(p, ::strnlen(p, 4096));
  e.ptr = p;
  e.copy = StableCopy(s);
  e.len = static_cast<uint32_t>(s.size());
  e.id = 0;
  e.id_gen = 0;
  Classify(&e);
  return e;
}

}  // namespace rlprof::sources::nvtx
