"""The models, dev and test sets `benchmarks.serving.early_exit` times.

  crafted_model_and_data: an AlbertEarlyExitClassifier from random
    initialisation, fine-tuned here with PABEE's loss on a crafted task of
    mixed difficulty (crafted_task);
  finetuned_model_and_data: a user's `run_classifier --early_exit` run
    (its best checkpoint), dev and test files;
  cut_classifier: the static-depth baseline on the same weights.
"""

import os

import numpy as np
import tensorflow as tf
import tf_keras

from benchmarks import common

KEYWORDS = ("module", "function", "object")
DEV_SIZE = 192


def crafted_task(words, n: int, seed: int):
  """(sentences, labels): 3-9 filler words; one keyword (the label) or,
  in half the sentences, two different keywords: the later one is the
  label."""
  rng = np.random.default_rng(seed)
  texts, labels = [], []
  for i in range(n):
    chosen = list(rng.choice(words, int(rng.integers(3, 10))))
    first, last = rng.choice(len(KEYWORDS), 2, replace=False)
    if i % 2:
      at = sorted(rng.choice(len(chosen) + 1, 2, replace=False))
      chosen.insert(at[0], KEYWORDS[first])
      chosen.insert(at[1] + 1, KEYWORDS[last])
    else:
      chosen.insert(int(rng.integers(len(chosen) + 1)), KEYWORDS[last])
    texts.append(" ".join(chosen))
    labels.append(int(last))
  return texts, np.array(labels)


def train(model, inputs, labels, steps: int, learning_rate: float,
          skip: int = 0, optimizer=None):
  """PABEE's loss, Adam, batch 16 (skip: the batches earlier calls
  trained on, so a call continues the stream; optimizer: theirs)."""
  from albert_tf.models.albert_early_exit_classifier import early_exit_loss
  data = tf.data.Dataset.from_tensor_slices((inputs, labels)).shuffle(
      len(labels), seed=0).repeat().batch(16).skip(skip)
  optimizer = optimizer or tf_keras.optimizers.Adam(learning_rate)

  @tf.function
  def step(x, y):
    with tf.GradientTape() as tape:
      loss = tf.reduce_mean(early_exit_loss(y, model(x, training=True),
                                            regression=False))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss

  for x, y in data.take(steps):
    loss = step(x, y)
  return float(loss)


def cut_classifier(model, depth: int):
  """The full-depth AlbertClassifier of `depth` applications, sharing the
  early-exit model's encoder weights, with application depth's head."""
  from albert_tf.config import AlbertConfig
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = AlbertConfig.from_dict(dict(model.encoder.config.to_dict(),
                                       num_hidden_layers=depth))
  encoder = AlbertEncoder(config)
  encoder.set_weights(model.encoder.get_weights())
  classifier = AlbertClassifier(encoder, model.num_classes, dropout_rate=0.0)
  classifier.classifier.dense.kernel.assign(model.head_kernel[depth - 1])
  classifier.classifier.dense.bias.assign(model.head_bias[depth - 1])
  return classifier


def crafted_model_and_data(size, seq_length, train_steps, learning_rate, work,
                           max_train_steps=0):
  """The fine-tuned early-exit model, the dev inputs / labels, the test
  split's (inputs, labels) (crafted sentences of a third seed) and the
  final training loss. Trained `train_steps`, then, up to
  `max_train_steps` in all, `train_steps` more at a time until it learns:
  its full depth's accuracy on a check set (crafted sentences of another
  seed than dev's: no look at dev) is above chance
  (benchmarks.accuracy.check_above_chance)."""
  from albert_tf.exports.litert.runner import TextRunner
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from benchmarks import accuracy
  from benchmarks.serving.litert import corpus_words
  from data_pipeline.corpora import stdlib_corpus
  from data_pipeline.tokenization import sentencepiece_trainer
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  tf_keras.utils.set_random_seed(0)
  corpus = os.path.join(work, "corpus.txt")
  stdlib_corpus.write_stdlib_corpus(corpus, max_bytes=300_000)
  spm = os.path.join(work, "spm")
  sentencepiece_trainer.train_sentencepiece(corpus, spm, vocab_size=2000)
  words = corpus_words(corpus)
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer = SentencePieceTokenizer(spm + ".model")
  packer.seq_length, packer.labels = seq_length, list(map(str, range(3)))
  config = common.load_config(size)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), len(KEYWORDS),
                                    dropout_rate=0.0)
  texts, labels = crafted_task(words, 3000, seed=0)
  inputs = packer.classify_inputs(texts)
  check_texts, check_labels = crafted_task(words, DEV_SIZE, seed=2)
  check = packer.classify_inputs(check_texts)
  trained, optimizer = 0, tf_keras.optimizers.Adam(learning_rate)
  while True:
    # One stream: each chunk continues the shuffled batches.
    loss = train(model, inputs, labels, train_steps, learning_rate,
                 skip=trained, optimizer=optimizer)
    trained += train_steps
    logits = model(check, training=False)["all_logits"].numpy()[:, -1]
    try:
      accuracy.check_above_chance("full depth", float(np.mean(
          logits.argmax(-1) == check_labels)), check_labels, "check set")
      break
    except accuracy.ChanceError as e:
      if trained + train_steps > max(max_train_steps, train_steps):
        print(f"after {trained} steps: {e}", flush=True)
        break
      print(f"not learned after {trained} steps (loss {loss:.3f}): "
            "training on", flush=True)
  dev_texts, dev_labels = crafted_task(words, DEV_SIZE, seed=1)
  test_texts, test_labels = crafted_task(words, DEV_SIZE, seed=3)
  return (model, packer.classify_inputs(dev_texts), dev_labels,
          (packer.classify_inputs(test_texts), test_labels), loss)


def finetuned_model_and_data(run_dir, dev_file, spm_model_file,
                              seq_length, test_file=None):
  """The best checkpoint of a `run_classifier --early_exit` run (its
  albert_config.json, labels.json and best/), the dev file's inputs and
  label indices (columns text, label), packed as fine-tuning packs them,
  and the test file's (None without test_file)."""
  from albert_common import file_io
  from albert_tf.config import AlbertConfig
  from albert_tf.models import AlbertEarlyExitClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tasks import label_list
  config = AlbertConfig.from_json_file(
      file_io.join(run_dir, "albert_config.json"))
  labels = list(label_list.read(run_dir).labels)
  model = AlbertEarlyExitClassifier(AlbertEncoder(config), len(labels),
                                    dropout_rate=0.0)
  best = tf.train.latest_checkpoint(file_io.join(run_dir, "best"))
  if best is None:
    raise SystemExit(f"--run_dir {run_dir}: no best/ checkpoint (was it run "
                     "with --do_eval?)")
  tf.train.Checkpoint(model=model).restore(best).expect_partial(
      ).assert_existing_objects_matched()
  dev, dev_labels = labeled_inputs(dev_file, spm_model_file, seq_length,
                                   labels)
  test = (labeled_inputs(test_file, spm_model_file, seq_length, labels)
          if test_file else None)
  return model, dev, dev_labels, test


def labeled_inputs(path, spm_model_file, seq_length, labels):
  """A CSV's (columns text, label) encoder inputs ([rows, seq_length]
  each), packed as fine-tuning packs them, and its label indices [rows]."""
  import csv
  import io

  from albert_common import file_io
  from albert_tf.exports.text_runner import TextRunner
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  rows = list(csv.DictReader(io.StringIO(file_io.read_text(path))))
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer = SentencePieceTokenizer(spm_model_file)
  packer.seq_length, packer.labels = seq_length, labels
  inputs = packer.classify_inputs([row["text"] for row in rows])
  return inputs, np.array([labels.index(row["label"]) for row in rows])
