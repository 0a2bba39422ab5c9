#include "contract/model.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "contract/schema.hpp"
#include "contract/yaml_json.hpp"
#include "popper/mutant.hpp"
#include "popper/parse_bounds.hpp"

namespace fs = std::filesystem;

namespace popper::model {

namespace {

// node[key], or node[alias] for one of pv's aliases of key in `spec`.
YAML::Node get(const YAML::Node& n, const char* key, const schema::NodeSpec* spec = nullptr) {
  if (YAML::Node v = n[key]) return v;
  if (spec && !POPPER_MUTANT("pv-aliases-ignored"))
    for (const auto& [alias, target] : spec->pv_aliases)
      if (target == key)
        if (YAML::Node v = n[alias]) return v;
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string scalar_of(const YAML::Node& v) {
  if (POPPER_MUTANT("loader-unchecked-node-type") && v) return v.as<std::string>();  // throws on a list or map
  return v && v.IsScalar() ? v.Scalar() : std::string();
}

std::string scalar(const YAML::Node& n, const char* key, const schema::NodeSpec* spec = nullptr) {
  return scalar_of(get(n, key, spec));
}

std::vector<std::string> scalars(const YAML::Node& n, const char* key, std::vector<SourcePos>* pos = nullptr,
                                 const std::string& file = {}) {
  std::vector<std::string> out;
  const YAML::Node v = n[key];
  if (v && v.IsScalar()) {
    out.push_back(v.Scalar());
    if (pos) pos->push_back(schema::pos_of(v, file));
  }
  if (!v || !v.IsSequence()) return out;
  for (const auto& e : v)
    if (e.IsScalar()) {
      out.push_back(e.Scalar());
      if (pos) pos->push_back(schema::pos_of(e, file));
    }
  return out;
}

std::vector<Mutant> mutants(const YAML::Node& n, const std::string& file) {
  std::vector<Mutant> out;
  const YAML::Node v = n["mutants"];
  if (!v || !v.IsSequence()) return out;
  for (const auto& m : v)
    if (m.IsMap())
      out.push_back({scalar(m, "id"), scalar(m, "description"), scalar(m, "path"), schema::pos_of(m, file)});
  return out;
}

template <class T>
std::optional<T> number(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  if (!v || !v.IsScalar()) return std::nullopt;
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

SourcePos value_pos(const YAML::Node& v, const std::string& file) { return v ? schema::pos_of(v, file) : SourcePos{}; }

const std::regex& explicit_id_pattern() {
  static const std::regex re(R"(^([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*)-PO-([0-9]{3,})$)");
  return re;
}

Obligation read_obligation(const YAML::Node& o, const std::string& file, Profile profile) {
  const auto* spec = &schema::obligation_spec();
  Obligation ob{scalar(o, "id"),
                scalar(o, "type"),
                scalar(o, "property", spec),
                scalar(o, "formal", spec),
                number<double>(o, "tolerance"),
                scalar(o, "applies_to"),
                schema::pos_of(o, file),
                scalars(o, "backends")};
  if (ob.type.empty() && profile == Profile::Pv && !o["type"]) {
    ob.type = "invariant";  // pv's default for legacy obligations without a type
    ob.type_defaulted = true;
  }
  ob.has_formal = static_cast<bool>(get(o, "formal", spec));
  ob.applies_to_pos = value_pos(o["applies_to"], file);
  ob.requires_ref = scalar(o, "requires");
  ob.requires_pos = value_pos(o["requires"], file);
  ob.applies_to_phase = scalar(o, "applies_to_phase");
  ob.applies_to_phase_pos = value_pos(o["applies_to_phase"], file);
  ob.parent_contract = scalar(o, "parent_contract");
  ob.parent_contract_pos = value_pos(o["parent_contract"], file);
  return ob;
}

FalsificationTest read_test(const YAML::Node& t, const std::string& file) {
  const auto* spec = &schema::falsification_test_spec();
  FalsificationTest ft;
  ft.id = scalar(t, "id");
  ft.rule = scalar(t, "rule", spec);
  ft.prediction = scalar(t, "prediction", spec);
  ft.has_prediction = static_cast<bool>(get(t, "prediction", spec));
  ft.test = scalar(t, "test", spec);
  if (ft.test.empty()) ft.test = scalar(t, "test_harness");
  ft.if_fails = scalar(t, "if_fails", spec);
  ft.has_if_fails = static_cast<bool>(get(t, "if_fails", spec));
  ft.covers = scalars(t, "covers", &ft.covers_pos, file);
  ft.requires_ = scalars(t, "requires");
  ft.mutants = mutants(t, file);
  if (const YAML::Node p = t["params"]; p && p.IsMap()) ft.params = yaml_to_json(p, kMaxNestingDepth);
  ft.pos = schema::pos_of(t, file);
  return ft;
}

KaniHarness read_harness(const YAML::Node& h, const std::string& file) {
  KaniHarness kh;
  kh.id = scalar(h, "id");
  kh.obligation = scalar(h, "obligation");
  kh.obligation_written = kh.obligation;
  kh.obligation_pos = value_pos(h["obligation"], file);
  kh.property = scalar(h, "property");
  kh.bound = number<std::int64_t>(h, "bound");
  kh.has_bound = static_cast<bool>(h["bound"]);
  if (kh.bound && *kh.bound < 0) kh.bound.reset();  // rejected by the schema (POP-V012)
  kh.strategy = scalar(h, "strategy");
  kh.harness = scalar(h, "harness");
  kh.requires_ = scalars(h, "requires");
  kh.mutants = mutants(h, file);
  if (const YAML::Node p = h["params"]; p && p.IsMap()) kh.params = yaml_to_json(p, kMaxNestingDepth);
  if (kh.bound) kh.params["bound"] = *kh.bound;
  kh.pos = schema::pos_of(h, file);
  return kh;
}

}  // namespace

Contract build(const YAML::Node& root, const std::string& file, Profile profile) {
  Contract c;
  c.path = file;
  c.stem = fs::path(file).stem().string();
  c.profile = profile;
  if (const YAML::Node md = root["metadata"]; md && md.IsMap()) {
    c.metadata_pos = schema::pos_of(md, file);
    c.version = scalar(md, "version");
    c.description = scalar(md, "description");
    c.depends_on = scalars(md, "depends_on", &c.depends_on_pos, file);
    c.has_references = !scalars(md, "references").empty();
    if (const std::string k = scalar(md, "kind"); !k.empty()) c.kind = k;
    if (scalar(md, "registry") == "true" && c.kind == "kernel") c.kind = "registry";  // pv's legacy flag
  }
  if (const YAML::Node eqs = root["equations"]) {
    c.has_equations_key = true;
    if (eqs.IsMap())
      for (auto it = eqs.begin(); it != eqs.end(); ++it) {
        if (!it->first.IsScalar() || !it->second.IsMap()) continue;
        c.equations.push_back({it->first.Scalar(), scalar(it->second, "formula"), scalars(it->second, "invariants"),
                               schema::pos_of(it->first, file)});
      }
  }
  if (const YAML::Node obs = root["proof_obligations"]; obs && obs.IsSequence())
    for (const auto& o : obs)
      if (o.IsMap()) c.obligations.push_back(read_obligation(o, file, profile));
  if (const YAML::Node ks = root["kernel_structure"]; ks && ks.IsMap())
    if (const YAML::Node ph = ks["phases"]; ph && ph.IsSequence())
      for (const auto& p : ph)
        if (p.IsMap()) c.phases.push_back(scalar(p, "name"));
  if (const YAML::Node en = root["enforcement"]; en && en.IsMap())
    for (auto it = en.begin(); it != en.end(); ++it)
      if (it->first.IsScalar() && it->second.IsMap())
        c.enforcement.push_back({it->first.Scalar(), scalar(it->second, "check"), schema::pos_of(it->first, file)});
  if (const YAML::Node fts = root["falsification_tests"]; fts && fts.IsSequence())
    for (const auto& t : fts)
      if (t.IsMap()) c.falsification_tests.push_back(read_test(t, file));
  if (const YAML::Node khs = root["kani_harnesses"]; khs && khs.IsSequence())
    for (const auto& h : khs)
      if (h.IsMap()) c.kani_harnesses.push_back(read_harness(h, file));
  if (const YAML::Node qg = root["qa_gate"]; qg && qg.IsMap()) {
    QaGate g;
    g.id = scalar(qg, "id");
    g.name = scalar(qg, "name");
    g.checks = scalars(qg, "checks", &g.check_pos, file);
    g.pass_criteria = scalar(qg, "pass_criteria");
    g.pos = schema::pos_of(qg, file);
    c.qa_gate = std::move(g);
  }
  if (const YAML::Node bs = root["benchmarks"]; bs && bs.IsSequence())
    for (const auto& b : bs) {
      if (!b.IsMap()) continue;
      BenchmarkClaim bc;
      bc.id = scalar(b, "id");
      bc.claim = scalar(b, "claim");
      bc.family = scalar(b, "family");
      bc.metric = scalar(b, "metric");
      bc.numerator = scalar(b, "numerator");
      bc.numerator_backend = scalar(b, "numerator_backend");
      bc.denominator = scalar(b, "denominator");
      bc.denominator_precision = scalar(b, "denominator_precision");
      bc.denominator_backend = scalar(b, "denominator_backend");
      bc.op = scalar(b, "op");
      bc.threshold = number<double>(b, "threshold").value_or(0.0);
      bc.shapes = scalars(b, "shapes");
      if (bc.shapes.size() == 1 && bc.shapes[0] == "all") bc.shapes.clear();
      bc.precision = scalar(b, "precision");
      if (auto t = number<int>(b, "threads"); t && *t >= 0) bc.threads = *t;
      if (const std::string cache = scalar(b, "cache"); !cache.empty()) bc.cache = cache;
      if (const YAML::Node sc = b["scope"]; sc && sc.IsMap())
        bc.scope = ClaimScope{number<double>(sc, "attainable_peak_fraction").value_or(0.0), scalar(sc, "reason")};
      bc.pos = schema::pos_of(b, file);
      c.benchmarks.push_back(std::move(bc));
    }
  if (profile == Profile::Pv) assign_derived_ids(c);
  return c;
}

std::string stem_prefix(const std::string& stem) {
  std::string out;
  for (char ch : stem) {
    const auto u = static_cast<unsigned char>(ch);
    if (std::isalnum(u) && u < 0x80) {
      out += static_cast<char>(std::toupper(u));
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty()) return "CONTRACT";
  if (std::isdigit(static_cast<unsigned char>(out[0]))) out = "C-" + out;
  return out;
}

std::string obligation_prefix(const Contract& c) {
  std::set<std::string> prefixes;
  for (const auto& o : c.obligations) {
    std::smatch m;
    if (!o.id_derived && !o.id.empty() && std::regex_match(o.id, m, explicit_id_pattern())) prefixes.insert(m[1]);
  }
  return prefixes.size() == 1 ? *prefixes.begin() : stem_prefix(c.stem);
}

std::string suggested_obligation_id(const Contract& c, std::size_t index) {
  const std::string prefix = obligation_prefix(c);
  std::set<std::string> taken;
  long highest = 0;
  for (std::size_t i = 0; i < c.obligations.size(); ++i) {
    const auto& o = c.obligations[i];
    if (o.id.empty()) continue;
    taken.insert(o.id);
    std::smatch m;
    if (std::regex_match(o.id, m, explicit_id_pattern()) && m[1] == prefix && m[2].length() < 9)
      highest = std::max(highest, std::stol(m[2]));
  }
  std::string id = fmt::format("{}-PO-{:03}", prefix, index + 1);
  for (long n = std::max<long>(highest, static_cast<long>(c.obligations.size())) + 1; taken.count(id); ++n)
    id = fmt::format("{}-PO-{:03}", prefix, n);
  return id;
}

void assign_derived_ids(Contract& c) {
  for (std::size_t i = 0; i < c.obligations.size(); ++i) {
    if (!c.obligations[i].id.empty()) continue;
    c.obligations[i].id = suggested_obligation_id(c, i);
    c.obligations[i].id_derived = true;
  }
}

}  // namespace popper::model
