// The sizes of one configuration as doubles, named as in DESIGN.md §5 — s sequence, b
// micro-batch, h hidden, f MLP hidden, a heads, k KV heads, V vocabulary, L layers, t tp,
// p pp, c cp, d dp, v virtual pipeline, m micro-batches per step — which the formulas of the
// memory and performance models read, and the attention widths a d and k d (head width d).
#ifndef PARATUNE_ESTIMATOR_CONFIG_SYMBOLS_H_
#define PARATUNE_ESTIMATOR_CONFIG_SYMBOLS_H_

#include "estimator/model_spec.h"
#include "estimator/parallel_config.h"
#include "estimator/pipeline_layout.h"
#include "estimator/training_spec.h"

namespace paratune {

struct ConfigSymbols {
  double s, b, h, f, a, k, V, L, t, p, c, d, v, m;
  // a d, the width of the queries and of the attention output (the output projection's
  // input), and k d, that of the keys and of the values: h and h k / a, exactly as doubles,
  // when the head width d is h / a; Qwen3's heads are wider (ModelSpec::head_dim).
  double attention_width, kv_width;
  double gbs;           // global batch size
  double layer_params;  // parameters of one transformer layer
  double mlp_matrices;  // weight matrices of the MLP: 3 gated (SwiGLU), 2 not
  bool tied;            // LM head tied to the input embedding
  PipelineLayout layout;
};

// Inline and allocation-free: the planner evaluates millions of configurations a second.
inline ConfigSymbols MakeConfigSymbols(const ModelSpec& model, const TrainingSpec& training,
                                       const ParallelConfig& config) {
  ConfigSymbols x;
  x.s = static_cast<double>(training.seq_len());
  x.b = static_cast<double>(config.micro_batch());
  x.h = static_cast<double>(model.hidden_size());
  x.f = static_cast<double>(model.ffn_hidden_size());
  x.a = static_cast<double>(model.num_attention_heads());
  x.k = static_cast<double>(model.num_kv_heads());
  x.V = static_cast<double>(model.vocab_size());
  x.L = static_cast<double>(model.num_layers());
  x.t = static_cast<double>(config.tp());
  x.p = static_cast<double>(config.pp());
  x.c = static_cast<double>(config.cp());
  x.d = static_cast<double>(config.dp());
  x.v = static_cast<double>(config.virtual_pipeline());
  x.m = static_cast<double>(config.NumMicroBatches(training));
  const double d = static_cast<double>(model.head_dim());
  x.attention_width = x.a * d;
  x.kv_width = x.k * d;
  x.gbs = static_cast<double>(training.global_batch_size());
  x.layer_params = model.LayerParameterCount();
  x.mlp_matrices = model.MlpMatrices();
  x.tied = model.tied_embeddings();
  x.layout = LayoutPipeline(model.num_layers(), config.pp(), config.virtual_pipeline());
  return x;
}

// Parameters of one dense layer's MLP, M f h (ModelSpec::LayerParameterCount), which an MoE
// layer has not.
inline double MlpParameters(const ConfigSymbols& x) { return x.mlp_matrices * x.f * x.h; }

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_CONFIG_SYMBOLS_H_
