// NVRTC without a GPU: a spread of valid configs of every template (small and large tiles, every vector
// width, the manifest's seeds) compiles to cubins for sm_80 and sm_90 with its resource usage read from
// ptxas' report; a compile error comes back as a value carrying the log and the options.
#include "rtc/compiler.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include "core/dtype.hpp"
#include "core/eligibility.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "rtc/compile_pool.hpp"
#include "rtc/kernel_spec.hpp"
#include "rtc/utility_kernels.hpp"
#include "search_fixtures.hpp"
#include "support/sass.hpp"
#include "support/scoped_env.hpp"

namespace gemmforge::rtc {
namespace {

struct Case {
  std::string arch;
  KernelSpec spec;
};

// Seeds of every template, the first with every vector width its manifest allows, and the SIMT template's
// smallest and largest block tiles, kept where valid on a nominal device of the architecture; one case per
// cubin.
std::vector<Case> spread(const std::string& arch) {
  const DeviceInfo device = DeviceInfo::nominal(arch);
  const TemplateLibrary& library = TemplateLibrary::instance();
  std::vector<Case> cases;
  std::set<std::string> keys;
  auto add = [&](const KernelTemplate& t, const Config& config, const KernelProblem& problem) {
    // Templates written for another architecture (gemm_wgmma, gemm_tma on sm_80) are not in its spread.
    if (!can_serve(t, problem, device.cc()) || !t.manifest.violations(config, &device, &problem).empty())
      return;
    KernelSpec spec = make_spec(t, config, problem, arch, &device);
    if (keys.insert(spec.cubin_key(library)).second) cases.push_back({arch, std::move(spec)});
  };
  for (const KernelTemplate* t : library.all()) {
    const Manifest& m = t->manifest;
    // Skinny templates are meant for few rows; the others for a square problem. Both aligned (16 bytes), of
    // the template's first type.
    for (KernelProblem problem :
         {tuner::testing::problem(1000, 1000, 1000), tuner::testing::problem(8, 4096, 4096)}) {
      parse_type_name(m.default_type_name(), problem.dtype, problem.c_dtype);
      problem.align_a = problem.align_b = 16 / element_bytes(problem.dtype);
      problem.align_c = 16 / element_bytes(problem.c_dtype);
      for (const Config& seed : m.seeds()) add(*t, seed, problem);
      for (const char* vector : {"VEC_A", "VEC_B"}) {
        const Parameter* p = m.find_parameter(vector);
        if (p == nullptr) continue;
        for (int64_t width : p->values) {
          Config c = m.seeds().front();
          c.set(vector, width);
          add(*t, c, problem);
        }
      }
    }
  }
  // Tiles at both ends of the SIMT template's range.
  const KernelTemplate& simt = library.get("sgemm_simt");
  const KernelProblem square = tuner::testing::problem(1000, 1000, 1000);
  add(simt,
      Config::parse_key("sgemm_simt",
                        "BM=16,BN=32,BK=8,WM=16,WN=32,TM=4,TN=4,STAGES=2,VEC_A=1,VEC_B=2,XPOSE_A=0,XPOSE_B=0,"
                        "UNROLL_K=2,MIN_BLOCKS=2,SPLIT_K=1,RASTER=1"),
      square);
  add(simt,
      Config::parse_key(
          "sgemm_simt",
          "BM=256,BN=128,BK=16,WM=64,WN=64,TM=8,TN=16,STAGES=3,VEC_A=4,VEC_B=4,XPOSE_A=1,XPOSE_B=0,"
          "UNROLL_K=4,MIN_BLOCKS=1,SPLIT_K=1,RASTER=8"),
      square);
  return cases;
}

TEST(Nvrtc, ASpreadOfConfigsCompilesForSm80AndSm90WithItsResourcesRead) {
  std::vector<Case> cases = spread("sm_80");
  for (Case& c : spread("sm_90")) cases.push_back(std::move(c));
  std::set<std::string> templates;
  std::set<int64_t> simt_vector_widths;
  std::vector<CompileRequest> requests;
  for (const Case& c : cases) {
    requests.push_back(c.spec.request(TemplateLibrary::instance()));
    const Manifest& m = c.spec.kernel_template->manifest;
    templates.insert(m.name());
    if (m.name() == "sgemm_simt") simt_vector_widths.insert(c.spec.config.at("VEC_A"));
  }
  EXPECT_EQ(templates.size(), TemplateLibrary::instance().all().size()) << "every template is in the spread";
  EXPECT_EQ(simt_vector_widths, (std::set<int64_t>{1, 2, 4}));
  ASSERT_GE(cases.size(), 16u);

  const std::vector<CompileResult> results = compile_all(requests);
  ASSERT_EQ(results.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const CompileResult& r = results[i];
    const std::string what = cases[i].arch + " " + cases[i].spec.config.key();
    ASSERT_TRUE(r.ok) << what << ": " << r.error << "\n" << r.log;
    EXPECT_GT(r.cubin.size(), 1000u) << what;
    // A template written for one architecture compiles for it (gemm_wgmma: sm_90a on an sm_90 device).
    const std::string& own_arch = cases[i].spec.kernel_template->manifest.arch();
    EXPECT_NE(std::find(r.options.begin(), r.options.end(),
                        "-arch=" + (own_arch.empty() ? cases[i].arch : own_arch)),
              r.options.end())
        << what;
    EXPECT_GT(r.usage.registers, 16) << what << "\n" << r.log;
    EXPECT_LE(r.usage.registers, 255) << what;
    EXPECT_GE(r.usage.spill_store_bytes, 0) << what;
    EXPECT_GE(r.usage.barriers, 1) << what << ": every template synchronizes its block";
    EXPECT_GT(r.compile_ms, 0) << what;
  }
}

TEST(Nvrtc, LaunchBoundsCapTheRegistersPtxasReports) {
  // MIN_BLOCKS=2 with 256 threads leaves 65536 / 512 = 128 registers per thread.
  const KernelTemplate& simt = TemplateLibrary::instance().get("sgemm_simt");
  const Config capped = Config::parse_key(
      "sgemm_simt",
      "BM=128,BN=128,BK=16,WM=64,WN=32,TM=8,TN=8,STAGES=2,VEC_A=4,VEC_B=4,XPOSE_A=1,XPOSE_B=0,UNROLL_K=4,"
      "MIN_BLOCKS=2,SPLIT_K=1,RASTER=1");
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const KernelSpec spec =
      make_spec(simt, capped, tuner::testing::problem(2048, 2048, 2048), "sm_90", &device);
  const CompileResult r = compile(spec.request(TemplateLibrary::instance()));
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_LE(r.usage.registers, 128) << r.log;
}

TEST(Nvrtc, ACompileErrorIsAValueWithItsLogAndOptions) {
  CompileRequest request;
  request.source = "extern \"C\" __global__ void broken(float* x) { x[0] = undeclared_name; }\n";
  request.source_name = "broken.cu";
  request.arch = "sm_90";
  request.defines = {{"BM", 64}};
  request.kernel = "broken";
  const CompileResult r = compile(request);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_NE(r.error.find("broken.cu"), std::string::npos) << r.error;
  EXPECT_NE(r.log.find("undeclared_name"), std::string::npos) << r.log;
  EXPECT_NE(std::find(r.options.begin(), r.options.end(), "-DBM=64"), r.options.end());
  try {
    r.cubin_or_throw();
    ADD_FAILURE() << "a failed compile has no cubin";
  } catch (const NvrtcError& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_name"), std::string::npos) << e.what();
  }
}

// A support module compiles once per process and architecture: the same cubin again, another for another
// architecture, and a failure that throws each time it is asked for rather than being kept.
TEST(Nvrtc, ASupportModuleCompilesOncePerProcessAndArchitecture) {
  CompileRequest request;
  request.source = "extern \"C\" __global__ void once(float* x) { x[0] = 1.0f; }\n";
  request.source_name = "compile_once_test.cu";
  request.kernel = "once";
  request.arch = "sm_80";
  const std::vector<char>& first = compile_once_per_process(request);
  EXPECT_FALSE(first.empty());
  EXPECT_EQ(&compile_once_per_process(request), &first);
  request.arch = "sm_90";
  const std::vector<char>& other = compile_once_per_process(request);
  EXPECT_NE(&other, &first);
  EXPECT_NE(other, first);

  CompileRequest broken = request;
  broken.source_name = "compile_once_broken.cu";
  broken.source = "extern \"C\" __global__ void once(float* x) { x[0] = undeclared_name; }\n";
  EXPECT_THROW(compile_once_per_process(broken), NvrtcError);
  EXPECT_THROW(compile_once_per_process(broken), NvrtcError);
}

// The utility module (fills, comparisons, the memory floor `bench` times) compiles for sm_80 and sm_90
// without a GPU, each of its kernels in it by name; where cuobjdump is installed, the floor reads as
// row_loads.cuh streams a run: 16 bytes at a time, past L1, L2 fetching the bytes around each.
TEST(Nvrtc, TheUtilityModuleCompilesForSm80AndSm90WithEveryKernel) {
  const std::string cuobjdump = test_support::find_cuobjdump();
  const test_support::TempFolder folder;
  for (const std::string arch : {"sm_80", "sm_90"}) {
    const std::vector<char>& cubin = utility_cubin(arch);
    const std::string image(cubin.begin(), cubin.end());
    for (const char* kernel : {"gf_fill_uniform", "gf_compare_typed", "gf_convert_floats", "gf_stream_floor"})
      EXPECT_NE(image.find(kernel), std::string::npos) << kernel << " for " << arch;
    if (cuobjdump.empty()) continue;
    const std::string sass = test_support::sass_of(cuobjdump, cubin, folder);
    const std::string floor_sass = test_support::function_sass(sass, "gf_stream_floor");
    ASSERT_FALSE(floor_sass.empty()) << arch << ":\n" << sass;
    // Past L1 (NA) with an L2 prefetch (LTC): of 256 bytes on sm_90; ptxas sets 128 for sm_80.
    const std::string load = arch == "sm_90" ? "LDG.E.NA.LTC256B.128" : "LDG.E.NA.LTC128B.128";
    EXPECT_GE(test_support::count(floor_sass, load), 8u) << arch << ":\n" << floor_sass;
  }
  if (cuobjdump.empty()) GTEST_SKIP() << "no cuobjdump on the PATH: the floor's loads went unchecked";
}

// Where a compilation's time goes: NVRTC's -time table, read back per phase (a seed of sgemm_simt spends
// most of it in the NVVM optimizer and ptxas, little in the C++ front end), and its temporary file removed.
TEST(Nvrtc, PhaseTimesComeFromNvrtcsOwnTable) {
  const PhaseTimes parsed = parse_phase_times(
      "File name, phase name, metric, unit\n"
      "gemm_tma.cu, CUDA C++ Frontend, 35, ms\n"
      "gemm_tma.cu, NVVM Optimizer, 1516, ms\n"
      "gemm_tma.cu, PTX Translation, 1369.5, ms\n"
      "gemm_tma.cu, Peak memory, 12, MB\n"
      "garbage line\n");
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0], (std::pair<std::string, double>{"CUDA C++ Frontend", 35}));
  EXPECT_EQ(parsed[2], (std::pair<std::string, double>{"PTX Translation", 1369.5}));

  const KernelTemplate& simt = TemplateLibrary::instance().get("sgemm_simt");
  const DeviceInfo device = DeviceInfo::nominal("sm_90");
  const KernelSpec spec = make_spec(simt, simt.manifest.seeds().front(),
                                    tuner::testing::problem(1024, 1024, 1024), "sm_90", &device);
  CompileRequest request = spec.request(TemplateLibrary::instance());
  request.time_phases = true;
  const CompileResult r = compile(request);
  ASSERT_TRUE(r.ok) << r.log;
  ASSERT_GE(r.phases.size(), 3u);
  double total = 0;
  for (const auto& [name, ms] : r.phases) total += ms;
  EXPECT_GT(total, 0);
  EXPECT_LE(total, r.compile_ms + 1);  // NVRTC rounds each phase to a millisecond
  const auto table = std::find_if(r.options.begin(), r.options.end(),
                                  [](const std::string& option) { return option.rfind("-time=", 0) == 0; });
  ASSERT_NE(table, r.options.end());
  EXPECT_FALSE(std::filesystem::exists(table->substr(6)));
  // Without the request, no table and no option.
  EXPECT_TRUE(compile(spec.request(TemplateLibrary::instance())).phases.empty());
  // Where no table can be written, the kernel compiles untimed.
  const CompileResult untimed = [&] {
    const test_support::ScopedEnv no_tmpdir("TMPDIR", "/nonexistent/gemmforge-test");
    return compile(request);
  }();
  EXPECT_TRUE(untimed.ok) << untimed.log;
  EXPECT_TRUE(untimed.phases.empty());
}

TEST(Nvrtc, ARequestForATemplateOnTooOldAnArchitectureIsRefused) {
  const KernelTemplate& tf32x3 = TemplateLibrary::instance().get("sgemm_tf32x3");
  EXPECT_THROW(make_spec(tf32x3, tf32x3.manifest.seeds().front(), tuner::testing::problem(64, 64, 64),
                         "sm_75", nullptr),
               InvalidArgumentError);
}

TEST(PtxasReport, ReadsTheEntryItIsAskedFor) {
  const std::string log =
      "ptxas info    : 43 bytes gmem\n"
      "ptxas info    : Compiling entry function 'other' for 'sm_90'\n"
      "ptxas info    : Function properties for other\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 1 barriers, 1024 bytes smem\n"
      "ptxas info    : Compiling entry function 'sgemm_tf32x3' for 'sm_90'\n"
      "ptxas info    : Function properties for sgemm_tf32x3\n"
      "ptxas         .     24 bytes stack frame, 24 bytes spill stores, 20 bytes spill loads\n"
      "ptxas info    : Used 128 registers, used 1 barriers, 24 bytes cumulative stack size\n";
  const ResourceUsage u = parse_ptxas_report(log, "sgemm_tf32x3");
  EXPECT_EQ(u.registers, 128);
  EXPECT_EQ(u.spill_store_bytes, 24);
  EXPECT_EQ(u.spill_load_bytes, 20);
  EXPECT_EQ(u.stack_bytes, 24);
  EXPECT_EQ(u.barriers, 1);
  EXPECT_EQ(u.static_smem_bytes, 0);
  EXPECT_TRUE(u.spills());
  const ResourceUsage other = parse_ptxas_report(log, "other");
  EXPECT_EQ(other.registers, 40);
  EXPECT_EQ(other.static_smem_bytes, 1024);
  EXPECT_FALSE(other.spills());
  EXPECT_EQ(parse_ptxas_report(log, "missing").registers, -1);
}

}  // namespace
}  // namespace gemmforge::rtc

namespace gemmforge::rtc {
namespace {

TEST(CompileThreads, HardwareThreadsSharingACoreCountOnce) {
  // Two cores with two hardware threads each (CPUs 0 and 2 share a core, 1 and 3 the other), and a core
  // of its own.
  EXPECT_EQ(count_cores({"0,2", "1,3", "0,2", "1,3"}), 2u);
  EXPECT_EQ(count_cores({"0-1", "0-1", "2"}), 2u);
  EXPECT_EQ(count_cores({}), 1u);
  const unsigned threads = default_compile_threads();
  EXPECT_GE(threads, 1u);
  EXPECT_LE(threads, std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace
}  // namespace gemmforge::rtc
