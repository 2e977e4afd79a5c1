// The one place where C++ exceptions become C API status codes (as CLBlast's DispatchException), with the
// detailed message kept per thread for gemmforgeGetLastErrorMessage.
#pragma once

#include <exception>
#include <new>

#include "gemmforge/error.hpp"
#include "gemmforge/gemmforge.h"
#include "gemmforge/gemmforge.hpp"

namespace gemmforge::capi {

/// The status of an error of gemmforge.
gemmforgeStatus_t status_of(const Error& error) noexcept;

/// Stores "`function`: `message`" as this thread's last error and returns `status`.
gemmforgeStatus_t fail(gemmforgeStatus_t status, const char* function, const char* message) noexcept;

/// Clears this thread's last error and returns GEMMFORGE_STATUS_SUCCESS.
gemmforgeStatus_t succeed() noexcept;

/// This thread's last error message.
const char* last_error() noexcept;

/// Runs `body` (returning a status) and turns whatever it throws into a status; nothing escapes.
template <typename Body>
gemmforgeStatus_t dispatch(const char* function, Body&& body) noexcept {
  try {
    const gemmforgeStatus_t status = body();
    return status == GEMMFORGE_STATUS_SUCCESS ? succeed() : status;
  } catch (const Error& e) {
    return fail(status_of(e), function, e.what());
  } catch (const std::bad_alloc&) {
    return fail(GEMMFORGE_STATUS_ALLOC_FAILED, function, "host memory is exhausted");
  } catch (const std::exception& e) {
    return fail(GEMMFORGE_STATUS_INTERNAL_ERROR, function, e.what());
  } catch (...) {
    return fail(GEMMFORGE_STATUS_INTERNAL_ERROR, function, "an exception of unknown type");
  }
}

}  // namespace gemmforge::capi
