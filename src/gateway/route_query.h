// What a routing decision may look at: the request, who sent it, and where
// it already failed. Passed to Router::acquire and kept by a queued request,
// so that a slot handed on by the queue is chosen by the same rule.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

#include "openai/request_inspector.h"

namespace switchyard::gateway {

// Views into the request's context, which outlives every use of the query.
struct RouteQuery {
  std::string_view model;                       // the resolved model
  const openai::RequestFacts* facts = nullptr;  // the request body's facts
  std::string_view key;                         // the API key's name; empty without keys
  std::string_view session;                     // the agent session; empty when none
  std::span<const std::size_t> tried;           // instances it failed on: never again
  std::string_view prompt = {};                 // the prompt's bytes (facts->prompt in the body)
  std::optional<std::size_t> only = {};         // the instance holding its stored response

  bool has_tried(std::size_t index) const {
    return std::find(tried.begin(), tried.end(), index) != tried.end();
  }
};

}  // namespace switchyard::gateway
