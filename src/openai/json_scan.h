// Finding one member of a JSON object without parsing the rest: a scan that
// tracks only strings and nesting. Every response and request passes through
// the gateway, and a full parse to read a few values was a measurable share
// of its cost per request (docs/performance.md). The input is assumed to be
// JSON; malformed input yields nothing or a wrong span, never an error, so
// callers validate first where it matters.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace switchyard::openai {

// Whether the quote (or the end) at `at` is escaped: an odd run of
// backslashes before it.
bool escaped(std::string_view json, std::size_t at);

// The text of the value of the first member named `key` of the object
// `json` (at its top level): a string with its quotes, a number, literal,
// object or array as written. nullopt when there is none.
std::optional<std::string_view> member_text(std::string_view json, std::string_view key);

// The value of the member named `key` when it is the object's last one,
// found from the end: an object or array, as member_text() gives it. A body's
// `usage` comes last, after all the generated text a forward scan would walk.
// nullopt when the last member is another, or its value no container.
std::optional<std::string_view> last_member_text(std::string_view json, std::string_view key);

// A top-level member of an object as written: its key (without quotes), its
// value as member_text() gives it, and the whole `"key": value` text.
struct Member {
  std::string_view key;
  std::string_view value;
  std::string_view text;
};

// The top-level members of the object `json`, in order (those before a
// malformed one).
std::vector<Member> members(std::string_view json);

// member_text() for several keys in one pass: out[i] is the value of the
// first member named keys[i]. `out` has the size of `keys`.
void member_texts(std::string_view json, std::span<const std::string_view> keys,
                  std::span<std::optional<std::string_view>> out);

}  // namespace switchyard::openai
