#include "estimator/torchtitan_memory.h"

#include "gtest/gtest.h"

namespace paratune {
namespace {

// Llama 3.1 8B (h 4096, f 14336, 32 heads of 128, 8 kv heads, V 128256), s 8192, b 2, as
// TorchTitan's Table 1 runs it on one GPU group.
ConfigSymbols Llama8b(double t = 1, double c = 1) {
  ConfigSymbols x{};
  x.s = 8192;
  x.b = 2;
  x.h = 4096;
  x.f = 14336;
  x.a = 32;
  x.k = 8;
  x.V = 128256;
  x.t = t;
  x.c = c;
  x.attention_width = 4096;
  x.kv_width = 1024;
  return x;
}

TEST(TorchTitanSelectiveLayerBytesTest, SavesWqWvW1W2AttentionAndTheBlockInput) {
  // Per token: 2 bytes x (h + a d + k d + f + h + a d) + 4 bytes x a.
  const double per_token = 2 * (4096 + 4096 + 1024 + 14336 + 4096 + 4096) + 4 * 32;
  EXPECT_DOUBLE_EQ(TorchTitanSelectiveLayerBytes(Llama8b()), 16384 * per_token);
  EXPECT_DOUBLE_EQ(TorchTitanSelectiveLayerBytes(Llama8b(2, 4)), 16384 * per_token / 8);
}

TEST(TorchTitanLossBytesTest, GatheredInputBf16LogitsAndThreeFp32Tensors) {
  const double tokens = 16384;
  EXPECT_DOUBLE_EQ(TorchTitanLossBytes(Llama8b()),
                   tokens * (2 * 4096 + 2 * 128256 + 12 * 128256.0));
  // Vocabulary-parallel logits over t; the gathered input is whole over t.
  EXPECT_DOUBLE_EQ(TorchTitanLossBytes(Llama8b(8)), tokens * (2 * 4096 + 14 * 128256.0 / 8));
}

TEST(TorchTitanGatheredLinearInputBytesTest, TwoWholeInputsLessTheirSequenceParallelShare) {
  const double tokens = 16384;
  // bf16 over t = 8: 2 tensors x 2 bytes x s b h, less the 1/8 the sharded count holds.
  EXPECT_DOUBLE_EQ(TorchTitanGatheredLinearInputBytes(Llama8b(8), 2),
                   2 * 2 * tokens * 4096 * 7 / 8);
  // Float8 gathers one byte per value; context parallelism splits the sequence.
  EXPECT_DOUBLE_EQ(TorchTitanGatheredLinearInputBytes(Llama8b(8, 2), 1),
                   2 * 1 * tokens / 2 * 4096 * 7 / 8);
  // Without tensor parallelism there is nothing to gather.
  EXPECT_DOUBLE_EQ(TorchTitanGatheredLinearInputBytes(Llama8b(), 2), 0);
}

TEST(TorchTitanExpandedKeyValueBytesTest, KeysAndValuesWidenedFromKvHeadsToEveryHead) {
  const double tokens = 16384;
  // 32 heads of 128 against 8 kv heads: keys and values 4096 wide instead of 1024.
  EXPECT_DOUBLE_EQ(TorchTitanExpandedKeyValueBytes(Llama8b()), 2 * 2 * tokens * (4096 - 1024));
  EXPECT_DOUBLE_EQ(TorchTitanExpandedKeyValueBytes(Llama8b(2, 4)),
                   2 * 2 * tokens * (4096 - 1024) / 8);
  ConfigSymbols multi_head = Llama8b();
  multi_head.kv_width = multi_head.attention_width;
  EXPECT_DOUBLE_EQ(TorchTitanExpandedKeyValueBytes(multi_head), 0);
}

TEST(TorchTitanPipelineBufferBytesTest, PerMicroBatchReceiveBuffersAndKeptOutputs) {
  // p 4, 8 micro-batches, one stage per rank, t 2: a boundary tensor is s b h / t bf16.
  ConfigSymbols x = Llama8b(2);
  x.p = 4;
  x.v = 1;
  x.m = 8;
  const double boundary = 2.0 * 16384 * 4096 / 2;
  const double logits = 2.0 * 16384 * 128256 / 2;
  // The first rank: 8 gradient buffers and 8 kept outputs; its input is the embedding's.
  EXPECT_DOUBLE_EQ(TorchTitanPipelineBufferBytes(x, 0, 4), 16 * boundary);
  // A middle rank with 3 chunks in flight: 5 idle input buffers besides.
  EXPECT_DOUBLE_EQ(TorchTitanPipelineBufferBytes(x, 1, 3), 21 * boundary);
  // The last rank: 7 idle input buffers and the logits of 7 more micro-batches than the loss's.
  EXPECT_DOUBLE_EQ(TorchTitanPipelineBufferBytes(x, 3, 1), 7 * boundary + 7 * logits);
  // Two stages per rank: the first rank's second stage receives, and all its chunks in flight
  // are shared evenly between its two stages.
  x.v = 2;
  EXPECT_DOUBLE_EQ(TorchTitanPipelineBufferBytes(x, 0, 10), (8 - 5 + 16 + 16) * boundary);
}

}  // namespace
}  // namespace paratune
