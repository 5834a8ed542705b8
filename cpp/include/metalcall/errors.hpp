// Error types shared by every layer. Python maps each to metalcall.<Name>.
#pragma once

#include <stdexcept>
#include <string>

namespace metalcall {

/** Base of every error metalcall raises. */
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** Kernel source failed to compile. Positions refer to the user's source. */
class CompileError : public Error {
 public:
  CompileError(const std::string& message, std::string log = {}, int line = 0,
               int column = 0, std::string source_line = {})
      : Error(message), log_(std::move(log)), line_(line), column_(column),
        source_line_(std::move(source_line)) {}
  const std::string& log() const { return log_; }
  int line() const { return line_; }      // 1-based; 0 when unknown
  int column() const { return column_; }  // 1-based; 0 when unknown
  const std::string& source_line() const { return source_line_; }

 private:
  std::string log_;
  int line_;
  int column_;
  std::string source_line_;
};

/** A call's arguments, grid or threadgroup do not fit the kernel. */
class ArgumentError : public Error {
 public:
  using Error::Error;
};

/** The device reported a fault while running work (or checked mode caught one). */
class ExecutionError : public Error {
 public:
  using Error::Error;
};

/** A backend or device is unavailable; the message says why and what to do. */
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace metalcall
