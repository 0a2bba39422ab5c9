// popper::run_bound inside GoogleTest: resolve the id in its contract, check
// `requires`, run the binding, and record the outcome as test properties
// (popper_id, popper_outcome, popper_reason) that `popper audit` reads.
#include <map>
#include <memory>
#include <mutex>

#include <gtest/gtest.h>

#include "popper/binding.hpp"
#include "popper/loader.hpp"

namespace popper {

namespace {

struct Loaded {
  Contract contract;
  std::string errors;  // non-empty when the contract did not load cleanly
};

const Loaded& load_cached(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Loaded>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[path];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    Diagnostics diags;
    LoadResult r = load_contract_file(path, diags);
    slot->contract = std::move(r.contract);
    if (diags.has_errors()) slot->errors = format_text(diags);
  }
  return *slot;
}

void record(const std::string& id, Outcome o, const std::string& reason) {
  ::testing::Test::RecordProperty("popper_id", id);
  ::testing::Test::RecordProperty("popper_outcome", to_string(o));
  if (!reason.empty()) ::testing::Test::RecordProperty("popper_reason", reason);
}

void skip_with(const std::string& why) { GTEST_SKIP() << why; }

}  // namespace

RunResult run_bound(const std::string& contract_path, const std::string& id) {
  const Loaded& loaded = load_cached(contract_path);
  if (!loaded.errors.empty()) {
    ADD_FAILURE() << "contract " << contract_path << " does not validate:\n" << loaded.errors;
    record(id, Outcome::Failed, "contract does not validate");
    return {Outcome::Failed, "contract does not validate"};
  }
  PreparedCall call = prepare_bound(loaded.contract, id);
  if (!call.ready()) {
    record(id, call.outcome, call.reason);
    if (call.outcome == Outcome::Failed)
      ADD_FAILURE() << call.reason;
    else
      skip_with(call.reason);
    return {call.outcome, call.reason};
  }
  try {
    call.binding->fn(call.params);
  } catch (const std::exception& e) {
    ADD_FAILURE() << id << " threw " << e.what();
  } catch (...) {
    ADD_FAILURE() << id << " threw a non-standard exception";
  }
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  const bool failed = ::testing::Test::HasFailure();
  const bool skipped = info && info->result() && info->result()->Skipped();
  const Outcome o = failed ? Outcome::Failed : skipped ? Outcome::Skipped : Outcome::Passed;
  std::string reason;
  if (skipped && info->result())
    for (int i = 0; i < info->result()->total_part_count(); ++i)
      if (info->result()->GetTestPartResult(i).skipped()) reason = info->result()->GetTestPartResult(i).message();
  record(id, o, reason);
  return {o, reason};
}

}  // namespace popper
