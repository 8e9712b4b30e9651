// InputResult ⇄ CBOR. Every field of TraceAnalysis is listed once below: a field added to a
// result struct and not here fails input_codec_test (it compares every table and summary.json
// of a run assembled from decoded results with the local run's).
#include "src/analysis/run/input_codec.h"

#include <cstdint>
#include <exception>
#include <vector>

#include <nlohmann/json.hpp>


namespace rlprof::format {
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Diagnostics, counts, details)
}  // namespace rlprof::format

namespace rlprof::analysis {

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepWindow, step, host_start, host_end, start, end, whole_trace, partial,
                                   partial_reason, launches)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MaskHistogram, time, window_start, window_end, first_active, last_active)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Atoms, compute_only, comm_only, overlap, memory_only, other_only, idle)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StepResult, window, hist, atoms, recv_sum, preparing, kernels, overflow)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(GroupComm, step, group, ops, comm, comm_not_overlapped)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CollectiveRow, name, group, start, end, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(StageResult, step, role, name, start, end, duration, atoms, recv_sum)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HtaBreakdown, kernel_time, idle, compute, non_compute, comm, overlap)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(IdleBreakdownRow, stream, host_wait, kernel_wait, other)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TraceLensTimeline, total, computation, exposed_comm, exposed_memcpy, busy,
                                   idle, total_comm, total_memcpy)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OpStat, name, shapes, count, total, self, min, max, p50, p99, mean,
                                   device_total, kernels)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelRow, step, name, cls, stream, start, dur, wait)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ClassTotal, count, total)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ModuleRow, path, cls, depth, calls, total, self, ops, op_time)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MemoryPeakRow, step, role, stage, series, at_start, peak, at_end,
                                   allocations, allocated)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(OutOfMemoryRow, ts, device, bytes, op, snapshot, step, role, stage)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(FrameRow, frame, ops, total, top_op, top_op_time)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(KernelTypeRow, kernel_type, time)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TbStepRow, step, kernel, memcpy, memset, communication, runtime, dataloader,
                                   cpu_exec, other, total)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AsyncSegment, start, end, kind, cause)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AsyncFact, at, value)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(AsyncBreakdown, present, window, sync, sync_other, wait, busy, other, syncs,
                                   transfer_bytes, version_first, version_last, generated, tokens, consumed,
                                   staleness_mean, staleness_max, queue_samples, queue_depth_mean, queue_depth_max,
                                   segments, published, generated_at, consumed_at, trained_at, sync_bytes_at,
                                   sync_stages)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SampleSpan, phase, label, start, end)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SampleRecord, id, group, finish_reason, submit, queued, scheduled, first_token,
                                   last_token, end, prompt_tokens, completion_tokens, cached_tokens, preemptions,
                                   version_first, version_last, replica, step, spans)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SampleUse, id, outcome, at, step, version)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TraceAnalysis, source, format, rank, host, role, pid, cpu_only, ops_sampling,
                                   step_is_capture_window,
                                   stage_is_capture_window, steps, stages, comm_by_group, collectives, hta, kernel_types,
                                   idle_breakdown, tracelens, host_ops, host_ops_by_shape, kernels,
                                   kernel_rows, classes, modules, memory_peaks, out_of_memory, ops_by_frame, tb_steps, async, samples,
                                   sample_uses, wall_offset_ns, diagnostics)

namespace {

std::string ToCbor(const nlohmann::json& j) {
  std::vector<std::uint8_t> v = nlohmann::json::to_cbor(j);
  return std::string(v.begin(), v.end());
}

base::StatusOr<nlohmann::json> FromCbor(std::string_view bytes, const char* what) {
  nlohmann::json j = nlohmann::json::from_cbor(bytes.begin(), bytes.end(), /*strict=*/true,
                                               /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return base::InvalidArgument(std::string(what) + ": not a CBOR document");
  const auto v = j.find("v");
  if (v == j.end() || !v->is_number_integer() || v->get<int>() != kInputCodecVersion)
    return base::InvalidArgument(std::string(what) + ": encoded by another rlprof version (format " +
                                 (v == j.end() ? std::string("?") : v->dump()) + ", this one reads " +
                                 std::to_string(kInputCodecVersion) + ")");
  return j;
}

}  // namespace

std::string EncodeInputResult(const InputResult& r) {
  nlohmann::json j{{"v", kInputCodecVersion},
                   {"input", r.input},
                   {"name", r.name},
                   {"code", static_cast<int>(r.status.code())},
                   {"message", r.status.message()}};
  if (r.status.ok()) j["analysis"] = r.analysis;
  return ToCbor(j);
}

base::StatusOr<InputResult> DecodeInputResult(std::string_view bytes) {
  RLPROF_ASSIGN_OR_RETURN(nlohmann::json j, FromCbor(bytes, "input result"));
  InputResult r;
  try {
    j.at("input").get_to(r.input);
    j.at("name").get_to(r.name);
    const int code = j.at("code").get<int>();
    if (code < 0 || code > static_cast<int>(base::StatusCode::kUnimplemented))
      return base::InvalidArgument("input result: unknown status code " + std::to_string(code));
    if (code != 0) r.status = base::Status(static_cast<base::StatusCode>(code), j.at("message").get<std::string>());
    else j.at("analysis").get_to(r.analysis);
  } catch (const std::exception& e) {
    return base::InvalidArgument(std::string("input result: ") + e.what());
  }
  return r;
}

std::string EncodeDiagnostics(const Diagnostics& d) {
  return ToCbor(nlohmann::json{{"v", kInputCodecVersion}, {"diagnostics", d}});
}

base::StatusOr<Diagnostics> DecodeDiagnostics(std::string_view bytes) {
  RLPROF_ASSIGN_OR_RETURN(nlohmann::json j, FromCbor(bytes, "diagnostics"));
  try {
    return j.at("diagnostics").get<Diagnostics>();
  } catch (const std::exception& e) {
    return base::InvalidArgument(std::string("diagnostics: ") + e.what());
  }
}

RunAnalysis AssembleRemoteRun(std::vector<std::string> paths, const AnalysisOptions& options,
                              const std::vector<std::string>& found, const std::vector<RemoteInput>& inputs,
                              const std::vector<std::string>& missing,
                              const std::vector<std::string>& lost_searches) {
  Diagnostics run_found;
  for (const auto& n : lost_searches) run_found.Note("ray_node_lost", n + " (lost while searching)");
  for (const auto& f : found) {
    auto d = DecodeDiagnostics(f);
    if (d.ok()) run_found.Merge(*d);
    else run_found.Note("ray_bad_result", "search: " + d.status().message());
  }
  for (const auto& p : missing) run_found.Note("ray_input_missing", p + ": on no node of the cluster");
  std::vector<InputResult> results;
  results.reserve(inputs.size());
  for (const auto& in : inputs) {
    InputResult r;
    if (in.lost.empty()) {
      auto d = DecodeInputResult(in.result);
      if (d.ok()) {
        results.push_back(std::move(*d));
        continue;
      }
      run_found.Note("ray_bad_result", in.input + ": " + d.status().message());
      r.status = base::DataLoss("its result could not be decoded: " + d.status().message());
    } else {
      run_found.Note("ray_node_lost", in.input + ": " + in.lost);
      r.status = base::DataLoss("lost: " + in.lost);
    }
    r.input = in.input;
    r.name = in.name;
    results.push_back(std::move(r));
  }
  return AssembleRun(std::move(paths), options, std::move(run_found), std::move(results));
}

}  // namespace rlprof::analysis
