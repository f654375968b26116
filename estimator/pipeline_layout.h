// How a model's layers are split over pipeline stages and virtual (interleaved) chunks.
#ifndef PARATUNE_ESTIMATOR_PIPELINE_LAYOUT_H_
#define PARATUNE_ESTIMATOR_PIPELINE_LAYOUT_H_

#include <cstdint>

namespace paratune {

// Layers held by the GPUs of each kind of pipeline stage. Every stage holds v chunks.
//
// Even split: L / (p v) layers per chunk everywhere. Uneven split, as Megatron-LM does it with
// --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split (the
// layout NVIDIA uses for Llama-3.1-405B, 126 layers, on pp 8 x vp 8): the embedding and the
// loss count as one layer each, so each of the p v chunks gets n = (L + 2) / (p v) slots and
// the first chunk of stage 0 and the last chunk of stage p - 1 hold n - 1 real layers.
struct PipelineLayout {
  bool uneven = false;
  int64_t first_stage_layers = 0;   // stage 0
  int64_t middle_stage_layers = 0;  // stages 1 .. p - 2 (equal to the others when p <= 2)
  int64_t last_stage_layers = 0;    // stage p - 1 (stage 0 itself when p = 1)
};

// True when `layers` split evenly over pp x vp chunks.
inline bool EvenPipelineSplitFits(int64_t layers, int64_t pp, int64_t vp) {
  return layers % (pp * vp) == 0;
}

// True when the uneven split above applies: pp > 1 and pp x vp divides layers + 2. With n = 1
// the first and last chunks hold only the embedding and the loss, as Megatron allows.
inline bool UnevenPipelineSplitFits(int64_t layers, int64_t pp, int64_t vp) {
  return pp > 1 && (layers + 2) % (pp * vp) == 0;
}

// The even layout when it fits, the uneven one otherwise. For a (layers, pp, vp) that fits
// neither, the returned counts are meaningless; callers check the rules first.
inline PipelineLayout LayoutPipeline(int64_t layers, int64_t pp, int64_t vp) {
  PipelineLayout layout;
  if (EvenPipelineSplitFits(layers, pp, vp) || !UnevenPipelineSplitFits(layers, pp, vp)) {
    layout.first_stage_layers = layout.middle_stage_layers = layout.last_stage_layers = layers / pp;
    return layout;
  }
  const int64_t slots_per_stage = (layers + 2) / pp;
  layout.uneven = true;
  layout.first_stage_layers = slots_per_stage - 1;
  layout.middle_stage_layers = slots_per_stage;
  layout.last_stage_layers = slots_per_stage - 1;
  return layout;
}

}  // namespace paratune

#endif  // PARATUNE_ESTIMATOR_PIPELINE_LAYOUT_H_
