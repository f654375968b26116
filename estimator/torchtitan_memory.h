// What TorchTitan's Llama training holds that Megatron-LM's does not, as terms of the memory
// estimate under training.framework torchtitan (docs/estimator.md, "Frameworks"). Sources are
// TorchTitan 9dec370 (2024-12-26), the commit of its published H100 benchmark
// (data/measured/torchtitan_h100_202412.csv), whose code these follow.
#ifndef PARATUNE_ESTIMATOR_TORCHTITAN_MEMORY_H_
#define PARATUNE_ESTIMATOR_TORCHTITAN_MEMORY_H_

#include "estimator/config_symbols.h"

namespace paratune {

// Bytes one transformer layer keeps per micro-batch on one GPU under TorchTitan's selective
// activation checkpointing at op level (its default, activation_checkpoint.selective_ac_option
// "op"; torchtitan/parallelisms/parallelize_llama.py, _apply_ac_to_transformer_block): inside a
// checkpointed block it saves the outputs of the ops of _save_list, matrix multiplications
// except every second one (the second, fourth and sixth of wq, wk, wv, wo, w1, w3, w2 in
// torchtitan/models/llama/model.py's order are recomputed) and the fused attention's, and
// recomputes everything else. Per token: the block's input h, wq's a d, wv's k d, w1's f and
// w2's h in bf16, the attention output a d in bf16 and its log-sum-exp, one fp32 value per
// head. Sharded over t (sequence or head parallel) and c (sequence chunks).
double TorchTitanSelectiveLayerBytes(const ConfigSymbols& x);

// The loss region's peak on the stage that computes the loss, per micro-batch on one GPU:
// the LM head's input gathered over the sequence-parallel ranks (s b h / c in bf16), its bf16
// logits (vocabulary-parallel with loss_parallel), and the cross-entropy of the logits cast to
// fp32 (train.py: cross_entropy(pred.flatten(0, 1).float(), ...)): at its backward, the fp32
// log-softmax output, its gradient and the gradient of the fp32 logits live at once, three
// fp32 tensors of s b V / (t c) values.
double TorchTitanLossBytes(const ConfigSymbols& x);

// Bytes one transformer layer keeps per micro-batch on one GPU, beyond the sequence-parallel
// share the layer's activations count, for the inputs of its QKV and first MLP linears under
// tensor parallelism (t > 1): TorchTitan's TP plan gathers each sub-block's input over the TP
// ranks before its column-parallel linears (torchtitan/parallelisms/parallelize_llama.py:176-193
// at 9dec370, PrepareModuleInput from Shard(1) to Replicate() for "attention" and
// "feed_forward"), and autograd saves that gathered tensor whole for the weight gradient of
// wq, wk, wv (and w1, w3), where Megatron-LM's sequence parallelism saves the shard and
// gathers it again in the backward (Korthikanti et al. 2022). Two tensors of s b h / c values of
// `bytes_per_value` each, less their 1 / t share: 2 in bf16, 1 under Float8, whose
// PrepareFloat8ModuleInput casts the input to float8 before the all-gather and whose
// Float8Linear saves that float8 input (torchao eab345c, torchao/float8/float8_tensor_parallel.py
// :196-217 and float8_linear.py:51).
double TorchTitanGatheredLinearInputBytes(const ConfigSymbols& x, double bytes_per_value);

// Bytes one transformer layer keeps per micro-batch on one GPU, beyond the keys and values the
// layer's activations count at their own k d width, for the keys and values TorchTitan's
// attention expands to every query head before the fused attention (repeat_kv,
// torchtitan/models/llama/model.py:201-202 at 9dec370): F.scaled_dot_product_attention saves
// its inputs for the backward, so keys and values are held a d wide, 2 bf16 tensors of
// s b (a d - k d) / (t c) values more.
double TorchTitanExpandedKeyValueBytes(const ConfigSymbols& x);

// Bytes PyTorch's pipelining (torch 1963fc8, the benchmark's) keeps per micro-batch on one GPU
// of pipeline rank `rank` beyond what its layers hold, in place of Megatron-LM's four send and
// receive tensors; `chunks_in_flight` is the rank's model chunks in flight, whose first layers
// already count their received inputs. For each of the rank's v local stages and each of the
// step's m micro-batches:
// - a receive buffer for the stage's input (every stage but the first) and one for its
//   output's gradient (every stage but the last), allocated up front per micro-batch
//   (torch/distributed/pipelining/stage.py, _prepare_forward_infra and
//   _prepare_backward_infra / _create_grad_recv_info);
// - the stage's output, appended to output_chunks by every stage until the step's outputs are
//   merged (forward_one_chunk; pytorch/pytorch#153383, May 2025, keeps them on the last stage
//   only), where Megatron-LM frees a sent output's data (deallocate_output_tensor,
//   megatron/core/pipeline_parallel/schedules.py:166, on by megatron/training/
//   argument_utils.py:305 at core_v0.19.0). A boundary tensor is s b h / (t c) bf16 values; the
//   last stage's output is its bf16 logits, s b V / (t c) values, of which TorchTitanLossBytes
//   counts one.
double TorchTitanPipelineBufferBytes(const ConfigSymbols& x, double rank, double chunks_in_flight);

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_TORCHTITAN_MEMORY_H_
