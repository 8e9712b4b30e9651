#include "src/runtime/identity.h"

#include <map>

#include <gtest/gtest.h>

namespace rlprof::runtime {
namespace {

struct FakeEnv {
  std::map<std::string, std::string> vars;
  EnvLookup lookup() const {
    return [this](const char* k) -> const char* {
      auto it = vars.find(k);
      return it == vars.end() ? nullptr : it->second.c_str();
    };
  }
};

TEST(IdentityTest, DefaultsToRankZeroOfOneWithHostAndPid) {
  FakeEnv env;
  Identity id = ResolveIdentity({}, env.lookup());
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.local_rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_EQ(id.source, "default");
  EXPECT_EQ(id.pid, getpid());
  EXPECT_FALSE(id.host.empty());
  EXPECT_TRUE(id.roles.empty());
  EXPECT_FALSE(id.replica.has_value());
}

TEST(IdentityTest, ReadsTorchrunVariables) {
  FakeEnv env{{{"RANK", "5"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}}};
  Identity id = ResolveIdentity({}, env.lookup());
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.local_rank, 1);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.source, "torchrun");
}

TEST(IdentityTest, ReadsOpenMpiPmiAndSlurmVariables) {
  FakeEnv ompi{{{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"},
                {"OMPI_COMM_WORLD_SIZE", "4"}}};
  Identity a = ResolveIdentity({}, ompi.lookup());
  EXPECT_EQ(a.rank, 3);
  EXPECT_EQ(a.world_size, 4);
  EXPECT_EQ(a.source, "openmpi");

  FakeEnv pmi{{{"PMI_RANK", "2"}, {"PMI_SIZE", "16"}}};
  Identity b = ResolveIdentity({}, pmi.lookup());
  EXPECT_EQ(b.rank, 2);
  EXPECT_EQ(b.local_rank, 2);  // no MPI_LOCALRANKID: falls back to the rank
  EXPECT_EQ(b.world_size, 16);
  EXPECT_EQ(b.source, "pmi");

  FakeEnv slurm{{{"SLURM_PROCID", "7"}, {"SLURM_LOCALID", "3"}, {"SLURM_NTASKS", "8"}}};
  Identity c = ResolveIdentity({}, slurm.lookup());
  EXPECT_EQ(c.rank, 7);
  EXPECT_EQ(c.local_rank, 3);
  EXPECT_EQ(c.world_size, 8);
  EXPECT_EQ(c.source, "slurm");
}

TEST(IdentityTest, TorchrunWinsOverSlurmUnderTheSameJob) {
  FakeEnv env{{{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"RANK", "6"}, {"WORLD_SIZE", "8"}}};
  Identity id = ResolveIdentity({}, env.lookup());
  EXPECT_EQ(id.rank, 6);
  EXPECT_EQ(id.source, "torchrun");
}

TEST(IdentityTest, ExplicitOptionsWinOverTheEnvironment) {
  FakeEnv env{{{"RANK", "6"}, {"WORLD_SIZE", "8"}, {"RLPROF_ROLES", "rollout"}}};
  SessionOptions o;
  o.rank = 2;
  o.roles = std::vector<std::string>{"actor", "ref"};
  o.replica = 1;
  Identity id = ResolveIdentity(o, env.lookup());
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_EQ(id.source, "explicit");
  EXPECT_EQ(id.roles, (std::vector<std::string>{"actor", "ref"}));
  EXPECT_EQ(id.replica, 1);
}

TEST(IdentityTest, RolesAndReplicaComeFromRlprofVariables) {
  FakeEnv env{{{"RLPROF_ROLES", " actor, rollout ,,ref"}, {"RLPROF_REPLICA", "3"}}};
  Identity id = ResolveIdentity({}, env.lookup());
  EXPECT_EQ(id.roles, (std::vector<std::string>{"actor", "rollout", "ref"}));
  EXPECT_EQ(id.replica, 3);
}

TEST(IdentityTest, InvalidValuesAreIgnoredWithAWarning) {
  FakeEnv env{{{"RANK", "two"}, {"SLURM_PROCID", "4"}, {"SLURM_NTASKS", "-1"}}};
  Identity id = ResolveIdentity({}, env.lookup());
  EXPECT_EQ(id.rank, 4);  // RANK unusable: the next launcher decides
  EXPECT_EQ(id.source, "slurm");
  EXPECT_EQ(id.world_size, 5);  // SLURM_NTASKS invalid: at least rank + 1
  ASSERT_EQ(id.warnings.size(), 2u);
  EXPECT_NE(id.warnings[0].find("RANK=two"), std::string::npos);
  EXPECT_NE(id.warnings[1].find("SLURM_NTASKS=-1"), std::string::npos);
}

TEST(IdentityTest, WorldSizeNotAboveRankIsRaised) {
  FakeEnv env{{{"RANK", "4"}, {"WORLD_SIZE", "2"}}};
  Identity id = ResolveIdentity({}, env.lookup());
  EXPECT_EQ(id.world_size, 5);
  EXPECT_EQ(id.warnings.size(), 1u);
}

TEST(RunIdTest, ComesFromTheArgumentThenTheEnvironmentThenTheClock) {
  FakeEnv env{{{"RLPROF_RUN_ID", "shared/run 1"}}};
  EXPECT_EQ(MakeRunId("given", env.lookup()), "given");
  EXPECT_EQ(MakeRunId("", env.lookup()), "shared-run-1");
  FakeEnv none;
  const std::string id = MakeRunId("", none.lookup());
  // YYYYmmdd-HHMMSS-xxxxxx
  ASSERT_EQ(id.size(), 22u) << id;
  EXPECT_EQ(id[8], '-');
  EXPECT_EQ(id[15], '-');
  EXPECT_NE(MakeRunId("", none.lookup()), id.substr(0, 16) + "zzzzzz");
}

}  // namespace
}  // namespace rlprof::runtime
