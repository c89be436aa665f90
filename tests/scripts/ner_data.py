"""Crafted NER tasks the tests learn: English sentences in CoNLL-2003's
layout and Chinese ones in CLUENER's, written here (no network).

Entities are multi-word (English) or multi-character (Chinese) and drawn
from their own word lists, so a tiny model learns them in a few hundred
steps; some sentences are longer than the tests' --max_seq_length (32), so
they are cut into windows.
"""

import json
import random

# Entity words are words of the tests' SentencePiece vocabulary (English
# docstrings), capitalized, most of them one piece ("Karlsson" is eight,
# "Novak" four); the lists do not share a word.
FIRST_NAMES = ["Node", "Frame", "Member", "Client", "Caller", "Writer",
               "Decoder", "Manager"]
SURNAMES = ["Heap", "Stack", "Tree", "Cache", "Karlsson", "Novak"]
CITIES = ["Network", "Server", "Directory", "Namespace", "Environment",
          "Scope", "Mailbox", "Port"]
CITY_SUFFIXES = ["Local", "Global"]
ORG_NAMES = ["Codec", "Protocol", "Interface", "Decorator", "Generator",
             "Iterator"]
ORG_SUFFIXES = ["System", "Program", "Module", "Library"]
FILLER = ["the", "with", "from", "when", "which", "this", "that", "will",
          "used", "after", "before", "then", "also", "more", "than", "there",
          "where", "each", "only", "first", "last", "time", "over", "about",
          "many", "some", "every", "while", "because", "until", "other",
          "same", "week", "month", "year"]


def _person(rng):
  words = [rng.choice(FIRST_NAMES)]
  if rng.random() < 0.7:
    words.append(rng.choice(SURNAMES))
  return words, "PER"


def _place(rng):
  words = [rng.choice(CITIES)]
  if rng.random() < 0.4:
    words.append(rng.choice(CITY_SUFFIXES))
  return words, "LOC"


def _organisation(rng):
  return [rng.choice(ORG_NAMES), rng.choice(ORG_SUFFIXES)], "ORG"


def english_sentence(rng, long=False):
  """(words, IOB2 tags): filler with two to four entities (long: nine)."""
  words, tags = [], []
  for _ in range(9 if long else rng.randint(2, 4)):
    for _ in range(rng.randint(1, 4)):
      words.append(rng.choice(FILLER))
      tags.append("O")
    entity, kind = rng.choice([_person, _place, _organisation])(rng)
    words.extend(entity)
    tags.extend([f"B-{kind}"] + [f"I-{kind}"] * (len(entity) - 1))
  words.append(".")
  tags.append("O")
  return words, tags


def english_sentences(n, seed, long_every=8):
  rng = random.Random(seed)
  return [english_sentence(rng, long=i % long_every == 0) for i in range(n)]


def to_iob1(tags):
  """IOB2 tags as IOB1 (CoNLL-2003's original files): entities start with
  I-, B- only right after an entity of the same type."""
  out = []
  for i, tag in enumerate(tags):
    if tag.startswith("B-"):
      previous = out[-1] if out else "O"
      adjacent = previous != "O" and previous[2:] == tag[2:]
      tag = tag if adjacent else "I-" + tag[2:]
    out.append(tag)
  return out


def write_conll(path, sentences, iob1=False):
  """CoNLL-2003's layout: word POS chunk tag, -DOCSTART- every 20."""
  lines = []
  for i, (words, tags) in enumerate(sentences):
    if i % 20 == 0:
      lines += ["-DOCSTART- -X- -X- O", ""]
    for word, tag in zip(words, to_iob1(tags) if iob1 else tags):
      lines.append(f"{word} NN I-NP {tag}")
    lines.append("")
  with open(path, "w", encoding="utf-8") as f:
    f.write("\n".join(lines))
  return str(path)


def write_jsonl(path, sentences, integer_tags=None):
  """Hugging Face's layout; with integer_tags (the label names), tags are
  their indices under `ner_tags`."""
  with open(path, "w", encoding="utf-8") as f:
    for i, (words, tags) in enumerate(sentences):
      record = {"id": str(i), "tokens": words}
      if integer_tags:
        record["ner_tags"] = [integer_tags.index(t) for t in tags]
      else:
        record["tags"] = tags
      f.write(json.dumps(record) + "\n")
  return str(path)


NAMES = ["张伟", "王芳", "李娜", "刘洋", "陈静", "欧阳明", "赵磊", "孙丽"]
COMPANIES = ["腾讯公司", "华为公司", "阿里巴巴", "小米科技", "百度公司",
             "京东集团"]
ADDRESSES = ["北京", "上海", "深圳", "杭州", "成都", "南京市", "广州"]
_CHINESE_TEMPLATES = [
    "{name}在{company}工作。",
    "{name}昨天去了{address}。",
    "{company}的总部在{address}，{name}是那里的工程师。",
    "我们听说{name}下个月要去{address}出差。",
    "{address}的{company}今年招了很多人。",
    "记者采访了{company}的负责人{name}。",
]
_CHINESE_FILLER = ["今天天气很好。", "大家都觉得这个问题很难。",
                   "他每天早上六点起床。", "周末我们一起去看电影吧！"]


def chinese_record(rng, long=False):
  """A CLUENER record: one to two templates (long: five, with filler)."""
  text, label = "", {}
  parts = 5 if long else rng.randint(1, 2)
  for _ in range(parts):
    if long or rng.random() < 0.3:
      text += rng.choice(_CHINESE_FILLER)
    template = rng.choice(_CHINESE_TEMPLATES)
    values = dict(name=rng.choice(NAMES), company=rng.choice(COMPANIES),
                  address=rng.choice(ADDRESSES))
    pieces = template.replace("}", "{").split("{")
    for i, piece in enumerate(pieces):
      if i % 2 == 0:
        text += piece
        continue
      mention = values[piece]
      label.setdefault(piece, {}).setdefault(mention, []).append(
          [len(text), len(text) + len(mention) - 1])
      text += mention
  return {"text": text, "label": label}


def chinese_records(n, seed, long_every=8):
  rng = random.Random(seed)
  return [chinese_record(rng, long=i % long_every == 0) for i in range(n)]


def write_cluener(path, records, with_labels=True):
  with open(path, "w", encoding="utf-8") as f:
    for i, record in enumerate(records):
      out = {"id": i, "text": record["text"]}
      if with_labels:
        out["label"] = record["label"]
      f.write(json.dumps(out, ensure_ascii=False) + "\n")
  return str(path)
