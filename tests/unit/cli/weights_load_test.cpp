// sim --model-size / --load-rate: the weights' load time.
#include <gtest/gtest.h>

#include "cli/weights_load.h"

namespace switchyard::cli {
namespace {

TEST(WeightsLoad, SizeOverRate) {
  EXPECT_DOUBLE_EQ(*weights_load_seconds("20GiB", "2GiB/s"), 10.0);
  EXPECT_DOUBLE_EQ(*weights_load_seconds("1GB", "500MB/s"), 2.0);
  EXPECT_DOUBLE_EQ(*weights_load_seconds("0", kDefaultLoadRate), 0.0);
  EXPECT_DOUBLE_EQ(*weights_load_seconds("16GiB", kDefaultLoadRate), 8.0);
}

TEST(WeightsLoad, ErrorsNameTheFlag) {
  EXPECT_EQ(weights_load_seconds("lots", "2GiB/s").error().message.rfind("--model-size: ", 0), 0u);
  EXPECT_EQ(weights_load_seconds("1G", "2GiB").error().message,
            "--load-rate: '2GiB' is not a rate such as 2GiB/s");
  EXPECT_EQ(weights_load_seconds("1G", "fast/s").error().message.rfind("--load-rate: ", 0), 0u);
  EXPECT_EQ(weights_load_seconds("1G", "0/s").error().message, "--load-rate: 0 never loads");
}

}  // namespace
}  // namespace switchyard::cli
