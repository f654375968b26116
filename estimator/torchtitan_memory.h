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

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_TORCHTITAN_MEMORY_H_
