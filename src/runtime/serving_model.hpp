// What the selector knows of a GPU architecture beyond exact results: every measurement of its GPUs in the
// user's database and the shipped results, the performance model and the vendor model fitted on them, and
// the portfolio of proven configs.
#pragma once

#include <string>
#include <vector>

#include "core/device_info.hpp"
#include "core/template_library.hpp"
#include "model/performance_model.hpp"
#include "model/portfolio.hpp"
#include "model/vendor_model.hpp"
#include "runtime/result_source.hpp"

namespace gemmforge::runtime {

/// Every measurement of GPUs of compute capability `cc` in `sources`, in order; a source that fails to read
/// costs a warning, not the rest. The labels of the sources read are appended to `read`.
model::TrainingData gather_measurements(const TemplateLibrary& library, int cc,
                                        const std::vector<ResultSource*>& sources,
                                        std::vector<std::string>& read);

struct ServingModel {
  /// Reads the measurements of `device`'s architecture from every source (a source that fails to read
  /// costs a warning, not the model) and fits the models.
  ServingModel(const TemplateLibrary& library, const DeviceInfo& device,
               const std::vector<ResultSource*>& sources);

  /// "4414 measurements of 37 problems on NVIDIA H100 80GB HBM3 (database ..., shipped results)".
  std::string describe() const;

  std::vector<std::string> sources;  ///< labels of the sources read (filled first)
  model::TrainingData data;
  model::PerformanceModel kernels;
  model::VendorModel vendor;
  model::Portfolio portfolio;
};

}  // namespace gemmforge::runtime
