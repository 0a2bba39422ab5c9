// libFuzzer entry: any byte string through the loader, the validator and the
// set checks. A crash, a sanitizer report, an escaped exception or a
// diagnostic without a code is a finding.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "popper/loader.hpp"
#include "popper/scaffold.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  popper::Diagnostics diags;
  popper::LoadResult r = popper::load_contract_text(text, "fuzz.yaml", diags);
  for (const auto& d : diags.all())
    if (d.code.empty() || d.message.empty()) std::abort();
  if (r.ok == diags.has_errors()) std::abort();
  popper::ContractSet set;
  set.contracts.push_back(r.contract);
  popper::check_contract_set(set, diags);
  if (r.ok) (void)popper::scaffold_source(r.contract, "fuzz.yaml");
  return 0;
}
