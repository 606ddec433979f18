#include "openai/json_scan.h"

#include <gtest/gtest.h>

namespace switchyard::openai {
namespace {

TEST(MemberText, ReturnsTheValueAsWritten) {
  const std::string_view json =
      R"({"s" : "a \"q\" b", "n":-1.5e3 ,"t":true,"o":{"k":[1,{"x":"}"}]},"a":[ "]" ],"z":null})";
  EXPECT_EQ(member_text(json, "s"), R"("a \"q\" b")");
  EXPECT_EQ(member_text(json, "n"), "-1.5e3");
  EXPECT_EQ(member_text(json, "t"), "true");
  EXPECT_EQ(member_text(json, "o"), R"({"k":[1,{"x":"}"}]})");
  EXPECT_EQ(member_text(json, "a"), R"([ "]" ])");
  EXPECT_EQ(member_text(json, "z"), "null");
  EXPECT_FALSE(member_text(json, "k"));  // nested, not a member of the top object
  EXPECT_FALSE(member_text(json, "q"));  // inside a string
}

TEST(MemberText, FindsTheTopLevelMemberPastNestedOnesOfTheSameName) {
  const std::string_view json =
      R"({"messages":[{"model":"inner","content":"\"model\":\"fake\""}],"model":"outer"})";
  const auto text = member_text(json, "model");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, R"("outer")");
  EXPECT_EQ(text->data(), json.data() + json.rfind(R"("outer")"));  // a view into the input
}

TEST(MemberText, LongStringsAndEscapesAtEveryAlignment) {
  // Quotes, escapes and brackets at many offsets, strings of many lengths.
  for (std::size_t pad = 0; pad < 40; ++pad) {
    const std::string filler(pad, 'x');
    const std::string json = R"({"a":")" + filler + R"(\\",)" + R"("b":"{[\"usage\"]}" ,"k":[)" +
                             filler + R"(1],"usage":{"n":")" + filler + R"("}})";
    SCOPED_TRACE(json);
    EXPECT_EQ(member_text(json, "usage"), R"({"n":")" + filler + R"("})");
    EXPECT_EQ(member_text(json, "k"), "[" + filler + "1]");
    EXPECT_EQ(member_text(json, "b"), R"("{[\"usage\"]}")");
  }
}

TEST(MemberText, MalformedInputYieldsNothing) {
  EXPECT_FALSE(member_text(R"({"s":"unterminated)", "s"));
  EXPECT_FALSE(member_text(R"({"o":{"k":1)", "o"));
  EXPECT_FALSE(member_text(R"({"k":)", "k"));
  EXPECT_FALSE(member_text("", "k"));
}

TEST(Members, EveryTopLevelMemberInOrderAsWritten) {
  const auto all = members(R"( {"a": 1, "b" :{"a":[2,"}"]},"c":"x\"y" , "d":null} )");
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[0].key, "a");
  EXPECT_EQ(all[0].value, "1");
  EXPECT_EQ(all[0].text, R"("a": 1)");
  EXPECT_EQ(all[1].value, R"({"a":[2,"}"]})");
  EXPECT_EQ(all[1].text, R"("b" :{"a":[2,"}"]})");
  EXPECT_EQ(all[2].value, R"("x\"y")");
  EXPECT_EQ(all[3].key, "d");
  EXPECT_TRUE(members("{}").empty());
  EXPECT_TRUE(members("[1]").empty());
  EXPECT_EQ(members(R"({"a":1,"b":)").size(), 1u);  // those before a malformed one
}

TEST(LastMemberText, FindsTheLastTopLevelMemberFromTheEnd) {
  const std::string_view json =
      R"({"model":"m","choices":[{"text":"\"usage\":{}"}],"usage":{"prompt_tokens":3}} )";
  const auto text = last_member_text(json, "usage");
  ASSERT_TRUE(text);
  EXPECT_EQ(*text, R"({"prompt_tokens":3})");
  EXPECT_EQ(text->data(), json.data() + json.rfind('{'));  // a view into the input
  EXPECT_EQ(last_member_text(R"({"usage" : [1, 2]})", "usage"), "[1, 2]");
  EXPECT_EQ(last_member_text("{\"usage\":{\"n\":1}\r\n}\n", "usage"), R"({"n":1})");
}

TEST(LastMemberText, NothingUnlessTheMemberIsTheTopObjectsLast) {
  // Not last: the forward scan (member_text) is the caller's fallback.
  EXPECT_FALSE(last_member_text(R"({"usage":{"n":1},"model":"m"})", "usage"));
  // Nested one level down, though last there.
  EXPECT_FALSE(last_member_text(R"({"message":{"usage":{"n":1}}})", "usage"));
  // Only inside a string.
  EXPECT_FALSE(last_member_text(R"({"text":"x \"usage\":{\"n\":1}"})", "usage"));
  // A key that only ends in the name.
  EXPECT_FALSE(last_member_text(R"({"my_usage":{"n":1}})", "usage"));
  // Not a container, or unfinished.
  EXPECT_FALSE(last_member_text(R"({"usage":3})", "usage"));
  EXPECT_FALSE(last_member_text(R"({"usage":{"n":1})", "usage"));
  EXPECT_FALSE(last_member_text(R"({"usage":{"n":1}}})", "usage"));
  EXPECT_FALSE(last_member_text("", "usage"));
  EXPECT_FALSE(last_member_text("}", "usage"));
  EXPECT_FALSE(last_member_text("\"usage\"", "usage"));
}

}  // namespace
}  // namespace switchyard::openai
