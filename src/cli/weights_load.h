// `switchyard sim --model-size S --load-rate R`: how long an engine takes to load its weights, so
// a simulated model of 20 GiB loads for as long as the real one would (S / R seconds of the box).
#pragma once

#include <string_view>

#include "common/result.h"

namespace switchyard::cli {

// Read bandwidth when --load-rate is not given: a local NVMe drive's sequential read, which is
// what llama.cpp's mmap and vLLM's safetensors loader wait on for a model not in the page cache.
inline constexpr std::string_view kDefaultLoadRate = "2GiB/s";

// Seconds `size` ("20GiB", "16.5GB") takes at `rate` ("2GiB/s", "500MB/s"). The error names the
// flag whose value is wrong.
Result<double> weights_load_seconds(std::string_view size, std::string_view rate);

}  // namespace switchyard::cli
