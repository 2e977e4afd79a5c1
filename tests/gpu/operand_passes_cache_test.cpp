// The operand passes' cubin is kept and found like a kernel's: a kernel cache that compiles an FP32 gemm_tma
// kernel stores the passes beside it, a second cache on the same database loads both without NVRTC, and a
// stored kernel whose passes are gone gets only the passes compiled again.
#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>

#include "api_test_support.hpp"
#include "core/template_library.hpp"
#include "cuda/device.hpp"
#include "db/database.hpp"
#include "gpu_fixture.hpp"
#include "rtc/kernel_spec.hpp"
#include "rtc/operand_passes.hpp"
#include "runtime/kernel_cache.hpp"
#include "support/typed_problem.hpp"

namespace gemmforge::testing {
namespace {

class OperandPassesCache : public GpuTest {};

TEST_F(OperandPassesCache, AreStoredBesideTheKernelAndLoadedWithoutACompiler) {
  const DeviceInfo device = cuda::query_device(0);
  if (device.cc() != 90) GTEST_SKIP() << "gemm_tma runs on sm_90 only; this is " << device.arch();
  const TemplateLibrary& library = TemplateLibrary::instance();
  const KernelTemplate& tma = library.get("gemm_tma");
  ASSERT_TRUE(tma.manifest.prepares_operands());
  const KernelProblem problem = test_support::typed_problem(512, 512, 512, "nn", "f32");
  Config config;
  for (const Config& seed : tma.manifest.seeds()) {
    if (tma.manifest.violations(seed, &device, &problem).empty()) {
      config = seed;
      break;
    }
  }
  ASSERT_FALSE(config.values().empty()) << "no gemm_tma seed runs FP32";
  const rtc::KernelSpec spec = rtc::make_spec(tma, config, problem, device.arch(), &device);
  const std::string passes_key = rtc::OperandPasses::cubin_key(library, spec.arch);

  TempDatabase file;
  runtime::SharedDatabase database(db::Database::open(file.path()));
  const auto stored = [&](const std::string& key) {
    return database.with([&](db::Database& d) { return d.get_cubin(key).has_value(); });
  };
  {
    runtime::KernelCache first(library, {&database}, &database, device.ordinal, /*shipped_cubins=*/false);
    EXPECT_EQ(first.find(spec), nullptr) << "nothing stored yet, and find() never compiles";
    ASSERT_NE(first.get(spec), nullptr);
    EXPECT_EQ(first.compiles(), 1u);  // the kernel; the passes are not a GEMM kernel
  }
  EXPECT_TRUE(stored(spec.cubin_key(library)));
  EXPECT_TRUE(stored(passes_key));

  runtime::KernelCache second(library, {&database}, &database, device.ordinal, /*shipped_cubins=*/false);
  EXPECT_NE(second.find(spec), nullptr) << "the kernel and its passes come from the database";
  EXPECT_EQ(second.compiles(), 0u);
  EXPECT_EQ(second.loaded_from_database(), 1u);

  // The passes' row gone: find() gives up without a compiler, get() compiles the passes alone.
  {
    SQLite::Database connection(file.path(), SQLite::OPEN_READWRITE);
    SQLite::Statement remove(connection, "DELETE FROM cubins WHERE key = ?");
    remove.bind(1, passes_key);
    ASSERT_EQ(remove.exec(), 1);
  }
  runtime::KernelCache third(library, {&database}, &database, device.ordinal, /*shipped_cubins=*/false);
  EXPECT_EQ(third.find(spec), nullptr);
  EXPECT_NE(third.get(spec), nullptr);
  EXPECT_EQ(third.compiles(), 0u) << "the stored kernel is loaded, not compiled again";
  EXPECT_EQ(third.loaded_from_database(), 1u);
  EXPECT_TRUE(stored(passes_key));
}

}  // namespace
}  // namespace gemmforge::testing
