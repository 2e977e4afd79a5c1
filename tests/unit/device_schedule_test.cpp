// Who tunes what on a host with several GPUs: each problem once per GPU model, the costliest first,
// idle GPUs helping the running problem with the fewest GPUs, every model tuning every problem.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "tuner/device_schedule.hpp"

namespace gemmforge::tuner {
namespace {

using Kind = DeviceSchedule::Work::Kind;

TEST(DeviceSchedule, GpusOfOneModelShareTheProblemsCostliestFirst) {
  DeviceSchedule schedule({"H200", "H200"}, {1, 5, 3});
  const auto a = schedule.next(0);
  const auto b = schedule.next(1);
  ASSERT_EQ(a.kind, Kind::kOwn);
  ASSERT_EQ(b.kind, Kind::kOwn);
  EXPECT_EQ(a.problem, 1u);  // cost 5
  EXPECT_EQ(b.problem, 2u);  // cost 3
  EXPECT_EQ(schedule.upcoming("H200", 5), std::vector<size_t>{0});
  schedule.finished(1, 2);
  const auto c = schedule.next(1);
  ASSERT_EQ(c.kind, Kind::kOwn);
  EXPECT_EQ(c.problem, 0u);
  schedule.finished(1, 0);
  // Nothing left to start: GPU 1 helps GPU 0 with its problem.
  const auto d = schedule.next(1);
  ASSERT_EQ(d.kind, Kind::kHelp);
  EXPECT_EQ(d.problem, 1u);
  EXPECT_EQ(schedule.lanes_on("H200", 1), (std::vector<size_t>{0, 1}));
  schedule.finished(0, 1);
  schedule.helped(1, 1);
  EXPECT_TRUE(schedule.all_done());
  EXPECT_EQ(schedule.next(0).kind, Kind::kDone);
  EXPECT_EQ(schedule.next(1).kind, Kind::kDone);
}

TEST(DeviceSchedule, EachModelTunesEveryProblemForItself) {
  DeviceSchedule schedule({"H100", "H200", "H100"}, {1, 1, 1, 1});
  EXPECT_EQ(schedule.models(), (std::vector<std::string>{"H100", "H200"}));
  EXPECT_EQ(schedule.lanes_of("H100"), (std::vector<size_t>{0, 2}));
  std::map<std::string, std::multiset<size_t>> tuned;
  const std::vector<std::string> model = {"H100", "H200", "H100"};
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t lane = 0; lane < 3; ++lane) {
      const auto w = schedule.next(lane);
      if (w.kind == Kind::kOwn) {
        tuned[model[lane]].insert(w.problem);
        schedule.finished(lane, w.problem);
        progress = true;
      }
    }
  }
  EXPECT_EQ(tuned["H100"], (std::multiset<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(tuned["H200"], (std::multiset<size_t>{0, 1, 2, 3}));
  EXPECT_TRUE(schedule.all_done());
}

TEST(DeviceSchedule, ASingleProblemGetsEveryGpuOfItsModel) {
  DeviceSchedule schedule({"H200", "H200", "H200", "H200"}, {10});
  EXPECT_EQ(schedule.next(0).kind, Kind::kOwn);
  for (size_t lane = 1; lane < 4; ++lane) {
    const auto w = schedule.next(lane);
    EXPECT_EQ(w.kind, Kind::kHelp);
    EXPECT_EQ(w.problem, 0u);
  }
  EXPECT_EQ(schedule.lanes_on("H200", 0).size(), 4u);
}

TEST(DeviceSchedule, HelpGoesWhereTheFewestGpusWork) {
  DeviceSchedule schedule({"A", "A", "A", "A"}, {4, 3, 1});
  EXPECT_EQ(schedule.next(0).problem, 0u);
  EXPECT_EQ(schedule.next(1).problem, 1u);
  EXPECT_EQ(schedule.next(2).problem, 2u);
  schedule.finished(2, 2);
  const auto first = schedule.next(2);  // problems 0 and 1 run alone: the costlier one gets help
  EXPECT_EQ(first.kind, Kind::kHelp);
  EXPECT_EQ(first.problem, 0u);
  const auto second = schedule.next(3);  // problem 1 now has the fewest GPUs
  EXPECT_EQ(second.kind, Kind::kHelp);
  EXPECT_EQ(second.problem, 1u);
}

TEST(DeviceSchedule, LanesOfOneGpuSearchApartAndHelpOnlyOtherGpus) {
  // GPU 7 runs lanes 0 and 1, GPU 9 lane 2.
  DeviceSchedule schedule({"A", "A", "A"}, {5, 4, 3, 2}, {7, 7, 9});
  EXPECT_EQ(schedule.next(0).problem, 0u);
  EXPECT_EQ(schedule.next(1).problem, 1u);
  EXPECT_EQ(schedule.next(2).problem, 2u);
  schedule.finished(1, 1);
  EXPECT_EQ(schedule.next(1).problem, 3u);
  schedule.finished(1, 3);
  // Problems 0 (lane 0, the same GPU) and 2 (lane 2, GPU 9) run: lane 1 helps only on GPU 9's.
  const auto help = schedule.next(1);
  ASSERT_EQ(help.kind, Kind::kHelp);
  EXPECT_EQ(help.problem, 2u);
  schedule.finished(2, 2);
  schedule.helped(1, 2);
  // Problem 0 is left, on lane 1's own GPU: nothing to do. Lane 2 helps it from GPU 9.
  EXPECT_EQ(schedule.next(1).kind, Kind::kDone);
  const auto other = schedule.next(2);
  ASSERT_EQ(other.kind, Kind::kHelp);
  EXPECT_EQ(other.problem, 0u);
  EXPECT_EQ(schedule.lanes_on("A", 0), (std::vector<size_t>{0, 2}));
}

}  // namespace
}  // namespace gemmforge::tuner
