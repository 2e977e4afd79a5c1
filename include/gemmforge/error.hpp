// The one error hierarchy of gemmforge: every failure a user can act on is one of these.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gemmforge {

/// What kind of failure an Error reports; the C API maps each kind to a status code.
enum class ErrorKind {
  kInvalidArgument,  ///< a size, leading dimension, pointer, enum or config outside what is allowed
  kNoDevice,         ///< no CUDA driver or no CUDA device where one is needed
  kCuda,             ///< a CUDA runtime or driver call failed
  kNvrtc,            ///< run-time compilation failed
  kCublas,           ///< a cuBLAS call failed
  kDatabase,         ///< the tuning database is unreadable, corrupt or could not be written
  kNotFound,         ///< something asked for by name does not exist (template, device, problem)
  kNotSupported,     ///< a valid request that gemmforge does not compute (a combination of types)
  kInternal,         ///< a broken invariant inside gemmforge
};

/// Name of an ErrorKind, e.g. "invalid argument".
const char* to_string(ErrorKind kind) noexcept;

/// Base of all gemmforge exceptions. what() is a complete sentence a user can act on.
class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }

 private:
  ErrorKind kind_;
};

/// A caller passed something outside the contract (sizes, leading dimensions, null pointers, configs).
class InvalidArgumentError : public Error {
 public:
  explicit InvalidArgumentError(const std::string& message) : Error(ErrorKind::kInvalidArgument, message) {}
};

/// No CUDA driver or device is present where one is needed.
class NoDeviceError : public Error {
 public:
  explicit NoDeviceError(const std::string& message) : Error(ErrorKind::kNoDevice, message) {}
};

/// A CUDA call failed; code() is the cudaError_t value.
class CudaError : public Error {
 public:
  CudaError(int code, const std::string& message) : Error(ErrorKind::kCuda, message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// NVRTC failed; the compile log and the options used are kept so the failure can be reproduced.
class NvrtcError : public Error {
 public:
  NvrtcError(const std::string& message, std::string log, std::vector<std::string> options)
      : Error(ErrorKind::kNvrtc, message), log_(std::move(log)), options_(std::move(options)) {}
  const std::string& log() const noexcept { return log_; }
  const std::vector<std::string>& options() const noexcept { return options_; }

 private:
  std::string log_;
  std::vector<std::string> options_;
};

/// A cuBLAS call failed; code() is the cublasStatus_t value.
class CublasError : public Error {
 public:
  CublasError(int code, const std::string& message) : Error(ErrorKind::kCublas, message), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

/// The database could not be opened, read, migrated or written.
class DatabaseError : public Error {
 public:
  explicit DatabaseError(const std::string& message) : Error(ErrorKind::kDatabase, message) {}
};

/// A template, device or problem asked for by name is unknown.
class NotFoundError : public Error {
 public:
  explicit NotFoundError(const std::string& message) : Error(ErrorKind::kNotFound, message) {}
};

/// A valid request gemmforge does not compute, such as a combination of types cuBLAS has and gemmforge lacks.
class NotSupportedError : public Error {
 public:
  explicit NotSupportedError(const std::string& message) : Error(ErrorKind::kNotSupported, message) {}
};

/// An invariant inside gemmforge was broken; please report it.
class InternalError : public Error {
 public:
  explicit InternalError(const std::string& message) : Error(ErrorKind::kInternal, message) {}
};

}  // namespace gemmforge
