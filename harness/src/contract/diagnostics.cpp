#include "popper/diagnostics.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/utf8.hpp"
#include "popper/mutant.hpp"
#include "popper/version.hpp"

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

namespace {

// Report writers never throw and never emit invalid UTF-8: a file name or a
// message with bad bytes is written with U+FFFD in their place, and says so.
constexpr const char* kReplacedNote = "invalid UTF-8 replaced by U+FFFD";

struct Clean {
  std::string file, code, message;
  bool replaced = false;
};

Clean clean(const Diagnostic& d) {
  Clean c{d.pos.file, d.code, d.message};
  if (POPPER_MUTANT("report-keeps-bad-bytes")) return c;
  c.replaced = utf8::make_valid(c.file);
  c.replaced = utf8::make_valid(c.code) || c.replaced;
  c.replaced = utf8::make_valid(c.message) || c.replaced;
  return c;
}

// RFC 3986 percent-encoding of a path for a SARIF artifact URI: lossless, even
// for bytes that are not UTF-8.
std::string uri_of(const std::string& path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (char ch : path) {
    const auto u = static_cast<unsigned char>(ch);
    const bool keep = (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z') || (u >= '0' && u <= '9') || u == '-' ||
                      u == '.' || u == '_' || u == '~' || u == '/';
    if (keep) {
      out += ch;
    } else {
      out += '%';
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

}  // namespace

std::string format_text(const Diagnostic& d) {
  const Clean c = clean(d);
  std::string where = c.file.empty() ? "<input>" : c.file;
  if (d.pos.line > 0) where += fmt::format(":{}:{}", d.pos.line, d.pos.col > 0 ? d.pos.col : 1);
  return fmt::format("{}: {}[{}]: {}{}", where, severity_name(d.severity), c.code, c.message,
                     c.replaced ? fmt::format(" [{}]", kReplacedNote) : std::string());
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
  for (const auto& d : ds.all()) {
    const Clean c = clean(d);
    nlohmann::json j = {{"severity", severity_name(d.severity)},
                        {"code", c.code},
                        {"file", c.file},
                        {"line", d.pos.line},
                        {"column", d.pos.col},
                        {"message", c.message}};
    if (c.replaced) j["note"] = kReplacedNote;
    arr.push_back(std::move(j));
  }
  nlohmann::json doc = {{"diagnostics", arr},
                        {"errors", ds.error_count()},
                        {"warnings", ds.all().size() - ds.error_count()},
                        {"popper", build_json()}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string format_sarif(const Diagnostics& ds) {
  nlohmann::json results = nlohmann::json::array();
  nlohmann::json rules = nlohmann::json::array();
  std::vector<std::string> seen;
  for (const auto& d : ds.all()) {
    const Clean c = clean(d);
    if (std::find(seen.begin(), seen.end(), c.code) == seen.end()) {
      seen.push_back(c.code);
      rules.push_back({{"id", c.code}});
    }
    nlohmann::json region = {{"startLine", std::max(d.pos.line, 1)}, {"startColumn", std::max(d.pos.col, 1)}};
    if (POPPER_MUTANT("sarif-drops-line")) region.erase("startLine");
    nlohmann::json result = {
        {"ruleId", c.code},
        {"level", severity_name(d.severity)},
        {"message", {{"text", c.replaced ? c.message + " [" + kReplacedNote + "]" : c.message}}},
        {"locations",
         {{{"physicalLocation", {{"artifactLocation", {{"uri", uri_of(d.pos.file)}}}, {"region", region}}}}}}};
    results.push_back(std::move(result));
  }
  nlohmann::json doc = {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                        {"version", "2.1.0"},
                        {"runs",
                         {{{"tool",
                            {{"driver",
                              {{"name", "popper"},
                               {"version", build_id()},
                               {"semanticVersion", version()},
                               {"informationUri", "contracts/SCHEMA.md"},
                               {"rules", rules}}}}},
                           {"results", results}}}}};
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace popper
