// Exceptions for contract and usage errors. Per-item numerical outcomes use
// popper::Result (result.hpp) instead: a failing item never throws for a batch.
#pragma once
#include <cstddef>
#include <stdexcept>
#include <string>

namespace popper {

// Base of every exception popper throws on bad input or misuse.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller-supplied buffer is shorter than the operation needs. Thrown before
// any memory is touched or any library is called.
class BufferTooSmall : public Error {
 public:
  BufferTooSmall(std::string operand, std::size_t required, std::size_t actual)
      : Error("buffer '" + operand + "' too small: needs " + std::to_string(required) + " elements, got " +
              std::to_string(actual)),
        operand_(std::move(operand)),
        required_(required),
        actual_(actual) {}
  const std::string& operand() const noexcept { return operand_; }
  std::size_t required() const noexcept { return required_; }
  std::size_t actual() const noexcept { return actual_; }

 private:
  std::string operand_;
  std::size_t required_;
  std::size_t actual_;
};

// A dimension, leading dimension, option or other argument is invalid.
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A capability (device, ISA, library core type) is unavailable. Device entry
// points do not throw this: they decline to the CPU path. It is for explicit
// requests ("run on CUDA or fail") made by tools and tests.
class Unsupported : public Error {
 public:
  using Error::Error;
};

}  // namespace popper
