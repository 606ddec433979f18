#include "common/json_log.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <spdlog/details/log_msg.h>

namespace switchyard {
namespace {

boost::json::object format(std::string_view payload, spdlog::level::level_enum level) {
  spdlog::details::log_msg msg("", level, spdlog::string_view_t(payload.data(), payload.size()));
  msg.time = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764748800123));
  spdlog::memory_buf_t out;
  make_json_log_formatter()->format(msg, out);
  const std::string line(out.data(), out.size());
  EXPECT_TRUE(line.ends_with("}\n")) << line;
  return boost::json::parse(line).as_object();
}

TEST(JsonLog, ASentenceBecomesTheMessage) {
  const auto o = format("instance \"gpu0\": ready\tnow", spdlog::level::warn);
  EXPECT_EQ(o.at("time"), "2025-12-03T08:00:00.123Z");
  EXPECT_EQ(o.at("level"), "warning");
  EXPECT_EQ(o.at("msg"), "instance \"gpu0\": ready\tnow");
}

TEST(JsonLog, AStructuredLineKeepsItsMembers) {
  const auto o = format(R"({"event":"access","status":200,"trace_id":null})", spdlog::level::info);
  EXPECT_EQ(o.at("level"), "info");
  EXPECT_EQ(o.at("event"), "access");
  EXPECT_EQ(o.at("status"), 200);
  EXPECT_TRUE(o.at("trace_id").is_null());
  EXPECT_FALSE(o.contains("msg"));
}

}  // namespace
}  // namespace switchyard
