// The dashboard's place in the chain: a request is listed as running from
// this stage on and moves to the finished ones when it ends.
#pragma once

#include "gateway/console_feed.h"
#include "gateway/pipeline.h"

namespace switchyard::gateway {

class ListRequest final : public Stage {
 public:
  // `feed` must outlive the stage.
  explicit ListRequest(ConsoleFeed& feed) : feed_(feed) {}
  Decision check(RequestContext& ctx) override {
    feed_.begin(ctx.listed, ctx.record, ctx.key_name, ctx.session);
    return {};
  }
  void finish(RequestContext& ctx) override { feed_.finish(ctx.listed); }

 private:
  ConsoleFeed& feed_;
};

}  // namespace switchyard::gateway
