// log.format: json. Every line of the default logger becomes one JSON
// object: {"time", "level", "msg"}, or, for a message that is itself a JSON
// object (the access lines, gateway/accounting), its members after time and
// level. Collectors (Loki, Elasticsearch, journald's JSON) read it as is.
#pragma once

#include <memory>

#include <spdlog/formatter.h>

namespace switchyard {

std::unique_ptr<spdlog::formatter> make_json_log_formatter();

// Gives the default logger the JSON formatter.
void use_json_log();

}  // namespace switchyard
