#include "worker/cuda/fill_values.h"

#include <cmath>
#include <cstdint>

#include "gtest/gtest.h"

namespace paratune {
namespace {

TEST(FillValuesTest, UniformValuesAreNonZeroInRangeAndUniform) {
  const int64_t count = 100000;
  double sum_squares = 0;
  int64_t zeros = 0;
  for (int64_t i = 0; i < count; ++i) {
    const float value = FillUniformValue(17, i, 0.02f);
    EXPECT_GE(value, -0.02f);
    EXPECT_LT(value, 0.02f);
    zeros += value == 0;
    sum_squares += static_cast<double>(value) * value;
  }
  EXPECT_LE(zeros, 1);
  // Uniform on [-s, s) has variance s^2 / 3.
  EXPECT_NEAR(sum_squares / count, 0.02 * 0.02 / 3, 0.01 * 0.02 * 0.02 / 3);
  EXPECT_NE(FillUniformValue(17, 5, 1.0f), FillUniformValue(18, 5, 1.0f));
}

TEST(FillValuesTest, TokensCoverTheVocabulary) {
  const int32_t vocab = 1000;
  int64_t seen[vocab] = {};
  for (int64_t i = 0; i < 100000; ++i) {
    const int32_t token = FillTokenValue(17, i, vocab);
    ASSERT_GE(token, 0);
    ASSERT_LT(token, vocab);
    ++seen[token];
  }
  for (int32_t token = 0; token < vocab; ++token) EXPECT_GT(seen[token], 0) << token;
}

}  // namespace
}  // namespace paratune
