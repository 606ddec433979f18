// What unit tests in several folders share: byte units, the tiny real GGUF
// model, and checks on text.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/result.h"

namespace switchyard::testing_support {

inline constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
inline constexpr std::uint64_t kGiB = std::uint64_t{1} << 30;

// ../shared/models: a real 260K-parameter llama model.
inline constexpr const char* kStories = SWITCHYARD_SHARED_DIR "/models/stories260K.gguf";

inline bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

inline bool mentions(const Error& error, std::string_view text) {
  return contains(error.message, text);
}

}  // namespace switchyard::testing_support
