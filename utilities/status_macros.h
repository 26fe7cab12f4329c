// Early returns on a non-OK Status, for programs built on the public API
// (utilities/ and tools/). The public headers define no macros; the library
// has its own (engine/status.h), token for token the same as these: a file
// that sees both (tests/status_test.cc) fails to compile the day they differ.
#pragma once

#include <utility>

#include "snapsink/status.h"

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
