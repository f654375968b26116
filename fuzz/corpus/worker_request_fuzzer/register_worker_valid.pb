RegisterWorker


gpu-node-1NVIDIA H100 80GB HBM3€€ÀË¾ NVIDIA H100 80GB HBM3€€ÀË¾cudacommand"

racka1*megatron-llama