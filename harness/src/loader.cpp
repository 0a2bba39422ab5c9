// Contract loading: read (size-capped), check the text is text, pre-scan the
// nesting depth (so the YAML parser never recurses deeply), parse, check the
// schema, build the model, then resolve references within the contract.
#include "popper/loader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <yaml-cpp/yaml.h>

#include "schema.hpp"
#include "yaml_json.hpp"
#include "popper/mutant.hpp"

namespace fs = std::filesystem;

namespace popper {

namespace {

const std::vector<std::string> kCapabilities = {"cuda", "vulkan", "ggml", "avx2", "avx512", "avx512_bf16"};

// First byte that is not valid UTF-8 (or a NUL), as a position; nullopt if clean.
std::optional<SourcePos> first_non_text(const std::string& s, const std::string& file) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = len != 0 && c != 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) >> 6) == 0x2;
    if (ok && c < 0x20 && c != '\n' && c != '\t' && c != '\r') ok = false;  // control characters
    if (!ok) return SourcePos{file, line, col};
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
    i += len;
  }
  return std::nullopt;
}

// Conservative nesting estimate: flow brackets outside quotes plus the stack
// of block indentation levels. Over the cap → refuse before parsing.
std::optional<SourcePos> too_deep(const std::string& s, const std::string& file, int cap) {
  std::vector<std::size_t> indents;
  int flow = 0, line = 1;
  std::size_t pos = 0;
  while (pos <= s.size()) {
    std::size_t end = s.find('\n', pos);
    if (end == std::string::npos) end = s.size();
    const std::string_view l(s.data() + pos, end - pos);
    const std::size_t ind = l.find_first_not_of(' ');
    if (ind != std::string_view::npos && l[ind] != '#' && flow == 0) {
      std::size_t eff = ind;
      // "- - - x" nests one level per dash on the same line.
      int dashes = 0;
      while (eff + 1 < l.size() && l[eff] == '-' && l[eff + 1] == ' ') {
        eff += 2;
        ++dashes;
        while (eff < l.size() && l[eff] == ' ') ++eff;
      }
      while (!indents.empty() && indents.back() >= ind + 1) indents.pop_back();
      if (indents.empty() || indents.back() < ind + 1) indents.push_back(ind + 1);
      if (static_cast<int>(indents.size()) + dashes > cap) return SourcePos{file, line, static_cast<int>(ind) + 1};
    }
    char quote = 0;
    for (std::size_t i = 0; i < l.size(); ++i) {
      const char c = l[i];
      if (quote) {
        if (c == quote) quote = 0;
        continue;
      }
      if (c == '#' && (i == 0 || l[i - 1] == ' ')) break;
      if ((c == '"' || c == '\'') && (i == 0 || std::string_view(" [{,:").find(l[i - 1]) != std::string_view::npos)) {
        quote = c;
      } else if (c == '[' || c == '{') {
        if (++flow + static_cast<int>(indents.size()) > cap) return SourcePos{file, line, static_cast<int>(i) + 1};
      } else if ((c == ']' || c == '}') && flow > 0) {
        --flow;
      }
    }
    pos = end + 1;
    ++line;
  }
  return std::nullopt;
}

std::string scalar(const YAML::Node& n, const char* key) {
  const YAML::Node v = n[key];
  if (POPPER_MUTANT("loader-unchecked-node-type") && v) return v.as<std::string>();  // throws on a list or map
  return v && v.IsScalar() ? v.Scalar() : std::string();
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
    if (m.IsMap()) out.push_back({scalar(m, "id"), scalar(m, "description"), scalar(m, "path"), schema::pos_of(m, file)});
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

Contract build_model(const YAML::Node& root, const std::string& file) {
  Contract c;
  c.path = file;
  c.stem = fs::path(file).stem().string();
  if (const YAML::Node md = root["metadata"]; md && md.IsMap()) {
    c.version = scalar(md, "version");
    c.description = scalar(md, "description");
    c.depends_on = scalars(md, "depends_on", &c.depends_on_pos, file);
  }
  if (const YAML::Node eqs = root["equations"]; eqs && eqs.IsMap())
    for (auto it = eqs.begin(); it != eqs.end(); ++it) {
      if (!it->first.IsScalar() || !it->second.IsMap()) continue;
      c.equations.push_back({it->first.Scalar(), scalar(it->second, "formula"), scalars(it->second, "invariants"),
                             schema::pos_of(it->first, file)});
    }
  if (const YAML::Node obs = root["proof_obligations"]; obs && obs.IsSequence())
    for (const auto& o : obs) {
      if (!o.IsMap()) continue;
      Obligation ob{scalar(o, "id"), scalar(o, "type"), scalar(o, "property"), scalar(o, "formal"),
                    number<double>(o, "tolerance"), scalar(o, "applies_to"), schema::pos_of(o, file),
                    scalars(o, "backends")};
      c.obligations.push_back(std::move(ob));
    }
  if (const YAML::Node fts = root["falsification_tests"]; fts && fts.IsSequence())
    for (const auto& t : fts) {
      if (!t.IsMap()) continue;
      FalsificationTest ft;
      ft.id = scalar(t, "id");
      ft.rule = scalar(t, "rule");
      ft.prediction = scalar(t, "prediction");
      ft.test = scalar(t, "test");
      ft.if_fails = scalar(t, "if_fails");
      ft.covers = scalars(t, "covers");
      ft.requires_ = scalars(t, "requires");
      ft.mutants = mutants(t, file);
      if (const YAML::Node p = t["params"]; p && p.IsMap()) ft.params = yaml_to_json(p, kMaxNestingDepth);
      ft.pos = schema::pos_of(t, file);
      c.falsification_tests.push_back(std::move(ft));
    }
  if (const YAML::Node khs = root["kani_harnesses"]; khs && khs.IsSequence())
    for (const auto& h : khs) {
      if (!h.IsMap()) continue;
      KaniHarness kh;
      kh.id = scalar(h, "id");
      kh.obligation = scalar(h, "obligation");
      kh.property = scalar(h, "property");
      kh.bound = number<std::int64_t>(h, "bound");
      kh.strategy = scalar(h, "strategy");
      kh.harness = scalar(h, "harness");
      kh.requires_ = scalars(h, "requires");
      kh.mutants = mutants(h, file);
      if (const YAML::Node p = h["params"]; p && p.IsMap()) kh.params = yaml_to_json(p, kMaxNestingDepth);
      if (kh.bound) kh.params["bound"] = *kh.bound;
      kh.pos = schema::pos_of(h, file);
      c.kani_harnesses.push_back(std::move(kh));
    }
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
      bc.denominator = scalar(b, "denominator");
      bc.op = scalar(b, "op");
      bc.threshold = number<double>(b, "threshold").value_or(0.0);
      bc.shapes = scalars(b, "shapes");
      if (bc.shapes.size() == 1 && bc.shapes[0] == "all") bc.shapes.clear();
      bc.precision = scalar(b, "precision");
      if (auto t = number<int>(b, "threads")) bc.threads = *t;
      bc.pos = schema::pos_of(b, file);
      c.benchmarks.push_back(std::move(bc));
    }
  return c;
}

// References inside one contract.
void check_references(const Contract& c, Diagnostics& diags) {
  static const std::regex kObligationId(R"(^[A-Z][A-Z0-9]*(-[A-Z0-9]+)*-PO-[0-9]{3,}$)");
  std::vector<std::string> equation_names;
  for (const auto& e : c.equations) equation_names.push_back(e.name);
  std::vector<std::string> obligation_ids;
  for (const auto& o : c.obligations) obligation_ids.push_back(o.id);

  for (const auto& o : c.obligations) {
    if (!o.id.empty() && !std::regex_match(o.id, kObligationId))
      diags.error("POP-V025", o.pos,
                  fmt::format("obligation id '{}' does not have the form <PREFIX>-PO-NNN; rename it, e.g. "
                              "'GEMM-PO-001'",
                              o.id));
    if (!o.applies_to.empty() && o.applies_to != "all" && !c.find_equation(o.applies_to) &&
        !POPPER_MUTANT("loader-applies-to-unchecked")) {
      const std::string hint = schema::did_you_mean(o.applies_to, equation_names);
      diags.error("POP-V020", o.pos,
                  fmt::format("obligation {} applies_to '{}', which names no equation of this contract; {}",
                              o.id.empty() ? "'" + o.property + "'" : o.id, o.applies_to,
                              hint.empty() ? "add that equation or name an existing one"
                                           : "did you mean '" + hint + "'?"));
    }
  }
  for (const auto& h : c.kani_harnesses)
    if (!h.obligation.empty() && !c.find_obligation(h.obligation)) {
      const std::string hint = schema::did_you_mean(h.obligation, obligation_ids);
      diags.error("POP-V021", h.pos,
                  fmt::format("harness {} names obligation '{}', which no proof obligation of this contract has as "
                              "its id; {}",
                              h.id, h.obligation,
                              hint.empty() ? "give the obligation that id or name an existing one"
                                           : "did you mean '" + hint + "'?"));
    }
  for (const auto& t : c.falsification_tests)
    for (const auto& cov : t.covers)
      if (!c.find_obligation(cov))
        diags.error("POP-V023", t.pos,
                    fmt::format("test {} covers '{}', which is not an obligation id of this contract; {}", t.id, cov,
                                schema::did_you_mean(cov, obligation_ids).empty()
                                    ? "name an existing obligation id"
                                    : "did you mean '" + schema::did_you_mean(cov, obligation_ids) + "'?"));

  auto check_requires = [&](const std::string& id, const std::vector<std::string>& req, const SourcePos& pos) {
    for (const auto& r : req)
      if (std::find(kCapabilities.begin(), kCapabilities.end(), r) == kCapabilities.end())
        diags.error("POP-V026", pos,
                    fmt::format("{} requires unknown capability '{}'; known capabilities are {}", id, r,
                                fmt::join(kCapabilities, ", ")));
  };
  for (const auto& t : c.falsification_tests) check_requires(t.id, t.requires_, t.pos);
  for (const auto& h : c.kani_harnesses) check_requires(h.id, h.requires_, h.pos);

  // Mutants: unique per test; a falsification test without one has shown no power.
  auto check_mutants = [&](const std::string& id, const std::vector<Mutant>& ms) {
    std::set<std::string> seen;
    for (const auto& m : ms)
      if (!m.id.empty() && !seen.insert(m.id).second)
        diags.error("POP-V028", m.pos,
                    fmt::format("{} declares mutant '{}' twice; give each mutant its own id", id, m.id));
  };
  for (const auto& t : c.falsification_tests) {
    check_mutants(t.id, t.mutants);
    if (t.mutants.empty())
      diags.warning("POP-V042", t.pos,
                    fmt::format("{} declares no mutant, so nothing shows it can fail; add 'mutants:' with a broken "
                                "variant taken from its if_fails",
                                t.id));
  }
  for (const auto& h : c.kani_harnesses) check_mutants(h.id, h.mutants);

  for (const auto& b : c.benchmarks) {
    if (b.metric == "peak_fraction" && !b.denominator.empty())
      diags.error("POP-V027", b.pos,
                  fmt::format("benchmark {} uses metric peak_fraction, which divides by the measured peak; remove "
                              "'denominator'",
                              b.id));
    if ((b.metric == "time_ratio" || b.metric == "throughput_ratio") && b.denominator.empty())
      diags.error("POP-V027", b.pos,
                  fmt::format("benchmark {} uses metric {} but has no 'denominator' tier; add one", b.id, b.metric));
  }

  if (c.qa_gate) {
    for (std::size_t i = 0; i < c.qa_gate->checks.size(); ++i) {
      const std::string& chk = c.qa_gate->checks[i];
      const bool found = c.find_equation(chk) || c.find_test(chk) || c.find_harness(chk) ||
                         std::any_of(c.benchmarks.begin(), c.benchmarks.end(),
                                     [&](const BenchmarkClaim& b) { return b.id == chk; });
      if (!found)
        diags.error("POP-V022", c.qa_gate->check_pos[i],
                    fmt::format("qa_gate check '{}' names neither an equation nor a test id of this contract; {}",
                                chk,
                                schema::did_you_mean(chk, equation_names).empty()
                                    ? "name an equation, a falsification test, a harness or a benchmark id"
                                    : "did you mean '" + schema::did_you_mean(chk, equation_names) + "'?"));
    }
  }

  // An obligation nothing backs can never be covered: say so early.
  for (const auto& o : c.obligations) {
    if (o.id.empty()) continue;
    const bool backed =
        std::any_of(c.falsification_tests.begin(), c.falsification_tests.end(),
                    [&](const FalsificationTest& t) {
                      return std::find(t.covers.begin(), t.covers.end(), o.id) != t.covers.end();
                    }) ||
        std::any_of(c.kani_harnesses.begin(), c.kani_harnesses.end(),
                    [&](const KaniHarness& h) { return h.obligation == o.id; });
    if (!backed)
      diags.warning("POP-V041", o.pos,
                    fmt::format("obligation {} is backed by no test ('covers' of a falsification test or a harness "
                                "'obligation'); it will count as uncovered",
                                o.id));
  }
}

}  // namespace

LoadResult load_contract_text(const std::string& text, const std::string& file, Diagnostics& diags) {
  LoadResult r;
  const SourcePos top{file, 1, 1};
  if (text.size() > kMaxContractBytes && !POPPER_MUTANT("loader-no-size-cap")) {
    diags.error("POP-V002", {file, 0, 0},
                fmt::format("file is {} bytes, over the {} byte limit for a contract; split it into several "
                            "contracts",
                            text.size(), kMaxContractBytes));
    return r;
  }
  if (auto bad = first_non_text(text, file)) {
    diags.error("POP-V003", *bad, "not a text file: invalid UTF-8, a NUL or a control byte here; save the contract "
                                  "as UTF-8 YAML");
    return r;
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    diags.error("POP-V004", top, "the contract is empty; start from contracts/SCHEMA.md (it needs at least metadata)");
    return r;
  }
  if (auto deep = too_deep(text, file, kMaxNestingDepth)) {
    diags.error("POP-V006", *deep,
                fmt::format("nesting deeper than {} levels; a contract needs at most 6, so flatten this value",
                            kMaxNestingDepth));
    return r;
  }
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    const SourcePos p = e.mark.line >= 0 ? SourcePos{file, e.mark.line + 1, e.mark.column + 1} : top;
    diags.error("POP-V005", p, fmt::format("YAML syntax error: {}; fix the YAML here", e.msg));
    return r;
  }
  if (root.IsNull()) {
    diags.error("POP-V004", top, "the contract holds no YAML content (only comments?); it needs at least metadata");
    return r;
  }
  if (!root.IsMap()) {
    diags.error("POP-V007", schema::pos_of(root, file),
                "the top level of a contract must be a mapping (metadata:, equations:, ...), not a list or a scalar");
    return r;
  }
  const std::size_t before = diags.error_count();
  if (!schema::check(root, schema::contract_root(), file, {kMaxNestingDepth, kMaxNodes}, diags)) return r;
  r.contract = build_model(root, file);
  check_references(r.contract, diags);
  r.ok = diags.error_count() == before;
  return r;
}

LoadResult load_contract_file(const std::string& path, Diagnostics& diags) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    diags.error("POP-V001", {path, 0, 0}, fmt::format("cannot read the file: {}", ec.message()));
    return {};
  }
  if (size > kMaxContractBytes) {
    diags.error("POP-V002", {path, 0, 0},
                fmt::format("file is {} bytes, over the {} byte limit for a contract; split it into several "
                            "contracts",
                            size, kMaxContractBytes));
    return {};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error("POP-V001", {path, 0, 0}, "cannot open the file for reading; check the path and its permissions");
    return {};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return load_contract_text(ss.str(), path, diags);
}

std::vector<std::string> expand_contract_paths(const std::vector<std::string>& paths, Diagnostics& diags) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      std::vector<std::string> found;
      for (const auto& e : fs::directory_iterator(p, ec)) {
        const auto ext = e.path().extension().string();
        if (e.is_regular_file() && (ext == ".yaml" || ext == ".yml")) found.push_back(e.path().string());
      }
      std::sort(found.begin(), found.end());
      if (found.empty())
        diags.error("POP-V040", {p, 0, 0},
                    "no contracts here: the directory holds no *.yaml or *.yml file; point popper at a contracts/ "
                    "folder");
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(p, ec)) {
      files.push_back(p);
    } else {
      diags.error("POP-V001", {p, 0, 0}, "no such file or directory; check the path");
    }
  }
  return files;
}

const Contract* ContractSet::find_stem(const std::string& stem) const {
  for (const auto& c : contracts)
    if (c.stem == stem) return &c;
  return nullptr;
}

ContractSet load_contract_set(const std::vector<std::string>& paths, Diagnostics& diags) {
  ContractSet set;
  for (const auto& f : expand_contract_paths(paths, diags)) {
    LoadResult r = load_contract_file(f, diags);
    if (!r.contract.stem.empty()) set.contracts.push_back(std::move(r.contract));
  }
  check_contract_set(set, diags);
  return set;
}

void check_contract_set(const ContractSet& set, Diagnostics& diags) {
  // Ids are unique across the whole set: a result names an id, not a file.
  std::map<std::string, SourcePos> first_seen;
  auto claim_id = [&](const std::string& id, const SourcePos& pos) {
    if (id.empty()) return;
    auto [it, inserted] = first_seen.emplace(id, pos);
    if (!inserted)
      diags.error("POP-V030", pos,
                  fmt::format("id '{}' is already used at {}:{}; ids must be unique across all contracts, so rename "
                              "one",
                              id, it->second.file, it->second.line));
  };
  for (const auto& c : set.contracts) {
    for (const auto& o : c.obligations) claim_id(o.id, o.pos);
    for (const auto& t : c.falsification_tests) claim_id(t.id, t.pos);
    for (const auto& h : c.kani_harnesses) claim_id(h.id, h.pos);
    for (const auto& b : c.benchmarks) claim_id(b.id, b.pos);
  }

  // depends_on resolves to a contract in the set, and the graph is acyclic.
  std::vector<std::string> stems;
  for (const auto& c : set.contracts) stems.push_back(c.stem);
  for (const auto& c : set.contracts)
    for (std::size_t i = 0; i < c.depends_on.size(); ++i)
      if (!set.find_stem(c.depends_on[i])) {
        const std::string hint = schema::did_you_mean(c.depends_on[i], stems);
        diags.error("POP-V031", c.depends_on_pos[i],
                    fmt::format("depends_on names '{}', but no contract {}.yaml was loaded; {}", c.depends_on[i],
                                c.depends_on[i],
                                hint.empty() ? "add that contract or remove the dependency"
                                             : "did you mean '" + hint + "'?"));
      }
  enum class Mark { White, Grey, Black };
  std::map<std::string, Mark> mark;
  std::vector<std::string> stack;
  std::set<std::string> reported;
  std::function<void(const Contract&)> dfs = [&](const Contract& c) {
    mark[c.stem] = Mark::Grey;
    stack.push_back(c.stem);
    for (std::size_t i = 0; i < c.depends_on.size(); ++i) {
      const Contract* d = set.find_stem(c.depends_on[i]);
      if (!d) continue;
      if (mark[d->stem] == Mark::Grey && !POPPER_MUTANT("loader-no-cycle-check")) {
        auto from = std::find(stack.begin(), stack.end(), d->stem);
        std::string cycle;
        for (auto it = from; it != stack.end(); ++it) cycle += *it + " -> ";
        cycle += d->stem;
        if (reported.insert(cycle).second)
          diags.error("POP-V032", c.depends_on_pos[i],
                      fmt::format("depends_on forms a cycle: {}; remove one of these dependencies", cycle));
      } else if (mark[d->stem] == Mark::White) {
        dfs(*d);
      }
    }
    stack.pop_back();
    mark[c.stem] = Mark::Black;
  };
  for (const auto& c : set.contracts) mark[c.stem] = Mark::White;
  for (const auto& c : set.contracts)
    if (mark[c.stem] == Mark::White) dfs(c);
}

}  // namespace popper
