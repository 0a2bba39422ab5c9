// `popper report html`: the self-contained reports/index.html over the audit,
// the bench tables and the committed baselines' history (src/report/html.hpp).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "popper/error.hpp"
#include "popper/io.hpp"
#include "report/html.hpp"

namespace popper::cli {

void add_report_command(CLI::App& app, int& exit_code) {
  auto* report = app.add_subcommand("report", "Reports people read");
  report->require_subcommand(1);
  auto* cmd = report->add_subcommand(
      "html",
      "One self-contained HTML page (no network): coverage with evidence, mutants, claims, bench tables and charts, "
      "the committed baselines' history");
  struct Opt {
    std::string reports = "reports", baselines = "baselines", out;
    int max_commits = 40;
  };
  auto o = std::make_shared<Opt>();
  cmd->add_option("--reports", o->reports,
                  "folder with coverage.json (make audit) and bench-<family>.csv (make bench-compare)");
  cmd->add_option("--baselines", o->baselines, "committed baselines folder; its git history gives the trends");
  cmd->add_option("--max-commits", o->max_commits, "newest commits of the baselines' history to read (default 40)");
  cmd->add_option("-o,--out", o->out, "the page (default <reports>/index.html)");
  cmd->callback([o, &exit_code] {
    namespace fs = std::filesystem;
    try {
      // A missing input is a section that says so; a malformed one is an error naming the file.
      const std::string coverage_path = o->reports + "/coverage.json";
      std::optional<nlohmann::json> coverage;
      if (fs::exists(coverage_path)) {
        try {
          coverage = nlohmann::json::parse(read_file(coverage_path));
        } catch (const nlohmann::json::exception& e) {
          throw Error(coverage_path + ": " + e.what());
        }
        if (!coverage->is_object() || !coverage->contains("contracts") || !(*coverage)["contracts"].is_array() ||
            !coverage->contains("total"))
          throw Error(coverage_path + ": not a popper audit report (no contracts list / total)");
      }
      std::vector<report::BenchPage> bench;
      if (fs::is_directory(o->reports)) {
        std::vector<fs::path> csvs;
        for (const auto& e : fs::directory_iterator(o->reports)) {
          const std::string name = e.path().filename().string();
          if (name.starts_with("bench-") && name.ends_with(".csv") && !name.ends_with(".prev.csv"))
            csvs.push_back(e.path());
        }
        std::sort(csvs.begin(), csvs.end());
        for (const auto& p : csvs) bench.push_back({p.stem().string().substr(6), bench::read_bench_csv(p.string())});
      }
      const auto history = report::read_history(o->baselines, o->max_commits);
      std::string page;
      try {
        page = report::render_html(coverage, o->reports, bench, history);
      } catch (const nlohmann::json::exception& e) {
        throw Error(coverage_path + ": not as popper audit writes it: " + e.what());
      }
      const std::string out = o->out.empty() ? o->reports + "/index.html" : o->out;
      write_file_atomic(out, page);
      std::cout << "wrote " << out << " (" << (coverage ? "audit" : "no audit") << ", " << bench.size()
                << " bench table(s), " << history.series.size() << " baseline series"
                << (history.note.empty() ? "" : "; " + history.note) << ")\n";
      exit_code = 0;
    } catch (const std::exception& e) {
      std::cerr << "popper report html: " << e.what() << "\n";
      exit_code = 2;
    }
  });
}

}  // namespace popper::cli
