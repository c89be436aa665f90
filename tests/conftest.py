"""Shared fixtures. Test data is built here, on the machine: no network."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import pytest  # noqa: E402

from data_pipeline import stdlib_corpus  # noqa: E402


@pytest.fixture(scope="session")
def english_corpus(tmp_path_factory):
  """A real English corpus (stdlib docstrings), ~300 KB, input format."""
  path = str(tmp_path_factory.mktemp("corpus") / "stdlib_docs.txt")
  stdlib_corpus.write_stdlib_corpus(path, max_bytes=300_000)
  return path


@pytest.fixture(scope="session")
def tiny_config():
  """A tiny AlbertConfig (H=32, 2 layers) for fast model tests (frozen:
  shared by every test)."""
  from albert_tf.config import AlbertConfig
  return AlbertConfig(vocab_size=97, embedding_size=16, hidden_size=32,
                      num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=40,
                      hidden_act="gelu", initializer_range=0.1)


def _make_encoder_inputs(batch_size=3, seq_length=12, vocab_size=97, seed=0):
  """Random word ids, a padding mask (varied lengths) and two segments."""
  import numpy as np
  rng = np.random.default_rng(seed)
  word_ids = rng.integers(5, vocab_size, size=(batch_size, seq_length))
  lengths = np.linspace(seq_length, seq_length // 2, batch_size).astype(int)
  mask = (np.arange(seq_length)[None, :] < lengths[:, None]).astype(np.int32)
  type_ids = (np.arange(seq_length)[None, :] >= lengths[:, None] // 2)
  type_ids = (type_ids & mask.astype(bool)).astype(np.int32)
  return dict(input_word_ids=(word_ids * mask).astype(np.int32),
              input_mask=mask, input_type_ids=type_ids)


@pytest.fixture
def make_inputs():
  """make_inputs(batch_size, seq_length, vocab_size, seed) -> encoder inputs."""
  return _make_encoder_inputs


@pytest.fixture
def encoder_inputs():
  return _make_encoder_inputs()


@pytest.fixture(scope="session")
def spm_model(tmp_path_factory, english_corpus):
  """A lowercased 2000-piece ALBERT SentencePiece model of `english_corpus`."""
  from data_pipeline import sentencepiece_trainer
  prefix = str(tmp_path_factory.mktemp("spm") / "albert_2k")
  sentencepiece_trainer.train_sentencepiece(
      english_corpus, prefix, vocab_size=2000, do_lower_case=True,
      num_threads=4)
  return prefix + ".model"


@pytest.fixture(scope="session")
def pretraining_records(tmp_path_factory, english_corpus, spm_model):
  """Pretraining TFRecords (seq 32, 5 predictions) of the English corpus."""
  from data_pipeline import pretraining_data
  from data_pipeline import pretraining_writer
  path = str(tmp_path_factory.mktemp("records") / "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      english_corpus, path, spm_model,
      pretraining_data.InstanceOptions(max_seq_length=32,
                                       max_predictions_per_seq=5),
      dupe_factor=1, random_seed=7, num_workers=1, show_progress=False)
  return dict(path=path, spm_model=spm_model, max_seq_length=32,
              max_predictions_per_seq=5)


def _save_signatures(path, signatures):
  """A SavedModel at `path` with {name: (input names, output names)}
  signatures (string inputs; outputs of the inputs' length): a stand-in of
  an export's interface, saved in about a second."""
  import tensorflow as tf
  module = tf.Module()
  functions = {}
  for name, (inputs, outputs) in signatures.items():
    def body(*args, outputs=outputs):
      size = tf.shape(args[0])[0]
      return {o: tf.zeros([size], tf.int32) for o in outputs}
    spec = [tf.TensorSpec([None], tf.string, name=i) for i in inputs]
    functions[name] = tf.function(body, input_signature=spec)
    setattr(module, name, functions[name])
  tf.saved_model.save(module, path, signatures=functions)


@pytest.fixture(scope="session")
def fake_exports(tmp_path_factory):
  """Folders a user might give as --init_savedmodel: name -> path.

  export/encoder and export/preprocessor, and serving exports, have the
  signatures (input and output names) of ours; `checkpoint` is a folder
  with a TensorFlow checkpoint, `plain` an empty folder."""
  import tensorflow as tf
  root = tmp_path_factory.mktemp("fake_exports")
  encoder_inputs = ["input_word_ids", "input_mask", "input_type_ids"]
  kinds = {
      "export/encoder": {"serving_default": (
          encoder_inputs, ["default", "pooled_output", "sequence_output"])},
      "export/preprocessor": {
          "serving_default": (["sentences"], encoder_inputs),
          "two_segments": (["text_a", "text_b"], encoder_inputs)},
      "classifier": {"serving_default": (
          ["text_a", "text_b"], ["labels", "logits", "probabilities"])},
      "squad": {"serving_default": (["question", "context"],
                                    ["answer", "end", "start"])},
      "race": {"serving_default": (["article", "question", "options"],
                                   ["answer", "probabilities"])},
  }
  paths = {}
  for name, signatures in kinds.items():
    paths[name] = str(root / name)
    _save_signatures(paths[name], signatures)
  paths["export"] = str(root / "export")
  paths["checkpoint"] = str(root / "checkpoint")
  tf.train.CheckpointManager(tf.train.Checkpoint(v=tf.Variable(1.0)),
                             paths["checkpoint"], max_to_keep=1).save()
  paths["plain"] = str(root / "plain")
  os.makedirs(paths["plain"])
  return paths


# The multilingual text of the WordPiece tests: every line is checked; none
# holds "\n" (the text is written one a line).
MULTILINGUAL_LINES = [
    "The quick brown fox jumps over the lazy dog.",
    "unaffable runners were running; un-believable, isn't it?",
    "Héllo Wörld! Ça va? naïve café résumé ÉCOLE Ångström",
    "中华人民共和国成立于1949年。我们爱北京天安门！",
    "今天天气很好，我们去公园散步吧。",
    "他说：“学习机器学习很有意思”——真的吗？",
    "日本語のテキスト：ひらがな、カタカナ、漢字。",
    "東京タワーに行きました。ありがとうございます",
    "한국어 문장입니다. 안녕하세요, 세계!",
    "서울은 대한민국의 수도이다",
    "emoji 😀 test 👍🏽 ok❤️ 🇨🇳 end",
    "control\x00chars\x07here\u200band\ufeffthere\ufffdend\x1fx\x85y",
    "tabs\tand\rcarriage\u3000ideographic\u00a0nbsp\u2003em\u2028ls",
    "x" * 201,
    "y" * 200,
    "a" * 150 + "中" + "b" * 150,
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３，。！",
    "mixed中文English混合text123数字",
    "İstanbul Straße ﬁne ÀÉÎÕÜ",
    "",
    "   ",
    "\u0301 lone accent e\u0301",
    "don't stop—believing… \"quotes\" 'single' (parens) [brackets] {x}",
    "numbers 3.14159 1,000,000 $100 50% #hashtag @user a^b `tick` ~tilde",
    "Москва — столица России. Привет, мир!",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "ที่นี่ภาษาไทย",
    "[CLS] [MASK] ##ing [UNK] ##",
    "compatibility 㐀 𠀀 豈 丽 ideographs",
]
# Lines vocabularies are learned from: the others have unknown words.
_WORDPIECE_TRAIN_LINES = (MULTILINGUAL_LINES[:11] +
                          MULTILINGUAL_LINES[16:20])


class WordPieceKit:
  """Vocabularies and the reference tokenizer of the WordPiece tests, from
  Hugging Face's `tokenizers` (Rust BERT WordPiece), which nobody here
  wrote."""

  specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

  @staticmethod
  def reference(vocab, do_lower_case):
    """BERT's normalizer, pre-tokenizer and WordPiece over {token: id}."""
    from tokenizers import Tokenizer
    from tokenizers import models
    from tokenizers import normalizers
    from tokenizers import pre_tokenizers
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]",
                                     max_input_chars_per_word=200))
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True,
        strip_accents=do_lower_case, lowercase=do_lower_case)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok

  def learn(self, do_lower_case, vocab_size=400):
    """A vocabulary learned from part of the multilingual text: specials
    first ([UNK] at 1), tokens in id order."""
    from tokenizers import trainers
    tok = self.reference({"[UNK]": 0}, do_lower_case)
    tok.train_from_iterator(_WORDPIECE_TRAIN_LINES, trainers.WordPieceTrainer(
        vocab_size=vocab_size, special_tokens=self.specials,
        show_progress=False))
    vocab = tok.get_vocab()
    return sorted(vocab, key=vocab.get)

  def bert_layout(self, tokens):
    """BERT's layout: [PAD], [unused0..98], [UNK] 100, [CLS] 101, ..."""
    rest = [t for t in tokens if t not in self.specials]
    return (["[PAD]"] + [f"[unused{i}]" for i in range(99)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]"] + rest)


@pytest.fixture(scope="session")
def wordpiece_kit():
  return WordPieceKit()


@pytest.fixture(scope="session")
def multilingual_lines(tmp_path_factory):
  """MULTILINGUAL_LINES, written to a file and read back."""
  path = tmp_path_factory.mktemp("text") / "multilingual.txt"
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(MULTILINGUAL_LINES) + "\n")
  with open(path, encoding="utf-8", newline="") as f:
    lines = f.read().split("\n")[:-1]
  assert lines == MULTILINGUAL_LINES
  return lines


@pytest.fixture(autouse=True)
def _no_global_seed_leak():
  """TensorFlow's global seed, reset after each test: a test that seeds it
  (e.g. tf_keras.utils.set_random_seed(0)) must not change later tests'
  random streams (a leaked 0 broke the record stream's shuffle seeds)."""
  yield
  import sys
  tf = sys.modules.get("tensorflow")
  if tf is not None:
    tf.random.set_seed(None)
