// `switchyard admin`: the admin API of a running gateway, for people.
//   switchyard admin --url URL [--key K] status|profile NAME|drain NAME|enable NAME
//                                        |load MODEL|unload MODEL
#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <iostream>

#include <fmt/format.h>

#include "cli/command.h"
#include "http/fetch.h"

namespace switchyard::cli {

namespace json = boost::json;

namespace {

struct AdminFlags {
  std::string url = "http://127.0.0.1:8080";
  std::string key;
  std::vector<std::string> words;  // the action and its argument
};

std::string text(const json::value* v) {
  if (!v || v->is_null()) return "-";
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_double()) return fmt::format("{:.2f}", v->get_double());
  return json::serialize(*v);
}

void print_status(const json::object& s) {
  const auto* active = s.if_contains("active");
  if (active && !active->is_null()) {
    std::cout << fmt::format("profile {} ({}, mode {})", text(active), text(s.if_contains("state")),
                             text(s.if_contains("mode")));
    if (const auto* t = s.if_contains("target"); t && !t->is_null()) std::cout << " -> " << text(t);
    std::cout << "\n";
    for (const auto& p : s.at("profiles").as_array()) {
      const auto& o = p.as_object();
      std::string members;
      for (const auto& n : o.at("instances").as_array())
        members += (members.empty() ? "" : ", ") + std::string(n.as_string());
      std::cout << fmt::format("  {} {}: {}\n", o.at("active").as_bool() ? "*" : " ",
                               text(o.if_contains("name")), members);
    }
    if (const auto* last = s.if_contains("last_switch"); last && last->is_object()) {
      const auto& l = last->as_object();
      std::cout << fmt::format(
          "last switch: {} -> {} ({}) {} in {} s{}\n", text(l.if_contains("from")),
          text(l.if_contains("to")), text(l.if_contains("reason")),
          l.at("ok").as_bool() ? "done" : "rolled back", text(l.if_contains("seconds")),
          l.at("ok").as_bool() ? "" : ": " + text(l.if_contains("error")));
    }
  } else {
    std::cout << "no profiles configured\n";
  }
  std::cout << fmt::format("{:<16} {:<12} {:<14} {:<9} {:<6} {}\n", "INSTANCE", "MODEL", "STATE",
                           "ADMIN", "GPUS", "IN FLIGHT");
  for (const auto& i : s.at("instances").as_array()) {
    const auto& o = i.as_object();
    std::string state = text(o.if_contains("state"));
    if (o.at("asleep").as_bool()) state += " (asleep)";
    std::cout << fmt::format("{:<16} {:<12} {:<14} {:<9} {:<6} {}/{}\n",
                             text(o.if_contains("name")), text(o.if_contains("model")), state,
                             text(o.if_contains("admin")), text(o.if_contains("gpus")),
                             text(o.if_contains("in_flight")), text(o.if_contains("slots")));
  }
  for (const auto& q : s.at("queue").as_array())
    std::cout << fmt::format("queue {}: {} waiting\n", text(q.as_object().if_contains("model")),
                             text(q.as_object().if_contains("queued")));
}

int run_admin(const AdminFlags& f) {
  const auto usage =
      "switchyard admin: expected status, profile NAME, drain NAME, enable NAME, load MODEL or "
      "unload MODEL";
  if (f.words.empty()) {
    std::cerr << usage << "\n";
    return 2;
  }
  const auto& action = f.words[0];
  http::FetchRequest req;
  const bool status = action == "status";
  if (status != (f.words.size() == 1) || (!status && f.words.size() != 2)) {
    std::cerr << usage << "\n";
    return 2;
  }
  std::string base = f.url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (status) {
    req.url = base + "/admin/status";
  } else if (action == "profile") {
    req.method = "POST";
    req.url = base + "/admin/profile";
    req.body = json::serialize(json::object{{"profile", f.words[1]}});
    req.headers.emplace_back("Content-Type", "application/json");
    // A switch answers once the new profile serves: engines may take minutes.
    req.timeout = std::chrono::minutes(30);
  } else if (action == "drain" || action == "enable") {
    req.method = "POST";
    req.url = base + "/admin/instances/" + f.words[1] + "/" + action;
    // The admin routes take changes as JSON only (gateway/admin_access.h).
    req.body = "{}";
    req.headers.emplace_back("Content-Type", "application/json");
  } else if (action == "load" || action == "unload") {
    req.method = "POST";
    req.url = base + "/models/" + action;
    req.body = json::serialize(json::object{{"model", f.words[1]}});
    req.headers.emplace_back("Content-Type", "application/json");
  } else {
    std::cerr << usage << " (got '" << action << "')\n";
    return 2;
  }
  if (!f.key.empty()) req.headers.emplace_back("Authorization", "Bearer " + f.key);
  auto res = http::fetch(req);
  if (!res) {
    std::cerr << "switchyard admin: " << res.error().message << "\n";
    return 1;
  }
  boost::system::error_code ec;
  auto doc = json::parse(res->body, ec);
  if (ec || !doc.is_object()) {
    std::cerr << fmt::format("switchyard admin: {} answered {} without JSON: {}\n", req.url,
                             res->status, res->body.substr(0, 200));
    return 1;
  }
  const auto& o = doc.as_object();
  if (res->status != 200) {
    const auto* err = o.if_contains("error");
    const auto* msg = err && err->is_object() ? err->as_object().if_contains("message") : nullptr;
    std::cerr << fmt::format("switchyard admin: {} ({})\n", text(msg), res->status);
    return 1;
  }
  if (status) {
    print_status(o);
  } else if (action == "profile") {
    if (const auto* sw = o.if_contains("switch"); sw && sw->is_object())
      std::cout << fmt::format("profile {} active (switched in {} s)\n",
                               text(o.if_contains("active")),
                               text(sw->as_object().if_contains("seconds")));
    else
      std::cout << fmt::format("profile {} already active\n", text(o.if_contains("active")));
  } else if (action == "load" || action == "unload") {
    std::cout << fmt::format("model {}: {} started\n", f.words[1],
                             action == "load" ? "loading" : "unloading");
  } else {
    std::cout << fmt::format("instance {}: admin {}\n", text(o.if_contains("instance")),
                             text(o.if_contains("admin")));
  }
  return 0;
}

}  // namespace

Command add_admin_command(CLI::App& app) {
  auto flags = std::make_shared<AdminFlags>();
  auto* sub = app.add_subcommand(
      "admin",
      "A running gateway's admin API: status, profile NAME, drain NAME, enable NAME, "
      "load MODEL, unload MODEL");
  sub->add_option("--url", flags->url, "The gateway's URL")->capture_default_str();
  sub->add_option("--key", flags->key, "The admin key (fleet config admin_key)");
  sub->add_option("action", flags->words,
                  "status | profile NAME | drain NAME | enable NAME | load MODEL | unload MODEL")
      ->required();
  return {sub, [flags] { return run_admin(*flags); }};
}

}  // namespace switchyard::cli
