// Typed, strict reading of one YAML block: every accessor checks the type, reports an error
// naming file, line, key path, the bad value and what is allowed, and returns nullopt when
// the key is absent, null or wrong. CheckKeys rejects unknown keys with a "did you mean".
//
//   Reader rd(doc);
//   Ref blk = doc.Get({"global_profiler"});
//   rd.CheckKeys(blk, {"tool", "steps", "save_path"});
//   std::optional<bool> c = rd.Bool(blk, "profile_continuous_steps");
//
// Thread-safety: as Doc.
#ifndef RLPROF_SRC_CONFIG_READER_H_
#define RLPROF_SRC_CONFIG_READER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "src/config/yaml_doc.h"

namespace rlprof::config {

class Reader {
 public:
  explicit Reader(Doc& doc) : doc_(doc) {}

  // Reports every key of `block` not in `allowed` (and not `_target_`).
  void CheckKeys(const Ref& block, const std::vector<std::string>& allowed);
  // A mapping or absent/null; reports anything else.
  bool IsBlock(const Ref& r);

  std::optional<bool> Bool(const Ref& block, const std::string& key);
  std::optional<int64_t> Int(const Ref& block, const std::string& key, int64_t min = INT64_MIN);
  std::optional<double> Number(const Ref& block, const std::string& key, double min = -1e300);
  std::optional<std::string> String(const Ref& block, const std::string& key);
  std::optional<std::string> Enum(const Ref& block, const std::string& key,
                                  const std::vector<std::string>& allowed);
  std::optional<std::vector<int64_t>> IntList(const Ref& block, const std::string& key,
                                              int64_t min = INT64_MIN);
  std::optional<std::vector<std::string>> EnumList(const Ref& block, const std::string& key,
                                                   const std::vector<std::string>& allowed);
  // A byte size: an integer or a string such as "512MiB", "2GB", "1.5 GiB".
  std::optional<uint64_t> Bytes(const Ref& block, const std::string& key);

  // Same, on a value already in hand.
  std::optional<bool> AsBool(const Ref& r);
  std::optional<int64_t> AsInt(const Ref& r, int64_t min = INT64_MIN);
  // An element of a list of steps or ranks (`what`: "step", "rank"): AsInt, and a null or a
  // quoted number is an error (the frameworks compare them to ints and would match nothing).
  std::optional<int64_t> AsListInt(const Ref& e, int64_t min, const std::string& what);
  std::optional<std::string> AsEnum(const Ref& r, const std::vector<std::string>& allowed);

  Doc& doc() { return doc_; }

 private:
  Doc& doc_;
};

// Element i of a list, with path "key[i]" and its own line (for messages).
Ref Element(const Ref& list, size_t i);

// "'abc'" for scalars, "a list", "a mapping" for the rest (for messages).
std::string Describe(const YAML::Node& n);
std::string AllowedList(const std::vector<std::string>& allowed);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_READER_H_
