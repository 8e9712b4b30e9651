// Who this process is: rank, local rank, world size, host, pid, roles, replica — from
// explicit options, else from the launcher's environment, else rank 0 of 1.
//
//   Identity id = ResolveIdentity(options, [](const char* k) { return std::getenv(k); });
//
// Launchers, in order of precedence (the first that sets a rank wins):
//   torchrun   RANK, LOCAL_RANK, WORLD_SIZE
//   Open MPI   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_SIZE
//   PMI        PMI_RANK, PMI_SIZE (MPICH, Intel MPI; local rank from MPI_LOCALRANKID)
//   Slurm      SLURM_PROCID, SLURM_LOCALID, SLURM_NTASKS
// Roles come from RLPROF_ROLES (comma list) and the replica from RLPROF_REPLICA when the
// options do not set them. Unparsable values are ignored and reported in `warnings`.
// Thread-safety: pure function (the lookup must be safe to call).
#ifndef RLPROF_SRC_RUNTIME_IDENTITY_H_
#define RLPROF_SRC_RUNTIME_IDENTITY_H_

#include <functional>
#include <string>

#include "rlprof/rlprof.hpp"

namespace rlprof::runtime {

using EnvLookup = std::function<const char*(const char*)>;

Identity ResolveIdentity(const SessionOptions& options, const EnvLookup& env);
// gethostname(), or "unknown".
std::string HostName();
// RLPROF_RUN_ID when set (sanitised for paths), else "YYYYmmdd-HHMMSS-xxxxxx" (UTC + random).
std::string MakeRunId(const std::string& given, const EnvLookup& env);

}  // namespace rlprof::runtime

#endif  // RLPROF_SRC_RUNTIME_IDENTITY_H_
