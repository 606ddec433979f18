#include "sim/faults.h"

#include <gtest/gtest.h>

namespace switchyard::sim {
namespace {

using namespace std::chrono_literals;
using clock_type = Faults::clock;

TEST(Faults, NoneByDefault) {
  Faults f(FaultOptions{});
  EXPECT_FALSE(f.loading());
  EXPECT_FALSE(f.refuse_completion());
  for (int produced = 0; produced < 100; ++produced)
    EXPECT_EQ(f.after_tokens(produced, 1'000'000), TokenFault::none);
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(f.completion_ended());
}

TEST(Faults, LoadingUntilTheDelayHasPassed) {
  FaultOptions o;
  o.startup_delay_seconds = 1.5;
  const auto t0 = clock_type::now();
  Faults f(o, t0);
  EXPECT_TRUE(f.loading(t0));
  EXPECT_TRUE(f.loading(t0 + 1499ms));
  EXPECT_FALSE(f.loading(t0 + 1500ms));
  EXPECT_FALSE(f.loading(t0 + 1h));
}

TEST(Faults, RefusesExactlyTheFirstN) {
  FaultOptions o;
  o.fail_before_first_byte = 3;
  Faults f(o);
  EXPECT_TRUE(f.refuse_completion());
  EXPECT_TRUE(f.refuse_completion());
  EXPECT_TRUE(f.refuse_completion());
  EXPECT_FALSE(f.refuse_completion());
  EXPECT_FALSE(f.refuse_completion());
}

TEST(Faults, ResetAndStallAtExactlyTheirTokenCount) {
  FaultOptions reset;
  reset.reset_after_tokens = 4;
  Faults r(reset);
  EXPECT_EQ(r.after_tokens(3, 3), TokenFault::none);
  EXPECT_EQ(r.after_tokens(4, 4), TokenFault::reset);
  // Per completion, not per engine: every request resets at its own 4th token.
  EXPECT_EQ(r.after_tokens(4, 400), TokenFault::reset);

  FaultOptions stall;
  stall.stall_after_tokens = 0;
  Faults s(stall);
  EXPECT_EQ(s.after_tokens(0, 0), TokenFault::stall);
  EXPECT_EQ(s.after_tokens(1, 1), TokenFault::none);
}

TEST(Faults, ExitAfterTokensCountsTheWholeEngineAndWins) {
  FaultOptions o;
  o.exit_after_tokens = 10;
  o.reset_after_tokens = 2;
  Faults f(o);
  EXPECT_EQ(f.after_tokens(2, 9), TokenFault::reset);
  EXPECT_EQ(f.after_tokens(1, 10), TokenFault::exit);
  EXPECT_EQ(f.after_tokens(2, 10), TokenFault::exit);
}

TEST(Faults, ExitAfterTheNthCompletionEnds) {
  FaultOptions o;
  o.exit_after_requests = 2;
  Faults f(o);
  EXPECT_FALSE(f.completion_ended());
  EXPECT_TRUE(f.completion_ended());
}

}  // namespace
}  // namespace switchyard::sim
