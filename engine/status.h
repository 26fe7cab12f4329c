// Status and Result<T> are part of the public API: include/snapsink/status.h.
// This header is the library's own view of them: it adds what engine/,
// publish/ and sink/ use and no embedder needs: the early-return macros and
// the one wording of an out-of-range value. Programs on the public API
// (utilities/, tools/) have their own macros: utilities/status_macros.h.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "snapsink/status.h"

namespace snapsink {

// A value out of range, naming the public field or parameter the caller set,
// its value and the rule it broke: "InitOptions::window_ms 0: must be
// greater than zero". Every "field value: rule" error is built here, so
// they read alike wherever the value is checked.
inline Status OutOfRange(std::string_view field, int64_t value, std::string_view rule) {
  return Status::InvalidArgument(std::string(field) + " " + std::to_string(value) + ": " + std::string(rule));
}

}  // namespace snapsink

// Return early from the enclosing function when `expr` yields a non-OK Status.
#define SNAPSINK_RETURN_IF_ERROR(expr)      \
  do {                                      \
    ::snapsink::Status _st = (expr);        \
    if (!_st.ok()) return _st;              \
  } while (0)

#define SNAPSINK_CONCAT_INNER(a, b) a##b
#define SNAPSINK_CONCAT(a, b) SNAPSINK_CONCAT_INNER(a, b)
// `SNAPSINK_ASSIGN_OR_RETURN(auto x, MakeX())` binds x or returns the error.
#define SNAPSINK_ASSIGN_OR_RETURN(lhs, expr)                                \
  auto SNAPSINK_CONCAT(_res_, __LINE__) = (expr);                           \
  if (!SNAPSINK_CONCAT(_res_, __LINE__).ok())                               \
    return SNAPSINK_CONCAT(_res_, __LINE__).status();                       \
  lhs = std::move(SNAPSINK_CONCAT(_res_, __LINE__).value())
