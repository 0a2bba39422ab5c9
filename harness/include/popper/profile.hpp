// Profiles: how a contract is read. One loader serves both; what differs is
// a table (harness/src/contract/rules.cpp for the rules, the Field attributes in
// harness/src/contract/schema.cpp for keys), documented in contracts/SCHEMA.md.
//
//   strict  popper's own reading (the default): every key known, every
//           reference resolved, obligation ids written out.
//   pv      the provable-contracts reading: pv's enums, aliases and defaults,
//           extra keys tolerated (warnings), obligation ids derived, pv's own
//           rules under their pv names (PV-SCHEMA-001, PV-PROVABILITY-001, ...).
//
// A project picks its profile in one committed file, `.popper.yaml`, found
// in the contract's directory or the nearest parent (up to the repository
// root); `--profile` on the command line overrides it.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "popper/diagnostics.hpp"

namespace popper {

const char* profile_name(Profile p);
std::optional<Profile> parse_profile(std::string_view name);

inline constexpr const char* kProjectConfigName = ".popper.yaml";

struct ProjectConfig {
  std::string path;  // the .popper.yaml that was read
  Profile profile = Profile::Strict;
};

// The nearest .popper.yaml for a contract file or directory: its own
// directory, then each parent, stopping after a directory that holds .git.
std::optional<std::string> find_project_config(const std::string& contract_path);

// Reads a .popper.yaml (`profile: strict | pv`). Problems are POP-V009
// errors; the result is then nullopt and the caller falls back to strict.
std::optional<ProjectConfig> load_project_config(const std::string& config_path, Diagnostics& diags);

// The profile for one contract path: `forced` when given, else the nearest
// config's, else strict. Each config file is read (and reported) once per
// resolver, so a directory of contracts does not repeat its errors.
class ProfileResolver {
 public:
  explicit ProfileResolver(std::optional<Profile> forced = std::nullopt) : forced_(forced) {}
  Profile profile_for(const std::string& contract_path, Diagnostics& diags);

 private:
  std::optional<Profile> forced_;
  std::vector<std::pair<std::string, std::optional<ProjectConfig>>> read_;
};

}  // namespace popper
