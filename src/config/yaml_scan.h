// Facts about a YAML text that yaml-cpp does not report, for error messages: the key path
// around a parse error (found by scanning the text, since a failed parse leaves no tree),
// the alias named at an error position, where an anchor is defined, and keys given twice
// in one mapping (yaml-cpp keeps both entries; OmegaConf, and so verl, rejects them).
//
//   std::string path = EnclosingKeyPath(text, e.mark.line, e.mark.column);  // "a.b" or ""
//   for (const DuplicateKey& d : FindDuplicateKeys(root)) { ... d.line, d.first_line ... }
//
// The scan understands block mappings, list items, comments, block scalars and flow
// collections spread over lines; it is a heuristic for messages, never for values.
// Thread-safety: pure functions.
#ifndef RLPROF_SRC_CONFIG_YAML_SCAN_H_
#define RLPROF_SRC_CONFIG_YAML_SCAN_H_

#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace rlprof::config {

// The dotted key path enclosing position (line, column) (both 0-based, as yaml-cpp marks):
// the keys of the block mappings that contain it, plus the key on that line when its ':'
// comes before the column. Empty at the top level.
std::string EnclosingKeyPath(std::string_view text, int line, int column);

// The alias name (without '*') starting at byte `pos`, or at the first '*' after it on the
// same line; empty when there is none.
std::string AliasNameAt(std::string_view text, size_t pos);

// 1-based line of the first definition of anchor `&name`, or -1.
int AnchorLine(std::string_view text, const std::string& name);

struct DuplicateKey {
  std::string path;  // dotted path of the repeated key ("a.b", "a.list[2].b")
  int line = -1;     // 1-based line of the repetition
  int first_line = -1;
};
// Every scalar key given more than once in one mapping (YAML merge keys `<<` excepted), in
// document order. Subtrees reached twice through aliases are reported once.
std::vector<DuplicateKey> FindDuplicateKeys(const YAML::Node& root);

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_YAML_SCAN_H_
