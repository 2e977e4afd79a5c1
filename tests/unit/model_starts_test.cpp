// The first candidates of a tune: the serving model's ranking for a problem nobody tuned, each of them a
// candidate of the tuner's own search space.
#include <gtest/gtest.h>

#include "db/database.hpp"
#include "runtime/model_starts.hpp"
#include "runtime/serving_model.hpp"
#include "runtime/shipped_results.hpp"
#include "runtime_test_support.hpp"
#include "support/temp_folder.hpp"
#include "support/typed_problem.hpp"
#include "tuner/tuner.hpp"

namespace gemmforge::testing {
namespace {

TEST(ModelStarts, AreTheServingModelsRankingAndLieInTheTunersSearchSpace) {
  TempFolder folder;
  const std::string path = folder.file("user.db");
  { db::Database::open(path); }  // empty: the shipped results rank alone
  const TemplateLibrary& library = TemplateLibrary::instance();
  const DeviceInfo h100 = model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-11111111-aaaa");
  const auto first = runtime::model_first_candidates(library, path, 6);
  const auto fitted_ahead = runtime::model_first_candidates(library, path, 6, {h100});
  const runtime::ServingModel serving(library, h100, {&runtime::shipped_source()});
  // In no shapes file: an FP32 output of two tiles with a long K, and a BF16 layer with an odd N.
  for (const KernelProblem& p : {test_support::typed_problem(100, 200, 30000, "nt", "f32"),
                                 test_support::typed_problem(640, 30011, 2048, "nt", "bf16")}) {
    const std::vector<Config> configs = first(h100, p);
    const std::vector<model::Candidate> ranked = serving.portfolio.rank(serving.kernels, p);
    ASSERT_EQ(configs.size(), 6u) << p.to_string();
    EXPECT_EQ(fitted_ahead(h100, p), configs) << p.to_string();
    const tuner::SearchSpace space = tuner::build_search_space(library, h100, p, {}, {});
    for (size_t i = 0; i < configs.size(); ++i) {
      EXPECT_EQ(configs[i], ranked[i].config) << p.to_string() << ": rank " << i;
      EXPECT_GE(space.find(configs[i]), 0)
          << p.to_string() << ": " << configs[i].template_name() << " " << configs[i].key();
    }
  }
}

TEST(ModelStarts, ANamedDatabaseThatDoesNotExistIsAnErrorOnTheFirstCall) {
  TempFolder folder;
  const auto first = runtime::model_first_candidates(TemplateLibrary::instance(), folder.file("none.db"), 4);
  EXPECT_THROW(first(model("NVIDIA H100 80GB HBM3", "sm_90", "GPU-1"), problem(64, 64, 4096)), NotFoundError);
}

}  // namespace
}  // namespace gemmforge::testing
