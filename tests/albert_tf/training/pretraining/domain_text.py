"""A domain corpus written by hand for the vocabulary-extension tests:
clinical English (words a model of Python's docstrings never saw) and
Chinese clinical notes (a script its vocabulary lacks)."""

import itertools

CONDITIONS = ["cardiomyopathy", "tachycardia", "hypertension",
              "thrombocytopenia", "pneumothorax", "hyperkalemia",
              "bradycardia", "nephropathy", "neutropenia", "hepatomegaly",
              "hypoglycemia", "endocarditis"]
PROCEDURES = ["echocardiography", "hemodialysis", "bronchoscopy",
              "thoracentesis", "angiography", "colonoscopy",
              "cardioversion", "paracentesis"]
DRUGS = ["amiodarone", "metoprolol", "heparin", "furosemide", "vancomycin",
         "insulin", "warfarin", "prednisone"]
TEMPLATES = [
    "The patient with {c} underwent {p} and received {d}.",
    "Known {c}; {p} was deferred and {d} was started.",
    "History of {c} and {c2}, treated with {d} before {p}.",
    "After {p}, the {c} improved on {d} twice daily.",
]
CHINESE = [
    "患者出现心动过速，给予胺碘酮治疗。",
    "患者有高血压病史，血压控制良好。",
    "超声心动图显示心肌病，建议继续观察。",
    "血小板减少，暂停肝素，复查血常规。",
    "患者气胸，行胸腔穿刺后症状缓解。",
    "高钾血症，给予胰岛素和呋塞米治疗。",
]
# Held out: other sentences with the same clinical words.
CHINESE_HELD_OUT = [
    "复查超声心动图，心肌病无明显变化。",
    "心动过速缓解后，停用胺碘酮。",
    "患者高钾血症，继续胰岛素治疗。",
]


def clinical_sentences(count: int, held_out: bool = False):
  """`count` sentences, the same for the same arguments: every 7th
  combination of the word lists from the first (from the fourth, and the
  held-out Chinese sentences, with `held_out`)."""
  combos = itertools.product(TEMPLATES, CONDITIONS, PROCEDURES, DRUGS)
  chinese = CHINESE_HELD_OUT if held_out else CHINESE
  out = []
  for i, (template, c, p, d) in enumerate(itertools.islice(
      combos, 3 if held_out else 0, None, 7)):
    if len(out) == count:
      break
    c2 = CONDITIONS[(i * 5 + 3) % len(CONDITIONS)]
    out.append(template.format(c=c, c2=c2, p=p, d=d))
    if i % 3 == 0:
      out.append(chinese[i % len(chinese)])
  return out[:count]


def write_corpus(path: str, sentences) -> str:
  """The official text format: one sentence a line, a blank line after
  every 5 sentences (documents)."""
  with open(path, "w", encoding="utf-8") as f:
    for i, sentence in enumerate(sentences):
      f.write(sentence + "\n" + ("\n" if i % 5 == 4 else ""))
  return path


def extended_tokenizer(folder: str, sentences, new_pieces: int,
                       spm_model_file: str = "", vocab_file: str = ""):
  """The tokenizer tools.extend_vocabulary writes for `sentences` (its
  selection and its file, no model): (path written in `folder`, the old
  tokenizer's size)."""
  import os

  from albert_tf.config import AlbertConfig
  from albert_tf.training.pretraining import vocabulary_extension as vext
  params = vext.VocabularyExtensionParams.from_flat(
      init_checkpoint="unused", albert_config_file="unused",
      spm_model_file=spm_model_file, vocab_file=vocab_file,
      input_file="unused", new_pieces=new_pieces, output_dir="unused")
  if spm_model_file:
    from data_pipeline.tokenization import sentencepiece_tokenizer
    size = sentencepiece_tokenizer.SentencePieceTokenizer(
        spm_model_file).vocab_size
  else:
    from data_pipeline.tokenization import wordpiece_tokenizer
    size = len(wordpiece_tokenizer.load_vocab(vocab_file))
  vocabulary = vext.read_vocabulary(params, AlbertConfig(vocab_size=size))
  chosen = vext.choose_pieces(params, vocabulary, sentences, params.ranking)
  data, _ = vext.extended_tokenizer(vocabulary, chosen)
  path = os.path.join(folder, os.path.basename(spm_model_file or vocab_file))
  with open(path, "wb") as f:
    f.write(data)
  return path, size
