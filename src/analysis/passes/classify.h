// Event classification (docs/definitions.md §1): an ordered, first-match rule table that maps
// every slice of a Trace to a WorkClass. The default table covers NCCL (≤ 2.18
// `ncclKernel_*` and ≥ 2.19 `ncclDevKernel_*`), RCCL, HCCL, gloo, c10d, Memcpy / Memset, sync
// and wait events (never work), markers, and host operators. Users prepend their own rules
// from a YAML file:
//
//   rules:
//     - name: "^my_a2a_(dispatch|combine)"   # ECMAScript regex on the event name
//       category: "^kernel$"                 # optional regex on the category as written
//       track: device                        # device | host | any (default any)
//       class: communication                 # compute | communication | memcpy | memset |
//                                            # sync | host | marker | unclassified
//       ignore_case: true                    # optional, default false
//
//   RLPROF_ASSIGN_OR_RETURN(Classifier c, Classifier::FromRulesFile("rules.yaml"));
//   Classification cls = c.Classify(trace);   // cls.of[i] is slice i's class
//
// Thread-safety: a Classifier is immutable after construction; Classify may run concurrently
// on different traces.
#ifndef RLPROF_SRC_ANALYSIS_PASSES_CLASSIFY_H_
#define RLPROF_SRC_ANALYSIS_PASSES_CLASSIFY_H_

#include <cstdint>
#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "src/analysis/model/trace.h"
#include "src/base/status.h"

namespace rlprof::analysis {

enum class WorkClass : uint8_t {
  kCompute = 0,
  kCommunication = 1,
  kMemcpy = 2,
  kMemset = 3,
  kSync = 4,          // synchronisation / wait: never work
  kHost = 5,          // host-side activity (operators, runtime calls)
  kMarker = 6,        // step / stage / annotation ranges: structure, not work
  kUnclassified = 7,  // device activity no rule recognised: reported, never compute
};
inline constexpr int kWorkClassCount = 8;
const char* WorkClassName(WorkClass c);
base::StatusOr<WorkClass> ParseWorkClass(std::string_view name);

enum class TrackMatch : uint8_t { kAny = 0, kDevice = 1, kHost = 2 };

struct ClassRule {
  std::string name;      // regex on the name ("" matches any)
  std::string category;  // regex on the category ("" matches any)
  TrackMatch track = TrackMatch::kAny;
  WorkClass cls = WorkClass::kUnclassified;
  bool ignore_case = false;
  std::string origin;  // "default" or "<file>:<index>"
};

struct Classification {
  std::vector<WorkClass> of;    // one per slice
  std::vector<uint8_t> is_recv; // 1 for p2p receives (msprof Bubble)
  std::vector<int32_t> rule;    // index of the matching rule, -1 for the fallback
  bool has_device_work = false; // any compute/communication/memory/unclassified on a device track
};

class Classifier {
 public:
  // The default table (docs/definitions.md §1.1).
  static Classifier Default();
  // Parses a YAML rules document and prepends its rules to the defaults.
  static base::StatusOr<Classifier> FromRulesYaml(std::string_view yaml, const std::string& origin);
  static base::StatusOr<Classifier> FromRulesFile(const std::string& path);

  // Classifies every slice. Also: device kernels correlated to a host communication call
  // (`record_param_comms`, `nccl:*`, `c10d::*`) become communication; slices whose name is a
  // step or stage marker of the trace become markers. Counts "unclassified_device_events".
  Classification Classify(const Trace& t, Diagnostics* diag) const;

  const std::vector<ClassRule>& rules() const { return rules_; }

 private:
  base::Status Add(ClassRule r);
  std::vector<ClassRule> rules_;
  struct Compiled {
    std::regex name, category;
    bool any_name, any_category;
  };
  std::vector<std::shared_ptr<const Compiled>> compiled_;
};

// Is a communication slice a point-to-point receive? (name `hcom_receive*`, `*recv*` other
// than `SendRecv`, or a collective-name arg of `recv`/`receive`).
bool IsRecvName(std::string_view name, std::string_view collective);

// A runtime / driver API call (a launch) by its category, as Kineto (every backend's host-side
// runtime types: cuda_runtime, cuda_driver, xpu_runtime, mtia_runtime, privateuse1_runtime,
// privateuse1_driver, hpu_op, glow_runtime), rlprof captures (runtime) and Ascend (cann, acl)
// write it.
bool IsRuntimeCategory(std::string_view cat);

// IsRuntimeCategory of slice i's category, cached per category string: `runtime(i)`.
class RuntimeCategories {
 public:
  explicit RuntimeCategories(const Trace& t) : t_(t), cache_(t.strings.size(), -1) {}
  bool operator()(size_t i) {
    const uint32_t cat = t_.category[i];
    if (cat >= cache_.size()) return IsRuntimeCategory(t_.str(cat));
    if (cache_[cat] < 0) cache_[cat] = IsRuntimeCategory(t_.str(cat)) ? 1 : 0;
    return cache_[cat] == 1;
  }

 private:
  const Trace& t_;
  std::vector<int8_t> cache_;
};

// For each slice of device work, the host operator that launched it by external correlation
// (Trace::external: the operator whose id its launch carried; the innermost when several
// share one), else -1 (also for host slices). Needs a finalised trace.
std::vector<int32_t> LaunchingOperators(const Trace& t);

}  // namespace rlprof::analysis

#endif  // RLPROF_SRC_ANALYSIS_PASSES_CLASSIFY_H_
