// Status: one predicate per code, each true for its own code only, and
// WithMessage/Prefixed keep the code while changing the message. The
// early-return macros of the library (engine/status.h) and of programs on
// the public API (utilities/status_macros.h) are both included here: a
// difference between the two definitions is a redefinition this file does
// not compile with.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/status.h"
#include "snapsink/status.h"
#include "utilities/status_macros.h"

namespace snapsink::testing {
namespace {

using Code = Status::Code;

// Every non-OK code, with its factory and predicate.
struct Kind {
  Code code;
  Status (*make)(std::string);
  bool (Status::*is)() const;
  const char* name;
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {Code::kNotFound, &Status::NotFound, &Status::IsNotFound, "NotFound"},
      {Code::kInvalidArgument, &Status::InvalidArgument, &Status::IsInvalidArgument, "InvalidArgument"},
      {Code::kIOError, &Status::IOError, &Status::IsIOError, "IOError"},
      {Code::kCorruption, &Status::Corruption, &Status::IsCorruption, "Corruption"},
      {Code::kBadInput, &Status::BadInput, &Status::IsBadInput, "BadInput"},
      {Code::kGap, &Status::Gap, &Status::IsGap, "Gap"},
      {Code::kReconcile, &Status::Reconcile, &Status::IsReconcile, "Reconcile"},
      {Code::kLocked, &Status::Locked, &Status::IsLocked, "Locked"},
  };
  return kinds;
}

TEST(StatusCodes, EachPredicateIsTrueForItsOwnCodeOnly) {
  // Every code but kOk has a row: the last code is kLocked.
  ASSERT_EQ(Kinds().size(), static_cast<size_t>(Code::kLocked));
  for (const Kind& made : Kinds()) {
    const Status s = made.make("m");
    EXPECT_FALSE(s.ok()) << made.name;
    EXPECT_EQ(s.code(), made.code) << made.name;
    for (const Kind& asked : Kinds()) {
      EXPECT_EQ((s.*asked.is)(), made.code == asked.code) << made.name << " asked Is" << asked.name;
    }
  }
  const Status ok = Status::OK();
  for (const Kind& asked : Kinds()) EXPECT_FALSE((ok.*asked.is)()) << "OK asked Is" << asked.name;
}

TEST(StatusCodes, WithMessageKeepsTheCodeAndReplacesTheMessage) {
  for (const Kind& made : Kinds()) {
    const Status s = made.make("old").WithMessage("new words");
    EXPECT_EQ(s.code(), made.code) << made.name;
    EXPECT_EQ(s.message(), "new words") << made.name;
  }
  const Status ok = Status::OK().WithMessage("ignored");
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.message(), "");
}

TEST(StatusCodes, PrefixedKeepsTheCodeAndPutsThePrefixFirst) {
  const Status s = Status::BadInput("bad ts").Prefixed("in.ndjson:3: ");
  EXPECT_TRUE(s.IsBadInput());
  EXPECT_EQ(s.message(), "in.ndjson:3: bad ts");
  EXPECT_TRUE(Status::OK().Prefixed("x: ").ok());
}

Result<int> Half(int n) {
  if (n % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(n));
  return n / 2;
}

// Halves n twice; *steps counts the statements reached.
Result<int> Quarter(int n, int* steps) {
  SNAPSINK_ASSIGN_OR_RETURN(const int half, Half(n));
  ++*steps;
  SNAPSINK_RETURN_IF_ERROR(half % 2 == 0 ? Status::OK() : Status::Gap("half is odd"));
  ++*steps;
  return half / 2;
}

TEST(StatusMacros, ReturnTheFirstErrorAndBindTheValueOtherwise) {
  int steps = 0;
  Result<int> q = Quarter(12, &steps);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(*q, 3);
  EXPECT_EQ(steps, 2);

  steps = 0;
  q = Quarter(7, &steps);
  EXPECT_TRUE(q.status().IsInvalidArgument());
  EXPECT_EQ(q.status().message(), "odd: 7");
  EXPECT_EQ(steps, 0);

  steps = 0;
  q = Quarter(6, &steps);
  EXPECT_TRUE(q.status().IsGap());
  EXPECT_EQ(steps, 1);
}

// Every range check of the library words its error this one way.
TEST(StatusCodes, OutOfRangeNamesTheFieldItsValueAndTheRule) {
  const Status s = OutOfRange("InitOptions::window_size_ms", -5, "must be greater than zero");
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_EQ(s.message(), "InitOptions::window_size_ms -5: must be greater than zero");
}

}  // namespace
}  // namespace snapsink::testing
