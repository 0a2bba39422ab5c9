// Diagnostics: `file:line:col: error[POP-Vnnn]: what is wrong and how to fix it`.
#pragma once
#include <string>
#include <vector>

#include "popper/contract.hpp"

namespace popper {

enum class Severity { Error, Warning };

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string code;  // stable rule code, e.g. POP-V010
  SourcePos pos;
  std::string message;  // one sentence: what is wrong and how to fix it
};

class Diagnostics {
 public:
  void error(std::string code, SourcePos pos, std::string message);
  void warning(std::string code, SourcePos pos, std::string message);
  const std::vector<Diagnostic>& all() const { return items_; }
  std::size_t error_count() const;
  bool has_errors() const { return error_count() > 0; }

 private:
  std::vector<Diagnostic> items_;
};

std::string format_text(const Diagnostic& d);
std::string format_text(const Diagnostics& d);  // one per line, then a summary line
std::string format_json(const Diagnostics& d);
std::string format_sarif(const Diagnostics& d);  // SARIF 2.1.0

}  // namespace popper
