#include "openai/json_scan.h"

#include <array>
#include <bit>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace switchyard::openai {

bool escaped(std::string_view json, std::size_t at) {
  std::size_t n = 0;
  while (n < at && json[at - 1 - n] == '\\') ++n;
  return n % 2 == 1;
}

namespace {

// The first quote among the 16 bytes at `from`, or npos (also when fewer
// than 16 are left). Keys and most short values end within them, found
// without memchr's call: some 450 instructions a request (request, model
// and usage scans; docs/performance.md).
std::size_t quote_near(std::string_view json, std::size_t from) {
  if (from + 16 > json.size()) return std::string_view::npos;
#if defined(__SSE2__)
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(json.data() + from));
  const auto hits =
      static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8('"'))));
  return hits ? from + static_cast<std::size_t>(std::countr_zero(hits)) : std::string_view::npos;
#else
  const auto at = json.substr(from, 16).find('"');
  return at == std::string_view::npos ? at : from + at;
#endif
}

// The index just past the string whose opening quote is at `open`, or npos.
std::size_t skip_string(std::string_view json, std::size_t open) {
  // A quote after a backslash may be escaped: the loop below decides.
  if (const std::size_t q = quote_near(json, open + 1);
      q != std::string_view::npos && json[q - 1] != '\\')
    return q + 1;
  for (std::size_t i = open + 1; i < json.size(); ++i) {
    i = json.find('"', i);  // memchr: strings are most of a response
    if (i == std::string_view::npos) return i;
    if (!escaped(json, i)) return i + 1;
  }
  return std::string_view::npos;
}

// The last '"' before `end`, or npos: memrchr, where string_view::rfind
// walks back a byte at a time.
std::size_t quote_before(std::string_view json, std::size_t end) {
  const void* at = memrchr(json.data(), '"', end);
  return at ? static_cast<std::size_t>(static_cast<const char*>(at) - json.data())
            : std::string_view::npos;
}

constexpr auto kStructural = [] {
  std::array<bool, 256> table{};
  for (unsigned char c : std::string_view("\"{}[]")) table[c] = true;
  return table;
}();

// The next quote or bracket at or after `i`, or npos. A byte at a time: in
// JSON as engines write it these are a few bytes apart outside strings, and
// a 16-byte vector search measured slower here.
std::size_t next_structural(std::string_view json, std::size_t i) {
  for (; i < json.size(); ++i) {
    if (kStructural[static_cast<unsigned char>(json[i])]) return i;
  }
  return std::string_view::npos;
}

std::size_t skip_space(std::string_view json, std::size_t i) {
  while (i < json.size() &&
         (json[i] == ' ' || json[i] == '\t' || json[i] == '\n' || json[i] == '\r'))
    ++i;
  return i;
}

// The object or array opening at `open`, brackets included.
std::optional<std::string_view> container_at(std::string_view json, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < json.size();) {
    i = next_structural(json, i);
    if (i == std::string_view::npos) break;
    if (json[i] == '"') {
      i = skip_string(json, i);
      continue;
    }
    depth += json[i] == '{' || json[i] == '[' ? 1 : -1;
    ++i;
    if (depth == 0) return json.substr(open, i - open);
  }
  return std::nullopt;
}

// The value starting at `at`, as written.
std::optional<std::string_view> value_at(std::string_view json, std::size_t at) {
  if (json[at] == '{' || json[at] == '[') return container_at(json, at);
  if (json[at] == '"') {
    const std::size_t close = skip_string(json, at);
    if (close == std::string_view::npos) return std::nullopt;
    return json.substr(at, close - at);
  }
  std::size_t last = at;
  while (last < json.size() && json[last] != ',' && json[last] != '}' && json[last] != ']' &&
         json[last] != ' ' && json[last] != '\n' && json[last] != '\r' && json[last] != '\t')
    ++last;
  return json.substr(at, last - at);
}

}  // namespace

std::vector<Member> members(std::string_view json) {
  std::vector<Member> out;
  std::size_t i = skip_space(json, 0);
  if (i >= json.size() || json[i] != '{') return out;
  for (i = skip_space(json, i + 1); i < json.size() && json[i] == '"';) {
    const std::size_t key_end = skip_string(json, i);
    if (key_end == std::string_view::npos) break;
    const std::size_t colon = skip_space(json, key_end);
    if (colon >= json.size() || json[colon] != ':') break;
    const std::size_t at = skip_space(json, colon + 1);
    if (at >= json.size()) break;
    const auto value = value_at(json, at);
    if (!value) break;
    out.push_back(
        {json.substr(i + 1, key_end - i - 2), *value, json.substr(i, at + value->size() - i)});
    const std::size_t next = skip_space(json, at + value->size());
    if (next >= json.size() || json[next] != ',') break;
    i = skip_space(json, next + 1);
  }
  return out;
}

void member_texts(std::string_view json, std::span<const std::string_view> keys,
                  std::span<std::optional<std::string_view>> out) {
  std::size_t missing = keys.size();
  for (auto& o : out) o.reset();
  int depth = 0;
  for (std::size_t i = 0; i < json.size() && missing > 0;) {
    i = next_structural(json, i);
    if (i == std::string_view::npos) break;
    if (json[i] != '"') {
      depth += json[i] == '{' || json[i] == '[' ? 1 : -1;
      ++i;
      continue;
    }
    const std::size_t end = skip_string(json, i);
    if (end == std::string_view::npos) break;
    std::size_t which = keys.size();
    if (depth == 1) {
      const std::string_view name = json.substr(i + 1, end - i - 2);
      for (std::size_t k = 0; k < keys.size(); ++k)
        if (!out[k] && keys[k] == name) which = k;
    }
    i = end;
    if (which == keys.size()) continue;
    const std::size_t colon = skip_space(json, end);
    if (colon >= json.size() || json[colon] != ':') continue;  // a string value, not a key
    const std::size_t value = skip_space(json, colon + 1);
    if (value >= json.size()) break;
    const std::optional<std::string_view> text = value_at(json, value);
    if (!text) break;
    out[which] = text;
    --missing;
    // The value is consumed whole: the scan goes on after it at this depth.
    i = static_cast<std::size_t>(text->data() - json.data()) + text->size();
  }
}

std::optional<std::string_view> last_member_text(std::string_view json, std::string_view key) {
  // A last member whose value is a container ends the text with its bracket
  // and the object's brace: any other ending is no match, told without a
  // walk back through the text's quotes (most bodies without `usage`).
  const std::size_t brace = json.find_last_not_of(" \t\n\r");
  if (brace == std::string_view::npos || brace == 0 || json[brace] != '}') return std::nullopt;
  const std::size_t bracket = json.find_last_not_of(" \t\n\r", brace - 1);
  if (bracket == std::string_view::npos || (json[bracket] != '}' && json[bracket] != ']'))
    return std::nullopt;
  // The last `"key"` not inside a string (a string holds its quotes
  // escaped), a colon, and a container after which only the object's own
  // closing brace follows: at the top level, since one more enclosing
  // container would close there too.
  std::size_t quote = quote_before(json, json.size());
  for (; quote != std::string_view::npos && quote > 0; quote = quote_before(json, quote)) {
    if (quote < key.size() + 1 || json.substr(quote - key.size(), key.size()) != key) continue;
    const std::size_t open = quote - key.size() - 1;
    if (json[open] == '"' && !escaped(json, open)) break;
  }
  if (quote == std::string_view::npos || quote == 0) return std::nullopt;
  const std::size_t colon = skip_space(json, quote + 1);
  if (colon >= json.size() || json[colon] != ':') return std::nullopt;
  const std::size_t value = skip_space(json, colon + 1);
  if (value >= json.size() || (json[value] != '{' && json[value] != '[')) return std::nullopt;
  const auto text = container_at(json, value);
  if (!text) return std::nullopt;
  const std::size_t close = skip_space(json, value + text->size());
  if (close >= json.size() || json[close] != '}') return std::nullopt;
  if (skip_space(json, close + 1) != json.size()) return std::nullopt;
  return text;
}

std::optional<std::string_view> member_text(std::string_view json, std::string_view key) {
  std::optional<std::string_view> out;
  member_texts(json, std::span(&key, 1), std::span(&out, 1));
  return out;
}

}  // namespace switchyard::openai
