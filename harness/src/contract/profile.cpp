#include "popper/profile.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace fs = std::filesystem;

namespace popper {

const char* profile_name(Profile p) { return p == Profile::Pv ? "pv" : "strict"; }

std::optional<Profile> parse_profile(std::string_view name) {
  if (name == "strict") return Profile::Strict;
  if (name == "pv") return Profile::Pv;
  return std::nullopt;
}

std::optional<std::string> find_project_config(const std::string& contract_path) {
  std::error_code ec;
  fs::path dir = fs::absolute(contract_path, ec);
  if (ec) return std::nullopt;
  if (!fs::is_directory(dir, ec)) dir = dir.parent_path();
  for (int guard = 0; guard < 256 && !dir.empty(); ++guard) {
    const fs::path candidate = dir / kProjectConfigName;
    if (fs::is_regular_file(candidate, ec)) return candidate.string();
    if (fs::exists(dir / ".git", ec)) break;  // the repository root bounds the search
    const fs::path parent = dir.parent_path();
    if (parent == dir) break;
    dir = parent;
  }
  return std::nullopt;
}

std::optional<ProjectConfig> load_project_config(const std::string& config_path, Diagnostics& diags) {
  auto fail = [&](int line, int col, const std::string& why) -> std::optional<ProjectConfig> {
    diags.error("POP-V009", {config_path, line, col}, why);
    return std::nullopt;
  };
  std::ifstream in(config_path, std::ios::binary);
  if (!in) return fail(0, 0, "cannot read the project configuration; check its permissions");
  std::ostringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.size() > std::size_t{64} * 1024)
    return fail(0, 0, "the project configuration is over 64 KiB; it holds one line: 'profile: pv'");
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return fail(e.mark.line + 1, e.mark.column + 1, fmt::format("YAML syntax error: {}; fix the configuration", e.msg));
  }
  ProjectConfig cfg;
  cfg.path = config_path;
  if (root.IsNull()) return cfg;  // an empty file means the defaults
  if (!root.IsMap()) return fail(1, 1, "the project configuration must be a mapping, e.g. 'profile: pv'");
  for (auto it = root.begin(); it != root.end(); ++it) {
    const int line = it->first.Mark().line + 1, col = it->first.Mark().column + 1;
    const std::string key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    if (key == "profile") {
      const auto p = it->second.IsScalar() ? parse_profile(it->second.Scalar()) : std::nullopt;
      if (!p) return fail(line, col, "'profile' must be 'strict' or 'pv'");
      cfg.profile = *p;
    } else {
      return fail(
          line, col,
          fmt::format("unknown key '{}' in the project configuration; the only key is 'profile'", key.substr(0, 40)));
    }
  }
  return cfg;
}

Profile ProfileResolver::profile_for(const std::string& contract_path, Diagnostics& diags) {
  if (forced_) return *forced_;
  const auto config = find_project_config(contract_path);
  if (!config) return Profile::Strict;
  auto it = std::find_if(read_.begin(), read_.end(), [&](const auto& e) { return e.first == *config; });
  if (it == read_.end()) {
    read_.emplace_back(*config, load_project_config(*config, diags));
    it = read_.end() - 1;
  }
  return it->second ? it->second->profile : Profile::Strict;
}

}  // namespace popper
