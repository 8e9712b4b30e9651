#include "src/analysis/readers/chrome_json_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "src/analysis/readers/chrome_builder.h"
#include "src/analysis/readers/chrome_event.h"
#include "src/analysis/readers/decimal.h"
#include "src/analysis/readers/json_scan.h"
#include "src/base/time_math.h"

namespace rlprof::analysis {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// 128 KiB chunks keep the text and its structural index in L2 while On-Demand walks them, and
// cost one copy-on-write page fault each (the brackets written at their ends).
constexpr size_t kChunkBytes = 1 << 17;

// Key comparison against a literal: a fixed-size memcmp plus the closing quote (the input
// is padded, so reading one byte past a shorter key is safe).
template <size_t N>
inline bool KeyIs(const od::raw_json_string& k, const char (&lit)[N]) {
  const char* r = k.raw();
  return std::memcmp(r, lit, N - 1) == 0 && r[N - 1] == '"';
}

std::string_view TrimToken(std::string_view s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\n' || s.back() == '\r' ||
                        s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// Whether `s` holds a backslash. Most tokens are short (names, categories, ids): a branch-free
// pass the compiler vectorises beats a call to memchr there.
inline bool HasBackslash(std::string_view s) {
  if (s.size() > 64) return s.find('\\') != std::string_view::npos;
  bool any = false;
  for (char c : s) any |= c == '\\';
  return any;
}

// Reads a value that may be a number or a string: its text (unescaped for strings). Fast path:
// the raw token of a string without escapes is used in place, with no copy.
error_code ScalarText(od::value& v, std::string_view* text, bool* is_string, bool* is_null) {
  *is_string = false;
  *is_null = false;
  std::string_view raw = TrimToken(v.raw_json_token());
  if (raw.empty()) return simdjson::TAPE_ERROR;
  switch (raw[0]) {
    case '"':
      *is_string = true;
      if (raw.size() >= 2 && raw.back() == '"' &&
          !HasBackslash(raw)) {
        *text = raw.substr(1, raw.size() - 2);
        return simdjson::SUCCESS;
      }
      return v.get_string().get(*text);
    case '{':
    case '[':
      return simdjson::INCORRECT_TYPE;
    case 'n':
      if (raw == "null") {
        *is_null = true;
        return simdjson::SUCCESS;
      }
      *text = raw;
      return simdjson::SUCCESS;
    default:
      // Numbers, booleans, and what is not JSON (NaN, Infinity): the caller validates the text.
      *text = raw;
      return simdjson::SUCCESS;
  }
}

error_code ReadId(od::value& v, JsonId* id) {
  std::string_view text;
  bool is_string, is_null;
  if (auto err = ScalarText(v, &text, &is_string, &is_null)) return err;
  if (is_null) return simdjson::SUCCESS;
  id->present = true;
  id->is_string = is_string;
  id->text = text;
  if (!is_string && !ParseInteger(text, &id->num)) {
    id->is_string = true;  // e.g. a huge or odd number: keep its text
  }
  return simdjson::SUCCESS;
}

// ts / dur: number or numeric string of µs → ns.
error_code ReadMicros(od::value& v, int64_t* out, bool* has, bool* bad, bool* was_string) {
  std::string_view text;
  bool is_string, is_null;
  if (auto err = ScalarText(v, &text, &is_string, &is_null)) {
    if (err != simdjson::INCORRECT_TYPE) return err;
    *bad = true;
    return simdjson::SUCCESS;
  }
  if (is_null) return simdjson::SUCCESS;
  if (was_string) *was_string = is_string;
  // Outside ±2^62 ns (1e300, INT64_MAX µs) is as unusable as NaN: the caller counts it.
  if (ParseMicrosToNanos(text, out) && base::IsValidTime(*out)) {
    *has = true;
  } else {
    *bad = true;
  }
  return simdjson::SUCCESS;
}

error_code ReadInt(od::value& v, int64_t* out, uint32_t* bad) {
  std::string_view text;
  bool is_string, is_null;
  if (auto err = ScalarText(v, &text, &is_string, &is_null)) {
    if (err != simdjson::INCORRECT_TYPE) return err;
    ++*bad;
    return simdjson::SUCCESS;
  }
  if (is_null) return simdjson::SUCCESS;
  if (!ParseInteger(text, out)) ++*bad;
  return simdjson::SUCCESS;
}

error_code ReadString(od::value& v, std::string_view* out, uint32_t* bad, bool* was_null = nullptr) {
  std::string_view text;
  bool is_string, is_null;
  if (auto err = ScalarText(v, &text, &is_string, &is_null)) {
    if (err != simdjson::INCORRECT_TYPE) return err;
    ++*bad;
    return simdjson::SUCCESS;
  }
  if (was_null) *was_null = is_null;
  if (!is_null) *out = text;
  return simdjson::SUCCESS;
}

// Compact JSON text of any value (arrays of dims, rank lists, or a string holding one).
error_code ReadCompact(od::value& v, std::string* buf, std::string_view* out) {
  od::json_type type;
  if (auto err = v.type().get(type)) return err;
  std::string_view raw;
  if (type == od::json_type::string) {
    if (auto err = v.get_string().get(raw)) return err;
  } else if (type == od::json_type::array) {
    od::array a;
    if (auto err = v.get_array().get(a)) return err;
    if (auto err = a.raw_json().get(raw)) return err;
  } else if (type == od::json_type::object) {
    od::object o;
    if (auto err = v.get_object().get(o)) return err;
    if (auto err = o.raw_json().get(raw)) return err;
  } else {
    raw = TrimToken(v.raw_json_token());
  }
  buf->resize(raw.size());
  *out = CompactJson(raw, buf->data());
  return simdjson::SUCCESS;
}

error_code ReadArgs(od::value& v, char ph, JsonEvent* e) {
  od::object args;
  if (auto err = v.get_object().get(args)) {
    if (err != simdjson::INCORRECT_TYPE) return err;
    ++e->bad_values;
    return simdjson::SUCCESS;
  }
  for (auto f : args) {
    od::field field;
    if (auto err = std::move(f).get(field)) return err;
    if (ph == 'C') {
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) return err;
      std::string_view text;
      bool is_string, is_null;
      od::value val = field.value();
      if (auto err = ScalarText(val, &text, &is_string, &is_null)) {
        if (err != simdjson::INCORRECT_TYPE) return err;
        ++e->bad_values;
        continue;
      }
      double d;
      if (!is_null && ParseDouble(text, &d)) {
        e->series.emplace_back(std::string(key), d);
      } else {
        ++e->bad_values;
      }
      continue;
    }
    od::raw_json_string k = field.key();
    od::value val = field.value();
    error_code err = simdjson::SUCCESS;
    // Dispatch on the first byte: most keys (grid, block, queued, …) are skipped untouched.
    switch (k.raw()[0]) {
      case 'c':
        if (KeyIs(k, "correlation")) err = ReadInt(val, &e->correlation, &e->bad_values);
        break;
      case 'E':
        if (KeyIs(k, "External id")) err = ReadInt(val, &e->external_id, &e->bad_values);
        break;
      case 'D':
        if (KeyIs(k, "Device Type")) {
          err = ReadInt(val, &e->device_type, &e->bad_values);
        } else if (KeyIs(k, "Device Id")) {
          err = ReadInt(val, &e->device, &e->bad_values);
        }
        break;
      case 'T':
        if (KeyIs(k, "Total Allocated")) {
          err = ReadInt(val, &e->total_allocated, &e->bad_values);
        } else if (KeyIs(k, "Total Reserved")) {
          err = ReadInt(val, &e->total_reserved, &e->bad_values);
        }
        break;
      case 'B':
        if (KeyIs(k, "Bytes")) err = ReadInt(val, &e->bytes, &e->bad_values);
        break;
      case 'd':
        if (KeyIs(k, "device")) {
          err = ReadInt(val, &e->device, &e->bad_values);
        } else if (KeyIs(k, "dtype")) {
          err = ReadString(val, &e->dtype, &e->bad_values);
        }
        break;
      case 's':
        if (KeyIs(k, "stream")) {
          err = ReadInt(val, &e->stream, &e->bad_values);
        } else if (ph == 'M' && KeyIs(k, "sort_index")) {
          err = ReadInt(val, &e->sort_index, &e->bad_values);
        }
        break;
      case 'b':
        if (KeyIs(k, "bytes")) err = ReadInt(val, &e->bytes, &e->bad_values);
        break;
      case 'I':
        if (KeyIs(k, "In msg nelems")) {
          err = ReadInt(val, &e->nelems, &e->bad_values);
        } else if (KeyIs(k, "Input Dims") || KeyIs(k, "Input dims")) {
          err = ReadCompact(val, &e->shapes_buf, &e->shapes);
        }
        break;
      case 'C':
        // NCCL kernels / record_param_comms: "send", "recv", "allreduce", … (p2p receives are
        // the msprof Bubble).
        if (KeyIs(k, "Collective name")) err = ReadString(val, &e->collective_name, &e->bad_values);
        break;
      case 'P':
        if (KeyIs(k, "Process Group Name")) {
          err = ReadString(val, &e->group_name, &e->bad_values);
        } else if (KeyIs(k, "Process Group Ranks")) {
          err = ReadCompact(val, &e->ranks_buf, &e->group_ranks);
        }
        break;
      case 'n':
        if (ph == 'M' && KeyIs(k, "name")) err = ReadString(val, &e->arg_name, &e->bad_values);
        break;
      case 'l':
        if (ph == 'M' && KeyIs(k, "labels")) err = ReadString(val, &e->labels, &e->bad_values);
        break;
      default:
        break;
    }
    if (err) return err;
  }
  return simdjson::SUCCESS;
}

// Pulls the fields rlprof uses out of one event object.
error_code ParseEvent(od::object& obj, JsonEvent* e) {
  // On-Demand reads forward only: "args" is read in place when "ph" came before it (Kineto,
  // legacy torch); otherwise (Ascend writes "ph" last) its raw text is kept and re-parsed
  // below once the phase is known.
  bool has_args = false;
  std::string_view args_raw;
  for (auto f : obj) {
    od::field field;
    if (auto err = std::move(f).get(field)) return err;
    od::raw_json_string k = field.key();
    od::value v = field.value();
    error_code err = simdjson::SUCCESS;
    const char c0 = k.raw()[0];
    switch (c0) {
      case 'p':
        if (KeyIs(k, "ph")) {
          err = ReadString(v, &e->ph, &e->bad_values);
        } else if (KeyIs(k, "pid")) {
          err = ReadId(v, &e->pid);
        }
        break;
      case 't':
        if (KeyIs(k, "ts")) {
          err = ReadMicros(v, &e->ts, &e->has_ts, &e->bad_ts, &e->string_ts);
        } else if (KeyIs(k, "tid")) {
          err = ReadId(v, &e->tid);
        }
        break;
      case 'd':
        if (KeyIs(k, "dur")) err = ReadMicros(v, &e->dur, &e->has_dur, &e->bad_dur, nullptr);
        break;
      case 'n':
        if (KeyIs(k, "name")) {
          bool null_name = false;
          err = ReadString(v, &e->name, &e->bad_values, &null_name);
          e->has_name = !null_name;  // "name": null names nothing (counted as missing_name)
        }
        break;
      case 'c':
        if (KeyIs(k, "cat")) err = ReadString(v, &e->cat, &e->bad_values);
        break;
      case 'i':
        if (KeyIs(k, "id")) err = ReadId(v, &e->id);
        break;
      case 's':
        if (KeyIs(k, "s")) {
          std::string_view s;
          err = ReadString(v, &s, &e->bad_values);
          if (!s.empty()) e->scope = s[0];
        }
        break;
      case 'b':
        if (KeyIs(k, "bp")) {
          std::string_view s;
          err = ReadString(v, &s, &e->bad_values);
          e->bind_enclosing = s == "e";
        }
        break;
      case 'a':
        if (KeyIs(k, "args")) {
          if (!e->ph.empty()) {
            err = ReadArgs(v, e->ph[0], e);
          } else {
            od::object a;
            err = v.get_object().get(a);
            if (err == simdjson::INCORRECT_TYPE) {
              err = simdjson::SUCCESS;
            } else if (!err) {
              err = a.raw_json().get(args_raw);
              has_args = true;
            }
          }
        }
        break;
      default:
        break;
    }
    if (err) return err;
  }
  if (has_args && !args_raw.empty() && !e->ph.empty()) {
    // Rare: "args" before "ph". Parse that object on its own.
    simdjson::padded_string copy(args_raw);
    od::parser p;
    od::document doc;
    if (p.iterate(copy).get(doc) == simdjson::SUCCESS) {
      od::value v;
      if (doc.get_value().get(v) == simdjson::SUCCESS) {
        // Strings read here die with `p`: copy them into the event's own storage.
        JsonEvent tmp;
        if (ReadArgs(v, e->ph[0], &tmp) == simdjson::SUCCESS) {
          e->correlation = tmp.correlation;
          e->external_id = tmp.external_id;
          e->device = tmp.device;
          e->stream = tmp.stream;
          e->bytes = tmp.bytes;
          e->nelems = tmp.nelems;
          e->sort_index = tmp.sort_index;
          e->bad_values += tmp.bad_values;
          e->series = std::move(tmp.series);
          e->owned = {std::string(tmp.dtype), std::string(tmp.shapes), std::string(tmp.group_name),
                      std::string(tmp.group_ranks), std::string(tmp.arg_name),
                      std::string(tmp.labels)};
          e->dtype = e->owned[0];
          e->shapes = e->owned[1];
          e->group_name = e->owned[2];
          e->group_ranks = e->owned[3];
          e->arg_name = e->owned[4];
          e->labels = e->owned[5];
        }
      }
    }
  }
  return simdjson::SUCCESS;
}

void ReadMetadata(std::string text, Trace* trace, ChromeTraceBuilder* builder) {
  if (!simdjson::validate_utf8(text.data(), text.size())) {
    size_t bad = SanitizeUtf8(text.data(), text.size());
    if (bad) trace->diagnostics.Add("invalid_utf8_bytes", bad);
  }
  simdjson::padded_string padded(text);
  od::parser parser;
  od::document doc;
  od::object top;
  if (parser.iterate(padded).get(doc) || doc.get_object().get(top)) {
    trace->diagnostics.Add("metadata_unreadable");
    return;
  }
  for (auto f : top) {
    od::field field;
    if (std::move(f).get(field)) {
      trace->diagnostics.Add("metadata_unreadable");
      return;
    }
    od::raw_json_string k = field.key();
    od::value v = field.value();
    if (KeyIs(k, "distributedInfo")) {
      od::object di;
      if (v.get_object().get(di)) continue;
      for (auto g : di) {
        od::field df;
        if (std::move(g).get(df)) break;
        od::raw_json_string dk = df.key();
        od::value dv = df.value();
        int64_t n = -1;
        uint32_t bad = 0;
        if (KeyIs(dk, "rank")) {
          if (ReadInt(dv, &n, &bad) == simdjson::SUCCESS && !bad) trace->rank = n;
        } else if (KeyIs(dk, "world_size")) {
          if (ReadInt(dv, &n, &bad) == simdjson::SUCCESS && !bad) trace->world_size = n;
        }
      }
    } else if (KeyIs(k, "deviceProperties")) {
      od::array arr;
      if (v.get_array().get(arr)) continue;
      for (auto d : arr) {
        od::object dev;
        if (d.get_object().get(dev)) break;
        int64_t id = -1, total_mem = -1;
        std::string name;
        for (auto g : dev) {
          od::field df;
          if (std::move(g).get(df)) break;
          od::raw_json_string dk = df.key();
          od::value dv = df.value();
          uint32_t bad = 0;
          std::string_view s;
          if (KeyIs(dk, "id")) {
            (void)ReadInt(dv, &id, &bad);
          } else if (KeyIs(dk, "totalGlobalMem")) {
            (void)ReadInt(dv, &total_mem, &bad);
          } else if (KeyIs(dk, "name") && ReadString(dv, &s, &bad) == simdjson::SUCCESS) {
            name = std::string(s);
          }
        }
        if (id >= 0 && !name.empty()) builder->SetDeviceName(id, name);
        if (id >= 0 && total_mem > 0) builder->SetDeviceMemory(id, total_mem);
      }
    }
  }
}

// Parses the events of one chunk [open, close] (bytes at both ends become '[' and ']').
void ParseChunk(od::parser& parser, InputBuffer& in, size_t open, size_t close,
                ChromeTraceBuilder* builder, JsonEvent* ev, Trace* trace) {
  char* data = in.data();
  data[open] = '[';
  data[close] = ']';
  od::document doc;
  od::array arr;
  size_t len = close - open + 1;
  error_code err = parser.iterate(data + open, len, in.capacity() - open).get(doc);
  if (err == simdjson::UTF8_ERROR) {
    // Cuts fall on commas between elements, so a chunk holds whole UTF-8 sequences: repairing
    // it alone gives the bytes repairing the whole file would.
    size_t bad = SanitizeUtf8(data + open, len);
    if (bad) trace->diagnostics.Add("invalid_utf8_bytes", bad);
    err = parser.iterate(data + open, len, in.capacity() - open).get(doc);
  }
  if (err) {
    trace->diagnostics.Add("json_syntax_error");
    trace->diagnostics.Add("json_skipped_bytes", len);
    return;
  }
  if (doc.get_array().get(arr)) {
    trace->diagnostics.Add("json_syntax_error");
    trace->diagnostics.Add("json_skipped_bytes", len);
    return;
  }
  for (auto item : arr) {
    od::value v;
    if (item.get(v)) {
      trace->diagnostics.Add("json_syntax_error");
      return;
    }
    od::object obj;
    if (auto err = v.get_object().get(obj)) {
      if (err != simdjson::INCORRECT_TYPE) {
        trace->diagnostics.Add("json_syntax_error");
        return;
      }
      trace->diagnostics.Add("non_object_event");
      continue;
    }
    ev->Clear();
    if (ParseEvent(obj, ev) != simdjson::SUCCESS) {
      // The rest of this chunk is unreliable after a structural error.
      trace->diagnostics.Add("json_syntax_error");
      return;
    }
    if (ev->bad_values) trace->diagnostics.Add("bad_arg_values", ev->bad_values);
    builder->Add(*ev);
  }
}

}  // namespace

bool LooksLikeJson(std::string_view t) {
  if (t.size() >= 3 && t.substr(0, 3) == "\xEF\xBB\xBF") t.remove_prefix(3);
  size_t i = 0;
  while (i < t.size() && i < 4096 && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t'))
    ++i;
  return i < t.size() && (t[i] == '{' || t[i] == '[');
}

base::Status ReadChromeJson(InputBuffer& in, const ReadOptions& opts, Trace* trace) {
  if (!LooksLikeJson(in.view()))
    return base::InvalidArgument(trace->source + ": not a JSON trace (expected '{' or '[')");
  char* data = in.data();
  size_t n = in.size();
  if (n >= 3 && std::memcmp(data, "\xEF\xBB\xBF", 3) == 0) std::memset(data, ' ', 3);
  // Invalid UTF-8 is repaired where it is parsed: simdjson validates each chunk as it indexes
  // it (ParseChunk), and the metadata text on its own (ReadMetadata); no pass of its own.
  JsonLayout layout = ScanJson(data, n, kChunkBytes);
  if (layout.form == JsonLayout::Form::kNone)
    return base::InvalidArgument(trace->source + ": not a JSON trace");
  if (layout.truncated) trace->diagnostics.Add("truncated_input");
  if (layout.trailing_commas) trace->diagnostics.Add("trailing_commas", layout.trailing_commas);
  if (layout.trailing_garbage) trace->diagnostics.Add("trailing_garbage_bytes", layout.trailing_garbage);
  if (layout.too_deep) trace->diagnostics.Add("nesting_too_deep", layout.too_deep);
  if (layout.duplicate_events_keys)
    trace->diagnostics.Note("duplicate_trace_events",
                            trace->source + ": \"traceEvents\" appears " +
                                std::to_string(layout.duplicate_events_keys + 1) +
                                " times; the last array is read, " +
                                std::to_string(layout.duplicate_events_dropped) + " events of the others left out",
                            std::max<uint64_t>(layout.duplicate_events_dropped, 1));

  ChromeTraceBuilder builder(trace, opts);
  builder.Reserve(layout.elements);
  if (layout.form == JsonLayout::Form::kObject) {
    trace->format = "kineto";
    // Everything but the events array, parsed on its own (small).
    std::string meta;
    if (layout.has_events) {
      meta.assign(data + layout.top_open, layout.events_open - layout.top_open);
      meta += "[]";
      bool array_closed = layout.cuts.size() >= 2 && data[layout.events_close] == ']' &&
                          layout.events_close < n;
      if (array_closed && (!layout.truncated || layout.last_top_value_end > layout.events_close)) {
        size_t tail_end = layout.truncated ? layout.last_top_value_end : n;
        meta.append(data + layout.events_close + 1, tail_end - layout.events_close - 1);
        if (layout.truncated) meta += "}";
      } else {
        meta += "}";
      }
    } else if (layout.truncated) {
      meta.assign(data + layout.top_open, std::max(layout.last_top_value_end, layout.top_open + 1) - layout.top_open);
      meta += "}";
    } else {
      meta.assign(data + layout.top_open, n - layout.top_open);
    }
    if (!layout.has_events) trace->diagnostics.Add("no_trace_events");
    ReadMetadata(std::move(meta), trace, &builder);
  }
  if (layout.has_events && layout.cuts.size() >= 2) {
    // Allocate once for the largest chunk: growing per chunk would re-fault fresh pages.
    size_t max_chunk = 0;
    for (size_t i = 0; i + 1 < layout.cuts.size(); ++i)
      max_chunk = std::max(max_chunk, layout.cuts[i + 1] - layout.cuts[i] + 1);
    od::parser parser;
    if (parser.allocate(max_chunk + 64) != simdjson::SUCCESS) {
      return base::Internal(trace->source + ": cannot allocate the JSON parser");
    }
    JsonEvent ev;
    bool legacy_checked = layout.form != JsonLayout::Form::kArray;
    for (size_t i = 0; i + 1 < layout.cuts.size(); ++i) {
      if (!legacy_checked) {
        // Legacy torch arrays say so in their first event's pid: parse chunk 0 with the flag
        // decided by a quick look at the text.
        std::string_view head(data + layout.cuts[0],
                              std::min<size_t>(layout.cuts[1] - layout.cuts[0], 4096));
        builder.set_legacy(head.find("\"CPU functions\"") != std::string_view::npos);
        legacy_checked = true;
      }
      ParseChunk(parser, in, layout.cuts[i], layout.cuts[i + 1], &builder, &ev, trace);
    }
  }
  if (layout.form == JsonLayout::Form::kArray) {
    if (builder.saw_cpu_functions_pid()) {
      trace->format = "torch-legacy";
    } else {
      bool ascend = builder.saw_string_ts();
      for (const auto& [pid, name] : builder.process_names())
        if (name == "Ascend Hardware" || name == "CANN") ascend = true;
      trace->format = ascend ? "ascend" : "chrome";
    }
  }
  builder.Finish();
  // String timestamps are how Ascend writes them: only a finding elsewhere.
  if (trace->format == "ascend") trace->diagnostics.counts.erase("string_ts");
  return base::Status::Ok();
}

}  // namespace rlprof::analysis
