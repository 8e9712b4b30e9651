#include "src/format/diagnostics.h"

#include <algorithm>

namespace rlprof::format {
namespace {

using S = Severity;

// Sorted by name (diagnostics_test checks). Descriptions say what happened and what the
// result still holds; docs/reliability.md shows this table.
constexpr DiagnosticSpec kCatalogue[] = {
    {"areal_bad_line", S::kDataLoss, "input", "a line of an AReaL session trace (sessions-r*.jsonl) that is not a JSON object (damaged, cut short mid-file, or longer than 64 MiB): skipped, the other sessions are read"},
    {"areal_bad_value", S::kWarning, "input", "a field of an AReaL session record of the wrong type or out of range (a time that is not a number of seconds in 0..2^62 ns, a phase span without its start or ending before it, finalized before submitted, an id or rank that is not an integer): that value is unknown, the session is kept"},
    {"areal_duplicate_session", S::kWarning, "input", "an AReaL session id seen again for the same rank in one file (the tracer was reset): the later session's id gets #2, #3, …"},
    {"areal_not_session", S::kDataLoss, "input", "a JSON line of an AReaL session trace without session_id and a numeric submit_ts: skipped"},
    {"ascend_db_bad_row", S::kDataLoss, "input", "a row of an Ascend profiler database without a start or end time (or step id), or with one outside ±2^62 ns: skipped"},
    {"ascend_db_corrupt", S::kDataLoss, "input", "an Ascend profiler database table could not be read to its end (truncated or damaged file): the rows read before the damage are kept"},
    {"ascend_db_missing_table", S::kWarning, "input", "an Ascend profiler database lacks a table the others refer to (TASK: no device tasks; STRING_IDS: names unknown; CANN_API: launches unknown, by_launch falls back to starts)"},
    {"ascend_db_unknown_string", S::kWarning, "input", "an id with no STRING_IDS row: the name reads as <string ID>"},
    {"ascend_text_bad_row", S::kDataLoss, "input", "a row of kernel_details.csv or an operator of communication.json without a readable start time or duration (a bad number, a row cut short or with fewer fields than the header, an unterminated quote): skipped"},
    {"ascend_text_corrupt", S::kDataLoss, "input", "communication.json could not be parsed to its end (truncated or damaged), or is not an object of steps (null, a list, a string): the operators completed before the damage are kept"},
    {"ascend_text_empty", S::kWarning, "input", "kernel_details.csv with a header and no rows, or communication.json with no operator: that part of the trace is empty"},
    {"ascend_text_missing_column", S::kDataLoss, "input", "kernel_details.csv without its Start Time(us) or Duration(us) column, or empty: its kernels are not read"},
    {"ascend_text_missing_file", S::kWarning, "input", "an Ascend text folder without kernel_details.csv (no compute work) or communication.json (no communication, or only kernel_details.csv's HCCL rows: no groups, no sizes): the result lacks that part"},
    {"async_without_id", S::kWarning, "json", "async event (b/e/n) without an id; paired by category alone"},
    {"bad_arg_values", S::kWarning, "json", "args values of the wrong type, ignored (the event is kept)"},
    {"by_launch_without_launch", S::kWarning, "analysis", "--assign by_launch: work with no known host launch, assigned by its start instead"},
    {"capture_events_missing", S::kDataLoss, "capture", "capture directory without a readable events.rlp: only its manifest is used"},
    {"capture_incomplete", S::kWarning, "manifest", "the manifest says the capture was not closed cleanly (complete: false)"},
    {"clamped_child_overhang", S::kInfo, "trace", "child ending ≤ 1 µs after its parent (integer-µs writers) clipped to the parent"},
    {"clock_offset_out_of_range", S::kWarning, "manifest", "clock anchor or offset_to_rank0_ns outside ±2^62 ns: ignored (taken as 0)"},
    {"collectives_with_unequal_counts_skipped", S::kWarning, "cluster", "a collective seen a different number of times on different ranks: not matched across ranks"},
    {"counter_without_values", S::kWarning, "json", "counter event (ph C) without numeric args: dropped"},
    {"dropped_events", S::kDataLoss, "manifest", "events the runtime dropped while capturing (full buffers, write errors), from the manifest"},
    {"duplicate_rank_inputs", S::kWarning, "cluster", "inputs from different files claiming the same rank and step (traces of separate jobs, or a rank id never set): merged as one rank, the details name them"},
    {"duplicate_trace_events", S::kDataLoss, "json", "an object with \"traceEvents\" more than once: the last array is read (as Python, Chrome and Perfetto do), the events of the others left out (count: those events)"},
    {"duration_clamped", S::kWarning, "trace", "duration so long that the end passed +2^62 ns: shortened to end there"},
    {"empty_step_window", S::kWarning, "analysis", "a step window that ends before it starts (after the previous step's device tail): made empty"},
    {"events_lost_write_error", S::kDataLoss, "manifest", "of the dropped events, those lost to a write error such as a full disk (counts.dropped_write_error)"},
    {"export_clipped_slices", S::kWarning, "export", "complete events shortened to nest inside their parent (viewers need proper nesting)"},
    {"export_null_counter_values", S::kWarning, "export", "non-finite counter values (NaN, infinity) stored as NULL in SQLite"},
    {"export_skipped_events", S::kDataLoss, "export", "events the output format cannot represent (time before the trace start, negative duration, NaN counter): left out"},
    {"export_tracks_dropped", S::kDataLoss, "export", "tracks beyond the 65535 an rlprof capture holds: their events left out"},
    {"export_unmatched_async", S::kWarning, "export", "async begin without end, or end without begin: written open-ended or left out"},
    {"external_id_without_operator", S::kInfo, "trace", "operator external correlation id whose operator is not in the capture (the window closed inside it): its launches keep no operator"},
    {"fewer_than_two_ranks", S::kInfo, "cluster", "the cluster view needs at least two ranks; skew tables are empty"},
    {"flow_unbound", S::kInfo, "json", "flow point (s/t/f) that no slice encloses or starts at: ignored"},
    {"flow_without_id", S::kWarning, "json", "flow point without an id: ignored"},
    {"gzip_data_error", S::kDataLoss, "input", "corrupt gzip stream: the text decompressed before the damage is read"},
    {"gzip_out_of_memory", S::kDataLoss, "input", "decompressed text would not fit in memory: the part that fits is read"},
    {"improper_nesting", S::kWarning, "trace", "slices on one thread that overlap without nesting"},
    {"input_empty_file", S::kDataLoss, "input", "an empty (zero-byte) trace or events file found below an input folder: skipped"},
    {"input_events_without_manifest", S::kWarning, "input", "a folder with events.rlp but no manifest.json: read as a bare events file (identity from its header)"},
    {"input_outside_root", S::kWarning, "input", "an input below the served folder leads outside it through a link: not read (rlprof serve)"},
    {"input_unreadable_dir", S::kDataLoss, "input", "a folder below an input could not be listed (permissions, I/O error): its traces are missing"},
    {"input_unreadable_file", S::kDataLoss, "input", "a file below an input could not be opened: skipped"},
    {"inputs_without_rank", S::kWarning, "cluster", "inputs whose rank is unknown: each given its own negative pseudo-rank"},
    {"invalid_dur", S::kWarning, "json", "dur that is not a number (or out of range): taken as 0"},
    {"invalid_event_kind", S::kDataLoss, "capture", "raw event of an unknown kind: dropped"},
    {"invalid_ts", S::kDataLoss, "json", "ts that is not a number, NaN, infinite, or outside ±2^62 ns: event dropped"},
    {"invalid_utf8_bytes", S::kWarning, "json", "bytes of invalid UTF-8 replaced before parsing"},
    {"invariant_", S::kError, "analysis", "an invariant of the atomic partition failed (a bug, or data the partition cannot handle); the step's numbers are suspect"},
    {"json_skipped_bytes", S::kDataLoss, "json", "bytes of JSON skipped after a syntax error (the events in them are lost)"},
    {"json_syntax_error", S::kDataLoss, "json", "a JSON syntax error: the rest of that chunk of events is skipped, the other chunks are read"},
    {"manifest_event_count_mismatch", S::kWarning, "manifest", "counts.events of the manifest differs from the events read (count = the difference)"},
    {"manifest_file_size_mismatch", S::kWarning, "manifest", "a file of the capture has another size than the manifest recorded (changed or cut after the capture closed)"},
    {"manifest_listed_file_missing", S::kDataLoss, "manifest", "a file the manifest lists under files is missing"},
    {"manifest_missing", S::kWarning, "manifest", "capture without manifest.json: identity from the events header, no window or clock anchors"},
    {"manifest_problems", S::kWarning, "manifest", "manifest keys missing or of the wrong type (defaults used), or the manifest is not JSON"},
    {"manifest_unreadable", S::kWarning, "manifest", "manifest.json exists but cannot be read (a directory, permissions): ignored"},
    {"metadata_unreadable", S::kWarning, "json", "the trace's top-level metadata (outside traceEvents) could not be parsed"},
    {"missing_dur", S::kWarning, "json", "complete event (ph X) without dur: taken as 0"},
    {"missing_name", S::kWarning, "json", "event without a name, or with \"name\": null (steps named by it are lost)"},
    {"missing_phase", S::kWarning, "json", "event without ph: dropped"},
    {"missing_ts", S::kDataLoss, "json", "event without ts: dropped"},
    {"name_truncated", S::kWarning, "trace", "a name, category or argument longer than 1 MiB, truncated when read"},
    {"negative_duration", S::kWarning, "trace", "slice with a negative duration: duration set to 0"},
    {"nesting_too_deep", S::kDataLoss, "json", "JSON nested deeper than the reader follows: the event is dropped"},
    {"no_steps_", S::kWarning, "compare", "one side of a comparison has no step: nothing to compare per step"},
    {"no_trace_events", S::kWarning, "json", "a JSON object without traceEvents"},
    {"non_object_event", S::kWarning, "json", "an element of traceEvents that is not an object: skipped"},
    {"operators_sampled", S::kInfo, "analysis", "operator calls in captures that recorded a share of them (ops_sampling): the operator statistics' counts, totals, self and device times are estimates (× 1 / the share)"},
    {"operators_sampled_cpu_compute", S::kWarning, "analysis", "a CPU-only trace whose operators were sampled (ops_sampling): compute is the union of the sampled operators, below the real compute (idle above it)"},
    {"overlapping_same_stream_kernels", S::kWarning, "analysis", "device work starting before the previous work of the same stream ended: the earlier one clipped"},
    {"partial_steps_left_out", S::kInfo, "cluster", "steps flagged partial (outside the capture) left out of the cluster view"},
    {"partial_steps_left_out_", S::kInfo, "compare", "steps flagged partial (outside the capture) left out of a comparison side"},
    {"raw_bad_checksum_chunks", S::kDataLoss, "raw", "events.rlp chunks with a bad checksum or header: skipped, the rest kept"},
    {"raw_bad_header", S::kWarning, "raw", "events.rlp file header damaged or missing: identity from the manifest, chunks still read"},
    {"raw_bad_payload_chunks", S::kDataLoss, "raw", "events.rlp chunks whose checksum is right but whose payload does not decode: skipped"},
    {"raw_bad_records", S::kDataLoss, "raw", "malformed string, track or event records inside a valid chunk: dropped"},
    {"raw_empty_file", S::kDataLoss, "raw", "events.rlp has zero bytes (the process died before writing its header)"},
    {"raw_events_unreadable", S::kDataLoss, "raw", "events.rlp is not a readable regular file (a directory, permissions): no events"},
    {"raw_skipped_bytes", S::kDataLoss, "raw", "bytes of events.rlp passed over while resynchronising after damage"},
    {"raw_truncated_tail_bytes", S::kDataLoss, "raw", "bytes of an incomplete last chunk (the writer stopped mid-chunk)"},
    {"raw_undefined_string_refs", S::kWarning, "raw", "events naming a string id never defined: shown with an empty name"},
    {"raw_undefined_track_refs", S::kWarning, "raw", "events on a track id never defined: put on a synthetic track"},
    {"raw_unknown_chunk_types", S::kDataLoss, "raw", "chunks of a type this version does not know (a newer writer): skipped"},
    {"ray_bad_result", S::kDataLoss, "ray", "a result from a node of the Ray cluster that could not be decoded (another rlprof version there): that input is left out"},
    {"ray_input_missing", S::kDataLoss, "ray", "a path given to analyse --ray that no node of the cluster holds: left out"},
    {"ray_node_lost", S::kDataLoss, "ray", "inputs whose node died (or left the cluster) before their analysis came back: left out, the rest is analysed"},
    {"run_view_duplicate_stage_windows", S::kInfo, "analysis", "a stage of one rank and step seen by two of its captures (e.g. e2e and discrete): the run view keeps one"},
    {"sample_event_unknown", S::kWarning, "trace", "a sample event (category sample) of a name or kind this version does not know, or without an id: skipped"},
    {"stack_without_operator", S::kDataLoss, "trace", "operator call stack whose operator is not in the capture (the window closed inside it): dropped"},
    {"stage_from_manifest", S::kInfo, "capture", "no stage marker in a scheduled capture: the stage spans the capture window (manifest)"},
    {"step_from_manifest", S::kInfo, "capture", "no step marker in a discrete capture: the step spans the capture window (manifest)"},
    {"step_marker_not_found", S::kWarning, "analysis", "--step-marker matched no host range: the trace's own step markers are used"},
    {"string_ts", S::kInfo, "json", "timestamps written as strings (Ascend style), parsed exactly"},
    {"time_clamped", S::kWarning, "trace", "a slice time outside ±2^62 ns reached the trace model: clamped to the bound"},
    {"time_out_of_range", S::kDataLoss, "trace", "an event, marker or counter sample whose time is outside ±2^62 ns (after clock alignment): dropped"},
    {"tracelens_gpu_steps_not_bracketing", S::kWarning, "analysis", "the trace's GPU-side ProfilerStep annotations hold less than half of the device work between them (ROCm writes them a few µs long): the TraceLens timeline is computed over the whole trace, not inside them"},
    {"tracelens_inside_gpu_steps", S::kInfo, "analysis", "the TraceLens timeline is computed inside the trace's GPU-side ProfilerStep annotations (count: GPU steps)"},
    {"tracelens_unlinked_work", S::kInfo, "analysis", "device work without a launch in the trace (launched before the profiler started), left out of the TraceLens timeline as TraceLens does"},
    {"trailing_commas", S::kInfo, "json", "trailing commas in the events array, tolerated"},
    {"trailing_garbage_bytes", S::kWarning, "json", "bytes after the end of the JSON document, ignored"},
    {"truncated_gzip", S::kDataLoss, "input", "gzip stream ends early: the text before the cut is read"},
    {"truncated_input", S::kDataLoss, "json", "the input ends mid-way (killed writer): the complete events before the cut are kept"},
    {"unclassified_device_events", S::kWarning, "analysis", "device work no classification rule matched: counted as 'other'"},
    {"undefined_track", S::kWarning, "capture", "events on a track the capture never defined: put on a synthetic thread"},
    {"unknown_phase", S::kWarning, "json", "event with a ph rlprof does not know: dropped"},
    {"unmatched_async_begin", S::kDataLoss, "json", "async begin (b) without an end: dropped"},
    {"unmatched_async_end", S::kWarning, "json", "async end (e) without a begin: dropped"},
    {"unmatched_begin", S::kDataLoss, "trace", "begin (B) without an end: dropped"},
    {"unmatched_end", S::kWarning, "trace", "end (E) without a begin: dropped"},
    {"unreadable_inputs", S::kDataLoss, "input", "inputs that could not be read at all (each also printed with its reason)"},
    {"unreadable_inputs_", S::kDataLoss, "compare", "inputs of one comparison side that could not be read"},
    {"window_inverted", S::kWarning, "manifest", "manifest window closes before it opens: the window is ignored"},
    {"work_outside_step_windows", S::kInfo, "analysis", "device work outside every step window (before the first or after the last step)"},
};

bool IsFamily(std::string_view n) { return !n.empty() && n.back() == '_'; }

}  // namespace

const char* SeverityName(Severity s) {
  switch (s) {
    case Severity::kInfo: return "info";
    case Severity::kWarning: return "warning";
    case Severity::kError: return "error";
    case Severity::kDataLoss: return "data_loss";
  }
  return "warning";
}

std::span<const DiagnosticSpec> DiagnosticCatalogue() { return kCatalogue; }

const DiagnosticSpec* FindDiagnostic(std::string_view name) {
  const DiagnosticSpec* best = nullptr;
  for (const DiagnosticSpec& s : kCatalogue) {
    if (s.name == name) return IsFamily(s.name) ? nullptr : &s;  // a family alone names nothing
    if (IsFamily(s.name) && name.size() > s.name.size() && name.substr(0, s.name.size()) == s.name &&
        (best == nullptr || s.name.size() > best->name.size()))
      best = &s;
  }
  return best;
}

Severity DiagnosticSeverity(std::string_view name) {
  const DiagnosticSpec* s = FindDiagnostic(name);
  return s == nullptr ? Severity::kWarning : s->severity;
}

std::string DiagnosticCatalogueMarkdown() {
  std::string md = "| name | severity | source | description |\n|---|---|---|---|\n";
  for (const DiagnosticSpec& s : kCatalogue) {
    md += "| `";
    md += s.name;
    if (IsFamily(s.name)) md += "*";
    md += "` | ";
    md += SeverityName(s.severity);
    md += " | ";
    md += s.source;
    md += " | ";
    md += s.description;
    md += " |\n";
  }
  return md;
}

void Diagnostics::Note(const std::string& name, std::string detail, uint64_t n) {
  Add(name, n);
  if (details.size() < kMaxDetails) details.push_back(std::move(detail));
}

void Diagnostics::Merge(const Diagnostics& o) {
  for (const auto& [k, v] : o.counts) counts[k] += v;
  for (const auto& d : o.details) {
    if (details.size() >= kMaxDetails) break;
    details.push_back(d);
  }
}

std::vector<std::string> Diagnostics::Lines() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : counts) out.push_back(k + "=" + std::to_string(v));
  out.insert(out.end(), details.begin(), details.end());
  return out;
}

bool Diagnostics::Any(Severity at_least) const {
  return std::any_of(counts.begin(), counts.end(), [&](const auto& kv) {
    return static_cast<int>(DiagnosticSeverity(kv.first)) >= static_cast<int>(at_least);
  });
}

}  // namespace rlprof::format
