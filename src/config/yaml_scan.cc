#include "src/config/yaml_scan.h"

#include <map>
#include <set>
#include <utility>

#include "src/base/strings.h"

namespace rlprof::config {

namespace {

constexpr int kMaxDepth = 64;

std::vector<std::string_view> Lines(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view l = text.substr(start, nl == std::string_view::npos ? text.npos : nl - start);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    out.push_back(l);
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
  return out;
}

size_t Indent(std::string_view l) {
  size_t i = 0;
  while (i < l.size() && l[i] == ' ') ++i;
  return i;
}

// Net count of opened flow brackets on a line, outside quotes and comments.
int BracketBalance(std::string_view s) {
  int depth = 0;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote) quote = 0;
      continue;
    }
    if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) break;
    if (c == '"' || c == '\'') quote = c;
    else if (c == '[' || c == '{') ++depth;
    else if (c == ']' || c == '}') --depth;
  }
  return depth;
}

// A block-mapping key at the start of `rest`: its text, and the offset of its ':'.
bool ParseKey(std::string_view rest, std::string* key, size_t* colon) {
  if (rest.empty()) return false;
  char c0 = rest[0];
  if (c0 == '"' || c0 == '\'') {
    size_t close = rest.find(c0, 1);
    if (close == std::string_view::npos) return false;
    size_t i = close + 1;
    while (i < rest.size() && rest[i] == ' ') ++i;
    if (i >= rest.size() || rest[i] != ':') return false;
    if (i + 1 < rest.size() && rest[i + 1] != ' ' && rest[i + 1] != '\t') return false;
    *key = std::string(rest.substr(1, close - 1));
    *colon = i;
    return true;
  }
  if (std::string_view("[{#&*!|>%@`?-").find(c0) != std::string_view::npos) return false;
  for (size_t i = 0; i < rest.size(); ++i) {
    if (rest[i] == '#' && i > 0 && rest[i - 1] == ' ') return false;
    if (rest[i] == ':' && (i + 1 == rest.size() || rest[i + 1] == ' ' || rest[i + 1] == '\t')) {
      *key = std::string(base::Trim(rest.substr(0, i)));
      *colon = i;
      return !key->empty();
    }
  }
  return false;
}

struct Frame {
  size_t indent;
  std::string key;
};

// One line of a block structure: where its content starts (after "- " list markers), the
// indentation that closes enclosing mappings, and its key, if any.
struct LineInfo {
  bool content = false;  // not blank, not a comment
  size_t indent = 0;     // of the first character (a list dash counts)
  size_t key_indent = 0;
  bool has_key = false;
  std::string key;
  size_t colon = 0;      // column of the key's ':'
  std::string_view value;
};

LineInfo Analyse(std::string_view l) {
  LineInfo info;
  size_t ind = Indent(l);
  std::string_view rest = l.substr(ind);
  if (rest.empty() || rest[0] == '#') return info;
  info.content = true;
  info.indent = ind;
  size_t key_ind = ind;
  while (rest.size() >= 1 && rest[0] == '-' && (rest.size() == 1 || rest[1] == ' ')) {
    size_t skip = rest.size() == 1 ? 1 : 2;
    while (skip < rest.size() && rest[skip] == ' ') ++skip;
    key_ind += skip;
    rest = rest.substr(skip);
  }
  info.key_indent = key_ind;
  size_t colon = 0;
  if (ParseKey(rest, &info.key, &colon)) {
    info.has_key = true;
    info.colon = key_ind + colon;
    info.value = base::Trim(rest.substr(colon + 1));
  } else {
    info.value = rest;
  }
  return info;
}

std::string Join(const std::vector<Frame>& stack) {
  std::vector<std::string> keys;
  for (const auto& f : stack) keys.push_back(f.key);
  return base::Join(keys, ".");
}

void Walk(const YAML::Node& n, const std::string& path, int depth,
          std::set<std::pair<int, std::string>>& seen, std::vector<DuplicateKey>& out) {
  if (depth > kMaxDepth) return;
  if (n.IsMap()) {
    std::map<std::string, int> first;
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string& k = it->first.Scalar();
      int line = it->first.Mark().is_null() ? -1 : it->first.Mark().line + 1;
      std::string child = path.empty() ? k : path + "." + k;
      if (k != "<<") {
        auto [pos, inserted] = first.emplace(k, line);
        if (!inserted && seen.insert({line, k}).second)
          out.push_back({child, line, pos->second});
      }
      Walk(it->second, child, depth + 1, seen, out);
    }
  } else if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i)
      Walk(n[i], path + "[" + std::to_string(i) + "]", depth + 1, seen, out);
  }
}

}  // namespace

std::string EnclosingKeyPath(std::string_view text, int line, int column) {
  std::vector<std::string_view> lines = Lines(text);
  std::vector<Frame> stack;
  int block_scalar_indent = -1;  // >= 0 while inside a `|` or `>` scalar of a key at that indent
  int flow_depth = 0;            // > 0 while inside a flow collection spread over lines
  for (int i = 0; i < line && i < static_cast<int>(lines.size()); ++i) {
    LineInfo info = Analyse(lines[i]);
    if (!info.content) continue;
    if (block_scalar_indent >= 0) {
      if (static_cast<int>(info.indent) > block_scalar_indent) continue;
      block_scalar_indent = -1;
    }
    if (flow_depth > 0) {
      flow_depth += BracketBalance(lines[i]);
      continue;
    }
    std::string_view v = info.value;
    if (v == "---" || v == "..." || (info.indent == 0 && base::StartsWith(v, "--- "))) {
      stack.clear();
      continue;
    }
    if (!info.has_key) {
      flow_depth = std::max(0, BracketBalance(v));
      continue;
    }
    while (!stack.empty() && stack.back().indent >= info.key_indent) stack.pop_back();
    stack.push_back({info.key_indent, info.key});
    if (!v.empty() && (v[0] == '|' || v[0] == '>'))
      block_scalar_indent = static_cast<int>(info.key_indent);
    else
      flow_depth = std::max(0, BracketBalance(v));
  }
  // The line of the error: it closes the mappings it is not indented into, unless it is
  // inside a flow collection or block scalar (the error is then in the key that opened it).
  if (line >= 0 && line < static_cast<int>(lines.size()) && flow_depth == 0) {
    LineInfo info = Analyse(lines[line]);
    if (block_scalar_indent >= 0 && static_cast<int>(info.indent) <= block_scalar_indent)
      block_scalar_indent = -1;
    if (info.content && block_scalar_indent < 0) {
      while (!stack.empty() && stack.back().indent >= info.indent) stack.pop_back();
      if (info.has_key && static_cast<int>(info.colon) < column) {
        while (!stack.empty() && stack.back().indent >= info.key_indent) stack.pop_back();
        stack.push_back({info.key_indent, info.key});
      }
    }
  }
  return Join(stack);
}

std::string AliasNameAt(std::string_view text, size_t pos) {
  if (pos >= text.size()) return "";
  size_t star = text.find('*', pos);
  size_t nl = text.find('\n', pos);
  if (star == std::string_view::npos || (nl != std::string_view::npos && star > nl)) return "";
  size_t end = star + 1;
  // YAML anchor names end at whitespace or a flow indicator.
  while (end < text.size() &&
         std::string_view(" \t\r\n,[]{}").find(text[end]) == std::string_view::npos)
    ++end;
  return std::string(text.substr(star + 1, end - star - 1));
}

int AnchorLine(std::string_view text, const std::string& name) {
  if (name.empty()) return -1;
  std::vector<std::string_view> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view l = lines[i];
    for (size_t at = l.find('&'); at != std::string_view::npos; at = l.find('&', at + 1)) {
      bool starts_token =
          at == 0 || std::string_view(" \t[{,:-").find(l[at - 1]) != std::string_view::npos;
      if (!starts_token) continue;
      size_t end = at + 1 + name.size();
      if (l.substr(at + 1, name.size()) == name &&
          (end == l.size() || std::string_view(" \t,[]{}").find(l[end]) != std::string_view::npos))
        return static_cast<int>(i) + 1;
    }
  }
  return -1;
}

std::vector<DuplicateKey> FindDuplicateKeys(const YAML::Node& root) {
  std::vector<DuplicateKey> out;
  std::set<std::pair<int, std::string>> seen;
  Walk(root, "", 0, seen, out);
  return out;
}

}  // namespace rlprof::config
