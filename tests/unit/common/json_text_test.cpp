#include "common/json_text.h"

#include <gtest/gtest.h>
#include <boost/json.hpp>

namespace switchyard {
namespace {

TEST(JsonText, KeepsOrderAndWritesPlainDoubles) {
  boost::json::object o;
  o["z"] = 1;
  o["a"] = 8.518;
  o["f"] = 1.0;
  o["s"] = "q\"x";
  o["n"] = nullptr;
  EXPECT_EQ(to_json_text(o), R"({"z":1,"a":8.518,"f":1.0,"s":"q\"x","n":null})");
}

TEST(JsonText, DoublesStayDoublesWhenParsedBack) {
  const auto v = boost::json::parse(to_json_text(boost::json::value(2.0)));
  EXPECT_TRUE(v.is_double());
}

}  // namespace
}  // namespace switchyard
