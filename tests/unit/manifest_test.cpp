// Template manifests as the tuner, the runtime and `gemmforge space` read them: every shipped manifest
// parses and its seeds are valid, a config breaking a constraint is rejected with the constraint named,
// names and domains are checked, launch parameters stay out of the compiled kernel, the launch rule gives
// the geometry, and malformed manifests are refused with their origin.
#include "core/manifest.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/template_library.hpp"
#include "gemmforge/error.hpp"
#include "search_fixtures.hpp"

namespace gemmforge {
namespace {

const DeviceInfo kH100 = DeviceInfo::nominal("sm_90");

const Manifest& manifest_of(const std::string& name) {
  return TemplateLibrary::instance().get(name).manifest;
}

Config with(Config config, std::initializer_list<std::pair<const char*, int64_t>> changes) {
  for (const auto& [name, value] : changes) config.set(name, value);
  return config;
}

std::vector<std::string> broken_names(const Manifest& manifest, const Config& config,
                                      const KernelProblem& problem) {
  std::vector<std::string> names;
  for (const Violation& v : manifest.violations(config, &kH100, &problem))
    names.push_back(v.constraint->name);
  return names;
}

// The error message of what `f` throws, which must be an InvalidArgumentError.
template <typename F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const InvalidArgumentError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgumentError";
  return "";
}

TEST(Manifests, EveryTemplateParsesAndItsSeedsAreValidOnTheDevice) {
  const auto templates = TemplateLibrary::instance().all();
  ASSERT_GE(templates.size(), 3u);
  for (const KernelTemplate* t : templates) {
    const Manifest& m = t->manifest;
    EXPECT_FALSE(m.parameters().empty()) << m.name();
    EXPECT_FALSE(m.constraints().empty()) << m.name();
    ASSERT_FALSE(m.seeds().empty()) << m.name();
    EXPECT_GT(m.space_size(), static_cast<double>(m.seeds().size())) << m.name();
    for (const Config& seed : m.seeds()) {
      EXPECT_TRUE(m.violations(seed, &kH100).empty()) << m.name() << " seed " << seed.key();
    }
  }
}

TEST(ManifestCheck, ABrokenConstraintIsNamed) {
  const Manifest& simt = manifest_of("sgemm_simt");
  const Config seed = simt.seeds().front();
  const KernelProblem aligned = tuner::testing::problem(1024, 1024, 1024, "nn", 4);
  ASSERT_TRUE(broken_names(simt, seed, aligned).empty()) << seed.key();

  // Four-float copies of A whose rows start at odd floats.
  const KernelProblem unaligned = tuner::testing::problem(1023, 1024, 1023, "nn", 1);
  const Config wide_a = with(seed, {{"VEC_A", 4}, {"VEC_B", 1}});
  EXPECT_EQ(broken_names(simt, wide_a, unaligned), std::vector<std::string>{"vector_a_aligned"});
  const std::string message = invalid_argument_message([&] { simt.check(wide_a, &kH100, &unaligned); });
  EXPECT_NE(message.find("vector_a_aligned"), std::string::npos) << message;
  EXPECT_NE(message.find("VEC_A"), std::string::npos) << message;

  // A warp tile wider than the block tile.
  const Config wide_warp = with(seed, {{"BN", 16}, {"WN", 32}});
  const std::vector<std::string> broken = broken_names(simt, wide_warp, aligned);
  EXPECT_NE(std::find(broken.begin(), broken.end(), "warp_tile_divides_block"), broken.end());

  // More K slices than the depth holds stages.
  const KernelProblem shallow = tuner::testing::problem(64, 64, 8);
  EXPECT_EQ(broken_names(simt, with(seed, {{"SPLIT_K", 16}}), shallow),
            std::vector<std::string>{"split_k_has_work"});
}

TEST(ManifestCheck, ConstraintsNeedingADeviceOrProblemWaitForThem) {
  const Manifest& simt = manifest_of("sgemm_simt");
  const Config wide_a = with(simt.seeds().front(), {{"VEC_A", 4}});
  EXPECT_NO_THROW(simt.check(wide_a));  // alignment is a property of the problem
  const KernelProblem unaligned = tuner::testing::problem(1023, 1024, 1023, "nn", 1);
  EXPECT_THROW(simt.check(wide_a, nullptr, &unaligned), InvalidArgumentError);
}

TEST(ManifestCheck, NamesAndDomainsAreChecked) {
  const Manifest& simt = manifest_of("sgemm_simt");
  const Config seed = simt.seeds().front();
  std::string message = invalid_argument_message([&] { simt.normalize(with(seed, {{"BM", 48}})); });
  EXPECT_NE(message.find("BM"), std::string::npos) << message;
  EXPECT_NE(message.find("48"), std::string::npos) << message;

  message = invalid_argument_message(
      [&] { simt.normalize(Config::parse_key("sgemm_simt", seed.key() + ",NOT_A_PARAMETER=1")); });
  EXPECT_NE(message.find("NOT_A_PARAMETER"), std::string::npos) << message;

  const std::string without_bm = seed.key().substr(seed.key().find(',') + 1);
  message = invalid_argument_message([&] { simt.normalize(Config::parse_key("sgemm_simt", without_bm)); });
  EXPECT_NE(message.find("BM"), std::string::npos) << message;
}

TEST(ManifestDefines, LaunchParametersStayOutOfTheKernel) {
  const Manifest& tf32x3 = manifest_of("sgemm_tf32x3");
  const Config seed = tf32x3.seeds().front();
  const KernelProblem p = tuner::testing::problem(512, 512, 4096, "nt");
  const auto defines = tf32x3.defines(seed, p);
  auto value_of = [&](const std::string& name) -> std::optional<int64_t> {
    for (const auto& [n, v] : defines) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  EXPECT_EQ(value_of("BM"), seed.at("BM"));
  EXPECT_EQ(value_of("B_TRANS"), 1);  // a derived value marked define, from the problem
  EXPECT_EQ(value_of("SPLIT_K"), std::nullopt);
  EXPECT_EQ(value_of("RASTER"), std::nullopt);
  EXPECT_EQ(tf32x3.defines(with(seed, {{"SPLIT_K", 4}, {"RASTER", 1}}), p), defines);
  EXPECT_NE(tf32x3.defines(with(seed, {{"STAGES", 4}}), p), defines);
}

TEST(ManifestGeometry, FollowsTheLaunchRule) {
  const Manifest& simt = manifest_of("sgemm_simt");
  const Config config = Config::parse_key(
      "sgemm_simt",
      "BM=128,BN=64,BK=16,WM=64,WN=32,TM=8,TN=8,STAGES=3,VEC_A=4,VEC_B=4,XPOSE_A=1,XPOSE_B=0,UNROLL_K=4,"
      "MIN_BLOCKS=1,SPLIT_K=3,RASTER=1");
  const LaunchGeometry g = simt.geometry(config, tuner::testing::problem(512, 512, 1000), kH100);
  EXPECT_EQ(g.tiles, 4 * 8);
  EXPECT_EQ(g.threads, 2 * 2 * 32);
  EXPECT_EQ(g.split_k, 3);
  EXPECT_EQ(g.k_per_split, 336);  // 1000 / 3 rounded up to whole stages of 16
  EXPECT_EQ(g.smem_bytes, 3 * (16 * 132 + 16 * 64) * 4);
  EXPECT_EQ(g.semaphores, g.tiles);  // serial split-K: one semaphore per tile
  EXPECT_EQ(g.workspace_bytes, 0);

  // The skinny template reduces its slices in parallel through a workspace of partial tiles.
  const Manifest& skinny = manifest_of("sgemm_skinny");
  const KernelProblem thin = tuner::testing::problem(16, 4096, 4096);
  for (const Config& seed : skinny.seeds()) {
    if (!skinny.violations(seed, &kH100, &thin).empty() || seed.at("SPLIT_K") == 1) continue;
    const LaunchGeometry s = skinny.geometry(seed, thin, kH100);
    EXPECT_GT(s.split_k, 1) << seed.key();
    EXPECT_GT(s.workspace_bytes, 0) << seed.key();
    EXPECT_EQ(s.semaphores, s.tiles) << seed.key();
  }
}

TEST(ManifestGeometry, StreamKSharesTheTilesPastTheLastFullWave) {
  const Manifest& tf32x3 = manifest_of("sgemm_tf32x3");
  const Config seed = tf32x3.seeds()[0];  // 128 x 128 tiles, K in stages of 16, one block per SM
  ASSERT_EQ(seed.at("BM"), 128);
  ASSERT_EQ(seed.at("BK"), 16);
  ASSERT_EQ(seed.at("MIN_BLOCKS"), 1);
  const int64_t wave = kH100.sm_count;
  const KernelProblem square = tuner::testing::problem(4096, 4096, 4096);  // 1024 tiles of 256 stages
  const int64_t tiles = 32 * 32;

  const LaunchGeometry plain = tf32x3.geometry(seed, square, kH100);
  EXPECT_EQ(plain.stream_blocks, 0);
  EXPECT_EQ(plain.grid_x(), tiles);
  EXPECT_EQ(plain.semaphores, 0);

  const LaunchGeometry tail = tf32x3.geometry(with(seed, {{"STREAM_K", 1}}), square, kH100);
  EXPECT_EQ(tail.whole_tiles, tiles - tiles % wave);
  // Stream blocks for `iterations` K stages shared out over at most one wave, none left idle.
  const auto stream_blocks = [&](int64_t iterations) {
    const int64_t per_block = (iterations + wave - 1) / wave;
    return (iterations + per_block - 1) / per_block;
  };
  EXPECT_EQ(tail.stream_blocks, stream_blocks((tiles % wave) * 256));
  EXPECT_LE(tail.stream_blocks, wave);
  EXPECT_EQ(tail.grid_x(), tail.whole_tiles + tail.stream_blocks);
  EXPECT_EQ(tail.split_k, 1);
  EXPECT_EQ(tail.semaphores, tiles);  // the streamed tiles' segments take turns in C

  const LaunchGeometry two = tf32x3.geometry(with(seed, {{"STREAM_K", 2}}), square, kH100);
  EXPECT_EQ(two.whole_tiles, tail.whole_tiles - wave);
  EXPECT_LE(two.stream_blocks, wave);

  // Fewer tiles than a wave: every tile is streamed.
  const LaunchGeometry few =
      tf32x3.geometry(with(seed, {{"STREAM_K", 1}}), tuner::testing::problem(128, 4096, 4096), kH100);
  EXPECT_EQ(few.whole_tiles, 0);
  EXPECT_EQ(few.stream_blocks, stream_blocks(32 * 256));

  // Whole waves, or no K to share: nothing is streamed.
  DeviceInfo even = kH100;
  even.sm_count = 128;
  EXPECT_EQ(tf32x3.geometry(with(seed, {{"STREAM_K", 1}}), square, even).stream_blocks, 0);
  EXPECT_EQ(tf32x3.geometry(with(seed, {{"STREAM_K", 1}}), tuner::testing::problem(4096, 4096, 0), kH100)
                .stream_blocks,
            0);

  EXPECT_FALSE(tf32x3.violations(with(seed, {{"STREAM_K", 1}, {"SPLIT_K", 2}}), &kH100, &square).empty())
      << "stream-K and split-K together";
}

// The sgemm_simt manifest as JSON, to break on purpose.
nlohmann::json simt_manifest_json() {
  std::ifstream in(std::string(GEMMFORGE_SOURCE_DIR) + "/templates/sgemm_simt.json");
  return nlohmann::json::parse(in);
}

TEST(ManifestParse, AParameterWithAnAbsentValueFillsConfigsWrittenWithoutIt) {
  const Manifest& tf32x3 = manifest_of("sgemm_tf32x3");
  Config::Values older;
  for (const auto& [name, value] : tf32x3.seeds()[0].values()) {
    if (name != "STREAM_K") older.emplace_back(name, value);
  }
  const Config filled = tf32x3.normalize(Config("sgemm_tf32x3", older));
  EXPECT_EQ(filled.at("STREAM_K"), 0);
  EXPECT_EQ(filled, tf32x3.seeds()[0]);

  nlohmann::json outside = simt_manifest_json();
  outside["parameters"][0]["absent"] = 3;  // BM's domain holds no 3
  const std::string message =
      invalid_argument_message([&] { Manifest::parse(outside.dump(), "absent.json"); });
  EXPECT_NE(message.find("absent.json"), std::string::npos) << message;
  EXPECT_NE(message.find("absent value 3"), std::string::npos) << message;
}

// "math": "ffma" states that a template multiplies in FP32 FFMA whatever its operands' type; nothing else is
// a known math, and without the key a template computes on its type's own units.
TEST(ManifestParse, MathSaysWhetherATemplateMultipliesInFp32) {
  EXPECT_TRUE(manifest_of("hgemm_rows").multiplies_in_fp32());
  EXPECT_FALSE(manifest_of("hgemm_skinny").multiplies_in_fp32());
  nlohmann::json ffma = simt_manifest_json();
  ffma["math"] = "ffma";
  EXPECT_TRUE(Manifest::parse(ffma.dump(), "ffma.json").multiplies_in_fp32());
  ffma["math"] = "wgmma";
  const std::string message = invalid_argument_message([&] { Manifest::parse(ffma.dump(), "wgmma.json"); });
  EXPECT_NE(message.find("wgmma.json"), std::string::npos) << message;
  EXPECT_NE(message.find("math 'wgmma'"), std::string::npos) << message;
}

TEST(ManifestParse, MalformedManifestsAreRefusedWithTheirOrigin) {
  EXPECT_NO_THROW(Manifest::parse(simt_manifest_json().dump(), "copy.json"));

  std::string message = invalid_argument_message([] { Manifest::parse("{ \"name\": ", "truncated.json"); });
  EXPECT_NE(message.find("truncated.json"), std::string::npos) << message;

  nlohmann::json unknown_identifier = simt_manifest_json();
  unknown_identifier["constraints"][0]["expr"] = "BM % NO_SUCH_VALUE == 0";
  message = invalid_argument_message([&] { Manifest::parse(unknown_identifier.dump(), "unknown.json"); });
  EXPECT_NE(message.find("unknown.json"), std::string::npos) << message;
  EXPECT_NE(message.find("NO_SUCH_VALUE"), std::string::npos) << message;

  nlohmann::json bad_seed = simt_manifest_json();
  bad_seed["seeds"][0]["BM"] = 48;
  message = invalid_argument_message([&] { Manifest::parse(bad_seed.dump(), "seed.json"); });
  EXPECT_NE(message.find("seed.json"), std::string::npos) << message;

  nlohmann::json no_parameters = simt_manifest_json();
  no_parameters.erase("parameters");
  EXPECT_THROW(Manifest::parse(no_parameters.dump(), "empty.json"), InvalidArgumentError);
}

TEST(ManifestParse, TensorMapBoxesComeInPairsOfTwoExpressionsAndReachTheGeometry) {
  nlohmann::json boxed = simt_manifest_json();
  boxed["launch"]["tma_box_a"] = {"BK", "BM"};
  boxed["launch"]["tma_box_b"] = {"BK", "BN"};
  boxed["launch"]["persistent"] = "1";
  const Manifest m = Manifest::parse(boxed.dump(), "boxed.json");
  const KernelProblem p = tuner::testing::problem(4096, 4096, 4096);
  const Config seed = m.seeds().front();
  const LaunchGeometry g = m.geometry(seed, p, kH100);
  ASSERT_TRUE(g.uses_tensor_maps());
  EXPECT_EQ(g.tma_box_a, (std::array<int64_t, 2>{seed.at("BK"), seed.at("BM")}));
  EXPECT_EQ(g.tma_box_b, (std::array<int64_t, 2>{seed.at("BK"), seed.at("BN")}));
  EXPECT_EQ(g.grid_x(), std::min<int64_t>(g.tiles, kH100.sm_count));  // persistent: one wave walks the tiles

  nlohmann::json one_operand = simt_manifest_json();
  one_operand["launch"]["tma_box_a"] = {"BK", "BM"};
  std::string message = invalid_argument_message([&] { Manifest::parse(one_operand.dump(), "one.json"); });
  EXPECT_NE(message.find("give both or neither"), std::string::npos) << message;

  nlohmann::json three = simt_manifest_json();
  three["launch"]["tma_box_a"] = {"BK", "BM", "1"};
  three["launch"]["tma_box_b"] = {"BK", "BN"};
  message = invalid_argument_message([&] { Manifest::parse(three.dump(), "three.json"); });
  EXPECT_NE(message.find("two expressions"), std::string::npos) << message;
  EXPECT_NE(message.find("three.json"), std::string::npos) << message;

  // C's box is optional, and comes only with the operands'.
  EXPECT_EQ(g.tma_box_c, (std::array<int64_t, 2>{0, 0}));
  boxed["launch"]["tma_box_c"] = {"BN", "BM"};
  EXPECT_EQ(Manifest::parse(boxed.dump(), "boxed.json").geometry(seed, p, kH100).tma_box_c,
            (std::array<int64_t, 2>{seed.at("BN"), seed.at("BM")}));
  nlohmann::json c_alone = simt_manifest_json();
  c_alone["launch"]["tma_box_c"] = {"BN", "BM"};
  message = invalid_argument_message([&] { Manifest::parse(c_alone.dump(), "c.json"); });
  EXPECT_NE(message.find("comes with the operands'"), std::string::npos) << message;

  // Without boxes a kernel takes no tensor maps.
  EXPECT_FALSE(
      Manifest::parse(simt_manifest_json().dump(), "plain.json").geometry(seed, p, kH100).uses_tensor_maps());
}

}  // namespace
}  // namespace gemmforge
