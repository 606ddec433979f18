#include "common/json_log.h"

#include <chrono>
#include <string_view>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/json_text.h"

namespace switchyard {

namespace {

class JsonLogFormatter final : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    using namespace std::chrono;
    const auto since_epoch = msg.time.time_since_epoch();
    const auto ms = duration_cast<milliseconds>(since_epoch).count() % 1000;
    const std::time_t seconds = duration_cast<std::chrono::seconds>(since_epoch).count();
    const auto level = spdlog::level::to_string_view(msg.level);
    fmt::format_to(std::back_inserter(dest), "{{\"time\":\"{:%Y-%m-%dT%H:%M:%S}.{:03}Z\",",
                   fmt::gmtime(seconds), ms);
    fmt::format_to(std::back_inserter(dest), "\"level\":\"{}\",",
                   std::string_view(level.data(), level.size()));
    const std::string_view text(msg.payload.data(), msg.payload.size());
    // Only the gateway's own structured lines start so; a sentence never does.
    if (text.size() > 2 && text.starts_with("{\"") && text.ends_with('}')) {
      dest.append(text.data() + 1, text.data() + text.size());
    } else {
      const std::string member = "\"msg\":" + json_quote(text) + "}";
      dest.append(member.data(), member.data() + member.size());
    }
    dest.push_back('\n');
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonLogFormatter>();
  }
};

}  // namespace

std::unique_ptr<spdlog::formatter> make_json_log_formatter() {
  return std::make_unique<JsonLogFormatter>();
}

void use_json_log() {
  spdlog::default_logger()->set_formatter(make_json_log_formatter());
}

}  // namespace switchyard
