"""Shared fixtures. Test data is built here, on the machine: no network."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import random  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402

from data_pipeline.corpora import stdlib_corpus  # noqa: E402


@pytest.fixture(autouse=True)
def _reset_random_state():
  """Every test starts from the same process-wide random state (Python's,
  NumPy's and, once imported, TensorFlow's global seed), so an unseeded
  draw in a test gives the same values whatever ran before it in its
  pytest-xdist worker. Tests still seed what their premise rests on."""
  random.seed(0)
  if "numpy" in sys.modules:
    sys.modules["numpy"].random.seed(0)
  if "tensorflow" in sys.modules:
    sys.modules["tensorflow"].random.set_seed(0)


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
  from data_pipeline.tokenization import sentencepiece_trainer
  prefix = str(tmp_path_factory.mktemp("spm") / "albert_2k")
  sentencepiece_trainer.train_sentencepiece(
      english_corpus, prefix, vocab_size=2000, do_lower_case=True,
      num_threads=4)
  return prefix + ".model"


@pytest.fixture(scope="session")
def pretraining_records(tmp_path_factory, english_corpus, spm_model):
  """Pretraining TFRecords (seq 32, 5 predictions) of the English corpus."""
  from data_pipeline.pretraining import instance_options
  from data_pipeline.pretraining import writer as pretraining_writer
  path = str(tmp_path_factory.mktemp("records") / "train.tfrecord")
  pretraining_writer.create_pretraining_data(
      english_corpus, path, spm_model,
      instance_options.InstanceOptions(max_seq_length=32,
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


# --- Chinese text of the WordPiece data and fine-tuning tests -------------

_SENTENCES = [
    "今天天气很好，我们去公园散步吧。",
    "他每天早上六点起床，然后去跑步。",
    "这家饭馆的饺子非常好吃。",
    "我的妹妹在大学里学习历史。",
    "明天下午三点我们在图书馆见面。",
    "长城是中国最有名的古迹之一。",
    "春节的时候，家家户户都贴对联。",
    "请把窗户关上，外面下雨了。",
    "他用iPhone拍了很多照片。",
    "研究人员用GPU训练了一个新的模型。",
    "2023年，她第一次去了上海。",
    "这本书讲的是一个关于友谊的故事。",
    "老师说我们下周要考试。",
    "你喜欢喝绿茶还是红茶？",
    "北京的秋天又凉快又舒服！",
    "妈妈在厨房里做晚饭。",
    "我们公司明年打算开一家新店。",
    "孩子们在操场上踢足球。",
    "这个问题其实没有那么难。",
    "他写了一篇关于AI的文章，很多人都读了。",
    "火车晚点了半个小时。",
    "医生建议他多喝水，早点休息。",
    "这条河从西向东流过整座城市。",
    "周末我常常和朋友一起看电影。",
    "她的中文说得越来越流利了。",
    "爷爷年轻的时候当过兵。",
    "机场离市中心大约四十公里。",
    "我们应该保护环境，节约用水。",
    "这台电脑的速度比以前快多了。",
    "小猫躺在沙发上睡觉。",
]
_SUBJECTS = ["我", "你", "他", "她", "我们", "老师", "学生们", "小明",
             "这位医生", "我的朋友", "他的哥哥", "那个工程师"]
_PREDICATES = ["今天去公园散步", "在图书馆看书", "正在学习机器学习",
               "喜欢喝绿茶", "买了一台新电脑", "每天早上跑步", "在北京工作",
               "用GPU训练模型", "2024年去了深圳", "觉得这部电影很好看",
               "在厨房做饭", "想去长城旅游", "用iPhone拍照片",
               "写了一篇关于AI的文章", "周末去爬山", "在网上买书",
               "学会了游泳", "参加了一个会议", "给家里打电话",
               "准备下个月出国留学"]
_ENDINGS = ["。", "！", "？", "，真的很开心。", "，而且很认真。", "，对吧？"]
# Not in the vocabulary: its sentences carry [UNK].
RARE_CHAR = "龘"


def _chinese_sentence(rng):
  """One sentence: a written one, or subject + predicate + ending."""
  if rng.random() < 0.4:
    return rng.choice(_SENTENCES)
  return (rng.choice(_SUBJECTS) + rng.choice(_PREDICATES) +
          rng.choice(_ENDINGS))


def _write_chinese_corpus(path, documents=60, seed=3):
  """Documents of 8-20 Chinese sentences, one a line, blank line between."""
  import random
  rng = random.Random(seed)
  lines = []
  for _ in range(documents):
    for _ in range(rng.randint(8, 20)):
      lines.append(_chinese_sentence(rng))
      if rng.random() < 0.02:
        lines[-1] = RARE_CHAR + lines[-1]
    lines.append("")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
  return str(path)


def _chinese_vocab_tokens(corpus_path):
  """BERT's Chinese layout: [PAD], [unused1..99], [UNK] 100, [CLS] 101,
  [SEP] 102, [MASK] 103, then the corpus's characters and ## forms, and
  pieces that split the Latin and digit words ("iphone" = "ip" "##hone")."""
  from data_pipeline.tokenization import wordpiece_tokenizer as wp
  with open(corpus_path, encoding="utf-8") as f:
    words = set(wp.basic_tokenize(f.read(), do_lower_case=True))
  chars = sorted({c for w in words for c in w} - {RARE_CHAR})
  tokens = (["[PAD]"] + [f"[unused{i}]" for i in range(1, 100)] +
            ["[UNK]", "[CLS]", "[SEP]", "[MASK]", "<S>", "<T>"] + chars +
            ["##" + c for c in chars] +
            ["ip", "##hone", "gp", "##u", "20", "##23", "##24", "ai"])
  return list(dict.fromkeys(tokens))  # "##u" is there twice.


@pytest.fixture(scope="session")
def chinese_kit():
  """Chinese sentences the tests write, and vocabularies in BERT's Chinese
  layout ([UNK] at 100) for them."""
  import types
  return types.SimpleNamespace(
      sentence=_chinese_sentence, write_corpus=_write_chinese_corpus,
      vocab_tokens=_chinese_vocab_tokens, rare_char=RARE_CHAR)


# The crafted classification task: class i holds KEYWORDS[i] among 3-9
# filler words (learnable, so a fine-tuned model's logits are not ties).
KEYWORDS = ("module", "function", "object")


def _filler_words(english_corpus):
  with open(english_corpus, encoding="utf-8") as f:
    words = [w.lower() for w in f.read().split() if w.isalpha()]
  return sorted({w for w in words[:20000] if w not in KEYWORDS and
                 w != "marker"})[:400]


def _keyword_texts(words, n, seed):
  import numpy as np
  rng = np.random.default_rng(seed)
  texts, labels = [], []
  for _ in range(n):
    label = int(rng.integers(len(KEYWORDS)))
    chosen = list(rng.choice(words, int(rng.integers(3, 10))))
    chosen.insert(int(rng.integers(len(chosen) + 1)), KEYWORDS[label])
    texts.append(" ".join(chosen))
    labels.append(label)
  return texts, np.array(labels)


_KEYWORD_SEQ = 32


def _keyword_config():
  from albert_tf.config import AlbertConfig
  return AlbertConfig(vocab_size=2000, embedding_size=32, hidden_size=64,
                      num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=128,
                      max_position_embeddings=_KEYWORD_SEQ,
                      hidden_dropout_prob=0.0,
                      attention_probs_dropout_prob=0.0,
                      initializer_range=0.05)


@pytest.fixture(scope="session")
def keyword_classifier(tmp_path_factory, spm_model, english_corpus):
  """A tiny classifier (H=64, 2 layers, seq 32) fine-tuned 250 steps on the
  keyword task and exported with export_classifier, once a run for all
  xdist workers (tests/built_once.py): dict(export, config, words,
  seq_length, texts(n, seed) -> (texts, labels))."""
  import functools

  from tests.built_once import built_once
  words = _filler_words(english_corpus)
  export = built_once(
      tmp_path_factory, "keywords",
      lambda folder: _train_keyword_classifier(folder, spm_model, words))
  return dict(export=export, config=_keyword_config(), words=words,
              seq_length=_KEYWORD_SEQ,
              texts=functools.partial(_keyword_texts, words))


def _train_keyword_classifier(folder, spm_model, words):
  """The export of `keyword_classifier` (its path), in `folder`."""
  import tensorflow as tf
  import tf_keras

  from albert_tf import exports
  from albert_tf.exports.litert.runner import TextRunner
  from albert_tf.models.albert_classifier import AlbertClassifier
  from albert_tf.networks.albert_encoder import AlbertEncoder
  from data_pipeline.tokenization.sentencepiece_tokenizer import (
    SentencePieceTokenizer,
  )
  seq, config = _KEYWORD_SEQ, _keyword_config()
  tf_keras.utils.set_random_seed(0)
  classifier = AlbertClassifier(AlbertEncoder(config), len(KEYWORDS),
                                dropout_rate=0.0)
  packer = TextRunner.__new__(TextRunner)  # its packing, no model
  packer.tokenizer, packer.seq_length = SentencePieceTokenizer(spm_model), seq
  packer.labels = [str(i) for i in range(len(KEYWORDS))]
  texts, labels = _keyword_texts(words, 1500, seed=0)
  classifier.compile(
      optimizer=tf_keras.optimizers.Adam(2e-3),
      loss={"logits": tf_keras.losses.SparseCategoricalCrossentropy(
          from_logits=True)})
  data = tf.data.Dataset.from_tensor_slices(
      (packer.classify_inputs(texts), {"logits": labels})).shuffle(
          1000, seed=0).repeat().batch(32)
  classifier.fit(data, steps_per_epoch=250, epochs=1, verbose=0)
  return exports.export_classifier(classifier, str(folder / "glue"),
                                   spm_model, packer.labels, 1, seq)


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


def pytest_collection_modifyitems(config, items):
  """TEST_ORDER=reverse runs the files (and the tests in each) in reverse
  order: a check that no test depends on what ran before it."""
  del config
  if os.environ.get("TEST_ORDER") == "reverse":
    items.reverse()
