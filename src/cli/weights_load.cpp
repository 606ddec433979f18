#include "cli/weights_load.h"

#include <string>

#include "plan/byte_size.h"

namespace switchyard::cli {

Result<double> weights_load_seconds(std::string_view size, std::string_view rate) {
  const auto bytes = plan::parse_byte_size(size);
  if (!bytes) return Error{"--model-size: " + bytes.error().message};
  if (!rate.ends_with("/s")) {
    return Error{"--load-rate: '" + std::string(rate) + "' is not a rate such as 2GiB/s"};
  }
  const auto per_second = plan::parse_byte_size(rate.substr(0, rate.size() - 2));
  if (!per_second) return Error{"--load-rate: " + per_second.error().message};
  if (*per_second == 0) return Error{"--load-rate: 0 never loads"};
  return static_cast<double>(*bytes) / static_cast<double>(*per_second);
}

}  // namespace switchyard::cli
