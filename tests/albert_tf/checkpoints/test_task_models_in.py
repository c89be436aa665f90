"""Fine-tuned task models of other layouts load into ours, heads included.

Hugging Face folders are written by transformers itself
(`AlbertFor*(config).save_pretrained`); our model loaded from one gives
PyTorch's logits on the same ids (1e-5). Official TF1 fine-tuned
checkpoints are written here with tf.compat.v1 variables under the names
google-research/albert's scripts create (run_classifier.py, run_squad_v1.py,
run_squad_v2.py, run_race.py), listed independently of the library.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from albert_common.errors import UserInputError
from albert_tf.checkpoints import configs
from albert_tf.checkpoints import weight_loading
from albert_tf.checkpoints.task_models.task_heads import HeadRequest
from tests.albert_tf.checkpoints.checkpoint_conversion_kit import (
  official_shapes,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SEQ = 16


def hf_config(**kwargs):
  values = dict(vocab_size=99, embedding_size=16, hidden_size=32,
                num_hidden_layers=2, num_attention_heads=2,
                intermediate_size=64, max_position_embeddings=SEQ,
                hidden_act="gelu_new", hidden_dropout_prob=0.0,
                attention_probs_dropout_prob=0.0)
  values.update(kwargs)
  return transformers.AlbertConfig(**values)


def save_hf(model_class, folder, seed=0, **kwargs):
  """A transformers task model with random (seeded) weights, saved to
  `folder`; returns the torch model in eval mode."""
  torch.manual_seed(seed)
  model = getattr(transformers, model_class)(hf_config(**kwargs)).eval()
  with torch.no_grad():  # non-zero biases, so that a lost bias shows
    for name, p in model.named_parameters():
      if name.endswith("bias"):
        p.normal_(0, 0.5)
  model.save_pretrained(folder)
  return model


def ids(batch, seed=1, seq=SEQ):
  rng = np.random.default_rng(seed)
  word = rng.integers(5, 99, size=(batch, seq)).astype(np.int32)
  mask = np.ones_like(word)
  mask[:, seq - 3:] = 0
  types = np.zeros_like(word)
  types[:, seq // 2:] = 1
  return word, mask, types


def torch_out(model, word, mask, types):
  with torch.no_grad():
    return model(input_ids=torch.tensor(word, dtype=torch.long),
                 attention_mask=torch.tensor(mask, dtype=torch.long),
                 token_type_ids=torch.tensor(types, dtype=torch.long))


def ours(model, word, mask, types, training=False):
  return model(dict(input_word_ids=word, input_mask=mask,
                    input_type_ids=types), training=training)


def our_model(kind, folder, num_labels=2, labels=None, **request):
  """Our task model of `kind` on the folder's config, loaded from it."""
  from albert_tf import models
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = configs.load_albert_config(os.path.join(folder, "config.json"))
  encoder = AlbertEncoder(config)
  model = {"classifier": lambda: models.AlbertClassifier(encoder, num_labels),
           "token_classifier": lambda: models.AlbertTokenClassifier(
               encoder, num_labels),
           "span": lambda: models.AlbertSpanLabeler(encoder),
           "multiple_choice": lambda: models.AlbertMultipleChoice(encoder, 3),
           }[kind]()
  report = weight_loading.load_weights_into(
      model, folder, head=HeadRequest(labels=labels, **request))
  return model, report


@pytest.mark.parametrize("problem_type,num_labels", [
    ("single_label_classification", 3), ("regression", 1),
    ("multi_label_classification", 4)])
def test_huggingface_sequence_classifier_gives_pytorchs_logits(
    tmp_path, problem_type, num_labels):
  names = [f"c{i}" for i in range(num_labels)]
  torch_model = save_hf("AlbertForSequenceClassification", tmp_path,
                        num_labels=num_labels, problem_type=problem_type,
                        id2label=dict(enumerate(names)))
  word, mask, types = ids(4)
  labels = None if problem_type == "regression" else names
  model, report = our_model("classifier", tmp_path, num_labels, labels)
  got = ours(model, word, mask, types)["logits"].numpy()
  want = torch_out(torch_model, word, mask, types).logits.numpy()
  np.testing.assert_allclose(got, want, atol=1e-5)
  assert report.head_from == ["classifier.bias", "classifier.weight"]
  assert "classifier head from classifier.bias, classifier.weight" in (
      report.summary())


def test_labels_are_matched_by_name_not_by_position(tmp_path):
  """id2label in an unsorted order: our model's output j is label j of the
  tool's list, whatever the head's order."""
  head_order = ["volcano", "fruit", "music"]
  torch_model = save_hf("AlbertForSequenceClassification", tmp_path,
                        num_labels=3, id2label=dict(enumerate(head_order)))
  word, mask, types = ids(3)
  tool_order = sorted(head_order)
  model, _ = our_model("classifier", tmp_path, 3, tool_order)
  got = ours(model, word, mask, types)["logits"].numpy()
  want = torch_out(torch_model, word, mask, types).logits.numpy()
  np.testing.assert_allclose(
      got, want[:, [head_order.index(n) for n in tool_order]], atol=1e-5)
  with pytest.raises(UserInputError, match="does not know the label.*bird"):
    our_model("classifier", tmp_path, 3, ["bird", "fruit", "music"])
  # --label_names overrides the head's own names (the official layout's
  # way); a count that differs is refused.
  with pytest.raises(UserInputError, match="are not the task's"):
    our_model("classifier", tmp_path, 3, tool_order,
              label_names=["fruit", "music"])


def test_huggingface_qa_token_and_multiple_choice_heads(tmp_path):
  word, mask, types = ids(3)
  qa = save_hf("AlbertForQuestionAnswering", tmp_path / "qa")
  model, report = our_model("span", tmp_path / "qa")
  got = ours(model, word, mask, types)
  want = torch_out(qa, word, mask, types)
  np.testing.assert_allclose(got["start_logits"], want.start_logits,
                             atol=1e-5)
  np.testing.assert_allclose(got["end_logits"], want.end_logits, atol=1e-5)
  assert report.fresh_pooler  # transformers' QA class has no pooler

  tags = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
  ner = save_hf("AlbertForTokenClassification", tmp_path / "ner",
                num_labels=5, id2label=dict(enumerate(tags)))
  model, _ = our_model("token_classifier", tmp_path / "ner", 5, sorted(tags))
  got = ours(model, word, mask, types)["logits"].numpy()
  want = torch_out(ner, word, mask, types).logits.numpy()
  np.testing.assert_allclose(
      got, want[..., [tags.index(t) for t in sorted(tags)]], atol=1e-5)

  mc = save_hf("AlbertForMultipleChoice", tmp_path / "mc")
  model, _ = our_model("multiple_choice", tmp_path / "mc")
  word, mask, types = (x.reshape(2, 3, -1)[:, :, :] for x in ids(6))
  got = ours(model, word, mask, types)["logits"].numpy()
  want = torch_out(mc, word, mask, types).logits.numpy()
  np.testing.assert_allclose(got, want, atol=1e-5)


def test_masked_lm_folder_is_an_encoder_with_a_fresh_pooler(tmp_path):
  save_hf("AlbertForMaskedLM", tmp_path)
  model, report = our_model("classifier", tmp_path, 2, ["a", "b"])
  assert report.fresh_pooler and report.fresh_head
  assert "a fresh pooler" in report.summary()
  assert "a fresh classifier head" in report.summary()


def test_a_head_that_does_not_fit_is_one_line(tmp_path):
  save_hf("AlbertForQuestionAnswering", tmp_path / "qa")
  with pytest.raises(UserInputError, match="AlbertForQuestionAnswering head"
                     ".*not a sequence classifier.*--init_head=false"):
    our_model("classifier", tmp_path / "qa")
  # --init_head=false: a fresh head on its encoder.
  _, report = our_model("classifier", tmp_path / "qa", init_head=False)
  assert report.fresh_head and not report.head_from
  save_hf("AlbertForSequenceClassification", tmp_path / "three",
          num_labels=3, id2label={0: "a", 1: "b", 2: "c"})
  with pytest.raises(UserInputError, match="a head of 3 labels; this task "
                     "needs 2 labels"):
    our_model("classifier", tmp_path / "three", 2, ["a", "b"])
  save_hf("AlbertForSequenceClassification", tmp_path / "reg",
          num_labels=1, problem_type="regression")
  with pytest.raises(UserInputError, match="regression head"):
    our_model("classifier", tmp_path / "reg", 2, ["a", "b"])
  # A partial head: classifier.weight without its bias.
  from safetensors.numpy import load_file
  from safetensors.numpy import save_file
  tensors = load_file(str(tmp_path / "three" / "model.safetensors"))
  del tensors["classifier.bias"]
  save_file(tensors, str(tmp_path / "three" / "model.safetensors"),
            metadata={"format": "pt"})
  with pytest.raises(UserInputError, match="partial head: classifier.weight "
                     "without classifier.bias"):
    our_model("classifier", tmp_path / "three", 3, ["a", "b", "c"])
  for error in (UserInputError,):
    assert "\n" not in str(pytest.raises(error, our_model, "classifier",
                                         tmp_path / "three", 3,
                                         ["a", "b", "c"]).value)


# --- the official layout ----------------------------------------------------


def write_official(prefix, config, head, seed=0):
  """A TF1 checkpoint: the official encoder names + `head` (name -> shape),
  random values, plus optimizer slots as a fine-tuning run leaves them."""
  rng = np.random.default_rng(seed)
  shapes = dict(official_shapes(config, heads=False), **head)
  values = {n: rng.normal(0, 0.2, size=s).astype(np.float32)
            for n, s in shapes.items()}
  for name in ("bert/embeddings/LayerNorm/gamma",):
    values[name] += 1.0
  graph = tf.Graph()
  with graph.as_default():
    variables = [tf.compat.v1.Variable(v, name=n) for n, v in values.items()]
    first = next(iter(head))
    variables.append(tf.compat.v1.Variable(
        np.zeros(head[first], np.float32), name=f"{first}/adam_m"))
    step = tf.compat.v1.train.get_or_create_global_step()
    saver = tf.compat.v1.train.Saver(variables + [step])
    with tf.compat.v1.Session() as session:
      session.run(tf.compat.v1.global_variables_initializer())
      saver.save(session, prefix)
  return values


def _our_config(hidden=32):
  from albert_tf.config import AlbertConfig
  return AlbertConfig(vocab_size=99, embedding_size=16, hidden_size=hidden,
                      num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=SEQ)


def test_official_heads_load_by_their_names(tmp_path):
  """run_classifier.py's output_weights [C, H] (labels from labels.txt),
  run_squad_v1.py's cls/squad/output_weights [2, H], run_race.py's
  output_weights [1, H] and run_squad_v2.py's layers: the logits are the
  pooled / sequence output times the stored weights."""
  from albert_tf import models
  from albert_tf.networks.albert_encoder import AlbertEncoder
  config = _our_config()
  h = config.hidden_size
  word, mask, types = ids(2)
  inputs = dict(input_word_ids=word, input_mask=mask, input_type_ids=types)

  folder = tmp_path / "cls"
  folder.mkdir()
  values = write_official(str(folder / "model.ckpt-300"), config,
                          {"output_weights": (3, h), "output_bias": (3,)})
  (folder / "labels.txt").write_text("volcano\nfruit\nmusic\n")
  encoder = AlbertEncoder(config)
  model = models.AlbertClassifier(encoder, 3)
  # A folder without a `checkpoint` state file (as released downloads).
  report = weight_loading.load_weights_into(
      model, str(folder), head=HeadRequest(labels=["fruit", "music",
                                                   "volcano"]))
  assert report.head_from == ["output_bias", "output_weights"]
  pooled = encoder(inputs)["pooled_output"].numpy()
  want = pooled @ values["output_weights"].T + values["output_bias"]
  np.testing.assert_allclose(model(inputs)["logits"], want[:, [1, 2, 0]],
                             atol=1e-5)
  # Without labels.txt nor --label_names: one line saying so.
  (folder / "labels.txt").unlink()
  with pytest.raises(UserInputError, match="names none of its head's "
                     "labels: give --label_names"):
    weight_loading.load_weights_into(
        models.AlbertClassifier(AlbertEncoder(config), 3), str(folder),
        head=HeadRequest(labels=["a", "b", "c"]))
  weight_loading.load_weights_into(
      models.AlbertClassifier(AlbertEncoder(config), 3), str(folder),
      head=HeadRequest(labels=["a", "b", "c"], label_names=["c", "b", "a"]))

  prefix = str(tmp_path / "squad" / "model.ckpt-9")
  values = write_official(prefix, config, {
      "cls/squad/output_weights": (2, h), "cls/squad/output_bias": (2,)})
  encoder = AlbertEncoder(config)
  model = models.AlbertSpanLabeler(encoder)
  weight_loading.load_weights_into(model, prefix)
  sequence = encoder(inputs)["sequence_output"].numpy()
  logits = sequence @ values["cls/squad/output_weights"].T + values[
      "cls/squad/output_bias"]
  got = model(inputs)
  np.testing.assert_allclose(got["start_logits"], logits[..., 0], atol=1e-5)
  np.testing.assert_allclose(got["end_logits"], logits[..., 1], atol=1e-5)
  # A SQuAD head given to a classifier: one line.
  with pytest.raises(UserInputError, match="a start/end span head.*not a "
                     "sequence classifier"):
    weight_loading.load_weights_into(
        models.AlbertClassifier(AlbertEncoder(config), 2), prefix)

  prefix = str(tmp_path / "race" / "model.ckpt-9")
  values = write_official(prefix, config, {"output_weights": (1, h),
                                           "output_bias": (1,)})
  encoder = AlbertEncoder(config)
  model = models.AlbertMultipleChoice(encoder, 2)
  weight_loading.load_weights_into(model, prefix)
  pooled = encoder(inputs)["pooled_output"].numpy()
  want = (pooled @ values["output_weights"].T + values["output_bias"])
  got = model({k: v.reshape(1, 2, -1) for k, v in inputs.items()})["logits"]
  np.testing.assert_allclose(got, want.reshape(1, 2), atol=1e-5)

  prefix = str(tmp_path / "squad2" / "model.ckpt-9")
  v2 = {"start_logits/dense/kernel": (h, 1), "start_logits/dense/bias": (1,),
        "end_logits/dense_0/kernel": (2 * h, h),
        "end_logits/dense_0/bias": (h,), "end_logits/LayerNorm/gamma": (h,),
        "end_logits/LayerNorm/beta": (h,), "end_logits/dense_1/kernel": (h, 1),
        "end_logits/dense_1/bias": (1,), "answer_class/dense_0/kernel":
            (2 * h, h), "answer_class/dense_0/bias": (h,),
        "answer_class/dense_1/kernel": (h, 1)}
  values = write_official(prefix, config, v2)
  model = models.AlbertSquadV2(AlbertEncoder(config))
  report = weight_loading.load_weights_into(model, prefix)
  assert report.head_from == sorted(v2)
  head = model.squad_v2
  np.testing.assert_array_equal(head.end_dense_0.kernel.numpy(),
                                values["end_logits/dense_0/kernel"])
  np.testing.assert_array_equal(head.answer_dense_1.kernel.numpy(),
                                values["answer_class/dense_1/kernel"])
  np.testing.assert_array_equal(head.end_layer_norm.gamma.numpy(),
                                values["end_logits/LayerNorm/gamma"])
  # The official v2 head is no span head.
  with pytest.raises(UserInputError, match="official SQuAD v2.0 head"):
    weight_loading.load_weights_into(
        models.AlbertSpanLabeler(AlbertEncoder(config)), prefix)


def test_hf_config_json_gives_labels_and_problem_type(tmp_path):
  from albert_tf.checkpoints.task_models import task_heads
  save_hf("AlbertForSequenceClassification", tmp_path, num_labels=2)
  info = task_heads.huggingface_info(str(tmp_path / "config.json"))
  # transformers' LABEL_0, LABEL_1 name nothing.
  assert info == dict(architecture="AlbertForSequenceClassification",
                      labels=None, problem_type=None)
  values = json.loads((tmp_path / "config.json").read_text())
  values.update(id2label={"1": "pos", "0": "neg"},
                problem_type="single_label_classification")
  (tmp_path / "config.json").write_text(json.dumps(values))
  info = task_heads.huggingface_info(str(tmp_path / "config.json"))
  assert info["labels"] == ["neg", "pos"]


# --- bad files -----------------------------------------------------------


def test_pytorch_bin_is_read_without_running_its_pickle(tmp_path):
  """A torch.save state dict (pytorch_model.bin, no safetensors) reads as
  the safetensors file does, without torch; a pickle that would call
  anything else is refused in one line, its code not run."""
  import pickle
  import zipfile
  torch_model = save_hf("AlbertForSequenceClassification", tmp_path / "st",
                        num_labels=3, id2label={0: "a", 1: "b", 2: "c"})
  (tmp_path / "bin").mkdir()
  shutil_copy(tmp_path / "st" / "config.json", tmp_path / "bin")
  torch.save(torch_model.state_dict(), tmp_path / "bin" / "pytorch_model.bin")
  word, mask, types = ids(2)
  model, report = our_model("classifier", tmp_path / "bin", 3,
                            ["a", "b", "c"])
  np.testing.assert_allclose(
      ours(model, word, mask, types)["logits"].numpy(),
      torch_out(torch_model, word, mask, types).logits.numpy(), atol=1e-5)
  assert report.path.endswith("pytorch_model.bin")

  class Exploit:
    def __reduce__(self):
      return (os.system, ("touch " + str(tmp_path / "pwned"),))
  (tmp_path / "evil").mkdir()
  shutil_copy(tmp_path / "st" / "config.json", tmp_path / "evil")
  with zipfile.ZipFile(tmp_path / "evil" / "pytorch_model.bin", "w") as z:
    z.writestr("archive/data.pkl", pickle.dumps({"x": Exploit()}))
  with pytest.raises(UserInputError, match="would call posix.system"):
    our_model("classifier", tmp_path / "evil", 3, ["a", "b", "c"])
  assert not (tmp_path / "pwned").exists()


def test_a_sharded_folder_missing_a_shard_is_one_line(tmp_path):
  torch_model = save_hf("AlbertForSequenceClassification", tmp_path / "one")
  torch_model.save_pretrained(tmp_path / "sharded", max_shard_size="20KB")
  shards = sorted(p.name for p in (tmp_path / "sharded").glob("model-*"))
  assert len(shards) > 1
  word, mask, types = ids(2)
  model, _ = our_model("classifier", tmp_path / "sharded", 2)
  np.testing.assert_allclose(
      ours(model, word, mask, types)["logits"].numpy(),
      torch_out(torch_model, word, mask, types).logits.numpy(), atol=1e-5)
  (tmp_path / "sharded" / shards[1]).unlink()
  with pytest.raises(UserInputError, match="names 1 shard.*do not exist: "
                     f"{shards[1]}"):
    our_model("classifier", tmp_path / "sharded", 2)


def shutil_copy(source, folder):
  import shutil
  shutil.copy(source, folder)


def test_masked_lm_folder_continues_pretraining_with_its_mlm_head(tmp_path):
  """An AlbertForMaskedLM folder (no pooler, no SOP head) into our
  pretrainer: its MLM logits are PyTorch's; the pooler and the SOP head
  are reported new."""
  from albert_tf.models.albert_pretrainer import AlbertPretrainer
  from albert_tf.networks.albert_encoder import AlbertEncoder
  torch_model = save_hf("AlbertForMaskedLM", tmp_path)
  config = configs.load_albert_config(str(tmp_path / "config.json"))
  model = AlbertPretrainer(AlbertEncoder(config))
  report = weight_loading.load_weights_into(model, str(tmp_path))
  assert report.fresh_pooler
  assert sorted(report.not_in_checkpoint) == ["sentence_order/dense/bias",
                                              "sentence_order/dense/kernel"]
  word, mask, types = ids(2)
  positions = np.array([[1, 4, 7], [2, 3, 9]], np.int32)
  got = model(dict(input_word_ids=word, input_mask=mask,
                   input_type_ids=types, masked_lm_positions=positions),
              training=False)["mlm_logits"].numpy()
  want = torch_out(torch_model, word, mask, types).logits.numpy()
  want = np.take_along_axis(want, positions[..., None], axis=1)
  np.testing.assert_allclose(got, want, atol=1e-4)
