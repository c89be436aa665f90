"""Reading a checkpoint of any layout into canonical float32 arrays.

  readers             `read_weights` and its `Weights`: the layout given or
                      detected, dispatched to its reader (below, or
                      task_models / keras_hub_presets)
  official_reader     google-research/albert TF1 checkpoints
  huggingface_reader  Hugging Face safetensors and pytorch_model.bin
  torch_pickle        a pytorch_model.bin state dict read without torch
  object_readers      object-graph checkpoints: ours and Model Garden's
                      encoder

May import: albert_tf.checkpoints' modules (configs, locate, name tables,
mapping, model variables), its task_models and keras_hub_presets, albert_tf's
models, networks, layers and root modules, albert_common.
"""
