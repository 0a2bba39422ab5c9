// Contract loading: read (size-capped), parse once under bounds (parse.cpp),
// walk the schema, build the model, then check references within the
// contract and, for a set, across contracts. The profile (strict | pv)
// changes what the rule table reports, never the path the text takes.
#include "popper/loader.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <system_error>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/utf8.hpp"
#include "contract/checks.hpp"
#include "contract/model.hpp"
#include "contract/parse.hpp"
#include "contract/rules.hpp"
#include "contract/schema.hpp"
#include "popper/mutant.hpp"

namespace fs = std::filesystem;

namespace popper {

namespace {

// A pv binding registry (contracts/<project>/binding.yaml) maps equations to
// functions; it lives among pv contracts but is not one.
bool is_pv_binding_registry(const YAML::Node& root, const std::string& file) {
  if (fs::path(file).filename() == "binding.yaml") return true;
  return root.IsMap() && !root["metadata"] && root["bindings"];
}

std::string io_reason(const std::error_code& ec) {
  if (ec == std::errc::too_many_symbolic_link_levels)
    return "a symbolic link loop (the link leads back to itself); fix or remove the link";
  if (ec == std::errc::no_such_file_or_directory) return "no such file or directory; check the path";
  if (ec == std::errc::permission_denied) return "permission denied; check the file's permissions";
  return ec.message();
}

// Why `p` cannot be read, naming symbolic-link loops and dangling links as such.
std::string unreadable_reason(const fs::path& p) {
  std::error_code ec, lec;
  const auto lst = fs::symlink_status(p, lec);
  (void)fs::status(p, ec);
  if (!lec && fs::is_symlink(lst)) {
    if (ec == std::errc::too_many_symbolic_link_levels) return io_reason(ec);
    std::error_code rec;
    const fs::path target = fs::read_symlink(p, rec);
    if (ec == std::errc::no_such_file_or_directory)
      return fmt::format("a dangling symbolic link (to '{}', which does not exist); fix or remove the link",
                         utf8::cut(target.string(), 200));
  }
  return io_reason(ec ? ec : lec);
}

// The schema walk, the model and the checks of one parsed contract.
LoadResult build_contract(const YAML::Node& root, const std::string& file, Diagnostics& diags, Profile profile) {
  LoadResult r;
  const std::size_t before = diags.error_count();
  if (!schema::check(root, schema::contract_root(), file, {kMaxNestingDepth, kMaxNodes}, profile, diags)) return r;
  r.contract = model::build(root, file, profile);
  checks::references(r.contract, diags);
  checks::pv_rules(r.contract, diags);
  r.ok = diags.error_count() == before;
  return r;
}

std::optional<std::string> read_contract_file(const std::string& path, Diagnostics& diags) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec) {
    diags.error("POP-V001", {path, 0, 0}, "cannot read the file: " + unreadable_reason(path));
    return std::nullopt;
  }
  if (size > kMaxContractBytes) {
    diags.error("POP-V002", {path, 0, 0},
                fmt::format("file is {} bytes, over the {} byte limit for a contract; split it into several "
                            "contracts",
                            size, kMaxContractBytes));
    return std::nullopt;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    diags.error("POP-V001", {path, 0, 0}, "cannot open the file for reading; check the path and its permissions");
    return std::nullopt;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

LoadResult load_file_as(const std::string& path, Diagnostics& diags, Profile profile) {
  const auto text = read_contract_file(path, diags);
  if (!text) return {};
  const auto root = parse::contract_root(*text, path, diags);
  if (!root) return {};
  // A pv binding registry sits among pv contracts (and stays there after a
  // migration); say it is skipped rather than reject it as a bad contract.
  if (is_pv_binding_registry(*root, path)) {
    diags.warning("POP-V045", {path, 1, 1},
                  "a pv binding registry (equations mapped to functions), not a contract: "
                  "skipped");
    LoadResult skipped;
    skipped.ok = true;
    return skipped;
  }
  return build_contract(*root, path, diags, profile);
}

}  // namespace

LoadResult load_contract_text(const std::string& text, const std::string& file, Diagnostics& diags, Profile profile,
                              const ParseBounds& bounds) {
  const auto root = parse::contract_root(text, file, diags, bounds);
  if (!root) return {};
  return build_contract(*root, file, diags, profile);
}

LoadResult load_contract_file(const std::string& path, Diagnostics& diags, std::optional<Profile> profile) {
  ProfileResolver resolver(profile);
  return load_file_as(path, diags, resolver.profile_for(path, diags));
}

std::vector<std::string> expand_contract_paths(const std::vector<std::string>& paths, Diagnostics& diags,
                                               bool recurse) {
  if (POPPER_MUTANT("paths-no-recurse")) recurse = false;
  std::vector<std::string> files;
  std::set<std::string> seen_files;  // canonical: a file reached twice (through a link) loads once
  auto is_contract_name = [](const fs::path& p) {
    const auto ext = p.extension().string();
    return ext == ".yaml" || ext == ".yml";
  };
  auto add_file = [&](const fs::path& p) {
    std::error_code ec;
    const fs::path canon = fs::weakly_canonical(p, ec);
    if (seen_files.insert(ec ? p.string() : canon.string()).second) files.push_back(p.string());
  };
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      diags.error("POP-V001", {p, 0, 0}, unreadable_reason(p));
      continue;
    }
    if (!fs::is_directory(st)) {
      add_file(p);
      continue;
    }
    // Depth-first, each directory's entries in name order. Directories are
    // entered once by canonical path, so a link back to an ancestor cannot loop.
    std::size_t before = files.size();
    std::set<std::string> entered;
    std::function<void(const fs::path&, int)> walk = [&](const fs::path& dir, int depth) {
      std::error_code dec;
      const fs::path canon = fs::weakly_canonical(dir, dec);
      if (!entered.insert(dec ? dir.string() : canon.string()).second || depth > 64) return;
      std::vector<fs::directory_entry> entries;
      for (fs::directory_iterator it(dir, dec), end; !dec && it != end; it.increment(dec)) entries.push_back(*it);
      if (dec) {
        diags.error("POP-V001", {dir.string(), 0, 0}, "cannot list the directory: " + io_reason(dec));
        return;
      }
      std::sort(entries.begin(), entries.end(),
                [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });
      std::vector<fs::path> subdirs;
      for (const auto& e : entries) {
        std::error_code sec;
        const auto est = fs::status(e.path(), sec);
        if (sec) {
          // A loop or a dangling link among contracts: say so (other broken names are not contracts).
          if (is_contract_name(e.path()) || sec == std::errc::too_many_symbolic_link_levels)
            diags.error("POP-V001", {e.path().string(), 0, 0}, unreadable_reason(e.path()));
          continue;
        }
        if (fs::is_directory(est)) {
          const std::string name = e.path().filename().string();
          if (recurse && !name.empty() && name[0] != '.') subdirs.push_back(e.path());
        } else if (fs::is_regular_file(est) && is_contract_name(e.path()) &&
                   e.path().filename().string()[0] != '.') {  // hidden files (.popper.yaml) are not contracts
          add_file(e.path());
        }
      }
      for (const auto& d : subdirs) walk(d, depth + 1);
    };
    walk(p, 0);
    if (files.size() == before)
      diags.error("POP-V040", {p, 0, 0},
                  recurse ? "no contracts here: the directory (and its subdirectories) holds no *.yaml or *.yml file; "
                            "point popper at a contracts/ folder"
                          : "no contracts here: the directory holds no *.yaml or *.yml file (subdirectories were not "
                            "searched: --no-recurse); point popper at a contracts/ folder");
  }
  return files;
}

const Contract* ContractSet::find_stem(const std::string& stem) const {
  for (const auto& c : contracts)
    if (c.stem == stem) return &c;
  return nullptr;
}

ContractSet load_contract_set(const std::vector<std::string>& paths, Diagnostics& diags, const LoadOptions& options) {
  ContractSet set;
  ProfileResolver resolver(options.profile);
  for (const auto& f : expand_contract_paths(paths, diags, options.recurse)) {
    LoadResult r = load_file_as(f, diags, resolver.profile_for(f, diags));
    if (!r.contract.stem.empty()) set.contracts.push_back(std::move(r.contract));
  }
  check_contract_set(set, diags);
  return set;
}

void check_contract_set(const ContractSet& set, Diagnostics& diags) {
  using rules::Rule;
  // Ids are unique across the whole set: a result names an id, not a file.
  struct Seen {
    SourcePos pos;
    const Contract* owner;
  };
  std::map<std::string, Seen> first_seen;
  auto claim_id = [&](const Contract& c, const std::string& id, const SourcePos& pos, Rule same_contract_rule) {
    if (id.empty()) return;
    auto [it, inserted] = first_seen.emplace(id, Seen{pos, &c});
    if (inserted) return;
    const bool same = it->second.owner == &c;
    const Rule rule = same ? same_contract_rule : Rule::DuplicateId;
    rules::report(diags, c.profile, rule, pos,
                  same ? fmt::format("id '{}' is already used at {}:{} in this contract; rename one",
                                     schema::quoted(id), it->second.pos.file, it->second.pos.line)
                  : c.profile == Profile::Strict
                      ? fmt::format("id '{}' is already used at {}:{}; ids must be unique across all contracts, so "
                                    "rename one",
                                    schema::quoted(id), it->second.pos.file, it->second.pos.line)
                      : fmt::format("id '{}' is also used at {}:{}; pv scopes ids per contract, but popper binds "
                                    "tests and reports results by id, so rename one before binding them",
                                    schema::quoted(id), it->second.pos.file, it->second.pos.line));
  };
  for (const auto& c : set.contracts) {
    for (const auto& o : c.obligations) claim_id(c, o.id, o.pos, Rule::DuplicateIdInContract);
    for (const auto& t : c.falsification_tests) claim_id(c, t.id, t.pos, Rule::DuplicateTestId);
    for (const auto& h : c.kani_harnesses) claim_id(c, h.id, h.pos, Rule::DuplicateHarnessId);
    for (const auto& b : c.benchmarks) claim_id(c, b.id, b.pos, Rule::DuplicateIdInContract);
  }

  // Stems name contracts (depends_on, parent_contract): two files with one stem are ambiguous.
  std::map<std::string, const Contract*> by_stem;
  for (const auto& c : set.contracts) {
    auto [it, inserted] = by_stem.emplace(c.stem, &c);
    if (!inserted)
      diags.error("POP-V036", {c.path, 1, 1},
                  fmt::format("another contract in this set has the stem '{}' ({}); depends_on names contracts by "
                              "stem, so rename one",
                              schema::quoted(c.stem), it->second->path));
  }

  // depends_on and parent_contract resolve to contracts in the set; depends_on is acyclic.
  for (const auto& c : set.contracts) {
    std::vector<std::string> others;
    for (const auto& d : set.contracts)
      if (&d != &c || POPPER_MUTANT("did-you-mean-self")) others.push_back(d.stem);
    for (std::size_t i = 0; i < c.depends_on.size(); ++i)
      if (!set.find_stem(c.depends_on[i])) {
        const std::string hint = schema::did_you_mean(c.depends_on[i], others);
        rules::report(
            diags, c.profile, Rule::DependsOnMissing, c.depends_on_pos[i],
            fmt::format("depends_on names '{}', but no contract {}.yaml was loaded; {}",
                        schema::quoted(c.depends_on[i]), schema::quoted(c.depends_on[i]),
                        hint.empty() ? "add that contract or remove the dependency" : "did you mean '" + hint + "'?"));
      }
    for (const auto& o : c.obligations)
      if (!o.parent_contract.empty() && (!set.find_stem(o.parent_contract) || o.parent_contract == c.stem)) {
        const std::string hint = schema::did_you_mean(o.parent_contract, others);
        rules::report(diags, c.profile, Rule::ParentContractMissing, o.parent_contract_pos,
                      fmt::format("obligation {} refines parent_contract '{}', but no contract {}.yaml was loaded; {}",
                                  o.id.empty() ? "'" + schema::quoted(o.property) + "'" : o.id,
                                  schema::quoted(o.parent_contract), schema::quoted(o.parent_contract),
                                  hint.empty() ? "load the contract it refines" : "did you mean '" + hint + "'?"));
      }
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
          rules::report(diags, c.profile, Rule::DependsOnCycle, c.depends_on_pos[i],
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
