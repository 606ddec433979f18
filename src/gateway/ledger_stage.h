// The ledger's place in the chain: when a request ends, its row (key,
// model, instance, outcome, tokens, timings) goes to the usage ledger and
// its tokens to the key's totals for today.
#pragma once

#include "gateway/pipeline.h"
#include "gateway/usage_today.h"
#include "tenancy/usage_ledger.h"

namespace switchyard::gateway {

class RecordUsage final : public Stage {
 public:
  // Both must outlive the stage.
  RecordUsage(tenancy::UsageLedger& ledger, UsageToday& today) : ledger_(ledger), today_(today) {}
  boost::asio::awaitable<Verdict> run(RequestContext&) override { co_return Verdict::next; }
  void finish(RequestContext& ctx) override;

 private:
  tenancy::UsageLedger& ledger_;
  UsageToday& today_;
};

}  // namespace switchyard::gateway
