// `gemmforge devices`: the GPUs of this machine and the software gemmforge runs on.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "cli_common.hpp"
#include "cuda/device.hpp"
#include "rtc/compiler.hpp"

namespace gemmforge::cli {

namespace {
Command register_devices(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand("devices", "List the GPUs, their limits and the CUDA / NVRTC versions");
  auto json_output = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json_output, "Print JSON");
  return {cmd, [json_output]() {
            const std::string reason = cuda::unavailable_reason();
            if (!reason.empty()) {
              if (*json_output) {
                fmt::print("{}\n", nlohmann::json{{"devices", nlohmann::json::array()},
                                                  {"reason", reason},
                                                  {"nvrtc", rtc::nvrtc_version()}}
                                       .dump(2));
              } else {
                fmt::print("No CUDA device: {}.\n", reason);
                fmt::print(
                    "NVRTC {} is available: templates can still be compiled for an explicit architecture\n"
                    "(gemmforge compile --arch sm_90), spaces listed (gemmforge space --arch sm_90), and\n"
                    "databases queried (gemmforge query --device-name ...).\n",
                    rtc::nvrtc_version());
              }
              return 0;
            }
            nlohmann::json list = nlohmann::json::array();
            for (int i = 0; i < cuda::device_count(); ++i) {
              const DeviceInfo d = cuda::query_device(i);
              if (*json_output) {
                list.push_back({{"ordinal", d.ordinal},
                                {"name", d.name},
                                {"uuid", d.uuid},
                                {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                                {"sm_count", d.sm_count},
                                {"memory_bytes", d.total_memory},
                                {"smem_per_block_optin", d.smem_per_block_optin},
                                {"smem_per_sm", d.smem_per_sm},
                                {"regs_per_sm", d.regs_per_sm},
                                {"l2_bytes", d.l2_bytes},
                                {"clock_khz", d.clock_khz},
                                {"memory_clock_khz", d.memory_clock_khz},
                                {"driver", format_cuda_version(d.driver_version)},
                                {"runtime", format_cuda_version(d.runtime_version)},
                                {"nvrtc", rtc::nvrtc_version()}});
                continue;
              }
              fmt::print("Device {}: {} ({})\n", d.ordinal, d.name, d.uuid);
              fmt::print("  compute capability   {}.{} ({})\n", d.cc_major, d.cc_minor, d.arch());
              fmt::print("  SMs                  {}\n", d.sm_count);
              fmt::print("  memory               {:.1f} GiB, bus {} bit, {} MHz\n",
                         d.total_memory / 1073741824.0, d.memory_bus_width, d.memory_clock_khz / 1000);
              fmt::print("  shared memory        {} KiB per block (opt-in), {} KiB per SM\n",
                         d.smem_per_block_optin / 1024, d.smem_per_sm / 1024);
              fmt::print("  registers            {} per SM, {} per block\n", d.regs_per_sm, d.regs_per_block);
              fmt::print("  threads              {} per block, {} per SM\n", d.max_threads_per_block,
                         d.max_threads_per_sm);
              fmt::print("  L2                   {} MiB\n", d.l2_bytes / 1048576);
              fmt::print("  clock                {} MHz (FP32 peak {:.1f} TFLOP/s)\n", d.clock_khz / 1000,
                         d.fp32_peak_tflops());
              fmt::print("  driver / runtime     CUDA {} / CUDA {}\n", format_cuda_version(d.driver_version),
                         format_cuda_version(d.runtime_version));
              fmt::print("  NVRTC                {}\n", rtc::nvrtc_version());
            }
            if (*json_output) fmt::print("{}\n", nlohmann::json{{"devices", list}}.dump(2));
            return 0;
          }};
}

}  // namespace

static const bool registered = register_command(10, register_devices);

}  // namespace gemmforge::cli
