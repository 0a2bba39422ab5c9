// popper::Result<T, E>: a value or a per-item error, std::expected-style
// (std::expected is C++23; popper targets C++20).
#pragma once
#include <utility>
#include <variant>

namespace popper {

template <class E>
struct Failure {
  E error;
};
template <class E>
Failure(E) -> Failure<E>;

template <class T, class E>
class Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}         // NOLINT: implicit by design
  Result(Failure<E> f) : v_(std::in_place_index<1>, std::move(f.error)) {}  // NOLINT
  bool ok() const noexcept { return v_.index() == 0; }
  explicit operator bool() const noexcept { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  const E& error() const& { return std::get<1>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }

 private:
  std::variant<T, E> v_;
};

}  // namespace popper
