// TEMPORARY development harness (to be deleted).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <cstdlib>
#include "synthetic_tables.hpp"
#include "tuner/replay_evaluator.hpp"
#include "tuner/neighbourhood.hpp"
#include "tuner/model.hpp"

namespace gemmforge::tuner {
namespace {

KernelProblem P(int64_t m, int64_t n, int64_t k, const char* layout = "nn", int align = 4) {
  KernelProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  parse_layout(layout, p.a_trans, p.b_trans);
  p.align_a = p.align_b = p.align_c = align;
  return p;
}
Pins pins(std::vector<std::string> v) {
  Pins p;
  for (auto& s : v) add_pin(p, s);
  return p;
}

std::vector<synthetic::SyntheticRun> runs() {
  return {
      {P(4096, 4096, 4096),
       {{"sgemm_simt", pins({"STAGES=3", "MIN_BLOCKS=1", "BK=16", "RASTER=8", "UNROLL_K=4"})},
        {"sgemm_tf32x3", pins({"MIN_BLOCKS=1", "RASTER=8", "BK=32", "STAGES=3"})}}},
      {P(1024, 1024, 8192, "nt"),
       {{"sgemm_simt",
         pins({"STAGES=3", "MIN_BLOCKS=1", "BK=16", "UNROLL_K=4", "RASTER=1", "XPOSE_B=1", "TM=8", "TN=8"})},
        {"sgemm_tf32x3", pins({"MIN_BLOCKS=1", "BK=32", "STAGES=3", "RASTER=1"})}}},
      {P(256, 256, 16384),
       {{"sgemm_simt", pins({"STAGES=3", "MIN_BLOCKS=1", "BK=16", "UNROLL_K=4", "TM=8", "TN=8"})},
        {"sgemm_tf32x3", pins({"MIN_BLOCKS=1", "BK=32", "STAGES=3", "WM=32"})}}},
      {P(32, 4096, 4096),
       {{"sgemm_skinny", pins({"STAGES=3", "KT=4"})},
        {"sgemm_tf32x3", pins({"MIN_BLOCKS=1", "BK=32", "STAGES=3"})}}},
      {P(127, 1000, 513, "tn", 1),
       {{"sgemm_simt", pins({"STAGES=3", "MIN_BLOCKS=1", "BK=16", "UNROLL_K=4", "TM=8", "TN=8"})},
        {"sgemm_tf32x3", pins({"MIN_BLOCKS=1", "BK=32", "STAGES=3", "WN=32"})}}},
  };
}

TEST(Dev, Guided) {
  const auto& lib = TemplateLibrary::instance();
  const char* env = std::getenv("DEV_TRUTH_SEEDS");
  int truth_seeds = env ? std::atoi(env) : 3;
  const char* b = std::getenv("DEV_BATCH");
  size_t batch = b ? std::atoi(b) : 8;
  const char* st = std::getenv("DEV_STRATEGY");
  std::string strat = st ? st : "guided";
  int fails = 0, total = 0;
  std::vector<double> all_med;
  const char* tb = std::getenv("DEV_TRUTH_BASE"); int base = tb ? std::atoi(tb) : 0;
  for (int ts = base + 1; ts <= base + truth_seeds; ++ts) {
    auto doc = synthetic::synthetic_export(lib, synthetic::standard_runs(), 1000 + ts);
    auto tables = load_recorded_tables(doc, lib);
    for (auto& table : tables) {
      SearchSpace space = recorded_space(table, lib);
      ReplayEvaluator ev(table);
      double best = *ev.best_time_ms(space);
      size_t budget = space.size() / 5;
      std::vector<double> ratios;
      std::vector<size_t> reach;
      for (uint64_t seed = 1; seed <= 7; ++seed) {
        auto s = make_strategy(strat, seed);
        auto h = search(space, *s, ev, *stop_after_evaluations(budget), batch);
        ratios.push_back(h.best()->time_ms / best);
        // evaluations to reach within 3%
        auto s2 = make_strategy(strat, seed);
        auto h2 = search(space, *s2, ev, *stop_after_evaluations(space.size()), batch);
        size_t r = 0;
        for (; r < h2.size(); ++r)
          if (h2.observations()[r].ok() && h2.observations()[r].time_ms <= 1.03 * best) break;
        reach.push_back(r + 1);
      }
      std::sort(ratios.begin(), ratios.end());
      std::sort(reach.begin(), reach.end());
      double med = ratios[3];
      all_med.push_back(med);
      total++;
      if (med > 1.03) fails++;
      fmt::print(
          "truth {} {:<45} size {:4} budget {:3} median {:.4f} worst {:.4f} reach(med) {:4} ({:.1f}%) "
          "reach-max {}\n",
          ts, table.problem.to_string(), space.size(), budget, med, ratios.back(), reach[3],
          100.0 * reach[3] / space.size(), reach.back());
    }
  }
  double sum = 0;
  for (double m : all_med) sum += m;
  fmt::print("FAILS {}/{} mean-median {:.4f}\n", fails, total, sum / all_med.size());
}

}  // namespace
}  // namespace gemmforge::tuner
namespace gemmforge::tuner {
namespace {
TEST(Dev, Debug) {
  const auto& lib = TemplateLibrary::instance();
  int ts = std::atoi(std::getenv("DEV_TRUTH"));
  int which = std::atoi(std::getenv("DEV_TABLE"));
  auto doc = synthetic::synthetic_export(lib, synthetic::standard_runs(), 1000 + ts);
  auto tables = load_recorded_tables(doc, lib);
  auto& table = tables[which];
  SearchSpace space = recorded_space(table, lib);
  ReplayEvaluator ev(table);
  // top 10 truths
  std::vector<std::pair<double, size_t>> all;
  for (size_t c = 0; c < space.size(); ++c) {
    auto o = ev.lookup(space, c);
    if (o.ok()) all.push_back({o.time_ms, c});
  }
  std::sort(all.begin(), all.end());
  for (int i = 0; i < 8; ++i)
    fmt::print("truth #{} {:.4f} {}\n", i, all[i].first, space.config(all[i].second).key());
  auto s = make_strategy("guided", 1);
  auto h = search(space, *s, ev, *stop_after_evaluations(space.size() / 5), 8);
  double best = all[0].first;
  for (auto& o : h.observations())
    fmt::print("  {:4} {} {:.4f} {}\n", o.candidate, (int)o.outcome, o.ok() ? o.time_ms / best : 0.0,
               space.config(o.candidate).key());
}
}  // namespace
}  // namespace gemmforge::tuner
namespace gemmforge::tuner {
namespace {
TEST(Dev, Cost) {
  const auto& lib = TemplateLibrary::instance();
  const DeviceInfo d = DeviceInfo::nominal("sm_90");
  KernelProblem p = P(4096,4096,4096);
  std::vector<Space> spaces;
  for (auto* t : lib.all()) spaces.push_back(Space::build(*t, d, p));
  SearchSpace s(std::move(spaces), d, p);
  auto t0 = std::chrono::steady_clock::now();
  size_t sum = 0;
  for (size_t c = 0; c < s.size(); ++c) sum += s.space(c).kernel_template().manifest.geometry(s.config(c), p).split_k;
  auto t1 = std::chrono::steady_clock::now();
  for (size_t c = 0; c < s.size(); ++c) sum += s.config(c).values().size();
  auto t2 = std::chrono::steady_clock::now();
  CandidateTable table(s);
  auto t3 = std::chrono::steady_clock::now();
  Neighbourhood nb(s, table);
  auto t4 = std::chrono::steady_clock::now();
  auto est = estimate_all(s, table);
  auto t5 = std::chrono::steady_clock::now();
  auto sec=[](auto a, auto b){return std::chrono::duration<double>(b-a).count();};
  fmt::print("size {} geometry+config {:.3f} config {:.3f} table {:.3f} neighbourhood {:.3f} estimates {:.3f} {}\n", s.size(), sec(t0,t1), sec(t1,t2), sec(t2,t3), sec(t3,t4), sec(t4,t5), sum);
}
}
}
