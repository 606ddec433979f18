#include "openai/api_error.h"

#include <gtest/gtest.h>

#include <boost/json.hpp>

namespace switchyard::openai {
namespace {

namespace json = boost::json;

// The data of the event named `name` in `stream`.
json::object event_data(const std::string& stream, const std::string& name) {
  const auto at = stream.find("event: " + name + "\ndata: ");
  EXPECT_NE(at, std::string::npos) << stream;
  if (at == std::string::npos) return {};
  const auto begin = at + name.size() + 14;
  return json::parse(stream.substr(begin, stream.find("\n\n", begin) - begin)).as_object();
}

// A failed stream ends in each API's own terms: a client of the Responses
// API waits for a terminal response event, not for [DONE].
TEST(StreamErrorEvents, EachDialectEndsItsOwnWay) {
  const ApiError e = ApiError::unavailable("the gateway is shutting down", "shutting_down");
  const std::string openai = stream_error_events(e, Dialect::openai);
  EXPECT_TRUE(openai.ends_with("data: [DONE]\n\n"));
  EXPECT_NE(openai.find(R"("code":"shutting_down")"), std::string::npos);
  const std::string anthropic = stream_error_events(e, Dialect::anthropic);
  EXPECT_EQ(event_data(anthropic, "error").at("type").as_string(), "error");
  const std::string responses = stream_error_events(e, Dialect::responses);
  EXPECT_EQ(responses.find("[DONE]"), std::string::npos);
  const auto error = event_data(responses, "error");
  EXPECT_EQ(error.at("code").as_string(), "shutting_down");
  EXPECT_EQ(error.at("message").as_string(), "the gateway is shutting down");
  const auto failed = event_data(responses, "response.failed");
  EXPECT_EQ(failed.at("response").at("status").as_string(), "failed");
  EXPECT_EQ(failed.at("response").at("error").at("code").as_string(), "shutting_down");
}

}  // namespace
}  // namespace switchyard::openai
