// `switchyard usage`: the usage ledger of a fleet's state_db, totalled by
// key, model, UTC day or session (a table, --json or --csv), or the requests
// themselves as a trace (--trace, JSON lines) to replay with `switchyard bench`.
#include <CLI/CLI.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

#include <fmt/format.h>

#include "cli/command.h"
#include "common/command_error.h"
#include "common/json_text.h"
#include "config/fleet_config.h"
#include "tenancy/sqlite.h"
#include "tenancy/usage_report.h"

namespace switchyard::cli {

namespace {

struct UsageFlags {
  std::string config_path;
  std::string since = "24h";
  std::string by = "key";
  bool json = false;
  bool csv = false;
  bool trace = false;
};

// A text cell: quoted when it must be, and one a spreadsheet would take for
// a formula (a client's session id or a model name may start with '=')
// prefixed with an apostrophe (OWASP's advice for CSV injection).
std::string csv_field(const std::string& text) {
  const bool formula =
      !text.empty() && std::string_view("=+-@\t\r").find(text[0]) != std::string_view::npos;
  const std::string s = formula ? "'" + text : text;
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::optional<tenancy::GroupBy> group_by(std::string_view name) {
  using tenancy::GroupBy;
  constexpr std::pair<std::string_view, GroupBy> kGroups[] = {{"key", GroupBy::key},
                                                              {"model", GroupBy::model},
                                                              {"day", GroupBy::day},
                                                              {"session", GroupBy::session}};
  for (auto [n, g] : kGroups)
    if (n == name) return g;
  return std::nullopt;
}

// The columns after the group, once for the table, --csv and --json.
struct Column {
  std::string_view name;   // the --json member and --csv header
  std::string_view title;  // the table's header
  std::variant<std::int64_t tenancy::UsageTotals::*, double tenancy::UsageTotals::*> field;
};
constexpr Column kColumns[] = {
    {"requests", "REQUESTS", &tenancy::UsageTotals::requests},
    {"errors", "ERRORS", &tenancy::UsageTotals::errors},
    {"prompt_tokens", "PROMPT", &tenancy::UsageTotals::prompt_tokens},
    {"cached_tokens", "CACHED", &tenancy::UsageTotals::cached_tokens},
    {"completion_tokens", "COMPLETION", &tenancy::UsageTotals::completion_tokens},
    {"mean_ttft_ms", "TTFT MS", &tenancy::UsageTotals::mean_ttft_ms},
    {"mean_duration_ms", "MS", &tenancy::UsageTotals::mean_duration_ms},
};

// A column's value as text: counts whole, means to one decimal.
std::string cell(const Column& c, const tenancy::UsageTotals& t) {
  return std::visit(
      [&](auto member) {
        const auto v = t.*member;
        if constexpr (std::is_floating_point_v<decltype(v)>) return fmt::format("{:.1f}", v);
        return fmt::format("{}", v);
      },
      c.field);
}

void print_json(std::string_view by, const std::vector<tenancy::UsageTotals>& totals) {
  boost::json::array out;
  for (const auto& t : totals) {
    boost::json::object o;
    o[by] = t.group;
    for (const auto& c : kColumns) std::visit([&](auto member) { o[c.name] = t.*member; }, c.field);
    out.push_back(std::move(o));
  }
  std::cout << to_json_text(out) << "\n";
}

void print_csv(std::string_view by, const std::vector<tenancy::UsageTotals>& totals) {
  std::cout << by;
  for (const auto& c : kColumns) std::cout << ',' << c.name;
  std::cout << '\n';
  for (const auto& t : totals) {
    std::cout << csv_field(t.group);
    for (const auto& c : kColumns) std::cout << ',' << cell(c, t);
    std::cout << '\n';
  }
}

void print_table(std::string_view by, const std::vector<tenancy::UsageTotals>& totals) {
  std::cout << fmt::format("{:<24}", by);
  for (const auto& c : kColumns) std::cout << fmt::format(" {:>12}", c.title);
  std::cout << '\n';
  for (const auto& t : totals) {
    std::cout << fmt::format("{:<24}", t.group.empty() ? "-" : t.group);
    for (const auto& c : kColumns) std::cout << fmt::format(" {:>12}", cell(c, t));
    std::cout << '\n';
  }
}

void print_trace(const std::vector<tenancy::UsageRow>& rows) {
  const std::int64_t t0 = rows.empty() ? 0 : rows.front().time_ms;
  for (const auto& r : rows) {
    boost::json::object o;
    o["t"] = static_cast<double>(r.time_ms - t0) / 1000.0;
    o["request_id"] = r.request_id;
    o["key"] = r.key;
    o["model"] = r.model;
    o["endpoint"] = r.endpoint;
    o["session"] = r.session;
    o["prompt_tokens"] = r.prompt_tokens;
    o["cached_tokens"] = r.cached_tokens;
    o["completion_tokens"] = r.completion_tokens;
    if (r.max_tokens) o["max_tokens"] = *r.max_tokens;
    o["status"] = r.status;
    std::cout << to_json_text(o) << "\n";
  }
}

int run_usage(const UsageFlags& flags) {
  auto config = config::load_fleet_config(flags.config_path);
  if (!config) return command_error("usage", config.error().message);
  auto since = config::parse_duration(flags.since);
  if (!since) return command_error("usage", "--since: " + since.error().message);
  const auto by = group_by(flags.by);
  if (!by)
    return command_error(
        "usage", fmt::format("--by: '{}' is not one of: key, model, day, session", flags.by));
  if (flags.json + flags.csv + flags.trace > 1)
    return command_error("usage", "--json, --csv and --trace: give one at most");
  if (!std::filesystem::exists(config->state_db))
    return command_error("usage", fmt::format("state_db: {} does not exist (has the gateway run?)",
                                              config->state_db));
  auto db = tenancy::Database::open(config->state_db, /*read_only=*/true);
  if (!db) return command_error("usage", db.error().message);
  const std::int64_t since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch() - *since)
                                    .count();
  if (flags.trace) {
    auto rows = tenancy::usage_rows(*db, since_ms);
    if (!rows) return command_error("usage", rows.error().message);
    print_trace(*rows);
    return 0;
  }
  auto totals = tenancy::usage_totals(*db, since_ms, *by);
  if (!totals) return command_error("usage", totals.error().message);
  if (flags.json)
    print_json(flags.by, *totals);
  else if (flags.csv)
    print_csv(flags.by, *totals);
  else
    print_table(flags.by, *totals);
  return 0;
}

}  // namespace

Command add_usage_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "usage", "The usage ledger: requests and tokens by key, model, day or session");
  auto flags = std::make_shared<UsageFlags>();
  sub->add_option("-c,--config", flags->config_path, "Fleet configuration (YAML)")->required();
  sub->add_option("--since", flags->since, "How far back (default 24h)");
  sub->add_option("--by", flags->by, "key (default), model, day or session");
  sub->add_flag("--json", flags->json, "A JSON array");
  sub->add_flag("--csv", flags->csv, "CSV with a header line");
  sub->add_flag("--trace", flags->trace,
                "The requests as JSON lines (t, model, tokens, ...), a trace to replay");
  return Command{sub, [flags] { return run_usage(*flags); }};
}

}  // namespace switchyard::cli
