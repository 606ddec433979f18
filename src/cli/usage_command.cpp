// `switchyard usage`: the usage ledger of a fleet's state_db, totalled by
// key, model, UTC day or session (a table, --json or --csv), or the requests
// themselves as a trace (--trace, JSON lines) to replay with `switchyard bench`.
#include <CLI/CLI.hpp>

#include <boost/json.hpp>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/command.h"
#include "common/json_text.h"
#include "fleet/fleet_config.h"
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

int fail(const std::string& message) {
  std::cerr << "switchyard usage: " << message << "\n";
  return 2;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
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
  auto config = fleet::load_fleet_config(flags.config_path);
  if (!config) return fail(config.error().message);
  auto since = fleet::parse_duration(flags.since);
  if (!since) return fail("--since: " + since.error().message);
  tenancy::GroupBy by = tenancy::GroupBy::key;
  if (flags.by == "model")
    by = tenancy::GroupBy::model;
  else if (flags.by == "day")
    by = tenancy::GroupBy::day;
  else if (flags.by == "session")
    by = tenancy::GroupBy::session;
  else if (flags.by != "key")
    return fail(fmt::format("--by: '{}' is not one of: key, model, day, session", flags.by));
  if (flags.json + flags.csv + flags.trace > 1)
    return fail("--json, --csv and --trace: give one at most");
  if (!std::filesystem::exists(config->state_db))
    return fail(
        fmt::format("state_db: {} does not exist (has the gateway run?)", config->state_db));
  auto db = tenancy::Database::open(config->state_db, /*read_only=*/true);
  if (!db) return fail(db.error().message);
  const std::int64_t since_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::system_clock::now().time_since_epoch() - *since)
                                    .count();
  if (flags.trace) {
    auto rows = tenancy::usage_rows(*db, since_ms);
    if (!rows) return fail(rows.error().message);
    print_trace(*rows);
    return 0;
  }
  auto totals = tenancy::usage_totals(*db, since_ms, by);
  if (!totals) return fail(totals.error().message);
  if (flags.json) {
    boost::json::array out;
    for (const auto& t : *totals) {
      boost::json::object o;
      o[flags.by] = t.group;
      o["requests"] = t.requests;
      o["errors"] = t.errors;
      o["prompt_tokens"] = t.prompt_tokens;
      o["cached_tokens"] = t.cached_tokens;
      o["completion_tokens"] = t.completion_tokens;
      o["mean_ttft_ms"] = t.mean_ttft_ms;
      o["mean_duration_ms"] = t.mean_duration_ms;
      out.push_back(std::move(o));
    }
    std::cout << to_json_text(out) << "\n";
  } else if (flags.csv) {
    std::cout << flags.by
              << ",requests,errors,prompt_tokens,cached_tokens,completion_tokens,mean_ttft_ms,"
                 "mean_duration_ms\n";
    for (const auto& t : *totals)
      std::cout << fmt::format("{},{},{},{},{},{},{:.1f},{:.1f}\n", csv_field(t.group), t.requests,
                               t.errors, t.prompt_tokens, t.cached_tokens, t.completion_tokens,
                               t.mean_ttft_ms, t.mean_duration_ms);
  } else {
    std::cout << fmt::format("{:<24} {:>9} {:>7} {:>12} {:>12} {:>12} {:>10} {:>10}\n", flags.by,
                             "REQUESTS", "ERRORS", "PROMPT", "CACHED", "COMPLETION", "TTFT MS",
                             "MS");
    for (const auto& t : *totals)
      std::cout << fmt::format("{:<24} {:>9} {:>7} {:>12} {:>12} {:>12} {:>10.1f} {:>10.1f}\n",
                               t.group.empty() ? "-" : t.group, t.requests, t.errors,
                               t.prompt_tokens, t.cached_tokens, t.completion_tokens,
                               t.mean_ttft_ms, t.mean_duration_ms);
  }
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
