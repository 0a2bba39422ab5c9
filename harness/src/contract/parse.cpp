// The guarded YAML parse of a contract: size cap, text check, nesting
// pre-scan, then yaml-cpp's parser driven one document at a time under hard
// bounds, and only then the node tree of the one document with content.
//
// Why not YAML::LoadAll: in yaml-cpp up to 0.8.0 a document that starts with a
// token no node can start with (a stray ',' at the top) is handed back as a
// null document without consuming the token, so LoadAll loops forever and
// pushes a node on every turn (fixed upstream after 0.8.0; Debian 12 ships
// 0.7.0). Driving Parser::HandleNextDocument ourselves, a document that starts
// where the previous one started has consumed nothing: that is the error.
#include <algorithm>
#include <chrono>
#include <new>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include "contract/parse.hpp"
#include "common/utf8.hpp"
#include "contract/schema.hpp"
#include "popper/mutant.hpp"

namespace popper::parse {

namespace {

// First byte that is not valid UTF-8 (or a NUL or control byte), as a position; nullopt if clean.
std::optional<SourcePos> first_non_text(const std::string& s, const std::string& file) {
  int line = 1, col = 1;
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::size_t len = utf8::sequence_length(s, i);
    bool ok = len != 0 && c != 0;
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

// The line of the "---" that starts the document whose first node is at `at`.
SourcePos document_start(const std::string& text, const YAML::Mark& at, const std::string& file) {
  std::size_t p = at.pos > 0 ? std::min<std::size_t>(static_cast<std::size_t>(at.pos), text.size()) : 0;
  int line = at.line + 1;
  while (true) {
    const std::size_t bol = p == 0 ? 0 : text.rfind('\n', p - 1) == std::string::npos ? 0 : text.rfind('\n', p - 1) + 1;
    if (text.compare(bol, 3, "---") == 0) return {file, line, 1};
    if (bol == 0) break;
    p = bol - 1;
    --line;
  }
  return {file, at.line + 1, 1};
}

SourcePos pos_at(const YAML::Mark& m, const std::string& file) { return {file, m.line + 1, m.column + 1}; }

// One document as the event stream outlines it: where it starts, where its
// root node is, and whether that root holds anything (a null root is an
// empty document: a stray "---", or only comments).
struct Outline {
  YAML::Mark start;
  YAML::Mark root;
  bool content = false;
};

// Thrown from inside the parser's callbacks when a bound is passed; caught
// below, never leaves this file.
struct BoundPassed {
  YAML::Mark at;
  std::string message;
};

// Records each document's outline and enforces the event and time bounds on
// every callback, so no loop inside the parser can run unbounded while it
// produces nodes.
class OutlineHandler final : public YAML::EventHandler {
 public:
  explicit OutlineHandler(const ParseBounds& bounds)
      : bounds_(bounds), deadline_(Clock::now() + std::chrono::milliseconds(bounds.max_millis)) {}

  std::vector<Outline> documents;

  void OnDocumentStart(const YAML::Mark& mark) override {
    documents.push_back({mark, mark, false});
    depth_ = 0;
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, false); }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override { node(mark, true); }
  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t, const std::string&) override {
    node(mark, true);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark, true);
    ++depth_;
  }
  void OnSequenceEnd() override { --depth_; }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    node(mark, true);
    ++depth_;
  }
  void OnMapEnd() override { --depth_; }

 private:
  using Clock = std::chrono::steady_clock;
  const ParseBounds& bounds_;
  const Clock::time_point deadline_;
  long events_ = 0;
  int depth_ = 0;

  void node(const YAML::Mark& mark, bool content) {
    if (depth_ == 0 && !documents.empty()) {
      documents.back().root = mark;
      documents.back().content = content;
    }
    if (++events_ > bounds_.max_nodes && !POPPER_MUTANT("loader-no-node-bound"))
      throw BoundPassed{mark, fmt::format("the YAML holds more than {} nodes; a contract needs a few thousand, so "
                                          "split or shorten it",
                                          bounds_.max_nodes)};
    if (events_ % 1024 == 0 && Clock::now() > deadline_ && !POPPER_MUTANT("loader-no-time-bound"))
      throw BoundPassed{mark, fmt::format("parsing took longer than the {} ms bound for one contract; shorten the "
                                          "file, or report the file as a parser defect",
                                          bounds_.max_millis)};
  }
};

// The character at byte `pos` of `text`, for a message ("','", "'\t'").
std::string character_at(const std::string& text, int pos) {
  if (pos < 0 || static_cast<std::size_t>(pos) >= text.size()) return "end of file";
  const auto at = static_cast<std::size_t>(pos);
  const std::size_t len = std::max<std::size_t>(utf8::sequence_length(text, at), 1);
  const std::string c = text.substr(at, len);
  if (c == "\t") return "a tab";
  return "'" + utf8::cut(c, 8) + "'";
}

}  // namespace

std::optional<YAML::Node> contract_root(const std::string& text, const std::string& file, Diagnostics& diags,
                                        const ParseBounds& bounds) {
  const SourcePos top{file, 1, 1};
  if (text.size() > kMaxContractBytes && !POPPER_MUTANT("loader-no-size-cap")) {
    diags.error("POP-V002", {file, 0, 0},
                fmt::format("file is {} bytes, over the {} byte limit for a contract; split it into several "
                            "contracts",
                            text.size(), kMaxContractBytes));
    return std::nullopt;
  }
  if (auto bad = first_non_text(text, file)) {
    diags.error("POP-V003", *bad,
                "not a text file: invalid UTF-8, a NUL or a control byte here; save the contract "
                "as UTF-8 YAML");
    return std::nullopt;
  }
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    diags.error("POP-V004", top, "the contract is empty; start from contracts/SCHEMA.md (it needs at least metadata)");
    return std::nullopt;
  }
  if (auto deep = too_deep(text, file, kMaxNestingDepth)) {
    diags.error("POP-V006", *deep,
                fmt::format("nesting deeper than {} levels; a contract needs at most 6, so flatten this value",
                            kMaxNestingDepth));
    return std::nullopt;
  }
  // Outline every document first, under the bounds; build nodes afterwards
  // for the one document that is the contract.
  OutlineHandler outline(bounds);
  try {
    std::istringstream in(text);
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(outline)) {
      const auto& docs = outline.documents;
      if (docs.size() >= 2 && docs[docs.size() - 1].start.pos == docs[docs.size() - 2].start.pos &&
          !POPPER_MUTANT("loader-no-progress-check")) {
        const YAML::Mark& at = docs.back().start;
        diags.error("POP-V005", pos_at(at, file),
                    fmt::format("YAML syntax error: unexpected {} where a value should start; remove it, or quote "
                                "the value it belongs to",
                                character_at(text, at.pos)));
        return std::nullopt;
      }
      if (docs.size() > bounds.max_documents && !POPPER_MUTANT("loader-no-document-bound")) {
        diags.error("POP-V008", document_start(text, docs.back().root, file),
                    fmt::format("more than {} YAML documents in one file; a contract file holds one document",
                                bounds.max_documents));
        return std::nullopt;
      }
    }
  } catch (const YAML::Exception& e) {
    const SourcePos p = e.mark.line >= 0 ? pos_at(e.mark, file) : top;
    diags.error("POP-V005", p, fmt::format("YAML syntax error: {}; fix the YAML here", e.msg));
    return std::nullopt;
  } catch (const BoundPassed& b) {
    diags.error("POP-V006", pos_at(b.at, file), b.message);
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    diags.error("POP-V006", top, "the YAML parser ran out of memory on this file; shorten it");
    return std::nullopt;
  }
  // Documents with content; empty ones (a stray "---") hold nothing to lose.
  std::vector<Outline> content;
  for (const auto& d : outline.documents)
    if (d.content) content.push_back(d);
  if (content.size() > 1 && !POPPER_MUTANT("loader-first-document-only")) {
    diags.error("POP-V008", document_start(text, content[1].root, file),
                fmt::format("a second YAML document starts here ({} in this file); a contract file holds one "
                            "document, so split it into one file per contract",
                            content.size()));
    return std::nullopt;
  }
  if (content.empty()) {
    diags.error("POP-V004", top, "the contract holds no YAML content (only comments?); it needs at least metadata");
    return std::nullopt;
  }
  // YAML::Load reads the first document only. When empty documents come
  // first, blank them out (newlines kept) so every mark stays where it was.
  std::string first = text;
  const auto skip = static_cast<std::size_t>(std::max(content[0].start.pos, 0));
  for (std::size_t i = 0; i < skip && i < first.size(); ++i)
    if (first[i] != '\n') first[i] = ' ';
  YAML::Node root;
  try {
    root = YAML::Load(first);
  } catch (const YAML::Exception& e) {
    diags.error("POP-V005", e.mark.line >= 0 ? pos_at(e.mark, file) : top,
                fmt::format("YAML syntax error: {}; fix the YAML here", e.msg));
    return std::nullopt;
  } catch (const std::bad_alloc&) {
    diags.error("POP-V006", top, "the YAML parser ran out of memory on this file; shorten it");
    return std::nullopt;
  }
  if (!root.IsMap()) {
    diags.error("POP-V007", schema::pos_of(root, file),
                "the top level of a contract must be a mapping (metadata:, equations:, ...), not a list or a scalar");
    return std::nullopt;
  }
  return root;
}

}  // namespace popper::parse
