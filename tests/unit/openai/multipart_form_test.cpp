#include "openai/multipart_form.h"

#include <gtest/gtest.h>

namespace switchyard::openai {
namespace {

constexpr std::string_view kType = "multipart/form-data; boundary=----b0";

std::string form(std::string_view model) {
  std::string body =
      "------b0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
      "Content-Type: audio/wav\r\n\r\nRIFF\r\n--not-the-boundary\r\n";
  if (!model.empty())
    body += "\r\n------b0\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n" +
            std::string(model);
  body += "\r\n------b0\r\ncontent-disposition: form-data; name=\"stream\"\r\n\r\ntrue";
  body += "\r\n------b0--\r\n";
  return body;
}

TEST(MultipartForm, PartsAreSpansOfTheBody) {
  const std::string body = form("whisper");
  auto parts = parse_form(body, "----b0");
  ASSERT_TRUE(parts) << parts.error().message;
  ASSERT_EQ(parts->size(), 3u);
  EXPECT_EQ((*parts)[0].name, "file");
  EXPECT_TRUE((*parts)[0].is_file);
  EXPECT_EQ((*parts)[0].filename, "a.wav");
  // A line that looks like a boundary but is not one stays in the file.
  EXPECT_EQ(body.substr((*parts)[0].value.offset, (*parts)[0].value.length),
            "RIFF\r\n--not-the-boundary\r\n");
  EXPECT_EQ((*parts)[1].name, "model");
  EXPECT_FALSE((*parts)[1].is_file);
}

TEST(MultipartForm, AudioFactsAndTheModelRewrittenAsPlainText) {
  const std::string body = form("whisper");
  auto facts = inspect_audio_form(body, kType);
  ASSERT_TRUE(std::holds_alternative<AudioForm>(facts));
  const auto& f = std::get<AudioForm>(facts).facts;
  EXPECT_EQ(f.model, "whisper");
  EXPECT_TRUE(f.stream);
  EXPECT_TRUE(f.form);
  const std::string out = rewrite_request(body, f, "/models/whisper-large-v3.bin", false);
  EXPECT_NE(out.find("name=\"model\"\r\n\r\n/models/whisper-large-v3.bin\r\n------b0"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("\"/models"), std::string::npos) << "not JSON-quoted";
}

TEST(MultipartForm, RefusalsNameWhatIsWrong) {
  const auto error = [](std::string_view body, std::string_view type) {
    auto r = inspect_audio_form(body, type);
    EXPECT_TRUE(std::holds_alternative<ApiError>(r));
    return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
  };
  EXPECT_NE(error(form("m"), "application/json").message.find("multipart/form-data"),
            std::string::npos);
  EXPECT_NE(error(form("m"), "multipart/form-data").message.find("boundary"), std::string::npos);
  const std::string no_file =
      "------b0\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nm\r\n------b0--\r\n";
  const ApiError missing = error(no_file, kType);
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.param, "file");
  std::string cut = form("m");
  cut.resize(cut.size() - 14);
  EXPECT_NE(error(cut, kType).message.find("closing boundary"), std::string::npos);
  EXPECT_NE(
      error("------b0\r\nX: y\r\n\r\nz\r\n------b0--", kType).message.find("Content-Disposition"),
      std::string::npos);
  const std::string empty_model =
      "------b0\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a\"\r\n\r\nx"
      "\r\n------b0\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n\r\n------b0--";
  EXPECT_EQ(error(empty_model, kType).param, "model");
  // Without a model part the default model serves it, as for the JSON routes.
  EXPECT_TRUE(std::holds_alternative<AudioForm>(inspect_audio_form(form(""), kType)));
}

}  // namespace
}  // namespace switchyard::openai
