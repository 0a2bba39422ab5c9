// popper migrate: text edits at the loader's positions (see popper/migrate.hpp).
#include "popper/migrate.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include "contract/model.hpp"
#include "contract/parse.hpp"
#include "contract/resolve.hpp"
#include "contract/schema.hpp"
#include "contract/yaml_json.hpp"
#include "popper/mutant.hpp"
#include "popper/parse_bounds.hpp"

namespace popper {

namespace {

struct Edit {
  std::size_t begin, end;  // byte range replaced
  std::string text;
  std::string what;  // "line:col what" for the summary
};

// What the parsed result must look like: the original JSON with these changes.
struct Expect {
  enum class Kind { Set, Rename } kind;
  nlohmann::json::json_pointer at;  // Set: the value's pointer; Rename: the mapping's pointer
  std::string from, to;             // Rename: keys; Set: `to` is the new value
};

std::size_t line_indent(const std::string& t, std::size_t at) {
  const std::size_t bol = at == 0 ? 0 : (t.rfind('\n', at - 1) == std::string::npos ? 0 : t.rfind('\n', at - 1) + 1);
  std::size_t i = bol;
  while (i < t.size() && t[i] == ' ') ++i;
  return i - bol;
}

std::size_t line_end(const std::string& t, std::size_t at) {
  const std::size_t e = t.find('\n', at);
  return e == std::string::npos ? t.size() : e;
}

// The byte range of the scalar starting at `at`. `flow`: inside [ ] or { };
// `owner`: indentation that continuation lines of a block value must exceed;
// `key`: a mapping key (ends at its ':').
std::optional<std::pair<std::size_t, std::size_t>> scalar_extent(const std::string& t, std::size_t at, bool flow,
                                                                 std::size_t owner, bool key) {
  if (at >= t.size()) return std::nullopt;
  const char c = t[at];
  if (c == '"') {
    for (std::size_t i = at + 1; i < t.size(); ++i) {
      if (t[i] == '\\') {
        ++i;
      } else if (t[i] == '"') {
        return std::make_pair(at, i + 1);
      }
    }
    return std::nullopt;
  }
  if (c == '\'') {
    for (std::size_t i = at + 1; i < t.size(); ++i)
      if (t[i] == '\'') {
        if (i + 1 < t.size() && t[i + 1] == '\'') {
          ++i;
        } else {
          return std::make_pair(at, i + 1);
        }
      }
    return std::nullopt;
  }
  if (c == '&' || c == '*' || c == '!') return std::nullopt;  // anchors, aliases, tags: not edited
  if ((c == '|' || c == '>') && !flow && !key) {
    std::size_t end = line_end(t, at);
    for (std::size_t p = end + 1; p < t.size();) {
      const std::size_t e = line_end(t, p);
      const std::string_view l(t.data() + p, e - p);
      const std::size_t ind = l.find_first_not_of(' ');
      if (ind == std::string_view::npos) {  // blank line: part of the block only if more follows
        p = e + 1;
        continue;
      }
      if (ind <= owner) break;
      end = e;
      p = e + 1;
    }
    return std::make_pair(at, end);
  }
  // Plain scalar.
  auto stop_at = [&](std::size_t from, std::size_t to) {
    std::size_t i = from;
    for (; i < to; ++i) {
      if (t[i] == '#' && i > 0 && (t[i - 1] == ' ' || t[i - 1] == '\t')) break;
      if (key && t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ' || t[i + 1] == '\n')) break;
      if (flow && (t[i] == ',' || t[i] == ']' || t[i] == '}')) break;
      if (!flow && !key && t[i] == ':' && (i + 1 == t.size() || t[i + 1] == ' ')) return std::string::npos;
    }
    while (i > from && (t[i - 1] == ' ' || t[i - 1] == '\t')) --i;
    return i;
  };
  std::size_t end = stop_at(at, line_end(t, at));
  if (end == std::string::npos || end == at) return std::nullopt;
  if (flow || key) return std::make_pair(at, end);
  // Continuation lines of a multi-line plain scalar.
  for (std::size_t p = line_end(t, at) + 1; p < t.size();) {
    const std::size_t e = line_end(t, p);
    const std::string_view l(t.data() + p, e - p);
    const std::size_t ind = l.find_first_not_of(' ');
    if (ind == std::string_view::npos || ind <= owner || l[ind] == '#') break;
    const std::size_t cend = stop_at(p + ind, e);
    if (cend == std::string::npos) return std::nullopt;
    end = cend;
    p = e + 1;
  }
  return std::make_pair(at, end);
}

class Planner {
 public:
  Planner(const std::string& text, const std::string& file, const YAML::Node& root, Diagnostics& diags)
      : text_(text), file_(file), root_(root), diags_(diags) {
    contract_ = model::build(root, file, Profile::Pv);
  }

  bool plan() {
    obligations();
    aliases(root_["falsification_tests"], schema::falsification_test_spec(), "/falsification_tests");
    harnesses();
    qa_checks();
    return ok_;
  }
  std::vector<Edit>& edits() { return edits_; }
  std::vector<Expect>& expects() { return expects_; }

 private:
  const std::string& text_;
  const std::string& file_;
  YAML::Node root_;
  Diagnostics& diags_;
  Contract contract_;
  std::vector<Edit> edits_;
  std::vector<Expect> expects_;
  bool ok_ = true;

  std::string where(const YAML::Node& n) const { return fmt::format("{}:{}", n.Mark().line + 1, n.Mark().column + 1); }

  void fail(const YAML::Node& n, const std::string& why) {
    diags_.error("POP-M001", schema::pos_of(n, file_),
                 fmt::format("cannot edit this safely ({}); the file is left unchanged, edit it by hand", why));
    ok_ = false;
  }

  void keep(const YAML::Node& n, const std::string& why) { diags_.warning("POP-M002", schema::pos_of(n, file_), why); }

  // Replaces the scalar `n` (a value, or a key when `key`) with `with`.
  bool replace_scalar(const YAML::Node& n, const std::string& with, bool flow, bool key, const std::string& what) {
    const auto at = static_cast<std::size_t>(n.Mark().pos);
    const std::size_t owner = key ? 0 : line_indent(text_, at);
    const auto ext = scalar_extent(text_, at, flow, owner, key);
    if (n.Mark().pos < 0 || !ext) {
      fail(n, "a value written with an anchor, alias, tag or an unusual layout");
      return false;
    }
    edits_.push_back({ext->first, ext->second, with, where(n) + " " + what});
    return true;
  }

  void obligations() {
    const YAML::Node obs = root_["proof_obligations"];
    if (!obs || !obs.IsSequence()) return;
    std::size_t model_index = 0;
    for (std::size_t i = 0; i < obs.size(); ++i) {
      const YAML::Node o = obs[i];
      if (!o.IsMap()) continue;
      const Obligation& ob = contract_.obligations[model_index++];
      const auto ptr = nlohmann::json::json_pointer("/proof_obligations/" + std::to_string(i));
      std::vector<std::pair<std::string, std::string>> add;
      if (!o["id"])
        add.emplace_back("id", POPPER_MUTANT("migrate-own-numbering")
                                   ? model::obligation_prefix(contract_) + fmt::format("-PO-{:03}", model_index - 1)
                                   : ob.id);
      if (ob.type_defaulted) add.emplace_back("type", "invariant");
      if (!add.empty()) insert_keys(o, ptr, add);
      aliases_of(o, schema::obligation_spec(), ptr);
      if (!ob.requires_ref.empty()) {
        const resolve::ObligationRef r = resolve::obligation(contract_, ob.requires_ref);
        const YAML::Node v = o["requires"];
        if (r.how == resolve::How::Property || r.how == resolve::How::Position) {
          const std::string& id = contract_.obligations[r.index].id;
          if (replace_scalar(v, id, v.Style() == YAML::EmitterStyle::Flow || o.Style() == YAML::EmitterStyle::Flow,
                             false, "requires → " + id))
            expects_.push_back({Expect::Kind::Set, ptr / "requires", {}, id});
        } else if (r.how != resolve::How::Id) {
          keep(v, fmt::format("requires '{}' names no obligation popper can find; left as it is",
                              schema::quoted(ob.requires_ref)));
        }
      }
    }
  }

  void insert_keys(const YAML::Node& o, const nlohmann::json::json_pointer& ptr,
                   const std::vector<std::pair<std::string, std::string>>& add) {
    if (o.Mark().pos < 0) return fail(o, "no position for this obligation");
    const auto at = static_cast<std::size_t>(o.Mark().pos);
    std::string ins, what;
    for (const auto& [k, v] : add) what += fmt::format("{}{}: {}", what.empty() ? "add " : ", ", k, v);
    if (o.Style() == YAML::EmitterStyle::Flow) {
      if (at >= text_.size() || text_[at] != '{') return fail(o, "a flow mapping without its '{'");
      for (std::size_t j = 0; j < add.size(); ++j)
        ins += fmt::format("{}{}: {}", j ? ", " : "", add[j].first, add[j].second);
      if (o.size() > 0) ins += ", ";
      edits_.push_back({at + 1, at + 1, ins, where(o) + " " + what});
    } else {
      const std::string indent(static_cast<std::size_t>(o.Mark().column), ' ');
      for (const auto& [k, v] : add) ins += fmt::format("{}: {}\n{}", k, v, indent);
      edits_.push_back({at, at, ins, where(o) + " " + what});
    }
    for (const auto& [k, v] : add) expects_.push_back({Expect::Kind::Set, ptr / k, {}, v});
  }

  void aliases_of(const YAML::Node& m, const schema::NodeSpec& spec, const nlohmann::json::json_pointer& ptr) {
    for (auto it = m.begin(); it != m.end(); ++it) {
      if (!it->first.IsScalar()) continue;
      const std::string alias = it->first.Scalar();
      const std::string target = schema::alias_target(spec, alias);
      if (target.empty()) continue;
      if (m[target]) {
        keep(it->first,
             fmt::format("'{}' and its alias '{}' are both given; left as they are (keep one)", target, alias));
        continue;
      }
      if (replace_scalar(it->first, target, m.Style() == YAML::EmitterStyle::Flow, true,
                         fmt::format("rename {} → {}", alias, target)))
        expects_.push_back({Expect::Kind::Rename, ptr, alias, target});
    }
  }

  void aliases(const YAML::Node& list, const schema::NodeSpec& spec, const std::string& at) {
    if (!list || !list.IsSequence()) return;
    for (std::size_t i = 0; i < list.size(); ++i)
      if (list[i].IsMap()) aliases_of(list[i], spec, nlohmann::json::json_pointer(at + "/" + std::to_string(i)));
  }

  void harnesses() {
    const YAML::Node hs = root_["kani_harnesses"];
    if (!hs || !hs.IsSequence()) return;
    for (std::size_t i = 0; i < hs.size(); ++i) {
      const YAML::Node h = hs[i];
      if (!h.IsMap()) continue;
      const YAML::Node v = h["obligation"];
      if (!v || !v.IsScalar() || v.Scalar().empty()) continue;
      const resolve::ObligationRef r = resolve::obligation(contract_, v.Scalar());
      if (r.how == resolve::How::Property || r.how == resolve::How::Position) {
        const std::string& id = contract_.obligations[r.index].id;
        if (replace_scalar(v, id, h.Style() == YAML::EmitterStyle::Flow, false, "obligation → " + id))
          expects_.push_back({Expect::Kind::Set,
                              nlohmann::json::json_pointer("/kani_harnesses/" + std::to_string(i) + "/obligation"),
                              {},
                              id});
      } else if (r.how != resolve::How::Id) {
        keep(v, fmt::format("harness obligation '{}' {}; left as it is (name the obligation by its id by hand)",
                            schema::quoted(v.Scalar()),
                            r.how == resolve::How::Ambiguous ? "matches several obligations"
                                                             : "names no obligation popper can find"));
      }
    }
  }

  void qa_checks() {
    const YAML::Node g = root_["qa_gate"];
    if (!g || !g.IsMap()) return;
    const YAML::Node checks = g["checks"];
    if (!checks || !checks.IsSequence()) return;
    for (std::size_t i = 0; i < checks.size(); ++i) {
      const YAML::Node v = checks[i];
      if (!v.IsScalar()) continue;
      const resolve::CheckRef r = resolve::qa_check(contract_, v.Scalar());
      using H = resolve::CheckHow;
      if (r.how == H::ObligationProperty || r.how == H::TestRule || r.how == H::Enforcement) {
        if (replace_scalar(v, r.target, checks.Style() == YAML::EmitterStyle::Flow, false, "check → " + r.target))
          expects_.push_back(
              {Expect::Kind::Set, nlohmann::json::json_pointer("/qa_gate/checks/" + std::to_string(i)), {}, r.target});
      } else if (r.how == H::None || r.how == H::Ambiguous) {
        keep(v, fmt::format("qa_gate check '{}' {}; left as it is", schema::quoted(v.Scalar()),
                            r.how == H::Ambiguous ? "matches several parts of the contract"
                                                  : "names nothing popper can evaluate"));
      }
    }
  }
};

// Insertions (empty ranges) sort before a replacement that starts at the same byte.
bool edit_order(const Edit& a, const Edit& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; }

std::string apply(const std::string& text, std::vector<Edit>& edits) {
  std::sort(edits.begin(), edits.end(), edit_order);
  std::string out;
  std::size_t at = 0;
  for (const auto& e : edits) {
    out.append(text, at, e.begin - at);
    out += e.text;
    at = e.end;
  }
  out.append(text, at, std::string::npos);
  return out;
}

}  // namespace

Migration migrate_contract_text(const std::string& text, const std::string& file, Diagnostics& diags) {
  Migration m;
  m.text = text;
  const auto root = parse::contract_root(text, file, diags);
  if (!root) return m;
  Diagnostics walk;  // the schema walk bounds the work on hostile input (alias bombs)
  if (!schema::check(*root, schema::contract_root(), file, {kMaxNestingDepth, kMaxNodes}, Profile::Pv, walk)) {
    for (const auto& d : walk.all())
      if (d.code == "POP-V006") diags.error(d.code, d.pos, d.message);
    return m;
  }
  Planner planner(text, file, *root, diags);
  if (!planner.plan()) return m;
  auto& edits = planner.edits();
  if (edits.empty()) {
    m.ok = true;
    return m;
  }
  std::sort(edits.begin(), edits.end(), edit_order);
  for (std::size_t i = 1; i < edits.size(); ++i)
    if (edits[i].begin < edits[i - 1].end) {
      diags.error("POP-M001", {file, 0, 0}, "two edits overlap; the file is left unchanged, edit it by hand");
      return m;
    }
  const std::string migrated = apply(text, edits);

  // Verify: the migrated text parses to the original plus exactly the planned changes.
  nlohmann::json want = yaml_to_json(*root, kMaxNestingDepth + 2);
  try {
    for (const auto& e : planner.expects()) {
      if (e.kind == Expect::Kind::Set) {
        want[e.at] = e.to;
      } else {
        auto& obj = want.at(e.at);
        obj[e.to] = obj.at(e.from);
        obj.erase(e.from);
      }
    }
  } catch (const nlohmann::json::exception&) {
    diags.error("POP-M001", {file, 0, 0}, "the planned edits do not fit the contract; the file is left unchanged");
    return m;
  }
  Diagnostics reparse;
  const auto after = parse::contract_root(migrated, file, reparse);
  if (!after || yaml_to_json(*after, kMaxNestingDepth + 2) != want) {
    diags.error("POP-M001", {file, 0, 0},
                "the edited text would not read back as the original plus the new ids (an unusual layout); the "
                "file is left unchanged, edit it by hand");
    return m;
  }
  m.ok = true;
  m.text = migrated;
  for (const auto& e : edits) m.edits.push_back(e.what);
  return m;
}

}  // namespace popper
