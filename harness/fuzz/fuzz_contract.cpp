// libFuzzer entry: any byte string through what a user sees: the loader and
// validator under both profiles, the set checks, the text, json and sarif
// report writers, and `popper migrate`. A crash, a sanitizer report, an
// escaped exception (nlohmann::json throws on invalid UTF-8), a diagnostic
// without a code, or a report that is not valid UTF-8 is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/utf8.hpp"
#include "popper/loader.hpp"
#include "popper/migrate.hpp"
#include "popper/scaffold.hpp"

namespace {

void check_reports(const popper::Diagnostics& diags) {
  for (const auto& d : diags.all())
    if (d.code.empty() || d.message.empty()) std::abort();
  const std::string text = popper::format_text(diags);
  const std::string json = popper::format_json(diags);
  const std::string sarif = popper::format_sarif(diags);
  if (!popper::utf8::is_valid(text) || !popper::utf8::is_valid(json) || !popper::utf8::is_valid(sarif)) std::abort();
  if (!nlohmann::json::accept(json) || !nlohmann::json::accept(sarif)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // The first byte picks an odd file name now and then: names reach the
  // reports as they are, and a name need not be valid UTF-8.
  const std::string file = size > 0 && data[0] % 8 == 0 ? "dir\xFF/f\xC3.yaml" : "fuzz.yaml";
  for (auto profile : {popper::Profile::Strict, popper::Profile::Pv}) {
    popper::Diagnostics diags;
    popper::LoadResult r = popper::load_contract_text(text, file, diags, profile);
    if (r.ok == diags.has_errors()) std::abort();
    popper::ContractSet set;
    set.contracts.push_back(r.contract);
    popper::check_contract_set(set, diags);
    check_reports(diags);
    if (r.ok && profile == popper::Profile::Strict) (void)popper::scaffold_source(r.contract, text, file);
  }
  popper::Diagnostics mdiags;
  const popper::Migration m = popper::migrate_contract_text(text, file, mdiags);
  if (!m.ok && m.text != text) std::abort();  // a refused migration leaves the text alone
  check_reports(mdiags);
  (void)popper::unified_diff(text, m.text, "a/" + file, "b/" + file);
  return 0;
}
