"""Helpers of the task-model output tests: tiny task models of ours with
random (seeded) weights, saved as the fine-tuning runner saves a run, and
transformers' side (its Auto classes, PyTorch logits)."""

import os

import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig
from albert_tf.checkpoints import mapping
from albert_tf.checkpoints import name_tables
from albert_tf.checkpoints.task_models import head_tables
from data_pipeline.tasks import label_list as label_list_lib

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SEQ = 32
CONFIG = AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQ)
H = CONFIG.hidden_size


def build(kind, num_labels=2, seed=0, dropout_rate=0.1):
  """Our task model of `kind`, every variable random (seeded), so that a
  lost bias or a transposed kernel shows."""
  from albert_tf import models
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(CONFIG, name="encoder")
  model = {"classifier": lambda: models.AlbertClassifier(
               encoder, num_labels, dropout_rate=dropout_rate),
           "token_classifier": lambda: models.AlbertTokenClassifier(
               encoder, num_labels),
           "span": lambda: models.AlbertSpanLabeler(encoder),
           "multiple_choice": lambda: models.AlbertMultipleChoice(encoder, 3),
           "squad_v2": lambda: models.AlbertSquadV2(encoder)}[kind]()
  rng = np.random.default_rng(seed)
  for v in model.weights:
    if v.dtype == tf.float32:
      v.assign(rng.normal(0, 0.2, v.shape).astype(np.float32))
  return model


def save_run(model, run_dir, label_list=None, step=3):
  """The run dir as FinetuningRunner writes it: the resume checkpoint
  (model + optimizer), the best dev checkpoint, albert_config.json, and the
  task's labels.json (own data, NER)."""
  import tf_keras
  optimizer = tf_keras.optimizers.Adam()
  optimizer.iterations.assign(step)
  checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
  tf.train.CheckpointManager(checkpoint, run_dir, 2,
                             step_counter=optimizer.iterations).save(step)
  tf.train.CheckpointManager(tf.train.Checkpoint(model=model),
                             os.path.join(run_dir, "best"), 1,
                             step_counter=optimizer.iterations).save(step)
  CONFIG.to_json_file(os.path.join(run_dir, "albert_config.json"))
  if label_list is not None:
    label_list_lib.write(run_dir, label_list)
  return run_dir


def ids(batch, seed=1, choices=None):
  rng = np.random.default_rng(seed)
  shape = (batch,) + ((choices,) if choices else ()) + (SEQ,)
  word = rng.integers(5, 99, size=shape).astype(np.int32)
  mask = np.ones_like(word)
  mask[..., SEQ - 5:] = 0
  types = np.zeros_like(word)
  types[..., SEQ // 2:] = 1
  return dict(input_word_ids=word * mask, input_mask=mask,
              input_type_ids=types)


def torch_outputs(model, inputs):
  with torch.no_grad():
    return model(
        input_ids=torch.tensor(inputs["input_word_ids"], dtype=torch.long),
        attention_mask=torch.tensor(inputs["input_mask"], dtype=torch.long),
        token_type_ids=torch.tensor(inputs["input_type_ids"],
                                    dtype=torch.long))


def load_hf(auto_class, folder):
  """transformers' own Auto class; asserts every key fitted."""
  model, info = getattr(transformers, auto_class).from_pretrained(
      folder, output_loading_info=True)
  assert info["missing_keys"] in (set(), [])
  assert info["unexpected_keys"] in (set(), [])
  assert info["mismatched_keys"] in (set(), [])
  return model.eval()


def read_back_hf(folder, kind):
  """ours -> Hugging Face -> ours with the name tables: canonical arrays."""
  from safetensors.numpy import load_file
  tensors = load_file(os.path.join(folder, "model.safetensors"))
  table = (name_tables.huggingface_table(CONFIG) +
           head_tables.head_table("huggingface", kind))
  if kind in head_tables.HUGGINGFACE_WITHOUT_POOLER:
    table = [e for e in table if not e.ours.startswith("pooler/")]
  shapes = dict(name_tables.our_shapes(CONFIG))
  shapes.update(head_tables.head_shapes(
      kind, H, tensors.get("classifier.bias", np.zeros(2)).shape[0]))
  return mapping.map_to_ours(tensors, table, shapes, source_name=folder,
                             layout="huggingface")


def assert_round_trip(model, folder, kind):
  from albert_tf.checkpoints import model_variables
  ours = model_variables.canonical_arrays(model)
  back = read_back_hf(folder, kind)
  if kind in head_tables.HUGGINGFACE_WITHOUT_POOLER:
    ours = {k: v for k, v in ours.items() if not k.startswith("pooler/")}
  assert set(back) == set(ours)
  for name, array in ours.items():
    np.testing.assert_array_equal(back[name], array, err_msg=name)
