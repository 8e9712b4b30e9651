#include "src/runtime/identity.h"

#include <time.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <random>

#include "src/base/strings.h"

namespace rlprof::runtime {
namespace {

struct Launcher {
  const char* name;
  const char* rank;
  const char* local_rank;
  const char* world_size;
};

constexpr Launcher kLaunchers[] = {
    {"torchrun", "RANK", "LOCAL_RANK", "WORLD_SIZE"},
    {"openmpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"pmi", "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE"},
    {"slurm", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS"},
};

// The integer in env[key] (>= min_value), or nullopt when unset / empty / invalid.
std::optional<int64_t> EnvInt(const EnvLookup& env, const char* key, int64_t min_value,
                              std::vector<std::string>* warnings) {
  const char* v = env(key);
  if (v == nullptr || *v == '\0') return std::nullopt;
  std::string_view s = base::Trim(v);
  int64_t out = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || ptr != s.data() + s.size() || out < min_value) {
    warnings->push_back(std::string(key) + "=" + v + " is not a valid value; ignored");
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "unknown";
  return buf;
}

Identity ResolveIdentity(const SessionOptions& options, const EnvLookup& env) {
  Identity id;
  id.host = HostName();
  id.pid = getpid();
  std::optional<int64_t> rank, local, world;
  for (const Launcher& l : kLaunchers) {
    std::optional<int64_t> r = EnvInt(env, l.rank, 0, &id.warnings);
    if (!r) continue;
    rank = r;
    local = EnvInt(env, l.local_rank, 0, &id.warnings);
    world = EnvInt(env, l.world_size, 1, &id.warnings);
    id.source = l.name;
    break;
  }
  if (options.rank) {
    rank = options.rank;
    id.source = "explicit";
  }
  if (options.local_rank) local = options.local_rank;
  if (options.world_size) world = options.world_size;
  id.rank = rank.value_or(0);
  id.local_rank = local.value_or(id.rank);
  id.world_size = world.value_or(std::max<int64_t>(1, id.rank + 1));
  if (id.world_size <= id.rank) {
    id.warnings.push_back("world size " + std::to_string(id.world_size) + " <= rank " +
                          std::to_string(id.rank) + "; using rank + 1");
    id.world_size = id.rank + 1;
  }
  if (options.roles) {
    id.roles = *options.roles;
  } else if (const char* r = env("RLPROF_ROLES"); r != nullptr) {
    for (const std::string& part : base::Split(r, ',')) {
      std::string role(base::Trim(part));
      if (!role.empty()) id.roles.push_back(role);
    }
  }
  if (options.replica) id.replica = options.replica;
  else id.replica = EnvInt(env, "RLPROF_REPLICA", 0, &id.warnings);
  return id;
}

std::string MakeRunId(const std::string& given, const EnvLookup& env) {
  if (!given.empty()) return base::SanitizeForPath(given);
  if (const char* v = env("RLPROF_RUN_ID"); v != nullptr && *v != '\0')
    return base::SanitizeForPath(v);
  const time_t now = time(nullptr);
  tm t{};
  gmtime_r(&now, &t);
  char stamp[32];
  strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &t);
  std::random_device rd;
  char hex[8];
  snprintf(hex, sizeof hex, "%06x", static_cast<unsigned>(rd() & 0xFFFFFF));
  return std::string(stamp) + "-" + hex;
}

}  // namespace rlprof::runtime
