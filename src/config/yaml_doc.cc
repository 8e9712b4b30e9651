#include "src/config/yaml_doc.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string_view>

#include "src/base/files.h"
#include "src/base/strings.h"
#include "src/config/yaml_scan.h"

namespace rlprof::config {

namespace {

constexpr int kMaxDepth = 16;

int LineOf(const YAML::Node& n) {
  if (!n.IsDefined()) return -1;
  const YAML::Mark m = n.Mark();
  return m.is_null() ? -1 : m.line + 1;
}

// Parses an override value the way Hydra does: YAML, with an empty value meaning "".
YAML::Node ParseValue(const std::string& text) {
  if (text.empty()) return YAML::Node(std::string());
  try {
    YAML::Node n = YAML::Load(text);
    if (!n.IsDefined()) return YAML::Node(text);
    return n;
  } catch (const YAML::Exception&) {
    return YAML::Node(text);
  }
}

// Strips one pair of matching quotes around a default value.
std::string Unquote(std::string_view s) {
  s = base::Trim(s);
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'') && s.back() == s.front())
    return std::string(s.substr(1, s.size() - 2));
  return std::string(s);
}

// "file:L:C: syntax error in 'a.b': ..." for a parse error; an undefined alias names itself.
// The offset of the first byte that is not part of well-formed UTF-8 (no overlong forms, no
// surrogates, nothing past U+10FFFF), or npos. YAML files are UTF-8; yaml-cpp does not check,
// and a plan holding such bytes made every JSON writer of it throw (rlprof plan --json, the
// runtime's manifest).
size_t FirstInvalidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) n = 1;
    else if (c >= 0xE0 && c <= 0xEF) n = 2, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) n = 3, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    else return i;
    if (s.size() - i <= n) return i;
    for (size_t k = 1; k <= n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

// The first scalar (key or value) of `n` that is not UTF-8 after parsing, or an undefined node.
// yaml-cpp decodes some escapes of valid files into bare bytes ("\_" in a double-quoted string
// becomes the single byte 0xA0, not U+00A0), so checking the text alone is not enough.
YAML::Node FirstNonUtf8Scalar(const YAML::Node& n, int depth = 0) {
  const YAML::Node none(YAML::NodeType::Undefined);
  if (depth > 512) return none;  // (yaml-cpp's own nesting limit is lower)
  if (n.IsScalar()) return FirstInvalidUtf8(n.Scalar()) == std::string_view::npos ? none : n;
  if (n.IsSequence()) {
    for (const auto& e : n)
      if (YAML::Node bad = FirstNonUtf8Scalar(e, depth + 1); bad.IsDefined()) return bad;
  } else if (n.IsMap()) {
    for (const auto& kv : n) {
      if (YAML::Node bad = FirstNonUtf8Scalar(kv.first, depth + 1); bad.IsDefined()) return bad;
      if (YAML::Node bad = FirstNonUtf8Scalar(kv.second, depth + 1); bad.IsDefined()) return bad;
    }
  }
  return none;
}

std::string SyntaxErrorMessage(const std::string& text, const std::string& name,
                               const YAML::ParserException& e) {
  const int line = e.mark.line, col = e.mark.column;
  std::string where = name + ":" + std::to_string(line + 1) + ":" + std::to_string(col + 1);
  std::string path = EnclosingKeyPath(text, line, col);
  std::string in = path.empty() ? " at the top level" : " in '" + path + "'";
  if (e.msg == YAML::ErrorMsg::UNKNOWN_ANCHOR) {
    std::string alias = e.mark.pos >= 0 ? AliasNameAt(text, static_cast<size_t>(e.mark.pos)) : "";
    int defined = AnchorLine(text, alias);
    std::string why = defined > 0 ? "its anchor '&" + alias + "' comes later, at line " +
                                        std::to_string(defined) +
                                        "; an anchor must be defined before its aliases"
                                  : "no anchor '&" + alias + "' is defined in the file";
    return where + ": undefined alias '*" + alias + "'" + in + ": " + why;
  }
  return where + ": syntax error" + in + ": " + e.msg;
}

}  // namespace

std::string JoinPath(const KeyPath& p) { return base::Join(p, "."); }

std::string ConfigError::Format() const {
  std::string out = where;
  if (!path.empty()) out += (out.empty() ? "" : ": ") + path;
  out += (out.empty() ? "" : ": ") + message;
  return out;
}

base::Status Doc::LoadFile(const std::string& path) {
  auto text = base::ReadFile(path);
  if (!text.ok()) return text.status();
  return LoadString(*text, path);
}

base::Status Doc::LoadString(const std::string& text, const std::string& name) {
  file_ = name;
  text_ = text;
  if (size_t bad = FirstInvalidUtf8(text); bad != std::string_view::npos) {
    const size_t line_start = text.rfind('\n', bad == 0 ? 0 : bad - 1);
    const size_t line = static_cast<size_t>(std::count(text.begin(), text.begin() + static_cast<ptrdiff_t>(bad), '\n')) + 1;
    const size_t column = line_start == std::string::npos || bad == 0 ? bad + 1 : bad - line_start;
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02x", static_cast<unsigned char>(text[bad]));
    return base::InvalidArgument(name + ":" + std::to_string(line) + ": not valid UTF-8 (byte " +
                                 byte + " at column " + std::to_string(column) +
                                 "); a YAML file is UTF-8");
  }
  try {
    root_ = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    return base::InvalidArgument(SyntaxErrorMessage(text, name, e));
  } catch (const YAML::Exception& e) {
    return base::InvalidArgument(name + ": not valid YAML: " + e.what());
  }
  if (!root_.IsDefined() || root_.IsNull()) root_ = YAML::Node(YAML::NodeType::Map);
  if (!root_.IsMap())
    return base::InvalidArgument(name + ":1: the config must be a YAML mapping at the top level");
  if (YAML::Node bad = FirstNonUtf8Scalar(root_); bad.IsDefined())
    return base::InvalidArgument(name + ":" + std::to_string(bad.Mark().line + 1) +
                                 ": a value is not valid UTF-8 once its escapes are decoded");
  // yaml-cpp keeps both entries of a repeated key and reads the first; OmegaConf (verl,
  // Hydra) rejects the file. Reported with the schema errors, all at once.
  for (const DuplicateKey& d : FindDuplicateKeys(root_))
    Error(name + ":" + std::to_string(d.line), "",
          "key '" + d.path + "' is given twice (first at line " + std::to_string(d.first_line) +
              ")");
  return base::Status::Ok();
}

base::Status Doc::ApplyOverrides(const std::vector<std::string>& overrides) {
  for (const std::string& ov : overrides) {
    if (FirstInvalidUtf8(ov) != std::string_view::npos)
      return base::InvalidArgument("override " + std::to_string(&ov - overrides.data() + 1) +
                                   ": not valid UTF-8");
    std::string text = ov;
    bool add = false, force = false, del = false;
    if (base::StartsWith(text, "++")) {
      force = true;
      text = text.substr(2);
    } else if (base::StartsWith(text, "+")) {
      add = true;
      text = text.substr(1);
    } else if (base::StartsWith(text, "~")) {
      del = true;
      text = text.substr(1);
    }
    size_t eq = text.find('=');
    if (eq == std::string::npos && !del)
      return base::InvalidArgument("override '" + ov +
                                   "': expected KEY=VALUE (or +KEY=VALUE, ++KEY=VALUE, ~KEY)");
    std::string key(base::Trim(text.substr(0, eq)));
    std::string value = eq == std::string::npos ? "" : text.substr(eq + 1);
    KeyPath path = base::Split(key, '.');
    for (const auto& part : path)
      if (part.empty())
        return base::InvalidArgument("override '" + ov + "': empty key segment in '" + key + "'");

    // Walk to the parent; yaml-cpp nodes are handles, so edits land in root_.
    YAML::Node cur = root_;
    for (size_t i = 0; i + 1 < path.size(); ++i) {
      YAML::Node next = cur[path[i]];
      if (!next.IsDefined() || next.IsNull() || !next.IsMap()) {
        if (!add && !force) {
          std::vector<std::string> keys;
          if (cur.IsMap())
            for (auto it = cur.begin(); it != cur.end(); ++it)  // a key may be a [list] or {map}
              if (it->first.IsScalar()) keys.push_back(it->first.Scalar());
          std::string hint = base::NearestWord(path[i], keys);
          KeyPath prefix(path.begin(), path.begin() + i + 1);
          return base::InvalidArgument(
              "override '" + ov + "': key '" + JoinPath(prefix) + "' does not exist in " + file_ +
              (hint.empty() ? "" : "; did you mean '" + hint + "'?") + " (use '+" + key + "=" +
              value + "' to add it)");
        }
        if (next.IsDefined() && !next.IsNull() && !next.IsMap())
          return base::InvalidArgument("override '" + ov + "': '" +
                                       JoinPath(KeyPath(path.begin(), path.begin() + i + 1)) +
                                       "' is not a mapping");
        cur[path[i]] = YAML::Node(YAML::NodeType::Map);
        next.reset(cur[path[i]]);
      }
      cur.reset(next);
    }
    const std::string& leaf = path.back();
    bool exists = cur.IsMap() && cur[leaf].IsDefined();
    if (del) {
      if (!exists) return base::InvalidArgument("override '" + ov + "': cannot delete '" + key + "': no such key");
      cur.remove(leaf);
      overridden_.erase(key);
      continue;
    }
    if (!exists && !add && !force) {
      std::vector<std::string> keys;
      for (auto it = cur.begin(); it != cur.end(); ++it)
        if (it->first.IsScalar()) keys.push_back(it->first.Scalar());  // a key may be a [list] or {map}
      std::string hint = base::NearestWord(leaf, keys);
      return base::InvalidArgument("override '" + ov + "': key '" + key + "' does not exist in " +
                                   file_ + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                                   " (use '+" + key + "=" + value + "' to add it)");
    }
    if (exists && add)
      return base::InvalidArgument("override '" + ov + "': key '" + key +
                                   "' already exists (use '++" + key + "=" + value +
                                   "' to override it)");
    YAML::Node parsed = ParseValue(value);
    if (FirstNonUtf8Scalar(parsed).IsDefined())
      return base::InvalidArgument("override '" + ov +
                                   "': the value is not valid UTF-8 once its escapes are decoded");
    if (auto dups = FindDuplicateKeys(parsed); !dups.empty())
      return base::InvalidArgument("override '" + ov + "': key '" + key + "." + dups[0].path +
                                   "' is given twice in the value");
    if (auto prev = overridden_.find(key); prev != overridden_.end())
      Warn("override '" + ov + "' sets '" + key + "' again after override '" + prev->second +
           "': overrides apply in order, so the last one wins (as in Hydra)");
    cur[leaf] = parsed;
    overridden_[key] = ov;
  }
  return base::Status::Ok();
}

Ref Doc::Root() {
  Ref r;
  r.Set(root_);
  r.line = 1;
  return r;
}

Ref Doc::Get(const KeyPath& path) { return Lookup(path, 0); }

Ref Doc::Child(const Ref& parent, const std::string& key) { return ChildAt(parent, key, 0); }

Ref Doc::Lookup(const KeyPath& path, int depth) {
  Ref cur = Root();
  for (const auto& k : path) {
    cur = ChildAt(cur, k, depth);
    if (!cur.present()) break;
  }
  return cur;
}

Ref Doc::ChildAt(const Ref& parent, const std::string& key, int depth) {
  Ref r;
  r.path = parent.path;
  r.path.push_back(key);
  r.source = parent.source;
  r.source.push_back(key);
  r.line = parent.line;  // a missing key is reported at its parent
  r.alias = parent.alias;
  r.alias_line = parent.alias_line;
  if (!parent.present() || !parent.node.IsMap()) return r;
  const YAML::Node& pn = parent.node;
  for (auto it = pn.begin(); it != pn.end(); ++it) {
    if (it->first.IsScalar() && it->first.Scalar() == key) {
      r.Set(it->second);
      r.line = LineOf(it->first);
      // An alias shares its anchor's node, so the value starts before its own key.
      const YAML::Mark km = it->first.Mark(), vm = it->second.Mark();
      if (r.alias_line < 0 && !km.is_null() && !vm.is_null() && vm.pos < km.pos) {
        r.alias = AliasNameAt(text_, static_cast<size_t>(km.pos));
        r.alias_line = r.line;
        r.line = LineOf(it->second);
      }
      break;
    }
  }
  if (!r.present()) return r;
  return Resolve(std::move(r), depth);
}

Ref Doc::Resolve(Ref r, int depth) {
  if (!r.node.IsScalar()) return r;
  const std::string& s = r.node.Scalar();
  if (s.size() < 3 || s[0] != '$' || s[1] != '{' || s.back() != '}' || r.node.Tag() == "!") return r;
  std::string expr = s.substr(2, s.size() - 3);
  if (expr.find("${") != std::string::npos) return r;  // nested: leave as literal text
  if (depth >= kMaxDepth) {
    Error(r, "interpolation '" + s + "' is nested too deeply (a cycle?)");
    r.Clear();
    return r;
  }
  bool select = false, env = false;
  std::string target = expr, fallback;
  bool has_fallback = false;
  if (base::StartsWith(expr, "oc.select:")) {
    select = true;
    target = expr.substr(10);
  } else if (base::StartsWith(expr, "oc.env:")) {
    env = true;
    target = expr.substr(7);
  } else if (expr.find(':') != std::string::npos) {
    // A resolver rlprof does not implement: treat the value as unset, say so.
    Warn(Where(r) + ": " + JoinPath(r.path) + ": resolver in '" + s +
         "' is not supported; the value is treated as unset");
    r.Clear();
    return r;
  }
  if (select || env) {
    // The first top-level comma separates the default (which may be a list "[]").
    size_t comma = target.find(',');
    if (comma != std::string::npos) {
      fallback = target.substr(comma + 1);
      target = target.substr(0, comma);
      has_fallback = true;
    }
  }
  target = std::string(base::Trim(target));
  r.via = s;
  // A default or an environment value is parsed as YAML, like an override's value: a text
  // that yaml-cpp decodes into something that is not UTF-8 (NUL bytes make it guess UTF-16 or
  // UTF-32) is an error here, as it is for an override, never a garbled value in the plan.
  auto set_parsed = [&](const std::string& text, const char* what) {
    YAML::Node n = ParseValue(text);
    if (FirstNonUtf8Scalar(n).IsDefined()) {
      Error(r, std::string("interpolation '") + s + "': " + what +
                   " is not valid UTF-8 once parsed as YAML");
      r.Clear();
    } else {
      r.Set(n);
    }
  };
  if (env) {
    const char* v = std::getenv(target.c_str());
    if (v) set_parsed(v, "the environment variable's value");
    else if (has_fallback) set_parsed(Unquote(fallback), "its default");
    else r.Clear();
    return r;
  }
  // Absolute path, or relative: leading dots climb from the node's own parent.
  KeyPath tp;
  size_t dots = 0;
  while (dots < target.size() && target[dots] == '.') ++dots;
  if (dots > 0) {
    KeyPath base_path(r.source.begin(), r.source.end() - 1);
    for (size_t i = 1; i < dots && !base_path.empty(); ++i) base_path.pop_back();
    tp = base_path;
  }
  if (dots < target.size())
    for (auto& part : base::Split(target.substr(dots), '.')) tp.push_back(part);
  Ref t = Lookup(tp, depth + 1);
  if (!t.present() || t.node.IsNull()) {
    if (has_fallback) {
      set_parsed(Unquote(fallback), "its default");
    } else if (select) {
      r.Set(YAML::Node(YAML::NodeType::Null));
    } else {
      Error(r, "interpolation '" + s + "' refers to '" + JoinPath(tp) + "', which does not exist");
      r.Clear();
    }
    return r;
  }
  r.Set(t.node);
  r.source = t.source;
  return r;
}

std::vector<std::string> Doc::Keys(const Ref& r) const {
  std::vector<std::string> out;
  if (!r.present() || !r.node.IsMap()) return out;
  for (auto it = r.node.begin(); it != r.node.end(); ++it)
    out.push_back(it->first.IsScalar() ? it->first.Scalar() : "<non-scalar key>");
  return out;
}

std::string Doc::Where(const Ref& r) const {
  // A value set (or inside a subtree set) by an override is reported as that override.
  KeyPath clean = r.path;  // "steps[1]" belongs to "steps"
  for (auto& part : clean)
    if (size_t b = part.find('['); b != std::string::npos) part.resize(b);
  for (size_t n = clean.size(); n > 0; --n) {
    auto it = overridden_.find(JoinPath(KeyPath(clean.begin(), clean.begin() + n)));
    if (it != overridden_.end()) return "override '" + it->second + "'";
  }
  int line = r.alias_line > 0 ? r.alias_line : r.line;
  return file_ + ":" + (line > 0 ? std::to_string(line) : std::string("?"));
}

void Doc::Error(const Ref& r, std::string message) {
  std::string where = Where(r);
  if (r.alias_line > 0 && where.rfind("override", 0) != 0)
    message += " (through alias '*" + r.alias + "'; the value is written at line " +
               (r.line > 0 ? std::to_string(r.line) : std::string("?")) + ")";
  errors_.push_back({where, JoinPath(r.path), std::move(message)});
}

void Doc::Error(const std::string& where, const std::string& path, std::string message) {
  errors_.push_back({where, path, std::move(message)});
}

}  // namespace rlprof::config
