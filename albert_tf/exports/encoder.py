"""SavedModel export: the TF Hub BERT/ALBERT encoder and preprocessor.

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
  model (`sp_model_file`, as TF Hub ALBERT models) or the WordPiece
  vocabulary (`vocab_file`, as TF Hub BERT models) and `albert_config.json`.

<export_dir>/preprocessor
  tf.string [batch] -> the encoder's inputs, ALBERT normalisation and
  SentencePiece in-graph: the TF Hub preprocessor convention, with
  `.tokenize`, `.bert_pack_inputs` and the signatures `serving_default`
  (`sentences`) and `two_segments` (`text_a`, `text_b`); see
  preprocessor.py. Assets as the encoder's. With `length_buckets`, the
  raw-text signatures and endpoints (`serving_default`, `two_segments`,
  `serve`, `call_inference`) give a request at the smallest bucket that
  holds its longest example (the encoder masks the rest, so its outputs at
  the real positions do not change); calling the preprocessor
  (`hub.KerasLayer`) and `.bert_pack_inputs(..., seq_length=N)` keep TF
  Hub's fixed length.

Both are built in a hidden folder `.<name>.tmp-<pid>` next to `export_dir`
and renamed into place when complete (on object stores file by file, each
`saved_model.pb` last); `export_dir` may be on any TensorFlow filesystem
(`gs://`).
Loading the preprocessor needs the tensorflow-text ops registered:
`import tensorflow_text` first (`albert_tf.exports.load_saved_model` and
`hub_layer` do).
"""

from absl import logging
import tensorflow as tf
import tf_keras

from albert_common import file_io
from albert_common.encoder_inputs import ENCODER_INPUT_NAMES
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from albert_tf.exports import atomic_export
from albert_tf.exports import endpoints
from albert_tf.exports import options
from albert_tf.exports.preprocessor import build_preprocessor
from albert_tf.exports.preprocessor import preprocessor_signatures
from data_pipeline.tasks import length_buckets as length_buckets_lib


def build_encoder_export_model(encoder, pretrainer=None) -> tf_keras.Model:
  """The encoder with the TF Hub interface (+ `.mlm` when pretrainer given)."""
  inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32, name=name)
            for name in ENCODER_INPUT_NAMES}
  outputs = dict(encoder(inputs))
  outputs["default"] = outputs["pooled_output"]
  core = tf_keras.Model(inputs=inputs, outputs=outputs, name="albert_encoder")
  if pretrainer is not None:
    mlm_inputs = {name: tf_keras.Input(shape=(None,), dtype=tf.int32,
                                       name=name)
                  for name in ENCODER_INPUT_NAMES + ("masked_lm_positions",)}
    mlm_outputs = dict(encoder({k: mlm_inputs[k]
                                for k in ENCODER_INPUT_NAMES}))
    mlm_outputs["default"] = mlm_outputs["pooled_output"]
    mlm_outputs["mlm_logits"] = pretrainer.masked_lm(
        mlm_outputs["sequence_output"], mlm_inputs["masked_lm_positions"])
    mlm_model = tf_keras.Model(inputs=mlm_inputs, outputs=mlm_outputs,
                               name="albert_encoder_with_mlm")
    # Keep the head's variables out of the encoder's (trainable) variables,
    # as Model Garden's export_tfhub does.
    core._auto_track_sub_layers = False
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

  # The parameters' names are the signatures' input names.
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


def export_savedmodel(config: AlbertConfig, init_checkpoint: str,
                      spm_model_file: str, export_dir: str,
                      do_lower_case: bool = True, with_mlm: bool = False,
                      seq_length: int = 128,
                      input_format: str = "auto",
                      vocab_file: str = None,
                      length_buckets=()) -> str:
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
    vocab_file: a WordPiece vocab.txt, used when spm_model_file is None
      (given both, SentencePiece is used, as officially).
    length_buckets: increasing lengths <= seq_length (seq_length is added
      as the last), or a `--length_buckets` value ("auto", "none",
      "32,64"): the preprocessor's raw-text endpoints cut a request to the
      smallest that holds it; (), "none" or one: always seq_length.

  Returns:
    A one-line description.

  Raises:
    UserInputError: bad paths, a checkpoint that does not fit the config, a
      vocabulary larger than the model's, seq_length out of range, or an
      existing export_dir.
  """
  from data_pipeline.tokenization.factory import resolve_vocabulary
  spm_model_file, vocab_file = resolve_vocabulary(spm_model_file, vocab_file)
  vocab_size = options.check_encoder_export(config, spm_model_file, export_dir,
                                            do_lower_case, seq_length,
                                            vocab_file)
  buckets = options.export_length_buckets(length_buckets, seq_length)
  vocabulary = spm_model_file or vocab_file
  if vocab_size < config.vocab_size:
    logging.warning("vocabulary %s has %d entries, the model %d",
                    vocabulary, vocab_size, config.vocab_size)
  encoder, pretrainer, report = _restored_encoder(
      config, init_checkpoint, with_mlm, input_format)

  with atomic_export.staging_dir(export_dir) as (tmp_dir, assets):
    # Asset files are copied into the SavedModels' assets/ directories.
    vocab_copy = file_io.join(assets, file_io.basename(vocabulary))
    file_io.copy(vocabulary, vocab_copy)
    config_copy = file_io.join(assets, "albert_config.json")
    config.to_json_file(config_copy)
    # The attribute TF Hub's ALBERT (SentencePiece) or BERT models use.
    vocab_asset = ("sp_model_file" if spm_model_file else "vocab_file",
                   vocab_copy)
    _save_encoder(file_io.join(tmp_dir, "encoder"), encoder, pretrainer,
                  vocab_asset, config_copy, do_lower_case)
    _save_preprocessor(file_io.join(tmp_dir, "preprocessor"), vocab_asset,
                       config_copy, do_lower_case, seq_length, buckets)
    file_io.rmtree(assets)
    file_io.rename_tree(tmp_dir, export_dir,
                        last=atomic_export.SAVED_MODEL_LAST)
  buckets_text = (f", length buckets {','.join(map(str, buckets))}"
                  if len(buckets) > 1 else "")
  return (f"exported {report.format} checkpoint {report.path} to "
          f"{export_dir}/encoder{' (+ mlm)' if with_mlm else ''} and "
          f"{export_dir}/preprocessor (seq_length {seq_length}"
          f"{buckets_text})")


def _restored_encoder(config: AlbertConfig, init_checkpoint: str,
                      with_mlm: bool, input_format: str):
  """(AlbertEncoder, its AlbertPretrainer or None, the load report) with the
  checkpoint's weights; with_mlm needs the checkpoint's masked-LM head."""
  from albert_tf.checkpoints import converter
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(config)
  pretrainer = AlbertPretrainer(encoder) if with_mlm else None
  report = converter.load_weights_into(pretrainer or encoder, init_checkpoint,
                                       input_format=input_format)
  if with_mlm and any(n.startswith("masked_lm/")
                      for n in report.not_in_checkpoint):
    raise UserInputError(f"--with_mlm: {init_checkpoint} has no masked-LM "
                         "head (cls/predictions)")
  return encoder, pretrainer, report


def _save_encoder(path: str, encoder, pretrainer, vocab_asset, config_copy,
                  do_lower_case: bool) -> None:
  """The encoder SavedModel (with the MLM head when `pretrainer` is given),
  carrying the vocabulary and config as assets.

  vocab_asset: (attribute name, path of the copy in the assets folder).
  """
  core = build_encoder_export_model(encoder, pretrainer)
  setattr(core, vocab_asset[0], tf.saved_model.Asset(vocab_asset[1]))
  core.albert_config_file = tf.saved_model.Asset(config_copy)
  core.do_lower_case = tf.Variable(do_lower_case, trainable=False)
  endpoints.add_encoder_endpoints(core)
  core.save(path, include_optimizer=False, save_format="tf",
            signatures=_encoder_signatures(core, pretrainer is not None))


def _save_preprocessor(path: str, vocab_asset, config_copy,
                       do_lower_case: bool, seq_length: int,
                       buckets) -> None:
  """The preprocessor SavedModel over the vocabulary copy (SentencePiece or
  WordPiece, as vocab_asset's attribute says)."""
  attribute, vocab_copy = vocab_asset
  sentencepiece = attribute == "sp_model_file"
  preprocessor = build_preprocessor(
      vocab_copy if sentencepiece else None, do_lower_case, seq_length,
      vocab_file=None if sentencepiece else vocab_copy)
  setattr(preprocessor, attribute, tf.saved_model.Asset(vocab_copy))
  preprocessor.albert_config_file = tf.saved_model.Asset(config_copy)
  # The buckets, for readers that batch by length (tools.predict).
  record_attribute, name, text = length_buckets_lib.export_asset(
      seq_length, buckets)
  record = file_io.join(file_io.dirname(config_copy), name)
  file_io.write_atomic(record, text)
  setattr(preprocessor, record_attribute, tf.saved_model.Asset(record))
  endpoints.add_preprocessor_endpoints(preprocessor, buckets)
  preprocessor.save(path, include_optimizer=False, save_format="tf",
                    signatures=preprocessor_signatures(preprocessor, buckets))
