// Status and Result<T>: errors as values.
//
// Every fallible operation in Berth returns a Status (no value) or a Result<T>
// (a value or an error). Codes carry meaning for callers and for the API layer,
// which maps them to HTTP statuses; messages are for people and name the
// offending field or value. Exceptions from libraries are caught at the codec
// boundary and turned into these values. Plain values; safe to copy and to pass
// between threads.
#pragma once

#include <optional>
#include <string>
#include <utility>

namespace berth {

enum class StatusCode {
  kOk,
  kInvalidArgument,
  kNotFound,
  kConflict,
  kUnavailable,
  kInternal,
  kPermissionDenied,  // the caller may not do this (a node's token on an admin route)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string m) {
    return {StatusCode::kInvalidArgument, std::move(m)};
  }
  static Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
  static Status Conflict(std::string m) { return {StatusCode::kConflict, std::move(m)}; }
  static Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
  static Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
  static Status PermissionDenied(std::string m) {
    return {StatusCode::kPermissionDenied, std::move(m)};
  }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Returns a copy whose message is prefixed with "<context>: ", for naming the
  // field an error belongs to as it travels up through a decoder.
  Status WithContext(const std::string& context) const {
    if (ok()) return *this;
    return {code_, context + ": " + message_};
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value of type T, or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {}  // NOLINT: implicit by design

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  const T& value() const& { return *value_; }
  T& value() & { return *value_; }
  T&& value() && { return std::move(*value_); }
  const T& operator*() const& { return *value_; }
  T& operator*() & { return *value_; }
  const T* operator->() const { return &*value_; }
  T* operator->() { return &*value_; }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace berth

// Returns early from the enclosing function when `expr` (a Status) is an error.
#define BERTH_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::berth::Status berth_status_ = (expr);        \
    if (!berth_status_.ok()) return berth_status_; \
  } while (false)
