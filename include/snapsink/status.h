// snapsink public API: Status and Result<T>, errors as values (as in LevelDB).
//
// Every call that can fail returns a Status (or a Result<T> holding either a
// value or a non-OK Status). code() says which kind of failure it is, and
// each code has its predicate (IsNotFound(), IsLocked(), ...); what a
// program does about a kind is up to the program.
//
// Self-contained: standard library only, like every header under
// include/snapsink/.
#pragma once

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace snapsink {

class [[nodiscard]] Status {
 public:
  enum class Code {
    kOk = 0,
    kNotFound,         // a file, root, generation or window that is not there
    kInvalidArgument,  // a bad argument or call
    kIOError,          // the operating system said no
    kCorruption,       // a checksum, magic or format did not hold
    kBadInput,         // an input line broke the event contract (IngestOptions::stop_on_error)
    kGap,              // a sequence gap under GapPolicy::kStop
    kReconcile,        // staged counts differ from the ledger
    kLocked,           // another writer holds the root
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status NotFound(std::string m) { return Status(Code::kNotFound, std::move(m)); }
  static Status InvalidArgument(std::string m) { return Status(Code::kInvalidArgument, std::move(m)); }
  static Status IOError(std::string m) { return Status(Code::kIOError, std::move(m)); }
  static Status Corruption(std::string m) { return Status(Code::kCorruption, std::move(m)); }
  static Status BadInput(std::string m) { return Status(Code::kBadInput, std::move(m)); }
  static Status Gap(std::string m) { return Status(Code::kGap, std::move(m)); }
  static Status Reconcile(std::string m) { return Status(Code::kReconcile, std::move(m)); }
  static Status Locked(std::string m) { return Status(Code::kLocked, std::move(m)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  // One predicate per code, so a caller need not spell Status::Code.
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsBadInput() const { return code_ == Code::kBadInput; }
  bool IsGap() const { return code_ == Code::kGap; }
  bool IsReconcile() const { return code_ == Code::kReconcile; }
  bool IsLocked() const { return code_ == Code::kLocked; }
  const std::string& message() const { return msg_; }
  std::string ToString() const { return ok() ? std::string("OK") : msg_; }
  // The same code with prefix put before the message ("SOURCE:LINE: ").
  Status Prefixed(std::string_view prefix) const {
    return ok() ? Status() : Status(code_, std::string(prefix) + msg_);
  }
  // The same code with message in place of the old one (OK stays OK).
  Status WithMessage(std::string message) const {
    return ok() ? Status() : Status(code_, std::move(message));
  }

 private:
  Status(Code c, std::string m) : code_(c), msg_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

// Either a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status s) : status_(std::move(s)) { assert(!status_.ok()); }  // NOLINT
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() { assert(ok()); return *value_; }
  const T& value() const { assert(ok()); return *value_; }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

// The public API (snapsink::api) uses these same types.
namespace api {
using ::snapsink::Result;
using ::snapsink::Status;
}  // namespace api

}  // namespace snapsink
