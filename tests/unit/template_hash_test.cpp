// A template's hash names the code its measured times come from: its source, the headers it includes and
// its manifest, and for a template that runs the operand passes their source too. Editing one changes the
// hash of the templates built from it, and only theirs.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "core/embedded.hpp"
#include "core/template_library.hpp"
#include "gemmforge/error.hpp"

namespace gemmforge {
namespace {

std::map<std::string, std::string> builtin_files() {
  std::map<std::string, std::string> files;
  for (std::size_t i = 0; i < embedded::kTemplatesCount; ++i) {
    const embedded::File& file = embedded::kTemplates[i];
    files[file.path] = std::string(reinterpret_cast<const char*>(file.data), file.size());
  }
  return files;
}

// The library with `file` (a name) edited.
TemplateLibrary edited(std::map<std::string, std::string> files, const std::string& file) {
  for (auto& [path, content] : files) {
    if (std::filesystem::path(path).filename() == file) content += "\n// edited\n";
  }
  return TemplateLibrary::from_files(files, "edited");
}

TEST(TemplateHash, ChangesWithTheCodeATemplateIsBuiltFromAndOnlyWithIt) {
  const std::map<std::string, std::string> files = builtin_files();
  const TemplateLibrary base = TemplateLibrary::from_files(files, "built-in");
  const auto same = [&](const TemplateLibrary& other, const char* name) {
    return base.get(name).hash == other.get(name).hash;
  };
  // The operand passes: gemm_tma runs them, hgemm_mma does not.
  const TemplateLibrary passes = edited(files, kOperandPassesSource);
  EXPECT_FALSE(same(passes, "gemm_tma"));
  EXPECT_TRUE(same(passes, "hgemm_mma"));
  EXPECT_TRUE(same(passes, "sgemm_simt"));
  EXPECT_NE(base.support_hash(kOperandPassesSource), passes.support_hash(kOperandPassesSource));
  // A header only the passes include, and one only gemm_tma's main kernel does.
  const TemplateLibrary split = edited(files, "tf32_split.cuh");
  EXPECT_FALSE(same(split, "gemm_tma"));
  EXPECT_TRUE(same(split, "sgemm_tf32x3"));
  const TemplateLibrary walk = edited(files, "segment_walk.cuh");
  EXPECT_FALSE(same(walk, "gemm_tma"));
  EXPECT_TRUE(same(walk, "gemm_wgmma"));
  EXPECT_EQ(base.support_hash(kOperandPassesSource), walk.support_hash(kOperandPassesSource));
}

TEST(TemplateHash, ALibraryWithoutTheOperandPassesATemplateRunsIsRefused) {
  std::map<std::string, std::string> files = builtin_files();
  for (auto it = files.begin(); it != files.end();) {
    it =
        std::filesystem::path(it->first).filename() == kOperandPassesSource ? files.erase(it) : std::next(it);
  }
  try {
    TemplateLibrary::from_files(files, "incomplete");
    FAIL() << "a library whose gemm_tma runs passes it lacks was accepted";
  } catch (const InvalidArgumentError& e) {
    EXPECT_NE(std::string(e.what()).find("operand_passes.cu"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("gemm_tma"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace gemmforge
