// Builds the gateway's status snapshot (obs/status.h) from the instance
// table, the slot ledger and the queue: the one picture /health, /metrics
// and the admin views read.
#pragma once

#include "gateway/model_catalog.h"
#include "gateway/router.h"
#include "gateway/wait_queue.h"
#include "obs/status.h"

namespace switchyard::gateway {

// A reload may leave an old copy of an instance (removed, finishing its
// requests) beside its replacement under the same name: the snapshot shows
// the current one, so series keyed by name describe what serves now.
obs::StatusSnapshot take_snapshot(const InstanceTable& instances, const Router& router,
                                  const WaitQueue& queue, const ModelCatalog& catalog,
                                  bool draining);

}  // namespace switchyard::gateway
