// An application of the installed gemmforge: it compiles against the public headers, links the library
// with everything it needs, and starts without a GPU, which the runtime reports.
#include <gemmforge/gemmforge.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  gemmforge::RuntimeOptions options;
  if (argc > 1) options.database_path = argv[1];
  try {
    gemmforge::Runtime runtime(options);
    std::printf("gemmforge serves on a GPU here; level names: %s\n",
                gemmforge::to_string(gemmforge::PlanLevel::kExact));
  } catch (const gemmforge::NoDeviceError& e) {
    std::printf("gemmforge reports no GPU: %s\n", e.what());
  } catch (const gemmforge::Error& e) {
    std::printf("gemmforge failed: %s\n", e.what());
    return 1;
  }
  return 0;
}
