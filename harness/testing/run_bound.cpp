// popper::run_bound inside GoogleTest: resolve the id in its contract, look up
// its binding, check `requires`, run the binding, judge the evidence it
// recorded, and write the outcome as test properties that `popper audit`
// reads: popper_id, popper_outcome, popper_reason, popper_backends
// ("tag=auto|forced,..."), popper_declines, popper_where, popper_mutant and
// popper_mutant_hits.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include <gtest/gtest.h>

#include "popper/binding.hpp"
#include "popper/loader.hpp"
#include "popper/mutant.hpp"
#include "popper/profile.hpp"

namespace popper {

namespace {

struct Loaded {
  Contract contract;
  std::string errors;  // non-empty when the contract did not load cleanly
};

// Contracts load once per process: a binary runs many ids of one contract.
template <class Load>
const Loaded& load_cached(const std::string& key, Load load) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Loaded>> cache;
  std::lock_guard lock(mu);
  auto& slot = cache[key];
  if (!slot) {
    slot = std::make_unique<Loaded>();
    Diagnostics diags;
    LoadResult r = load(diags);
    slot->contract = std::move(r.contract);
    if (diags.has_errors()) slot->errors = format_text(diags);
  }
  return *slot;
}

void record(const std::string& id, Outcome o, const std::string& reason, const Evidence& ev) {
  ::testing::Test::RecordProperty("popper_id", id);
  ::testing::Test::RecordProperty("popper_outcome", to_string(o));
  if (!reason.empty()) ::testing::Test::RecordProperty("popper_reason", reason);
  if (!ev.backends.empty()) ::testing::Test::RecordProperty("popper_backends", format_backends(ev.backends));
  if (!ev.declines.empty()) {
    std::string d;
    for (const auto& x : ev.declines) d += (d.empty() ? "" : "; ") + x;
    ::testing::Test::RecordProperty("popper_declines", d);
  }
  ::testing::Test::RecordProperty("popper_where", execution_site());
  if (!mutant::active_name().empty()) {
    ::testing::Test::RecordProperty("popper_mutant", mutant::active_name());
    ::testing::Test::RecordProperty("popper_mutant_hits", std::to_string(mutant::hit_count().load()));
  }
}

void skip_with(const std::string& why) { GTEST_SKIP() << why; }

RunResult run_loaded(const Loaded& loaded, const std::string& contract_name, const std::string& id) {
  if (!loaded.errors.empty()) {
    ADD_FAILURE() << "contract " << contract_name << " does not validate:\n" << loaded.errors;
    record(id, Outcome::Failed, "contract does not validate", {});
    return {Outcome::Failed, "contract does not validate"};
  }
  const DeviceRule rule = device_rule();
  PreparedCall call = prepare_bound(loaded.contract, id, rule);
  if (!call.ready()) {
    record(id, call.outcome, call.reason, {});
    if (call.outcome == Outcome::Failed) ADD_FAILURE() << call.reason;
    else skip_with(call.reason);
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
  std::string reason;
  if (skipped && info->result())
    for (int i = 0; i < info->result()->total_part_count(); ++i)
      if (info->result()->GetTestPartResult(i).skipped()) reason = info->result()->GetTestPartResult(i).message();
  const Evidence ev = take_evidence();
  RunResult judged = judge_evidence(failed    ? Outcome::Failed
                                    : skipped ? Outcome::Skipped
                                              : Outcome::Passed,
                                    reason, call.requires_, ev, rule);
  record(id, judged.outcome, judged.reason, ev);
  if (!failed && judged.outcome == Outcome::Failed) ADD_FAILURE() << judged.reason;
  if (!skipped && judged.outcome == Outcome::Skipped) skip_with(judged.reason);
  return judged;
}

void start_test() {
  take_evidence();  // nothing recorded outside this test counts for it
  mutant::hit_count().store(0);
}

}  // namespace

RunResult run_bound(const EmbeddedContract& contract, const std::string& id) {
  start_test();
  const std::string key =
      std::string("embedded:") + contract.file + "@" + std::to_string(reinterpret_cast<std::uintptr_t>(contract.text));
  const Loaded& loaded = load_cached(key, [&](Diagnostics& d) {
    return load_contract_text(contract.text, contract.file, d,
                              parse_profile(contract.profile).value_or(Profile::Strict));
  });
  return run_loaded(loaded, contract.file, id);
}

RunResult run_bound(const std::string& contract_path, const std::string& id) {
  start_test();
  const Loaded& loaded =
      load_cached("file:" + contract_path, [&](Diagnostics& d) { return load_contract_file(contract_path, d); });
  return run_loaded(loaded, contract_path, id);
}

}  // namespace popper
