// The router (contract: route_threshold): hand kernel or fallback by the
// committed threshold file, and the diagnostics that say which path ran.
//
//   Lbar = (sum over (t, g) of L(t, g)) / (T_q G)
//   hand  iff  entry (h_g, D) exists, is not "never", and Lbar >= min_l;  else fallback
//
// The file is written by `popper bench threshold --family nsa` from a bench
// CSV (config/nsa-router.yaml); nothing here guesses a threshold.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include <yaml-cpp/yaml.h>

#include "impl/nsa/nsa.hpp"
#include "popper/error.hpp"
#include "popper/mutant.hpp"
#include "popper/runtime_paths.hpp"

namespace popper::nsa {

const RouteEntry* RouterConfig::find(int heads_per_group, int dim) const {
  for (const auto& e : entries)
    if (e.heads == heads_per_group && e.dim == dim) return &e;
  return nullptr;
}

RouterConfig parse_router_config(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    throw Error(origin + ": not YAML: " + e.what());
  }
  if (!root.IsMap()) throw Error(origin + ": the router config must be a mapping with a 'thresholds' list");
  RouterConfig cfg;
  cfg.origin = origin;
  try {
    if (root["margin"]) cfg.margin = root["margin"].as<double>();
    const YAML::Node list = root["thresholds"];
    if (!list || !list.IsSequence()) throw Error(origin + ": no 'thresholds' list");
    std::set<std::pair<int, int>> seen;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const YAML::Node e = list[i];
      const std::string where = origin + ": thresholds[" + std::to_string(i) + "]";
      if (!e.IsMap() || !e["h"] || !e["d"] || !e["min_l"]) throw Error(where + " needs h, d and min_l");
      RouteEntry r;
      r.heads = e["h"].as<int>();
      r.dim = e["d"].as<int>();
      if (r.heads < 1 || r.dim < 1) throw Error(where + ": h and d must be >= 1");
      const std::string min_l = e["min_l"].as<std::string>();
      if (min_l != "never") {
        r.min_len = e["min_l"].as<std::int64_t>();
        if (*r.min_len < 0) throw Error(where + ": min_l must be >= 0 or never");
      }
      if (!seen.insert({r.heads, r.dim}).second)
        throw Error(where + ": (h " + std::to_string(r.heads) + ", d " + std::to_string(r.dim) + ") listed twice");
      cfg.entries.push_back(r);
    }
  } catch (const YAML::Exception& e) {
    throw Error(origin + ": " + e.what());
  }
  return cfg;
}

RouterConfig load_router_config(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    throw Error("nsa router config " + path + " cannot be read (write it with `popper bench threshold --family nsa`)");
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_router_config(ss.str(), path);
}

std::string default_router_config_path() {
  const char* env = std::getenv("POPPER_NSA_ROUTER_CONFIG");
  return env && *env ? std::string(env) : data_path("config/nsa-router.yaml");
}

const char* to_string(RoutePath p) { return p == RoutePath::Hand ? "hand" : "fallback"; }

RouteDecision decide_route(const RouterConfig& cfg, int heads_per_group, int dim, double mean_len) {
  RouteDecision d;
  d.heads_per_group = heads_per_group;
  d.dim = dim;
  d.mean_len = mean_len;
  if (POPPER_MUTANT("nsa-router-always-hand")) {
    d.path = RoutePath::Hand;
    d.reason = "always hand";
    return d;
  }
  const RouteEntry* e = cfg.find(heads_per_group, dim);
  d.configured = e != nullptr;
  const std::string key = "(h " + std::to_string(heads_per_group) + ", d " + std::to_string(dim) + ")";
  if (!e) {
    d.reason = "no threshold for " + key + " in " + cfg.origin;
    return d;
  }
  d.min_len = e->min_len;
  if (!e->min_len) {
    d.reason = "the hand kernel never won for " + key;
    return d;
  }
  const bool at_least = POPPER_MUTANT("nsa-router-strict-greater") ? mean_len > static_cast<double>(*e->min_len)
                                                                   : mean_len >= static_cast<double>(*e->min_len);
  d.path = at_least ? RoutePath::Hand : RoutePath::Fallback;
  std::ostringstream why;
  why << "mean selected length " << mean_len << (at_least ? " >= " : " < ") << "min_l " << *e->min_len << " for "
      << key;
  d.reason = why.str();
  return d;
}

void RouteDiagnostics::set_callback(Callback cb) {
  std::lock_guard<std::mutex> lock(mutex_);
  callback_ = std::move(cb);
}

std::optional<RouteDecision> RouteDiagnostics::last() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_;
}

void RouteDiagnostics::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  hand_ = 0;
  fallback_ = 0;
  last_.reset();
}

void RouteDiagnostics::record(const RouteDecision& d) {
  Callback cb;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    (d.path == RoutePath::Hand ? hand_ : fallback_).fetch_add(1);
    last_ = d;
    cb = callback_;
  }
  if (cb) cb(d);  // outside the lock: a callback may read the counters
}

RouteDiagnostics& route_diagnostics() {
  static RouteDiagnostics diagnostics;
  return diagnostics;
}

RunInfo selection_attention_routed(const SelectionProblem& p, SelectionOutput out, const RouterConfig& cfg,
                                   const RoutedOptions& opt) {
  check_problem(p, out);
  RouteDecision d = decide_route(cfg, p.layout.heads_per_group(), p.layout.dim, p.spans->mean_selected());
  const RunInfo info = d.path == RoutePath::Hand ? selection_attention_hand(p, out, HandOptions{opt.threads})
                                                 : selection_attention_fallback(p, out, FallbackOptions{opt.threads});
  d.backend = info.backend;
  (opt.diagnostics ? *opt.diagnostics : route_diagnostics()).record(d);
  return info;
}

}  // namespace popper::nsa
