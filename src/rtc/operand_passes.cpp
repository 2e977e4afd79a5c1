// Compiling, finding and launching the operand passes.
#include "rtc/operand_passes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "core/device_info.hpp"
#include "core/dtype.hpp"
#include "core/hash.hpp"
#include "realign_args.cuh"
#include "split_args.cuh"

namespace gemmforge::rtc {
namespace {

std::string plain_arch(const std::string& arch) {
  return fmt::format("sm_{}", arch_cc(arch));
}

// The most blocks a pass's grid takes along a dimension it walks (x of the split, y of the copy); each
// block walks on past the grid.
constexpr long long kMaxPassBlocks = 65535;

// Grids of the split: one block per unit of work, as many as a grid's x holds.
dim3 pass_grid(int64_t units) {
  return dim3(static_cast<unsigned>(std::min<long long>(units, kMaxPassBlocks)));
}

}  // namespace

OperandPasses::OperandPasses(const std::vector<char>& cubin)
    : module_(cubin),
      split_(module_.kernel("gf_split_operands")),
      copy_(module_.kernel("gf_realign_operands")) {}

CompileRequest OperandPasses::request(const TemplateLibrary& library, const std::string& arch) {
  CompileRequest r;
  r.source = library.support_source(kOperandPassesSource);
  r.source_name = kOperandPassesSource;
  r.headers = library.headers();
  r.arch = plain_arch(arch);
  r.kernel = "gf_split_operands";
  return r;
}

std::string OperandPasses::cubin_key(const TemplateLibrary& library, const std::string& arch) {
  const CompileRequest r = request(library, arch);
  Hasher hasher;
  hasher.add(kName).add(library.support_hash(kOperandPassesSource)).add(nvrtc_version());
  for (const std::string& option : r.options()) hasher.add(option);
  return fmt::format("{}-{}-{}", kName, r.arch, hasher.hex());
}

bool OperandPasses::split(const KernelCall& call, const LaunchGeometry& geometry, void* workspace,
                          cudaStream_t stream) const {
  float* parts = reinterpret_cast<float*>(static_cast<char*>(workspace) + geometry.parts_offset);
  const KernelProblem& p = call.problem;
  SplitArgs args{};
  args.a = static_cast<const float*>(call.a);
  args.b = static_cast<const float*>(call.b);
  args.lda = call.lda;
  args.ldb = call.ldb;
  args.a_mn = p.a_trans ? 1 : 0;
  args.b_mn = p.b_trans ? 0 : 1;
  args.m = static_cast<int>(p.m);
  args.n = static_cast<int>(p.n);
  args.k = static_cast<int>(p.k);
  args.a_parts = parts;
  args.b_parts = parts + geometry.parts_b;
  args.parts_ld = geometry.parts_ld;
  // A unit is a tile of either operand, kSplitTile square.
  const int64_t tiles = ((p.m + kSplitTile - 1) / kSplitTile + (p.n + kSplitTile - 1) / kSplitTile) *
                        ((p.k + kSplitTile - 1) / kSplitTile);
  void* params[] = {&args};
  if (tiles == 0) return false;
  split_.launch(pass_grid(tiles), dim3(kSplitThreads), 0, stream, params);
  return true;
}

void OperandPasses::copy(const KernelCall& call, const LaunchGeometry& geometry, void* workspace,
                         cudaStream_t stream) const {
  const KernelProblem& p = call.problem;
  const int64_t units = dtype_facts(p.dtype).bytes / 2;  // 16-bit units per element
  char* bytes = static_cast<char*>(workspace);
  const auto operand = [&](const void* src, int64_t ld, int64_t copy_ld, int64_t offset, int64_t rows,
                           int64_t cols) {
    RealignOperand op{};  // src null: nothing to copy, and the kernel gives it no grid layer
    if (copy_ld == 0 || rows == 0 || cols == 0) return op;
    op.src = static_cast<const unsigned short*>(src);
    op.dst = reinterpret_cast<unsigned short*>(bytes + offset);
    op.ld = ld * units;
    op.dst_ld = copy_ld * units;
    op.rows = rows;
    op.cols = cols * units;
    return op;
  };
  RealignArgs args{};
  args.a =
      operand(call.a, call.lda, geometry.copy_ld_a, geometry.copy_offset_a, p.a_rows(), p.a_row_length());
  args.b =
      operand(call.b, call.ldb, geometry.copy_ld_b, geometry.copy_offset_b, p.b_rows(), p.b_row_length());
  // x: a row's 16-byte chunks, kRealignThreads * kRealignUnroll a block; y: the rows, each block walking on
  // past the grid's; z: the operands copied.
  long long row_chunks = 0, rows = 0;  // RealignOperand counts in long long
  unsigned operands = 0;
  for (const RealignOperand* op : {&args.a, &args.b}) {
    if (op->src == nullptr) continue;
    row_chunks = std::max(row_chunks, op->dst_ld / 8);
    rows = std::max(rows, op->rows);
    ++operands;
  }
  if (operands == 0) return;
  constexpr long long kBlockChunks = static_cast<long long>(kRealignThreads) * kRealignUnroll;
  const dim3 grid(static_cast<unsigned>((row_chunks + kBlockChunks - 1) / kBlockChunks),
                  static_cast<unsigned>(std::min(rows, kMaxPassBlocks)), operands);
  void* params[] = {&args};
  copy_.launch(grid, dim3(kRealignThreads), 0, stream, params);
}

const std::vector<char>& operand_passes_cubin(const std::string& arch) {
  return compile_once_per_process(OperandPasses::request(TemplateLibrary::instance(), arch));
}

std::shared_ptr<const OperandPasses> compiled_operand_passes(const KernelTemplate& kernel_template,
                                                             const std::string& arch) {
  if (!kernel_template.manifest.prepares_operands()) return nullptr;
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<const OperandPasses>> loaded;  // by the kernels' arch
  std::lock_guard lock(mutex);
  std::shared_ptr<const OperandPasses>& passes = loaded[arch];
  if (!passes) passes = std::make_shared<const OperandPasses>(operand_passes_cubin(arch));
  return passes;
}

}  // namespace gemmforge::rtc
