"""What the filesystem and output-mode tests share: a tiny config, a
random pretrainer, fine-tuning params and a crafted SST-2 folder."""

import numpy as np

from albert_common import file_io
from albert_tf.config import AlbertConfig
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.networks.albert_encoder import AlbertEncoder
from albert_tf.training.finetuning.params import FinetuningParams

VOCAB = 400
SEQ = 32
KEYWORD = "banana"


def config(**kwargs):
  """A tiny config (H=32, 2 layers); `kwargs` override fields."""
  values = dict(vocab_size=VOCAB, embedding_size=16, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=64)
  values.update(kwargs)
  return AlbertConfig(**values)


def finetuning_params(output_dir, **kwargs):
  """4 updates of 8 examples at SEQ, a checkpoint every 2; `kwargs`
  override flat fields."""
  values = dict(output_dir=output_dir, do_train=True, do_eval=True,
                max_seq_length=SEQ, train_batch_size=8, eval_batch_size=8,
                learning_rate=1e-3, train_step=4, warmup_step=1,
                save_checkpoints_steps=2, iterations_per_loop=2, seed=1)
  values.update(kwargs)
  return FinetuningParams.from_flat(**values)


def write_sst2(data_dir, words, rng):
  """SST-2 TSVs: label 1 iff the keyword is in the sentence."""
  def rows(n):
    out = []
    for _ in range(n):
      sentence = [rng.choice(words) for _ in range(8)]
      label = rng.randint(0, 1)
      if label:
        sentence.insert(rng.randint(0, 8), KEYWORD)
      out.append((" ".join(sentence), label))
    return out
  for split, n in (("train", 48), ("dev", 16)):
    file_io.write_atomic(file_io.join(data_dir, f"{split}.tsv"),
                         "sentence\tlabel\n" + "".join(
                             f"{s}\t{line}\n" for s, line in rows(n)))
  file_io.write_atomic(file_io.join(data_dir, "test.tsv"),
                       "index\tsentence\n" + "".join(
                           f"{i}\t{s}\n" for i, (s, _) in enumerate(rows(8))))


def random_pretrainer(config, seed=0):
  """An AlbertPretrainer with N(0, 0.1) weights (seeded)."""
  model = AlbertPretrainer(AlbertEncoder(config))
  rng = np.random.default_rng(seed)
  for v in model.weights:
    v.assign(rng.normal(0.0, 0.1, v.shape).astype(np.float32))
  return model


# convert_checkpoint's output formats
WRITERS = ("ours", "official", "huggingface")
