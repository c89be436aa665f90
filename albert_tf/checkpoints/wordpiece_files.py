"""A WordPiece vocabulary carried by converted checkpoints.

`convert_checkpoint --vocab_file=albert_base_zh/vocab_chinese.txt` writes the
vocabulary with every output: beside an ours / official checkpoint under its
own name (as the released folders hold it), and in a Hugging Face folder as
`vocab.txt` + `tokenizer.json` + `tokenizer_config.json` +
`special_tokens_map.json`, which `transformers.AutoTokenizer` loads as a
`PreTrainedTokenizerFast` running `tokenizer.json` itself.

`tokenizer.json` (the `tokenizers` file format, written here as JSON, no
dependency) holds BERT's normalizer and pre-tokenizer and WordPiece with the
official limit of 200 characters a word. The config names
`PreTrainedTokenizerFast`, not `BertTokenizer` (the Chinese ALBERTs on the
hub): transformers 5 rebuilds a named `BertTokenizer` from vocab.txt with its
own limit of 100 characters (whatever the config says), as transformers 4's
slow `BertTokenizer` does, and gives [UNK] for words of 101-200 characters
where the official code splits them into pieces. Both keep a literal "[CLS]"
(any special token) in the text whole, where the official basic tokenizer
splits it into "[", "cls", "]": transformers' rule. A user who wants the Bert
class anyway (`BertTokenizer.from_pretrained(folder)`) gets it from the same
files, with that limit.

The vocabulary is written as the official `load_vocab` reads it (one token a
line, repeats dropped), so a reader that numbers lines (Hugging Face's
`load_vocab`) gives the same ids as ours. Imports no TensorFlow: the tool
checks the file before TensorFlow's import.
"""

import json
from typing import List, Optional, Sequence

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_tf.config import AlbertConfig
from data_pipeline.tokenization import wordpiece_tokenizer as wp


def check_vocab_file(config: AlbertConfig, vocab_file: str) -> List[str]:
  """The file's tokens (id order), checked against config.vocab_size.

  Raises:
    UserInputError: a bad file (wordpiece_tokenization.load_vocab), or more
      tokens than the config's vocab_size.
  """
  tokens = wp.load_vocab(vocab_file)
  if len(tokens) > config.vocab_size:
    raise UserInputError(
        f"--vocab_file={vocab_file} has {len(tokens)} tokens, more than the "
        f"config's vocab_size ({config.vocab_size})")
  return tokens


def _vocab_text(tokens: Sequence[str]) -> str:
  return "".join(f"{t}\n" for t in tokens)


def write_beside_checkpoint(tokens: Sequence[str], output_prefix: str,
                            name: str) -> str:
  """Writes the vocabulary as <checkpoint folder>/<name>; returns its path."""
  path = file_io.join(file_io.dirname(output_prefix) or ".", name)
  file_io.write_atomic(path, _vocab_text(tokens))
  return path


def tokenizer_json(tokens: Sequence[str], do_lower_case: bool) -> dict:
  """The `tokenizers` Tokenizer of BERT WordPiece over `tokens`, as the
  JSON of a tokenizer.json file ([CLS] a [SEP] (b [SEP]) post-processing)."""
  vocab = {t: i for i, t in enumerate(tokens)}
  specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]

  def special(token, type_id):
    return {"SpecialToken": {"id": token, "type_id": type_id}}

  return {
      "version": "1.0", "truncation": None, "padding": None,
      "added_tokens": [
          {"id": vocab[t], "content": t, "single_word": False,
           "lstrip": False, "rstrip": False, "normalized": False,
           "special": True} for t in specials],
      "normalizer": {"type": "BertNormalizer", "clean_text": True,
                     "handle_chinese_chars": True, "strip_accents": None,
                     "lowercase": do_lower_case},
      "pre_tokenizer": {"type": "BertPreTokenizer"},
      "post_processor": {
          "type": "TemplateProcessing",
          "single": [special("[CLS]", 0), {"Sequence": {"id": "A",
                                                        "type_id": 0}},
                     special("[SEP]", 0)],
          "pair": [special("[CLS]", 0), {"Sequence": {"id": "A",
                                                      "type_id": 0}},
                   special("[SEP]", 0), {"Sequence": {"id": "B",
                                                      "type_id": 1}},
                   special("[SEP]", 1)],
          "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                             for t in ("[CLS]", "[SEP]")}},
      "decoder": {"type": "WordPiece", "prefix": wp.CONTINUATION,
                  "cleanup": True},
      "model": {"type": "WordPiece", "unk_token": wp.UNK_TOKEN,
                "continuing_subword_prefix": wp.CONTINUATION,
                "max_input_chars_per_word": wp.MAX_INPUT_CHARS_PER_WORD,
                "vocab": vocab},
  }


def write_huggingface_tokenizer(tokens: Sequence[str], folder: str,
                                do_lower_case: bool,
                                max_length: Optional[int] = None) -> str:
  """vocab.txt, tokenizer.json, tokenizer_config.json and
  special_tokens_map.json of a WordPiece tokenizer in `folder`; returns a
  short description."""
  special = {"unk_token": "[UNK]", "sep_token": "[SEP]",
             "pad_token": "[PAD]", "cls_token": "[CLS]",
             "mask_token": "[MASK]"}
  # do_lower_case and the Bert options are what BertTokenizer reads when a
  # user asks for it by name; AutoTokenizer runs tokenizer.json.
  config = dict(special, tokenizer_class="PreTrainedTokenizerFast",
                do_lower_case=do_lower_case, do_basic_tokenize=True,
                tokenize_chinese_chars=True, strip_accents=None,
                clean_up_tokenization_spaces=True,
                model_input_names=["input_ids", "token_type_ids",
                                   "attention_mask"])
  if max_length:
    config["model_max_length"] = max_length
  file_io.write_atomic(file_io.join(folder, "vocab.txt"), _vocab_text(tokens))
  file_io.write_atomic(file_io.join(folder, "tokenizer.json"), json.dumps(
      tokenizer_json(tokens, do_lower_case), ensure_ascii=False) + "\n")
  for name, values in (("tokenizer_config.json", config),
                       ("special_tokens_map.json", special)):
    file_io.write_atomic(file_io.join(folder, name),
                         json.dumps(values, indent=2, sort_keys=True) + "\n")
  return "vocab.txt + tokenizer.json (PreTrainedTokenizerFast)"
