// One catalogue of diagnostics and the one sink every reader, analysis, writer and command
// counts into (the model is Perfetto's stats.h). Bad input data never aborts rlprof: what had
// to be skipped, repaired, clamped or guessed is counted under a name from the catalogue, and
// every command prints the same sink the same way (src/cli PrintDiagnostics) and puts it in
// its --json output. docs/reliability.md lists the catalogue (a test keeps them equal).
//
//   Diagnostics d;
//   d.Add("raw_bad_checksum_chunks", 2);
//   d.Note("input_unreadable_dir", "runs/r1/step3: permission denied");  // count + a detail line
//   const DiagnosticSpec* s = FindDiagnostic("raw_bad_checksum_chunks");  // severity, source …
//
// Names are snake_case; an entry whose name ends in '_' is a family ("no_steps_" covers
// "no_steps_baseline" and "no_steps_new"). Adding a name that is not in the catalogue is a
// programmer error caught by diagnostics_test (it scans the sources) — never at run time.
//
// Thread-safety: the catalogue is immutable; a Diagnostics is a plain value (one writer).
#ifndef RLPROF_SRC_FORMAT_DIAGNOSTICS_H_
#define RLPROF_SRC_FORMAT_DIAGNOSTICS_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlprof::format {

enum class Severity : uint8_t {
  kInfo = 0,      // a note: the result is complete (e.g. a step taken from the manifest)
  kWarning = 1,   // something was repaired or guessed; numbers may be slightly off
  kError = 2,     // the input or the analysis broke a rule; numbers of that part are suspect
  kDataLoss = 3,  // events, bytes or whole inputs were dropped: the result is partial
};
const char* SeverityName(Severity s);  // "info" | "warning" | "error" | "data_loss"

struct DiagnosticSpec {
  std::string_view name;
  Severity severity;
  std::string_view source;  // "input" | "raw" | "manifest" | "json" | "trace" | "capture" |
                            // "analysis" | "compare" | "cluster" | "export" | "ray"
  std::string_view description;
};

// Every diagnostic rlprof can report, sorted by name.
std::span<const DiagnosticSpec> DiagnosticCatalogue();
// The entry for `name` (exact, or the longest family prefix); nullptr when unknown.
const DiagnosticSpec* FindDiagnostic(std::string_view name);
// Severity of `name`; kWarning for names not in the catalogue.
Severity DiagnosticSeverity(std::string_view name);
// The catalogue as the Markdown table of docs/reliability.md.
std::string DiagnosticCatalogueMarkdown();

// Named counts, plus a few human-readable detail lines (which file, which directory).
struct Diagnostics {
  static constexpr size_t kMaxDetails = 32;

  std::map<std::string, uint64_t> counts;
  std::vector<std::string> details;  // at most kMaxDetails; the rest are counted only

  void Add(const std::string& name, uint64_t n = 1) {
    if (n) counts[name] += n;
  }
  // Add(name) and keep `detail` ("path: why") while there is room.
  void Note(const std::string& name, std::string detail, uint64_t n = 1);
  uint64_t Get(const std::string& name) const {
    auto it = counts.find(name);
    return it == counts.end() ? 0 : it->second;
  }
  void Merge(const Diagnostics& o);
  bool empty() const { return counts.empty(); }
  // Whether any entry has at least this severity.
  bool Any(Severity at_least) const;
  // "name=count" per entry (by name), then the details: for files that embed them.
  std::vector<std::string> Lines() const;
};

}  // namespace rlprof::format

#endif  // RLPROF_SRC_FORMAT_DIAGNOSTICS_H_
