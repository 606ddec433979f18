// The ledger's place in the chain: when a request ends, its row (key,
// model, instance, outcome, tokens, timings) goes to the usage ledger and
// its tokens to the key's totals for today.
#pragma once

#include <string>

#include "gateway/pipeline.h"
#include "gateway/usage_today.h"
#include "tenancy/usage_ledger.h"

namespace switchyard::gateway {

class RecordUsage final : public Stage {
 public:
  // `state_db`: the ledger's database; each key's totals for the UTC day
  // of `now` are read back from it.
  RecordUsage(const std::string& state_db, UsageToday::Time now)
      : ledger_(state_db), today_(UsageToday::from_ledger(state_db, now)) {}
  Decision check(RequestContext&) override { return {}; }
  void finish(RequestContext& ctx) override;
  // Each key's totals since UTC midnight.
  UsageToday& today() { return today_; }

 private:
  tenancy::UsageLedger ledger_;
  UsageToday today_;
};

}  // namespace switchyard::gateway
