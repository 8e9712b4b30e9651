// A loaded YAML config with Hydra-style overrides and lazily resolved OmegaConf
// interpolations (`${a.b}`, `${oc.select:a.b,default}`, `${.sibling}`, `${oc.env:VAR,default}`),
// plus the error list every config reader appends to.
//
//   Doc doc;
//   RLPROF_RETURN_IF_ERROR(doc.LoadFile("ppo_trainer.yaml"));
//   RLPROF_RETURN_IF_ERROR(doc.ApplyOverrides({"global_profiler.steps=[1,2]"}));
//   Ref gp = doc.Get({"global_profiler"});     // resolved; gp.node may be undefined
//
// Only what rlprof reads is resolved, so thousands of unrelated keys (and interpolations into
// keys that do not exist) in a full verl config cost nothing and never fail.
// Thread-safety: not thread-safe; one Doc per loading thread.
#ifndef RLPROF_SRC_CONFIG_YAML_DOC_H_
#define RLPROF_SRC_CONFIG_YAML_DOC_H_

#include <map>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "src/base/status.h"

namespace rlprof::config {

using KeyPath = std::vector<std::string>;
std::string JoinPath(const KeyPath& p);

// A node together with the path it was reached by (for messages) and the path of the node
// it actually came from (for relative interpolations inside interpolated subtrees).
struct Ref {
  Ref() = default;
  Ref(const Ref& o) { *this = o; }
  // yaml-cpp's Node::operator= writes through to the referenced node; a Ref must rebind instead.
  Ref& operator=(const Ref& o) {
    node.reset(o.node);
    path = o.path;
    source = o.source;
    line = o.line;
    via = o.via;
    alias = o.alias;
    alias_line = o.alias_line;
    exists = o.exists;
    return *this;
  }
  void Set(const YAML::Node& n) {
    node.reset(n);
    exists = true;
  }
  void Clear() {
    node.reset(YAML::Node());
    exists = false;
  }

  YAML::Node node;    // undefined when absent (rebind with Set, never assign)
  KeyPath path;       // the path the user reads it by
  KeyPath source;     // where the value really lives
  int line = -1;      // 1-based line of the key in the file, -1 when unknown
  std::string via;    // the interpolation that produced it, if any
  // Reached through a YAML alias (`key: *name`): the alias and the line of its use, where
  // messages point (`line` is then where the value is written, under the anchor).
  std::string alias;
  int alias_line = -1;
  bool exists = false;
  bool present() const { return exists; }
  bool null() const { return !exists || !node.IsDefined() || node.IsNull(); }
};

struct ConfigError {
  std::string where;    // "file.yaml:12" or "override 'a.b=1'"
  std::string path;     // key path
  std::string message;
  std::string Format() const;
};

class Doc {
 public:
  base::Status LoadFile(const std::string& path);
  base::Status LoadString(const std::string& text, const std::string& name);
  // Hydra grammar: key=value (key must exist), +key=value (must not exist), ++key=value
  // (set or add), ~key (delete). Values are YAML: 3, true, null, [1,2], {a: 1}, text.
  base::Status ApplyOverrides(const std::vector<std::string>& overrides);

  const std::string& file() const { return file_; }
  const YAML::Node& root() const { return root_; }
  Ref Root();
  Ref Get(const KeyPath& path);
  Ref Child(const Ref& parent, const std::string& key);
  // Keys of a mapping in file order (empty for other kinds).
  std::vector<std::string> Keys(const Ref& r) const;
  // "file:line" for a ref (the alias's use when reached through one), or the override that
  // set it.
  std::string Where(const Ref& r) const;

  // Reports at Where(r); a value reached through an alias also names the alias and the
  // line the value is written on.
  void Error(const Ref& r, std::string message);
  void Error(const std::string& where, const std::string& path, std::string message);
  const std::vector<ConfigError>& errors() const { return errors_; }
  void Warn(std::string message) { warnings_.push_back(std::move(message)); }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Ref Resolve(Ref r, int depth);
  Ref Lookup(const KeyPath& path, int depth);
  Ref ChildAt(const Ref& parent, const std::string& key, int depth);

  std::string file_;
  std::string text_;  // for alias names in messages
  YAML::Node root_;
  std::map<std::string, std::string> overridden_;  // joined path → override text
  std::vector<ConfigError> errors_;
  std::vector<std::string> warnings_;
};

}  // namespace rlprof::config

#endif  // RLPROF_SRC_CONFIG_YAML_DOC_H_
