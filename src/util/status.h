// Errors as values: a Status or Result<T> carries one human-readable line until the CLI prints it.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace grist {

struct Error {
  std::string message;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error e) : error_(std::move(e)) {}  // NOLINT: implicit on purpose, `return Error{...}`
  static Status ok() { return {}; }
  bool is_ok() const { return !error_.has_value(); }
  explicit operator bool() const { return is_ok(); }
  const std::string& message() const { return error_->message; }
  const Error& error() const { return *error_; }

 private:
  std::optional<Error> error_;
};

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT
  Result(Error e) : v_(std::move(e)) {}      // NOLINT
  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const T& value() const& { return std::get<0>(v_); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }
  const Error& error() const { return std::get<1>(v_); }
  const std::string& message() const { return error().message; }
  Status status() const { return is_ok() ? Status() : Status(error()); }

 private:
  std::variant<T, Error> v_;
};

template <class... Args>
Error make_error(fmt::format_string<Args...> f, Args&&... args) {
  return Error{fmt::format(f, std::forward<Args>(args)...)};
}

}  // namespace grist

// Propagate a failed Status/Result from the enclosing function.
#define GRIST_TRY(expr)                                  \
  do {                                                   \
    auto grist_try_status_ = (expr);                     \
    if (!grist_try_status_) return grist_try_status_.error(); \
  } while (0)

// Fail with a formatted message when a condition does not hold.
#define GRIST_CHECK(cond, ...)                                   \
  do {                                                           \
    if (!(cond)) return ::grist::make_error(__VA_ARGS__);        \
  } while (0)
