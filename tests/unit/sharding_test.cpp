// Many hosts: each rank finds its rank in the launcher's environment, takes a deterministic share of the
// problems and writes its own database; pooled afterwards, the ranks' results are the same whatever the
// order they are merged in, and the same as one process tuning everything. The end-to-end test runs
// several gemmforge processes at once, each replaying synthetic tables instead of a GPU.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "db/database.hpp"
#include "gemmforge/error.hpp"
#include "search_fixtures.hpp"
#include "support/tuner_fixtures.hpp"
#include "synthetic_tables.hpp"
#include "tuner/launcher.hpp"

namespace gemmforge::tuner {
namespace {

std::function<const char*(const char*)> environment(std::map<std::string, std::string> values) {
  auto shared = std::make_shared<std::map<std::string, std::string>>(std::move(values));
  return [shared](const char* name) -> const char* {
    auto it = shared->find(name);
    return it == shared->end() ? nullptr : it->second.c_str();
  };
}

TEST(RankFromEnvironment, ReadsSlurmThenOpenMpiThenPmi) {
  const RankInfo slurm = rank_from_environment(
      environment({{"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "8"}, {"PMI_RANK", "1"}, {"PMI_SIZE", "2"}}));
  EXPECT_EQ(slurm.rank, 3);
  EXPECT_EQ(slurm.size, 8);
  EXPECT_EQ(slurm.source, "SLURM");
  const RankInfo ompi =
      rank_from_environment(environment({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "4"}}));
  EXPECT_EQ(ompi.rank, 1);
  EXPECT_EQ(ompi.size, 4);
  EXPECT_EQ(ompi.source, "Open MPI");
  const RankInfo pmi = rank_from_environment(environment({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}}));
  EXPECT_EQ(pmi.size, 2);
  EXPECT_EQ(pmi.source, "PMI");
  const RankInfo alone = rank_from_environment(environment({{"SLURM_PROCID", "0"}}));  // no SLURM_NTASKS
  EXPECT_EQ(alone.rank, 0);
  EXPECT_EQ(alone.size, 1);
}

TEST(RankFromEnvironment, RefusesWhatIsNotARankOfTheWorld) {
  EXPECT_THROW(rank_from_environment(environment({{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}})),
               InvalidArgumentError);
  EXPECT_THROW(rank_from_environment(environment({{"PMI_RANK", "2"}, {"PMI_SIZE", "2"}})),
               InvalidArgumentError);
  EXPECT_THROW(parse_rank("3"), InvalidArgumentError);
  EXPECT_THROW(parse_rank("4/4"), InvalidArgumentError);
  EXPECT_EQ(parse_rank("1/4").rank, 1);
}

TEST(ShardProblems, EveryProblemGoesToOneRankWhateverTheOrder) {
  std::vector<KernelProblem> problems;
  for (int i = 1; i <= 23; ++i)
    problems.push_back(testing::problem(64 * i, 512 + 32 * (i % 5), 256 * (1 + i % 3)));
  problems.push_back(problems[4]);  // named twice: tuned once
  std::vector<KernelProblem> reversed(problems.rbegin(), problems.rend());
  for (int size : {1, 2, 3, 7}) {
    std::map<std::string, int> owner;
    double most = 0, least = 1e300;
    for (int rank = 0; rank < size; ++rank) {
      const std::vector<KernelProblem> share = shard_problems(problems, rank, size);
      std::vector<std::string> a, b;
      for (const KernelProblem& p : share) a.push_back(p.to_string());
      for (const KernelProblem& p : shard_problems(reversed, rank, size)) b.push_back(p.to_string());
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      EXPECT_EQ(a, b) << "the share depends on the order of the list";
      double work = 0;
      for (const KernelProblem& p : share) {
        EXPECT_TRUE(owner.emplace(p.to_string(), rank).second) << p.to_string() << " went to two ranks";
        work += p.flops();
      }
      most = std::max(most, work);
      least = std::min(least, work);
    }
    EXPECT_EQ(owner.size(), 23u) << size << " ranks";
    if (size <= 3) EXPECT_LT(most, 1.5 * least) << "shares of " << size << " ranks are unbalanced";
  }
}

TEST(RankDatabasePath, EachRankWritesItsOwnFile) {
  EXPECT_EQ(rank_database_path("/x/tune.db", RankInfo{}), "/x/tune.db");
  EXPECT_EQ(rank_database_path("/x/tune.db", RankInfo{3, 8, "SLURM"}), "/x/tune.rank3-of-8.db");
  EXPECT_EQ(rank_database_path("/x/r{rank}/tune-{size}.db", RankInfo{3, 8, "SLURM"}), "/x/r3/tune-8.db");
}

// ---------------------------------------------------------------------------------------------------------
// Several processes, each a rank replaying the same synthetic GPU.

struct Ran {
  int status = -1;
  std::string out;
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

class ShardedTuning : public ::testing::Test {
 protected:
  void SetUp() override {
    const nlohmann::json document =
        synthetic::synthetic_export(TemplateLibrary::instance(), synthetic::standard_runs(), 11);
    std::ofstream(folder_.file("gpu.json")) << document.dump();
  }

  std::string tool() const { return std::string(GEMMFORGE_BINARY_DIR) + "/bin/gemmforge"; }

  Ran run(const std::string& arguments, const std::string& environment = "") const {
    const std::string out = folder_.file("out-" + std::to_string(counter_++));
    const int raw =
        std::system((environment + " " + tool() + " " + arguments + " > '" + out + "' 2>&1").c_str());
    return Ran{WIFEXITED(raw) ? WEXITSTATUS(raw) : -1, slurp(out)};
  }

  // Starts every rank at once and waits for them all.
  void run_ranks(int size, const std::string& db, bool from_environment) const {
    std::string script;
    for (int rank = 0; rank < size; ++rank) {
      const std::string rank_option =
          from_environment ? "" : " --rank " + std::to_string(rank) + "/" + std::to_string(size);
      const std::string env = from_environment ? "SLURM_PROCID=" + std::to_string(rank) +
                                                     " SLURM_NTASKS=" + std::to_string(size) + " "
                                               : "";
      script += env + tool() + " tune --replay '" + folder_.file("gpu.json") +
                "' --max-evals 24 --quiet --db '" + db + "'" + rank_option + " > '" + db + ".log" +
                std::to_string(rank) + "' 2>&1 & ";
    }
    script += "wait";
    ASSERT_EQ(std::system(("bash -c \"" + script + "\"").c_str()), 0);
    for (int rank = 0; rank < size; ++rank) {
      const std::string log = slurp(db + ".log" + std::to_string(rank));
      EXPECT_NE(log.find("Rank " + std::to_string(rank) + " of " + std::to_string(size)), std::string::npos)
          << log;
    }
  }

  // What a database serves and holds, independent of row ids and insertion order.
  static std::pair<std::set<std::string>, std::set<std::string>> contents(const std::string& path) {
    db::Database database = db::Database::open(path);
    std::set<std::string> best, trials;
    for (const db::DeviceRecord& device : database.devices()) {
      for (const db::TrialRecord& t : database.best_for_device(device.id)) {
        best.insert(device.info.uuid + " " + t.problem.to_string() + " " + t.template_name + " " +
                    t.config_key + " " + std::to_string(t.time_median_ms.value_or(-1)));
        for (const db::TrialRecord& all : database.trials(device.id, *database.find_problem(t.problem))) {
          trials.insert(t.problem.to_string() + " " + all.template_name + " " + all.config_key + " " +
                        db::to_string(all.status) + " " + std::to_string(all.time_median_ms.value_or(-1)));
        }
      }
    }
    return {best, trials};
  }

  // Pools the rank databases with gemmforge merge, in the given order.
  std::string merge(const std::vector<std::string>& databases, const std::string& name) {
    const std::string merged = folder_.file(name);
    std::string inputs;
    for (const std::string& database : databases) inputs += " '" + database + "'";
    const Ran r = run("merge" + inputs + " -o '" + merged + "'");
    EXPECT_EQ(r.status, 0) << r.out;
    return merged;
  }

  // Pools the rank databases in the given order another way: each exported with all its trials, then
  // imported.
  std::string pool(const std::vector<std::string>& databases, const std::string& name) {
    const std::string merged = folder_.file(name);
    for (const std::string& database : databases) {
      const std::string json = database + ".json";
      const Ran exported = run("export --all-trials --db '" + database + "' -o '" + json + "'");
      EXPECT_EQ(exported.status, 0) << exported.out;
      const Ran imported = run("import '" + json + "' --db '" + merged + "'");
      EXPECT_EQ(imported.status, 0) << imported.out;
    }
    return merged;
  }

  fixtures::TempFolder folder_;
  mutable int counter_ = 0;
};

TEST_F(ShardedTuning, RanksTuneEveryProblemOnceAndPoolToTheSameResultInAnyOrder) {
  // One process tuning everything: the reference.
  const Ran alone = run("tune --replay '" + folder_.file("gpu.json") + "' --max-evals 24 --quiet --db '" +
                        folder_.file("alone.db") + "'");
  ASSERT_EQ(alone.status, 0) << alone.out;
  const auto reference = contents(folder_.file("alone.db"));
  ASSERT_EQ(reference.first.size(), 5u) << "the synthetic GPU has five problems";

  // Three ranks under SLURM's variables, at the same time.
  run_ranks(3, folder_.file("rank.db"), /*from_environment=*/true);
  std::vector<std::string> ranks;
  std::map<std::string, int> tuned_by;
  for (int rank = 0; rank < 3; ++rank) {
    ranks.push_back(folder_.file("rank.rank" + std::to_string(rank) + "-of-3.db"));
    ASSERT_TRUE(std::filesystem::exists(ranks.back())) << ranks.back();
    for (const std::string& line : contents(ranks.back()).first) {
      const std::string problem = line.substr(line.find(' ') + 1);
      EXPECT_EQ(tuned_by.count(problem.substr(0, problem.find(" sgemm_"))), 0u) << "tuned twice: " << line;
      tuned_by[problem.substr(0, problem.find(" sgemm_"))] = rank;
    }
  }
  EXPECT_EQ(tuned_by.size(), 5u) << "every problem is tuned by one rank";

  const auto forward = contents(merge(ranks, "forward.db"));
  const auto backward = contents(merge({ranks[2], ranks[0], ranks[1]}, "backward.db"));
  EXPECT_EQ(forward, backward) << "the merged results depend on the order of the ranks";
  EXPECT_EQ(contents(pool({ranks[1], ranks[2], ranks[0]}, "imported.db")), forward)
      << "importing the ranks' exports pools them to other results than merge";
  EXPECT_EQ(forward.first, reference.first) << "the ranks found other bests than one process";
  EXPECT_EQ(forward.second, reference.second) << "the ranks measured other candidates than one process";
}

TEST_F(ShardedTuning, ASearchStopsOnceItStopsImprovingUnlessPatienceIsOff) {
  const std::string replay = "tune --replay '" + folder_.file("gpu.json") + "' --max-evals 0 --quiet";
  const Ran full = run(replay + " --patience 0 --db '" + folder_.file("full.db") + "'");
  ASSERT_EQ(full.status, 0) << full.out;
  const Ran patient = run(replay + " --patience 3 --db '" + folder_.file("patient.db") + "'");
  ASSERT_EQ(patient.status, 0) << patient.out;
  const size_t all = contents(folder_.file("full.db")).second.size();
  const size_t stopped = contents(folder_.file("patient.db")).second.size();
  EXPECT_LT(stopped, all) << "three evaluations without a gain stop a problem's search";
  EXPECT_GT(stopped, 0u);
}

TEST_F(ShardedTuning, PrintProblemsShowsEachRanksShareWithoutAGpu) {
  std::ofstream(folder_.file("shapes.txt"))
      << "4096 4096 4096\n1024 1024 1024 nt\n16 4096 4096\n512 512 512 tn col\n"
         "2048 2048 16384\n4096 4096 4096\n";
  std::vector<std::string> all;
  for (int rank = 0; rank < 2; ++rank) {
    const Ran r = run("tune --shapes '" + folder_.file("shapes.txt") + "' --print-problems --rank " +
                      std::to_string(rank) + "/2");
    ASSERT_EQ(r.status, 0) << r.out;
    std::istringstream lines(r.out);
    size_t count = 0;
    for (std::string line; std::getline(lines, line);) {
      all.push_back(line);
      ++count;
    }
    EXPECT_GE(count, 2u) << "rank " << rank << " of 2 got " << count << " of five problems";
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "a problem went to both ranks";
  EXPECT_EQ(all.size(), 5u) << "the problem named twice is tuned once";
}

TEST_F(ShardedTuning, ExplicitRanksMatchTheLaunchersAndARankWithoutProblemsWritesNothing) {
  run_ranks(2, folder_.file("env.db"), true);
  run_ranks(2, folder_.file("cli.db"), false);
  for (int rank = 0; rank < 2; ++rank) {
    const std::string suffix = ".rank" + std::to_string(rank) + "-of-2.db";
    EXPECT_EQ(contents(folder_.file("env" + suffix)), contents(folder_.file("cli" + suffix)));
  }
  // Seven ranks for five problems: two ranks have nothing to do and create no database.
  const Ran idle = run("tune --replay '" + folder_.file("gpu.json") + "' --quiet --rank 6/7 --db '" +
                       folder_.file("idle.db") + "'");
  EXPECT_EQ(idle.status, 0) << idle.out;
  EXPECT_NE(idle.out.find("Nothing to tune"), std::string::npos) << idle.out;
  EXPECT_FALSE(std::filesystem::exists(folder_.file("idle.rank6-of-7.db")));
}

}  // namespace
}  // namespace gemmforge::tuner
