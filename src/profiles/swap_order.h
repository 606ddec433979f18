// Which waiting model gets the cards next (docs/models.md, "Scheduling").
//
// batch (the default): a loaded model's queued requests are served before a
// swap away from it; among unloaded models, the one with most requests
// waiting loads first, unless one has aged: once its oldest request has
// waited swapping.max_wait minus its expected load time, the next swap is
// its model's and it may take the cards from a model that still has work
// (after that model's min_resident). fifo: the oldest waiter's model first,
// and any model with work may be swapped away (drained, never cut), as
// llama-swap and llama.cpp's router order their loads. Pure.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "config/fleet_config.h"

namespace switchyard::profiles {

// The requests waiting for one unloaded model.
struct ModelWait {
  std::string model;
  int waiting = 0;          // requests
  double oldest_wait = 0;   // seconds its oldest request has waited
  double load_seconds = 0;  // what loading it is expected to take
};

// Whether its oldest request has waited so long that, with the load still
// to come, it would reach max_wait: its model goes first.
bool aged(const ModelWait& wait, std::chrono::milliseconds max_wait);

// The models in the order their loads are tried.
std::vector<std::string> swap_order(std::vector<ModelWait> waits,
                                    const config::SwappingOptions& options);

// Whether a load for `want` may unload an instance that still has work
// (requests in flight or queued) and has been resident `resident_seconds`.
bool may_preempt(const ModelWait& want, double resident_seconds,
                 const config::SwappingOptions& options);

}  // namespace switchyard::profiles
