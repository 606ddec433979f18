// The presets against BRIEF.md's table, on a virtual clock: aggregate
// delivered tok/s of one instance for N closed-loop streams of a 2K-token
// random prompt and 256 forced tokens. Tolerance 5% (the e2e test allows 15%
// over real HTTP).
#include "sim/presets.h"

#include <gtest/gtest.h>

#include <iostream>

#include "closed_loop.h"

namespace switchyard::sim {
namespace {

struct Case {
  const char* preset;
  int n;
  double want;
};

class PresetTable : public ::testing::TestWithParam<Case> {};

TEST_P(PresetTable, DeliversTheTableThroughput) {
  const Case c = GetParam();
  const Preset* p = find_preset(c.preset);
  ASSERT_NE(p, nullptr);
  const auto r = testing::closed_loop(p->engine.scheduler, c.n, 3);
  EXPECT_NEAR(r.tokens_per_second(), c.want, c.want * 0.05)
      << c.preset << " N=" << c.n << ": " << r.tokens_per_second() << " tok/s";
  EXPECT_EQ(r.preemptions, 0u);
}

INSTANTIATE_TEST_SUITE_P(
    Brief, PresetTable,
    ::testing::Values(Case{"7900xtx-27b-q4", 1, 59.4}, Case{"7900xtx-27b-q4", 2, 59.4},
                      Case{"7900xtx-27b-q4", 4, 59.4}, Case{"7900xtx-27b-q4", 8, 59.4},
                      Case{"7900xtx-blower-27b-q4", 1, 46.1},
                      Case{"7900xtx-blower-27b-q4", 4, 46.1}, Case{"r9700-27b-q4", 1, 65},
                      Case{"r9700-27b-q4", 8, 65}, Case{"2x7900xtx-tp2-vllm", 1, 29.6},
                      Case{"2x7900xtx-tp2-vllm", 4, 97}, Case{"2x7900xtx-tp2-vllm", 8, 118}));

TEST(Presets, Tp2InterpolatesAtTwoStreams) {
  // The table says "interpolate": between N=1 and N=4, and reported.
  const auto& options = find_preset("2x7900xtx-tp2-vllm")->engine.scheduler;
  const double two = testing::closed_loop(options, 2, 3).tokens_per_second();
  std::cout << "2x7900xtx-tp2-vllm N=2: " << two << " tok/s\n";
  EXPECT_GT(two, 29.6 * 1.5);
  EXPECT_LT(two, 97);
}

TEST(Presets, Tp2ColdPrefillOf130kTokensTakes77Seconds) {
  const TimingModel t(find_preset("2x7900xtx-tp2-vllm")->engine.scheduler.timing);
  EXPECT_NEAR(t.prefill_seconds(130000, 0), 77, 1);
}

TEST(Presets, SingleCardPrefillIs900ShortAnd300AveragedOver186k) {
  const TimingModel t(find_preset("7900xtx-27b-q4")->engine.scheduler.timing);
  EXPECT_NEAR(512 / t.prefill_seconds(512, 0), 900, 900 * 0.02);
  EXPECT_NEAR(186000 / t.prefill_seconds(186000, 0), 300, 3);
  const TimingModel blower(find_preset("7900xtx-blower-27b-q4")->engine.scheduler.timing);
  EXPECT_NEAR(blower.prefill_seconds(2048, 0) * 0.82, t.prefill_seconds(2048, 0), 1e-9);
}

TEST(Presets, SpeculativeDecodingHelpsOneStreamAndHurtsFour) {
  // The field report: MTP3 took N=1 from 29.6 to 46.7 tok/s, N=4 from 97 to 50.
  auto options = find_preset("2x7900xtx-tp2-vllm")->engine.scheduler;
  options.timing.spec_draft_tokens = 3;
  options.timing.spec_acceptance = 0.416;
  const double one = testing::closed_loop(options, 1, 4).tokens_per_second();
  const double four = testing::closed_loop(options, 4, 3).tokens_per_second();
  EXPECT_NEAR(one, 46.7, 46.7 * 0.08);
  EXPECT_NEAR(four, 50, 50 * 0.08);
}

TEST(Presets, FastHasNoDelays) {
  const auto r = testing::closed_loop(find_preset("fast")->engine.scheduler, 4, 2);
  EXPECT_EQ(r.seconds, 0);
  EXPECT_EQ(r.tokens, 4 * 2 * 256);
}

TEST(Presets, SpeedSaysPureDecodeAndDeliveredEndToEnd) {
  const auto& card = find_preset("7900xtx-27b-q4")->engine.scheduler.timing;
  EXPECT_EQ(describe_speed(card),
            "128.5 tok/s pure decode per sequence, 59.4 tok/s delivered end to end (2048-token "
            "prompt + 256 tokens, idle engine)");
  const std::string fast = describe_speed(find_preset("fast")->engine.scheduler.timing);
  EXPECT_EQ(fast, "no delays (decode and prefill take no time)");
}

TEST(Presets, ListLineNamesThePresetWhatItModelsAndItsSpeed) {
  for (const auto& p : presets()) {
    const std::string line = preset_line(p);
    EXPECT_EQ(line.rfind(p.name, 0), 0u) << line;
    EXPECT_NE(line.find(p.summary), std::string::npos) << line;
    EXPECT_NE(line.find(p.dialect + " dialect"), std::string::npos) << line;
    EXPECT_EQ(line.find("inf"), std::string::npos) << line;
    EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  }
  EXPECT_NE(preset_line(*find_preset("2x7900xtx-tp2-vllm")).find("8 slots"), std::string::npos);
}

TEST(Presets, AllValidate) {
  for (const auto& p : presets()) EXPECT_FALSE(validate(p.engine)) << p.name;
}

}  // namespace
}  // namespace switchyard::sim
