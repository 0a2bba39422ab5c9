#include <cstdlib>
#include <string>

#include "popper/binding.hpp"

namespace popper {

namespace {

// A sanitizer build (make asan): AddressSanitizer and UBSan at -O1 run the
// kernels 10-30x slower (FALSIFY-BUDGET-001's step: 4.8 s native, 133 s).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

}  // namespace

bool sanitizer_build() { return kSanitized; }

// Under an emulated CPU (the qemu legs of make test-cpus) and in a sanitizer
// build, a test's `params.emulated` map, when the contract gives one,
// overrides its keys: the contract states the smaller grid those slow runs
// prove (emulation runs the kernels 10-100x slower); make test and the native
// leg always use the full params.
const nlohmann::json* Params::find(const std::string& key) const {
  if (!v_.is_object()) return nullptr;
  if (const auto em = v_.find("emulated"); em != v_.end() && em->is_object() && key != "emulated" &&
                                           (sanitizer_build() || execution_site().rfind("emulated:", 0) == 0))
    if (const auto it = em->find(key); it != em->end()) return &*it;
  auto it = v_.find(key);
  return it == v_.end() ? nullptr : &*it;
}

void Params::type_error(const std::string& key, const char* wanted) const {
  throw ParamError(owner_ + ": params." + key + " must be " + wanted + ", got " + std::string(find(key)->type_name()));
}

namespace {
[[noreturn]] void missing(const std::string& owner, const std::string& key) {
  throw ParamError(owner + ": params." + key + " is required by its falsifier but missing from the contract");
}
}  // namespace

double Params::number(const std::string& key, std::optional<double> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  if (!v->is_number()) type_error(key, "a number");
  return v->get<double>();
}

std::int64_t Params::integer(const std::string& key, std::optional<std::int64_t> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  if (!v->is_number_integer()) type_error(key, "an integer");
  return v->get<std::int64_t>();
}

std::string Params::string(const std::string& key, std::optional<std::string> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  if (!v->is_string()) type_error(key, "a string");
  return v->get<std::string>();
}

bool Params::boolean(const std::string& key, std::optional<bool> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  if (!v->is_boolean()) type_error(key, "true or false");
  return v->get<bool>();
}

template <class T, class Pred>
static std::vector<T> list_of(const Params& p, const nlohmann::json* v, const std::string& key, Pred ok,
                              const char* wanted) {
  if (!v->is_array()) throw ParamError(p.owner() + ": params." + key + " must be a list of " + wanted);
  std::vector<T> out;
  for (const auto& e : *v) {
    if (!ok(e)) throw ParamError(p.owner() + ": params." + key + " must be a list of " + wanted);
    out.push_back(e.template get<T>());
  }
  return out;
}

std::vector<std::int64_t> Params::integers(const std::string& key,
                                           std::optional<std::vector<std::int64_t>> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  return list_of<std::int64_t>(
      *this, v, key, [](const nlohmann::json& e) { return e.is_number_integer(); }, "integers");
}

std::vector<double> Params::numbers(const std::string& key, std::optional<std::vector<double>> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  return list_of<double>(
      *this, v, key, [](const nlohmann::json& e) { return e.is_number(); }, "numbers");
}

std::vector<std::string> Params::strings(const std::string& key,
                                         std::optional<std::vector<std::string>> fallback) const {
  const auto* v = find(key);
  if (!v) {
    if (fallback) return *fallback;
    missing(owner_, key);
  }
  return list_of<std::string>(
      *this, v, key, [](const nlohmann::json& e) { return e.is_string(); }, "strings");
}

std::vector<Params> Params::list(const std::string& key) const {
  const auto* v = find(key);
  if (!v) missing(owner_, key);
  if (!v->is_array()) type_error(key, "a list of mappings");
  std::vector<Params> out;
  for (const auto& e : *v) {
    if (!e.is_object()) type_error(key, "a list of mappings");
    out.emplace_back(owner_, e);
  }
  return out;
}

std::uint64_t Params::seed() const {
  if (const char* env = std::getenv("POPPER_SEED"); env && *env) {
    char* end = nullptr;
    const unsigned long long s = std::strtoull(env, &end, 10);
    if (end && *end == '\0') return s;
    throw ParamError("POPPER_SEED must be a decimal integer, got '" + std::string(env) + "'");
  }
  return static_cast<std::uint64_t>(integer("seed", 20261122));
}

std::int64_t Params::bound() const {
  const auto* v = find("bound");
  if (!v) throw ParamError(owner_ + ": a kani harness needs `bound` for its exhaustive enumeration");
  if (!v->is_number_integer()) type_error("bound", "an integer");
  return v->get<std::int64_t>();
}

}  // namespace popper
