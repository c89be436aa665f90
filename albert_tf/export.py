"""SavedModel export: the TF Hub BERT/ALBERT encoder and preprocessor interfaces.

`export_savedmodel(...)` writes two SavedModels (tf_keras, save_format="tf"):

<export_dir>/encoder
  Called as a Keras layer or with `tf.saved_model.load(path)(inputs,
  training=...)`: dict of int32 [batch, seq] `input_word_ids`, `input_mask`,
  `input_type_ids` -> dict `sequence_output` [batch, seq, H], `pooled_output`
  [batch, H], `default` (= pooled_output) and `encoder_outputs` (list of L
  [batch, seq, H]). Its `trainable_variables` are the encoder's, so
  `hub.KerasLayer(path, trainable=True)` fine-tunes it; dropout acts only with
  training=True. Signatures (for TF Serving): `serving_default`, same inputs,
  outputs `sequence_output`, `pooled_output`, `default` and
  `encoder_outputs_0` ... `encoder_outputs_{L-1}`. With `with_mlm`, a
  sub-object `mlm` takes also `masked_lm_positions` (int32 [batch, P]) and
  adds `mlm_logits` [batch, P, V] (the pretraining head, decoder tied to the
  word embeddings); its variables are not among the encoder's trainable
  variables; a signature `mlm` exposes it too. Assets: the SentencePiece
  model (`sp_model_file`, as TF Hub ALBERT models) and `albert_config.json`.

<export_dir>/preprocessor
  The TF Hub preprocessor convention (tensorflow.org/hub/
  common_saved_model_apis/text): calling it on a tf.string [batch] gives the
  encoder inputs for one segment, `[CLS] a [SEP]`, padded / truncated to
  `seq_length`. `.tokenize(strings)` -> int32 RaggedTensor [batch, (tokens)]
  (ALBERT normalisation + SentencePiece + digit-comma rule, in-graph, ids
  equal to data_pipeline.tokenization.SentencePieceTokenizer.encode);
  `.bert_pack_inputs([tokens_a, tokens_b], seq_length=...)` packs one or two
  segments as `[CLS] a [SEP] b [SEP]` (type ids 0 for a, 1 for b), trimming
  the longer segment first (round robin) as the official `_truncate_seq_pair`.
  Signatures: `serving_default` (`sentences`) and `two_segments`
  (`text_a`, `text_b`), both at `seq_length`. Assets as the encoder's.

Both are built in a hidden folder `.<name>.tmp-<pid>` next to `export_dir`
and renamed into place when complete (on object stores file by file, each
`saved_model.pb` last); `export_dir` may be on any TensorFlow filesystem
(`gs://`).
Loading the preprocessor needs the tensorflow-text ops registered:
`import tensorflow_text` first (`load_saved_model` and `hub_layer` here do).
"""

import contextlib
from typing import Iterator, Optional, Tuple

import tensorflow as tf
import tf_keras
from absl import logging

from albert_tf import export_endpoints
from data_pipeline import file_io
from albert_tf.config import AlbertConfig
from data_pipeline.shared import UserInputError

_INPUT_NAMES = ("input_word_ids", "input_mask", "input_type_ids")


def build_encoder_export_model(encoder, pretrainer=None) -> tf_keras.Model:
  """The encoder with the TF Hub interface (+ `.mlm` when pretrainer given)."""
  inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
            for name in _INPUT_NAMES}
  outputs = dict(encoder(inputs))
  outputs["default"] = outputs["pooled_output"]
  core = tf_keras.Model(inputs=inputs, outputs=outputs, name="albert_encoder")
  if pretrainer is not None:
    mlm_inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32,
                                       name=name)
                  for name in _INPUT_NAMES + ("masked_lm_positions",)}
    mlm_outputs = dict(encoder({k: mlm_inputs[k] for k in _INPUT_NAMES}))
    mlm_outputs["default"] = mlm_outputs["pooled_output"]
    mlm_outputs["mlm_logits"] = pretrainer.masked_lm(
        mlm_outputs["sequence_output"], mlm_inputs["masked_lm_positions"])
    mlm_model = tf_keras.Model(inputs=mlm_inputs, outputs=mlm_outputs,
                               name="albert_encoder_with_mlm")
    # Keep the head's variables out of the encoder's (trainable) variables,
    # as Model Garden's export_tfhub does.
    core._auto_track_sub_layers = False  # pylint: disable=protected-access
    core.mlm = mlm_model
  return core


def _flatten(outputs):
  flat = {k: outputs[k] for k in ("sequence_output", "pooled_output",
                                  "default")}
  for i, x in enumerate(outputs["encoder_outputs"]):
    flat[f"encoder_outputs_{i}"] = x
  if "mlm_logits" in outputs:
    flat["mlm_logits"] = outputs["mlm_logits"]
  return flat


def _encoder_signatures(core, with_mlm: bool):
  spec = tf.TensorSpec([None, None], tf.int32)

  @tf.function(input_signature=[spec, spec, spec])
  def serving_default(input_word_ids, input_mask, input_type_ids):
    return _flatten(core(dict(input_word_ids=input_word_ids,
                              input_mask=input_mask,
                              input_type_ids=input_type_ids), training=False))

  signatures = {"serving_default": serving_default}
  if with_mlm:
    @tf.function(input_signature=[spec, spec, spec, spec])
    def mlm(input_word_ids, input_mask, input_type_ids, masked_lm_positions):
      return _flatten(core.mlm(dict(
          input_word_ids=input_word_ids, input_mask=input_mask,
          input_type_ids=input_type_ids,
          masked_lm_positions=masked_lm_positions), training=False))
    signatures["mlm"] = mlm
  return signatures


def build_preprocessor(spm_model_file: str, do_lower_case: bool = True,
                       seq_length: int = 128) -> tf_keras.Model:
  """The preprocessor (see module docstring) as a tf_keras model."""
  # pylint: disable=g-import-not-at-top
  from official.nlp.modeling import layers as garden_layers
  from official.nlp.tools import export_tfhub_lib
  from data_pipeline import tokenization
  from data_pipeline.tf_tokenization import TFSentencePieceTokenizer
  python_tokenizer = tokenization.SentencePieceTokenizer(
      spm_model_file, do_lower_case=do_lower_case)
  special = dict(start_of_sequence_id=python_tokenizer.cls_id,
                 end_of_segment_id=python_tokenizer.sep_id,
                 padding_id=python_tokenizer.pad_id,
                 mask_id=python_tokenizer.mask_id,
                 vocab_size=python_tokenizer.vocab_size)
  tokenizer = TFSentencePieceTokenizer.from_file(
      spm_model_file, do_lower_case=do_lower_case, name="tokenize")
  sentences = tf_keras.Input(shape=(), dtype=tf.string, name="sentences")
  tokens = tokenizer(sentences)  # [batch, (tokens)]
  pack = garden_layers.BertPackInputs(
      seq_length=seq_length,
      special_tokens_dict={k: special[k] for k in (
          "start_of_sequence_id", "end_of_segment_id", "padding_id")})
  preprocessor = tf_keras.Model(sentences, pack(tokens), name="preprocessor")
  preprocessor.tokenize = tf_keras.Model(sentences, tokens)
  preprocessor.tokenize.get_special_tokens_dict = tf.train.Checkpoint()
  preprocessor.tokenize.get_special_tokens_dict.__call__ = tf.function(
      lambda: {k: tf.constant(v) for k, v in special.items()},
      input_signature=[])
  preprocessor.bert_pack_inputs = (
      export_tfhub_lib.BertPackInputsSavedModelWrapper(pack))
  return preprocessor


def _preprocessor_signatures(preprocessor):
  text = tf.TensorSpec([None], tf.string)

  @tf.function(input_signature=[text])
  def serving_default(sentences):
    return preprocessor(sentences)

  @tf.function(input_signature=[text, text])
  def two_segments(text_a, text_b):
    # The wrapper's __call__ is an instance attribute (a tf.function).
    return preprocessor.bert_pack_inputs.__call__(
        [preprocessor.tokenize(text_a), preprocessor.tokenize(text_b)])

  return {"serving_default": serving_default, "two_segments": two_segments}


def export_savedmodel(config: AlbertConfig, init_checkpoint: str,
                      spm_model_file: str, export_dir: str,
                      do_lower_case: bool = True, with_mlm: bool = False,
                      seq_length: int = 128,
                      input_format: str = "auto") -> str:
  """Writes <export_dir>/encoder and <export_dir>/preprocessor.

  Args:
    config: the model's AlbertConfig.
    init_checkpoint: ours, a released TF1 checkpoint, a Hugging Face
      safetensors file / folder or a Model Garden encoder checkpoint (see
      albert_tf.checkpoints.converter); the layout is detected.
    spm_model_file: the SentencePiece model the checkpoint was trained with.
    export_dir: must not exist yet; created complete or not at all.
    do_lower_case: lowercase in the preprocessor (released ALBERT: True).
    with_mlm: also export the masked-LM head (the checkpoint must hold it).
    seq_length: the preprocessor's default sequence length.
    input_format: see converter.INPUT_FORMATS.

  Returns:
    A one-line description.

  Raises:
    UserInputError: bad paths, a checkpoint that does not fit the config, a
      vocabulary larger than the model's, seq_length out of range, or an
      existing export_dir.
  """
  # pylint: disable=g-import-not-at-top
  from albert_tf.checkpoints import converter
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline import tokenization

  if file_io.exists(export_dir):
    raise UserInputError(f"--export_dir {export_dir} already exists; remove "
                         "it or choose another")
  if not 2 < seq_length <= config.max_position_embeddings:
    raise UserInputError(
        f"--seq_length={seq_length} must be in [3, max_position_embeddings="
        f"{config.max_position_embeddings}]")
  vocab_size = tokenization.SentencePieceTokenizer(
      spm_model_file, do_lower_case=do_lower_case).vocab_size
  if vocab_size > config.vocab_size:
    raise UserInputError(
        f"SentencePiece model {spm_model_file} has {vocab_size} pieces, more "
        f"than the config's vocab_size ({config.vocab_size})")
  if vocab_size < config.vocab_size:
    logging.warning("SentencePiece model %s has %d pieces, the model %d",
                    spm_model_file, vocab_size, config.vocab_size)

  encoder = AlbertEncoder(config)
  pretrainer = AlbertPretrainer(encoder) if with_mlm else None
  report = converter.load_weights_into(pretrainer or encoder, init_checkpoint,
                                       input_format=input_format)
  if with_mlm and any(n.startswith("masked_lm/")
                      for n in report.not_in_checkpoint):
    raise UserInputError(f"--with_mlm: {init_checkpoint} has no masked-LM "
                         "head (cls/predictions)")

  with staging_dir(export_dir) as (tmp_dir, assets):
    # Asset files are copied into the SavedModels' assets/ directories.
    sp_copy = file_io.join(assets, file_io.basename(spm_model_file))
    file_io.copy(spm_model_file, sp_copy)
    config_copy = file_io.join(assets, "albert_config.json")
    config.to_json_file(config_copy)

    core = build_encoder_export_model(encoder, pretrainer)
    core.sp_model_file = tf.saved_model.Asset(sp_copy)
    core.albert_config_file = tf.saved_model.Asset(config_copy)
    core.do_lower_case = tf.Variable(do_lower_case, trainable=False)
    export_endpoints.add_encoder_endpoints(core)
    core.save(file_io.join(tmp_dir, "encoder"), include_optimizer=False,
              save_format="tf", signatures=_encoder_signatures(core, with_mlm))

    preprocessor = build_preprocessor(sp_copy, do_lower_case, seq_length)
    preprocessor.sp_model_file = tf.saved_model.Asset(sp_copy)
    preprocessor.albert_config_file = tf.saved_model.Asset(config_copy)
    export_endpoints.add_preprocessor_endpoints(preprocessor)
    preprocessor.save(file_io.join(tmp_dir, "preprocessor"),
                      include_optimizer=False, save_format="tf",
                      signatures=_preprocessor_signatures(preprocessor))
    file_io.rmtree(assets)
    file_io.rename_tree(tmp_dir, export_dir, last=SAVED_MODEL_LAST)
  return (f"exported {report.format} checkpoint {report.path} to "
          f"{export_dir}/encoder{' (+ mlm)' if with_mlm else ''} and "
          f"{export_dir}/preprocessor (seq_length {seq_length})")


# Renamed last when an export moves file by file: each makes a SavedModel
# visible (tf.saved_model.contains_saved_model).
SAVED_MODEL_LAST = ("saved_model.pb", "saved_model.pbtxt")


@contextlib.contextmanager
def staging_dir(export_dir: str) -> Iterator[Tuple[str, str]]:
  """Yields (tmp_dir, assets_dir): a fresh folder `.<name>.tmp-<pid>` next
  to `export_dir` (any filesystem; an ordinary folder, 0755 under umask 022)
  to build an export in, and a folder in it for asset files to copy from.
  The caller renames its finished result to `export_dir`
  (`file_io.rename_tree`, so nothing half-written ever has the final name);
  what is left is removed on exit, also on failure.

  Raises:
    UserInputError: export_dir's parent cannot be written.
  """
  tmp_dir = file_io.temp_name(export_dir)
  assets = file_io.join(tmp_dir, "assets_src")
  try:
    file_io.rmtree(tmp_dir)  # Left by a killed run with our pid.
    file_io.makedirs(assets)
  except OSError as e:
    raise UserInputError(
        f"--export_dir={export_dir} is not writable: {e}") from None
  try:
    yield tmp_dir, assets
  finally:
    file_io.rmtree(tmp_dir)


def _check_saved_model(path: str) -> None:
  """Raises UserInputError unless `path` is a SavedModel; registers the
  tensorflow-text ops the preprocessor needs (as `import tensorflow_text`)."""
  import tensorflow_text  # pylint: disable=g-import-not-at-top,unused-import
  if not tf.saved_model.contains_saved_model(path):
    raise UserInputError(
        f"{path} is not a SavedModel (no saved_model.pb); expected "
        "<export_dir>/encoder or <export_dir>/preprocessor written by "
        "python -m tools.export_savedmodel")


def load_saved_model(path: str):
  """tf.saved_model.load with a clear error for a path that is not one."""
  _check_saved_model(path)
  return tf.saved_model.load(path)


def hub_layer(path: str, trainable: bool = False,
              signature: Optional[str] = None, **kwargs):
  """hub.KerasLayer for an exported encoder or preprocessor, checked first."""
  import tensorflow_hub as hub  # pylint: disable=g-import-not-at-top
  _check_saved_model(path)
  if signature:
    kwargs.update(signature=signature, signature_outputs_as_dict=True)
  return hub.KerasLayer(path, trainable=trainable, **kwargs)
