#include "popper/diagnostics.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include "popper/mutant.hpp"

namespace popper {

void Diagnostics::error(std::string code, SourcePos pos, std::string message) {
  items_.push_back({Severity::Error, std::move(code), std::move(pos), std::move(message)});
}

void Diagnostics::warning(std::string code, SourcePos pos, std::string message) {
  items_.push_back({Severity::Warning, std::move(code), std::move(pos), std::move(message)});
}

std::size_t Diagnostics::error_count() const {
  return static_cast<std::size_t>(
      std::count_if(items_.begin(), items_.end(), [](const Diagnostic& d) { return d.severity == Severity::Error; }));
}

static const char* severity_name(Severity s) { return s == Severity::Error ? "error" : "warning"; }

std::string format_text(const Diagnostic& d) {
  std::string where = d.pos.file.empty() ? "<input>" : d.pos.file;
  if (d.pos.line > 0) where += fmt::format(":{}:{}", d.pos.line, d.pos.col > 0 ? d.pos.col : 1);
  return fmt::format("{}: {}[{}]: {}", where, severity_name(d.severity), d.code, d.message);
}

std::string format_text(const Diagnostics& ds) {
  std::string out;
  for (const auto& d : ds.all()) out += format_text(d) + "\n";
  const std::size_t errors = ds.error_count();
  const std::size_t warnings = ds.all().size() - errors;
  out += fmt::format("{} error{}, {} warning{}\n", errors, errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
  return out;
}

std::string format_json(const Diagnostics& ds) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& d : ds.all())
    arr.push_back({{"severity", severity_name(d.severity)},
                   {"code", d.code},
                   {"file", d.pos.file},
                   {"line", d.pos.line},
                   {"column", d.pos.col},
                   {"message", d.message}});
  nlohmann::json doc = {{"diagnostics", arr},
                        {"errors", ds.error_count()},
                        {"warnings", ds.all().size() - ds.error_count()}};
  return doc.dump(2) + "\n";
}

std::string format_sarif(const Diagnostics& ds) {
  nlohmann::json results = nlohmann::json::array();
  nlohmann::json rules = nlohmann::json::array();
  std::vector<std::string> seen;
  for (const auto& d : ds.all()) {
    if (std::find(seen.begin(), seen.end(), d.code) == seen.end()) {
      seen.push_back(d.code);
      rules.push_back({{"id", d.code}});
    }
    nlohmann::json region = {{"startLine", std::max(d.pos.line, 1)}, {"startColumn", std::max(d.pos.col, 1)}};
    if (POPPER_MUTANT("sarif-drops-line")) region.erase("startLine");
    results.push_back({{"ruleId", d.code},
                       {"level", severity_name(d.severity)},
                       {"message", {{"text", d.message}}},
                       {"locations",
                        {{{"physicalLocation",
                           {{"artifactLocation", {{"uri", d.pos.file}}}, {"region", region}}}}}}});
  }
  nlohmann::json doc = {
      {"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
      {"version", "2.1.0"},
      {"runs",
       {{{"tool", {{"driver", {{"name", "popper"}, {"informationUri", "contracts/SCHEMA.md"}, {"rules", rules}}}}},
         {"results", results}}}}};
  return doc.dump(2) + "\n";
}

}  // namespace popper
