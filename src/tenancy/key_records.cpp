#include "tenancy/key_records.h"

#include <charconv>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "common/constant_time.h"
#include "tenancy/redis_scripts.h"

namespace switchyard::tenancy {

namespace {

std::string optional_text(const auto& v) {
  return v ? std::to_string(*v) : std::string();
}

Result<std::int64_t> integer(std::string_view field, std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size())
    return Error{fmt::format("{}: '{}' is not an integer", field, text)};
  return v;
}

Result<Digest> digest(std::string_view hex) {
  Digest d{};
  if (hex.size() != d.size() * 2) return Error{"hash: not a SHA-256 digest"};
  for (std::size_t i = 0; i < d.size(); ++i) {
    unsigned v = 0;
    const auto [end, ec] = std::from_chars(hex.data() + 2 * i, hex.data() + 2 * i + 2, v, 16);
    if (ec != std::errc() || end != hex.data() + 2 * i + 2)
      return Error{"hash: not a SHA-256 digest"};
    d[i] = static_cast<std::uint8_t>(v);
  }
  return d;
}

// The record's fields, one per line.
std::string encode_fields(const KeyRecord& r) {
  std::string models;
  for (const auto& m : r.limits.models) models += (models.empty() ? "" : ",") + m;
  const auto& l = r.limits;
  return fmt::format(
      "version={}\nprefix={}\nhash={}\nmodels={}\nrpm={}\ntpm={}\ntokens_per_day={}\n"
      "max_concurrency={}\nmax_sessions={}\nsession_idle_ms={}\npriority={}\nweight={}\n"
      "created={}\nrevoked={}\n",
      r.version, r.prefix, to_hex(r.hash), models, optional_text(l.rpm), optional_text(l.tpm),
      optional_text(l.tokens_per_day), optional_text(l.max_concurrency),
      optional_text(l.max_sessions), l.session_idle.count(), l.priority, l.weight, r.created,
      optional_text(r.revoked));
}

// What a record's signature covers: its name, then its text.
std::string signature(std::string_view secret, std::string_view name, std::string_view text) {
  std::string message;
  message.reserve(name.size() + 1 + text.size());
  message.append(name).append("\n").append(text);
  return to_hex(hmac_sha256(secret, message));
}

constexpr std::string_view sig_field = "sig=";

// The text without its signature line, after checking that line.
Result<std::string_view> verified(std::string_view name, std::string_view text,
                                  std::string_view secret) {
  const auto at = text.rfind(sig_field);
  if (at == std::string_view::npos || (at > 0 && text[at - 1] != '\n'))
    return Error{"sig: missing (redis_secret is set, so every record must be signed)"};
  std::string_view sig = text.substr(at + sig_field.size());
  if (sig.ends_with('\n')) sig.remove_suffix(1);
  const auto body = text.substr(0, at);
  if (!constant_time_equal(sig, signature(secret, name, body)))
    return Error{"sig: not valid for this redis_secret"};
  return body;
}

}  // namespace

std::string encode_record(const KeyRecord& r, std::string_view secret) {
  std::string text = encode_fields(r);
  if (!secret.empty()) text += fmt::format("{}{}\n", sig_field, signature(secret, r.name, text));
  return text;
}

Result<KeyRecord> decode_record(std::string_view name, std::string_view text,
                                std::string_view secret) {
  if (!secret.empty()) {
    auto body = verified(name, text, secret);
    if (!body) return body.error();
    text = *body;
  }
  std::map<std::string_view, std::string_view> fields;
  while (!text.empty()) {
    const auto eol = std::min(text.find('\n'), text.size());
    const auto line = text.substr(0, eol);
    text.remove_prefix(std::min(eol + 1, text.size()));
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) return Error{fmt::format("'{}' is not field=value", line)};
    fields[line.substr(0, eq)] = line.substr(eq + 1);
  }
  const auto need = [&](std::string_view f) -> Result<std::string_view> {
    const auto it = fields.find(f);
    if (it == fields.end()) return Error{fmt::format("{}: missing", f)};
    return it->second;
  };
  const auto need_int = [&](std::string_view f) -> Result<std::int64_t> {
    auto t = need(f);
    if (!t) return t.error();
    return integer(f, *t);
  };
  const auto maybe_int = [&](std::string_view f) -> Result<std::optional<std::int64_t>> {
    auto t = need(f);
    if (!t) return t.error();
    if (t->empty()) return std::optional<std::int64_t>();
    auto v = integer(f, *t);
    if (!v) return v.error();
    return std::optional(*v);
  };
  KeyRecord r;
  r.name = std::string(name);
  auto version = need_int("version");
  auto prefix = need("prefix");
  auto hash = need("hash");
  auto models = need("models");
  auto rpm = maybe_int("rpm"), tpm = maybe_int("tpm"), day = maybe_int("tokens_per_day");
  auto concurrency = maybe_int("max_concurrency"), sessions = maybe_int("max_sessions");
  auto idle = need_int("session_idle_ms"), priority = need_int("priority");
  auto weight = need("weight");
  auto created = need_int("created");
  auto revoked = maybe_int("revoked");
  const auto err = [](const auto& r) { return r ? nullptr : &r.error(); };
  for (const Error* e : {err(version), err(prefix), err(hash), err(models), err(rpm), err(tpm),
                         err(day), err(concurrency), err(sessions), err(idle), err(priority),
                         err(weight), err(created), err(revoked)})
    if (e) return *e;
  auto d = digest(*hash);
  if (!d) return d.error();
  r.version = *version;
  r.prefix = std::string(*prefix);
  r.hash = *d;
  std::string_view rest = *models;
  while (!rest.empty()) {
    const auto comma = std::min(rest.find(','), rest.size());
    if (comma > 0) r.limits.models.emplace_back(rest.substr(0, comma));
    rest.remove_prefix(std::min(comma + 1, rest.size()));
  }
  r.limits.rpm = *rpm;
  r.limits.tpm = *tpm;
  r.limits.tokens_per_day = *day;
  if (*concurrency) r.limits.max_concurrency = static_cast<int>(**concurrency);
  if (*sessions) r.limits.max_sessions = static_cast<int>(**sessions);
  r.limits.session_idle = std::chrono::milliseconds(*idle);
  r.limits.priority = static_cast<int>(*priority);
  const std::string weight_text(*weight);
  char* end = nullptr;
  r.limits.weight = std::strtod(weight_text.c_str(), &end);
  if (weight_text.empty() || *end != '\0' || !(r.limits.weight > 0))
    return Error{fmt::format("weight: '{}' is not a number above 0", weight_text)};
  r.created = *created;
  r.revoked = *revoked;
  return r;
}

std::vector<KeyRecord> merge_records(const std::vector<KeyRecord>& local,
                                     const std::vector<KeyRecord>& remote) {
  std::map<std::string, const KeyRecord*> by_name;
  for (const auto& r : remote) by_name[r.name] = &r;
  for (const auto& r : local) {
    auto [it, fresh] = by_name.emplace(r.name, &r);
    if (!fresh && r.version > it->second->version) it->second = &r;
  }
  std::vector<KeyRecord> out;
  out.reserve(by_name.size());
  for (const auto& [name, r] : by_name) out.push_back(*r);
  return out;
}

std::vector<std::string> put_record_command(const KeyRecord& r, std::string_view secret) {
  return {"EVAL",
          std::string(redis_scripts::put_key.text),
          "3",
          std::string(key_records::records),
          std::string(key_records::versions),
          std::string(key_records::version),
          r.name,
          std::to_string(r.version),
          encode_record(r, secret),
          std::string(key_records::channel)};
}

}  // namespace switchyard::tenancy
