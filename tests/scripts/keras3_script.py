"""Keras 3 halves of tests that need `import keras` (not tf_keras).

Run as `python tests/scripts/keras3_script.py COMMAND SETTINGS_JSON OUT_JSON`;
the measurements go to OUT_JSON for the calling test (which runs in a tf_keras
process) to assert on. Commands: see COMMANDS at the end.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                os.pardir, os.pardir))

import numpy as np  # noqa: E402


def run_keras3(command, settings, tmp_path):
  """Runs COMMAND of this script in a subprocess; its JSON result."""
  import subprocess
  out = os.path.join(str(tmp_path), f"{command}.json")
  root = os.path.abspath(os.path.join(__file__, "../../.."))
  process = subprocess.run(
      [sys.executable, os.path.abspath(__file__), command,
       json.dumps(settings), out],
      cwd=root, check=False, capture_output=True, text=True, timeout=900)
  assert process.returncode == 0, process.stderr[-3000:]
  with open(out, encoding="utf-8") as f:
    return json.load(f)


def _max_diff(a, b) -> float:
  return float(np.max(np.abs(np.asarray(a) - np.asarray(b))))


def tfsm_export(settings):
  """TFSMLayer over <export>/encoder and /preprocessor: outputs, dropout,
  fine-tuning with Adam."""
  import keras
  import tensorflow as tf
  import tensorflow_text  # noqa: F401

  from albert_tf.keras3 import saved_model_layers

  encoder_path = os.path.join(settings["export_dir"], "encoder")
  preprocessor_path = os.path.join(settings["export_dir"], "preprocessor")
  expected = np.load(settings["expected"])
  inputs = {k: expected[k] for k in ("input_word_ids", "input_mask",
                                     "input_type_ids")}
  out = {}

  # 1. Plain keras.layers.TFSMLayer, default endpoint, in a functional model.
  symbolic = {k: keras.Input(shape=(None,), dtype="int32", name=k)
              for k in inputs}
  plain = keras.layers.TFSMLayer(encoder_path)
  outputs = plain(symbolic)
  model = keras.Model(symbolic, {"sequence_output": outputs["sequence_output"],
                                 "pooled_output": outputs["pooled_output"]})
  result = model.predict(inputs, verbose=0)
  out["functional_sequence_diff"] = _max_diff(result["sequence_output"],
                                              expected["sequence_output"])
  out["functional_pooled_diff"] = _max_diff(result["pooled_output"],
                                            expected["pooled_output"])
  serving = keras.layers.TFSMLayer(encoder_path,
                                   call_endpoint="serving_default")
  out["serving_default_pooled_diff"] = _max_diff(
      serving(inputs)["pooled_output"], expected["pooled_output"])
  out["encoder_outputs_len"] = len(serving(inputs)["encoder_outputs"])

  # 2. Dropout: off at inference, on (and random) in training.
  encoder = saved_model_layers.encoder_layer(encoder_path)
  infer = [encoder(inputs, training=False)["sequence_output"]
           for _ in range(2)]
  train = [encoder(inputs, training=True)["sequence_output"]
           for _ in range(2)]
  out["inference_repeat_diff"] = _max_diff(infer[0], infer[1])
  out["inference_vs_expected_diff"] = _max_diff(infer[0],
                                                expected["sequence_output"])
  out["training_vs_inference_diff"] = _max_diff(train[0], infer[0])
  out["training_repeat_diff"] = _max_diff(train[0], train[1])

  # 3. The preprocessor on raw strings equals the tf_keras process's.
  preprocess = saved_model_layers.preprocessor_layer(preprocessor_path)
  ids = preprocess(tf.constant(settings["sentences"]))["input_word_ids"]
  out["preprocessor_ids_equal"] = bool(
      np.array_equal(ids, expected["sentence_ids"]))
  pair = saved_model_layers.preprocessor_layer(preprocessor_path,
                                               two_segments=True)
  packed = pair({"text_a": tf.constant(settings["sentences"][:1]),
                 "text_b": tf.constant(settings["sentences"][1:2])})
  out["pair_type_ids_max"] = int(np.max(packed["input_type_ids"]))

  # 4. Fine-tuning from raw text with Adam (the documented route).
  keras.utils.set_random_seed(0)
  text = keras.Input(shape=(), dtype="string")
  pooled = encoder(preprocess(text))["pooled_output"]
  classifier = keras.Model(text, keras.layers.Dense(2)(pooled))
  classifier.compile(
      optimizer=keras.optimizers.Adam(settings["learning_rate"]),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
  before = [w.numpy().copy() for w in encoder.trainable_weights]
  data = tf.data.Dataset.from_tensor_slices(
      (settings["texts"], settings["labels"])).batch(8)
  history = classifier.fit(data, epochs=settings["epochs"], verbose=0)
  out["losses"] = [float(x) for x in history.history["loss"]]
  out["encoder_weight_change"] = max(
      _max_diff(w.numpy(), b) for w, b in zip(encoder.trainable_weights,
                                               before))
  out["num_trainable"] = len(encoder.trainable_weights)

  # 5. The Keras bug the wrapper works around (recorded, for the docs page
  # export-and-keras.md).
  bug = keras.Model(symbolic, keras.layers.Dense(2)(
      keras.layers.TFSMLayer(encoder_path)(symbolic)["pooled_output"]))
  bug.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(
                  from_logits=True))
  try:
    bug.fit(inputs, np.zeros(len(inputs["input_mask"]), np.int32),
            verbose=0)
    out["plain_tfsm_adam_error"] = None
  except ValueError as e:
    out["plain_tfsm_adam_error"] = str(e)[:200]
  return out


def _tokenizer_ids(tokenizer, lines, saved_model_dir):
  """Ids of every line on keras-hub's three paths: eager (the sentencepiece
  package), tf.data (TensorFlow ops) and a reloaded SavedModel (skipped when
  `saved_model_dir` is None)."""
  import tensorflow as tf
  out = {"eager_ids": [list(map(int, ids)) for ids in tokenizer(lines)]}
  data = tf.data.Dataset.from_tensor_slices(lines).batch(64).map(tokenizer)
  out["graph_ids"] = [list(map(int, row)) for batch in data
                      for row in batch.to_list()]
  if saved_model_dir is None:
    return out
  module = tf.Module()
  module.tokenize = tf.function(
      tokenizer, input_signature=[tf.TensorSpec([None], tf.string)])
  tf.saved_model.save(module, saved_model_dir)
  loaded = tf.saved_model.load(saved_model_dir)
  out["saved_model_ids"] = [
      list(map(int, row)) for row in loaded.tokenize(tf.constant(lines))
      .to_list()]
  # dtype="string": pieces, on lines where the digit-comma rule may apply.
  sample = [line for line in lines
            if any(f"{d}," in line for d in "0123456789")]
  as_pieces = type(tokenizer)(proto=tokenizer.proto, dtype="string")
  out["pieces_sample"] = sample
  out["eager_pieces"] = as_pieces(sample)
  out["graph_pieces"] = [
      [p.decode("utf-8") for p in row]
      for row in tf.function(as_pieces)(tf.constant(sample)).to_list()]
  return out


def _unregistered_error(load):
  """The error of `load()` while our tokenizer class is not registered (as
  in a process that did not import albert_tf.keras3)."""
  import keras
  registry = keras.saving.get_custom_objects()
  key = "albert_tf>OfficialAlbertTokenizer"
  saved = registry.pop(key)
  try:
    load()
    return None
  except (TypeError, ValueError) as e:
    return str(e)[-1000:]  # Keras puts the cause last
  finally:
    registry[key] = saved


def keras_hub_preset(settings):
  """Ours -> preset; keras-hub loads it (backbone, tokenizer, masked LM,
  classifier fit); preset -> ours (CLI) -> preset is exact; strictness."""
  import albert_tf.keras3  # noqa: F401
  keras3_only = "tf_keras" not in sys.modules  # before anything else loads it
  from absl import flags
  import h5py
  import keras
  import keras_hub
  import tensorflow as tf

  from albert_common.errors import UserInputError
  from albert_tf.checkpoints import configs
  from albert_tf.checkpoints import converter
  from albert_tf.checkpoints.keras_hub_presets import preset as khp
  from tools import convert_checkpoint

  out = {"keras3_package_without_tf_keras": keras3_only}
  config = configs.load_albert_config(settings["config_file"])
  preset = settings["preset"]
  out["write"] = converter.convert_checkpoint(
      config, settings["checkpoint"], preset, "keras_hub",
      spm_model_file=settings["spm_model"], do_lower_case=True,
      keras_hub_tokenizer="official")
  expected = np.load(settings["expected"])
  inputs = {"token_ids": expected["input_word_ids"],
            "segment_ids": expected["input_type_ids"],
            "padding_mask": expected["input_mask"]}

  # 1. The backbone equals our encoder.
  backbone = keras_hub.models.AlbertBackbone.from_preset(preset)
  result = backbone.predict(inputs, verbose=0)
  out["sequence_diff"] = _max_diff(result["sequence_output"],
                                   expected["sequence_output"])
  out["pooled_diff"] = _max_diff(result["pooled_output"],
                                 expected["pooled_output"])
  out["num_groups"] = backbone.num_groups

  # 2. The masked LM (head from our checkpoint) equals our pretrainer's.
  masked_lm = keras_hub.models.AlbertMaskedLM.from_preset(preset)
  # Called directly (predict would run the preprocessor on the inputs).
  logits = masked_lm(dict(inputs,
                          mask_positions=expected["masked_lm_positions"]))
  out["mlm_logits_diff"] = _max_diff(logits, expected["mlm_logits"])
  out["mlm_has_preprocessor"] = masked_lm.preprocessor is not None
  out["mlm_tokenizer_class"] = type(masked_lm.preprocessor.tokenizer).__name__

  # 3. The tokenizer: ids of every corpus line on every keras-hub path.
  tokenizer = keras_hub.models.AlbertTokenizer.from_preset(preset)
  out["tokenizer_class"] = type(tokenizer).__name__
  with open(settings["corpus_lines"], encoding="utf-8") as f:
    lines = json.load(f)
  out.update(_tokenizer_ids(tokenizer, lines, settings["tokenizer_export"]))
  out["unregistered_error"] = _unregistered_error(
      lambda: keras_hub.models.AlbertTextClassifier.from_preset(
          preset, num_classes=2))

  # 3b. The default preset: keras-hub's stock AlbertTokenizer, its ids on
  # every path (the test counts the lines that differ from ours).
  stock = settings["preset_stock"]
  out["write_stock"] = converter.convert_checkpoint(
      config, settings["checkpoint"], stock, "keras_hub",
      spm_model_file=settings["spm_model"])
  stock_tokenizer = keras_hub.models.AlbertTokenizer.from_preset(stock)
  out["stock_tokenizer_class"] = type(stock_tokenizer).__name__
  out["stock_preset_dir"] = stock
  # (Not through a SavedModel: keras-hub's stock tokenizer does not track
  # its tensorflow_text resource, so a tf.Module holding it cannot save.)
  out["stock"] = _tokenizer_ids(stock_tokenizer, lines, None)

  # 3c. SentencePiece models of every normalisation rule (nmt_nfkc, ...):
  # a preset of each; its tokenizers' ids on every line, and its backbone.
  out["rules"] = {}
  for rule, model in settings["rule_models"].items():
    rule_preset = os.path.join(settings["rule_presets"], rule)
    converter.convert_checkpoint(
        config, settings["encoder_checkpoint"], rule_preset, "keras_hub",
        spm_model_file=model, keras_hub_tokenizer="official")
    official = keras_hub.models.AlbertTokenizer.from_preset(rule_preset)
    with open(os.path.join(rule_preset, "assets", "tokenizer",
                           "vocabulary.spm"), "rb") as f:
      plain = keras_hub.models.AlbertTokenizer(proto=f.read())
    graph = tf.data.Dataset.from_tensor_slices(lines).batch(256).map(official)
    rule_backbone = keras_hub.models.AlbertBackbone.from_preset(rule_preset)
    out["rules"][rule] = dict(
        official_eager_ids=[list(map(int, ids)) for ids in official(lines)],
        official_graph_ids=[list(map(int, row)) for batch in graph
                            for row in batch.to_list()],
        stock_eager_ids=[list(map(int, ids)) for ids in plain(lines)],
        # Called directly: one eager pass (predict traces a function for
        # each new backbone: 0.5 s of CPU a rule against 0.08 s).
        sequence_diff=_max_diff(rule_backbone(inputs)["sequence_output"],
                                expected["sequence_output"]))

  # 4. AlbertTextClassifier learns a tiny separable task from raw strings.
  keras.utils.set_random_seed(1)
  classifier = keras_hub.models.AlbertTextClassifier.from_preset(
      preset, num_classes=2)
  out["classifier_tokenizer_class"] = type(
      classifier.preprocessor.tokenizer).__name__
  train = tf.data.Dataset.from_tensor_slices(
      (settings["train_texts"], settings["train_labels"])).shuffle(
          64, seed=0).batch(16)
  # Cosine decay to 0: at a constant 3e-3 the loss spiked late (to 0.1-0.3
  # in 5 of 8 seeds; CPU reductions make runs differ), and a spike in the
  # last epoch failed the accuracy check once.
  steps = settings["epochs"] * int(train.cardinality())
  classifier.compile(
      optimizer=keras.optimizers.Adam(
          keras.optimizers.schedules.CosineDecay(3e-3, steps)),
      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      metrics=["accuracy"])
  history = classifier.fit(train, epochs=settings["epochs"], verbose=0)
  out["train_loss"] = [float(x) for x in history.history["loss"]]
  dev = tf.data.Dataset.from_tensor_slices(
      (settings["dev_texts"], settings["dev_labels"])).batch(16)
  out["dev_accuracy"] = float(classifier.evaluate(dev, verbose=0,
                                                  return_dict=True)["accuracy"])

  # 5. Preset -> ours (the CLI, config from the preset) -> preset: exact.
  back = settings["back_prefix"]
  flags.FLAGS([
      "convert_checkpoint", f"--input_checkpoint={preset}",
      f"--output_checkpoint={back}", "--output_format=ours"])
  convert_checkpoint.main([])
  folder = os.path.dirname(back)
  again = settings["preset_again"]
  back_config = configs.load_albert_config(
      os.path.join(folder, "albert_config.json"))
  out["back_config_equal"] = back_config == config
  # (Ours holds both pretraining heads or none: the round trip starts from
  # the encoder-only preset.)
  first = settings["preset_encoder_only"]
  flags.FLAGS([
      "convert_checkpoint", f"--albert_config_file={settings['config_file']}",
      f"--input_checkpoint={settings['encoder_checkpoint']}",
      f"--output_checkpoint={first}", "--output_format=keras_hub",
      f"--spm_model_file={settings['spm_model']}", "--do_lower_case"])
  convert_checkpoint.main([])
  converter.convert_checkpoint(config, first, settings["encoder_back"], "ours")
  converter.convert_checkpoint(
      config, settings["encoder_back"], again, "keras_hub",
      spm_model_file=os.path.join(os.path.dirname(settings["encoder_back"]),
                                  "spiece.model"))
  differing = []
  for name in ("config.json", "tokenizer.json", "preprocessor.json",
               "albert_tf.json", "assets/tokenizer/vocabulary.spm"):
    with open(os.path.join(first, name), "rb") as a, \
         open(os.path.join(again, name), "rb") as b:
      if a.read() != b.read():
        differing.append(name)

  def h5_arrays(path):
    arrays = {}
    with h5py.File(path, "r") as f:
      f.visititems(lambda k, v: arrays.__setitem__(k, v[()])
                   if isinstance(v, h5py.Dataset) else None)
    return arrays

  a = h5_arrays(os.path.join(first, "model.weights.h5"))
  b = h5_arrays(os.path.join(again, "model.weights.h5"))
  out["round_trip_num_arrays"] = len(a)
  if set(a) != set(b) or any(not np.array_equal(a[k], b[k]) for k in a):
    differing.append("model.weights.h5")
  out["round_trip_differing"] = differing

  # Any filesystem (ram:// here, gs:// in production), in a folder and
  # directly under the scheme (its staging folder is ram://.<name>.tmp-*).
  local = converter.read_weights(settings["encoder_checkpoint"], config).arrays
  out["ram_round_trip_equal"] = True
  for preset_dir in ("ram://keras_hub/preset", "ram://keras_hub_preset"):
    converter.convert_checkpoint(config, settings["encoder_checkpoint"],
                                 preset_dir, "keras_hub",
                                 spm_model_file=settings["spm_model"])
    remote = converter.read_weights(preset_dir, config).arrays
    out["ram_round_trip_equal"] &= (set(remote) == set(local) and all(
        np.array_equal(remote[k], local[k]) for k in local))
  out["ram_leftovers"] = [n for n in tf.io.gfile.listdir("ram://")
                          if ".tmp" in n]

  # 6. Any reader of checkpoints takes a preset (e.g. --init_checkpoint).
  from albert_tf.networks.albert_encoder import AlbertEncoder
  encoder = AlbertEncoder(config)
  report = converter.load_weights_into(encoder, preset)
  reference = AlbertEncoder(config)
  converter.load_weights_into(reference, settings["checkpoint"])
  out["load_weights_into_format"] = report.format
  out["load_weights_into_diff"] = max(
      _max_diff(a.numpy(), b.numpy())
      for a, b in zip(encoder.weights, reference.weights))

  # 7. Strict: a preset read with another architecture lists every problem.
  other = configs.AlbertConfig.from_dict(
      dict(config.to_dict(), intermediate_size=config.intermediate_size * 2,
           num_hidden_groups=1))
  try:
    khp.read_preset(first, other)
    out["strict_error"] = None
  except UserInputError as e:
    out["strict_error"] = str(e)
  return out


def extended_vocabulary_preset(settings):
  """An extended model -> keras-hub presets (our tokenizer and keras-hub's
  stock one): each tokenizer's ids on `lines`, the backbone's table rows."""
  import keras_hub

  from albert_tf.checkpoints import configs
  from albert_tf.checkpoints import converter
  import albert_tf.keras3  # noqa: F401

  config = configs.load_albert_config(settings["config_file"])
  out = {}
  for kind in ("official", "stock"):
    preset = os.path.join(settings["root"], f"preset_{kind}")
    converter.convert_checkpoint(
        config, settings["checkpoint"], preset, "keras_hub",
        spm_model_file=settings["spm_model"], keras_hub_tokenizer=kind)
    tokenizer = keras_hub.models.AlbertTokenizer.from_preset(preset)
    out[f"{kind}_vocabulary_size"] = int(tokenizer.vocabulary_size())
    out[f"{kind}_ids"] = [list(map(int, ids))
                          for ids in tokenizer(settings["lines"])]
  backbone = keras_hub.models.AlbertBackbone.from_preset(preset)
  out["embedding_rows"] = int(backbone.token_embedding.input_dim)
  return out


COMMANDS = {"tfsm_export": tfsm_export, "keras_hub_preset": keras_hub_preset,
            "extended_vocabulary_preset": extended_vocabulary_preset}


def main():
  command, settings, out_path = (sys.argv[1], json.loads(sys.argv[2]),
                                 sys.argv[3])
  result = COMMANDS[command](settings)
  with open(out_path, "w", encoding="utf-8") as f:
    json.dump(result, f, indent=2)


if __name__ == "__main__":
  main()
