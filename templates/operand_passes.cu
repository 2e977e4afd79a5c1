// The passes over the operands that run before a main kernel which reads them prepared: FP32 operands
// split into TF32 parts (tf32_split.cuh, LaunchGeometry::k_products), and operands TMA cannot address
// copied with 16-byte-aligned rows (operand_realign.cuh, LaunchGeometry::copy_ld_a / copy_ld_b). They
// depend on no config, so they compile once per architecture into a module of their own that every config
// of every template launching them shares (rtc/operand_passes.hpp): no config's compilation pays for them.
#include "operand_realign.cuh"
#include "tf32_split.cuh"

// The operands' TF32 parts, written into the workspace.
extern "C" __global__ void __launch_bounds__(kSplitThreads)
    gf_split_operands(const __grid_constant__ SplitArgs args) {
  gf::split_operands(args);
}

// Copies of the operands TMA cannot address in place, with 16-byte-aligned rows, written into the
// workspace.
extern "C" __global__ void __launch_bounds__(kRealignThreads)
    gf_realign_operands(const __grid_constant__ RealignArgs args) {
  gf::realign_operands(args);
}
