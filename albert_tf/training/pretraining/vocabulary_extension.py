"""A model's vocabulary extended with a domain's pieces (extend_vocabulary).

Reads a model (any layout `read_weights` reads), its tokenizer
(SentencePiece `.model` or WordPiece `vocab.txt`) and a domain corpus (any
format data creation reads); learns and ranks the domain's new pieces
(data_pipeline.tokenization.vocabulary_extension, whose doc states the
ranking and the scores: the pieces of every character the old vocabulary
cannot spell first, up to the character coverage); appends the best
`new_pieces` of them; and grows the word-embedding table [V, E] and the MLM
output bias [V] by as many rows:

- a new piece's row is the mean of the rows of the old pieces that spell
  its text under the old tokenizer (`<unk>` included where part of the text
  is unknown);
- a piece the old vocabulary spells only as `<unk>` (and the bare word
  start "▁"), a new script, gets the mean of all old rows: nothing in its
  spelling says more, and the mean is where an unseen piece is least
  surprising to the rest of the model.

Old ids, pieces and rows are unchanged, so general text tokenizes to the
same ids wherever no new piece applies and gives the same outputs. The
output folder holds our checkpoint (`model.ckpt`, optimizer slots
dropped, every other variable unchanged), `albert_config.json`
(vocab_size V + N), the tokenizer (the old file's name, or `vocab.txt`),
`vocabulary_extension.json` (the pieces, and the measured pieces per word
and <unk> share) and `data_settings.json` (the source run's data settings
when known, and the tokenizer's: a run continued from the folder warns when
its records differ); it is written in a hidden sibling and renamed, so it
appears whole or not at all. It works as `--init_checkpoint` of
run_pretraining and the fine-tuning tools. Every input check runs before
anything is written.
"""

import dataclasses
import itertools
from typing import Dict, List, Sequence

from absl import logging
import numpy as np

from albert_common import file_io
from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from albert_tf.checkpoints import configs
from albert_tf.config import AlbertConfig
from albert_tf.training import encoder_files
from data_pipeline.pretraining import sentence_corpus
from data_pipeline.pretraining.data_creation_params import CorpusOptions
from data_pipeline.tokenization import sentencepiece_tokenizer as spt
from data_pipeline.tokenization import vocabulary_extension as vx
from data_pipeline.tokenization import wordpiece_tokenizer as wpt

EMBEDDINGS = "embeddings/word_embeddings/embeddings"
OUTPUT_BIAS = "masked_lm/output_bias"
CHECKPOINT_NAME = "model.ckpt"
REPORT_NAME = "vocabulary_extension.json"


@dataclasses.dataclass(frozen=True, kw_only=True)
class VocabularyExtensionParams(FlatConstructible):
  """Settings of tools.extend_vocabulary (each leaf field is its flag)."""

  init_checkpoint: str = setting(
      help="The model: our checkpoint (prefix or folder), a released TF1 "
      "checkpoint, Hugging Face model.safetensors (file or folder), a Model "
      "Garden checkpoint or a keras-hub preset.")
  albert_config_file: str = setting(
      "", "The model's albert_config.json (a Hugging Face config.json is "
      "read too). Optional when --init_checkpoint is a folder holding "
      "albert_config.json or config.json (a Hugging Face folder, a keras-hub "
      "preset): that file is used, and logged.")
  spm_model_file: str = setting(
      "", "The model's SentencePiece model (unigram).")
  vocab_file: str = setting(
      "", "The model's WordPiece vocab.txt (when --spm_model_file is not "
      "given).")
  do_lower_case: bool = setting(
      True, "Lowercase as the model's tokenizer does.")
  input_file: str = setting(
      help="The domain corpus: comma-separated paths or globs.")
  corpus: CorpusOptions = dataclasses.field(default_factory=CorpusOptions)
  new_pieces: int = setting(help="Pieces to append to the vocabulary.")
  output_dir: str = setting(
      help="A new folder for the checkpoint, config and tokenizer.")
  ranking: str = setting(
      "saving", "How candidates are ranked. saving: the domain pieces saved "
      "(frequency x (old pieces to spell it - 1 + unknown characters)). "
      "model_order: the domain tokenizer's own order (score / count).",
      choices=vx.RANKINGS)
  domain_vocab_size: int = setting(
      0, "Size of the tokenizer learned on the domain; 0: 4 x --new_pieces "
      "+ 32 (room for symbols and characters).")
  random_seed: int = setting(12345, "Seed of the domain tokenizer.")
  split_by_unicode_script: bool = setting(
      True, "SentencePiece: learn the domain's pieces splitting where the "
      "Unicode script changes, as ALBERT's recipe does. false lets a new "
      "piece join letters to punctuation and digits (code, URLs, formulas: "
      "'self.', '()', 'np.'), which the old vocabulary never has; the "
      "tokenizer then reads those spans in fewer pieces.")

  def check(self) -> None:
    """The checks that need no file read (UserInputError naming the flag)."""
    if self.new_pieces <= 0:
      raise UserInputError(f"--new_pieces={self.new_pieces} must be positive")
    if self.domain_vocab_size < 0:
      raise UserInputError(f"--domain_vocab_size={self.domain_vocab_size} "
                           "must be >= 0")
    if self.ranking not in vx.RANKINGS:
      raise UserInputError(f"--ranking={self.ranking}: not one of "
                           f"{', '.join(vx.RANKINGS)}")
    if not self.spm_model_file and not self.vocab_file:
      raise UserInputError("give the model's tokenizer: --spm_model_file or "
                           "--vocab_file")
    if not self.split_by_unicode_script and not self.spm_model_file:
      raise UserInputError(
          "--split_by_unicode_script=false applies to a SentencePiece model;"
          " WordPiece's basic tokenizer splits punctuation from letters "
          f"before any piece (--vocab_file={self.vocab_file})")
    self.corpus.validate()
    if file_io.exists(self.output_dir):
      raise UserInputError(f"--output_dir={self.output_dir} exists; give a "
                           "new folder (nothing was written)")


@dataclasses.dataclass
class OldVocabulary:
  """The old tokenizer, read and checked against the config."""
  kind: str  # "sentencepiece" or "wordpiece"
  tokenizer: object
  proto: object = None  # the old ModelProto (SentencePiece)
  file_name: str = "vocab.txt"


def read_vocabulary(params: VocabularyExtensionParams,
                    config: AlbertConfig) -> OldVocabulary:
  """The old tokenizer; UserInputError if its size is not the model's."""
  if params.spm_model_file:
    path, flag = params.spm_model_file, "--spm_model_file"
    tokenizer = spt.SentencePieceTokenizer(path, params.do_lower_case)
    vocabulary = OldVocabulary(
        "sentencepiece", tokenizer,
        vx.read_model_proto(file_io.read_bytes(path), path),
        file_io.basename(path))
  else:
    path, flag = params.vocab_file, "--vocab_file"
    vocabulary = OldVocabulary("wordpiece", wpt.WordPieceTokenizer(
        path, params.do_lower_case))
  size = vocabulary.tokenizer.vocab_size
  if size != config.vocab_size:
    raise UserInputError(
        f"{flag}={path} has {size} pieces but --albert_config_file="
        f"{params.albert_config_file} has vocab_size={config.vocab_size}: "
        "the tokenizer does not belong to the model")
  return vocabulary


def read_domain(params: VocabularyExtensionParams) -> List[str]:
  """The domain corpus' sentences (raw); UserInputError if it has none."""
  sentences = [s for s in sentence_corpus.read_sentences(
      params.input_file, params.corpus) if s.strip()]
  if not sentences:
    raise UserInputError(f"--input_file={params.input_file}: the corpus has "
                         "no text")
  return sentences


def choose_pieces(params: VocabularyExtensionParams, vocabulary: OldVocabulary,
                  sentences: Sequence[str], ranking: str
                  ) -> List[vx.Candidate]:
  """The `new_pieces` pieces to add: first the pieces of each character of
  the domain the old vocabulary cannot spell, up to the coverage (most
  frequent first; SentencePiece: vx.character_candidates, the character;
  WordPiece: vx.wordpiece_character_candidates, "c" and "##c"), then the
  best other candidates by `ranking`. UserInputError if the domain
  supplies fewer."""
  size = params.domain_vocab_size or (
      4 * params.new_pieces + 32)
  if vocabulary.kind == "sentencepiece":
    text = [t for t in (vocabulary.tokenizer.preprocess(s)
                        for s in sentences) if t]
    candidates = vx.sentencepiece_candidates(
        vocabulary.proto, text, size, params.random_seed,
        params.split_by_unicode_script)
    characters = vx.character_candidates(vocabulary.proto, text, candidates)
  else:
    candidates = vx.wordpiece_candidates(vocabulary.tokenizer, sentences, size)
    characters = vx.wordpiece_character_candidates(vocabulary.tokenizer,
                                                   sentences)
  characters = _whole_characters(characters, params.new_pieces)
  taken = {c.piece for c in characters}
  ranked = characters + [c for c in vx.rank(candidates, ranking)
                         if c.piece not in taken]
  if len(ranked) < params.new_pieces:
    raise UserInputError(
        f"--new_pieces={params.new_pieces} is more than the domain corpus in "
        f"--input_file={params.input_file} supplies ({len(ranked)} useful "
        "pieces the old vocabulary lacks); use fewer, more text or a larger "
        "--domain_vocab_size")
  return ranked[:params.new_pieces]


def _character(candidate: vx.Candidate) -> str:
  """The character a characters-first piece is for ("##c" is c's)."""
  return candidate.piece.removeprefix(wpt.CONTINUATION)


def _whole_characters(characters: Sequence[vx.Candidate],
                      budget: int) -> List[vx.Candidate]:
  """The most frequent characters whose pieces fit in `budget` pieces (a
  WordPiece character's two pieces stay together); a warning when some
  are left out."""
  kept = []
  for _, group in itertools.groupby(characters, key=_character):
    group = list(group)
    if len(kept) + len(group) > budget:
      logging.warning(
          "the domain corpus has %d characters the old vocabulary cannot "
          "spell (within the character coverage; %d pieces); "
          "--new_pieces=%d adds only the most frequent %d of them (%d "
          "pieces)", len({_character(c) for c in characters}),
          len(characters), budget, len({_character(c) for c in kept}),
          len(kept))
      break
    kept.extend(group)
  return kept


def extended_tokenizer(vocabulary: OldVocabulary,
                       chosen: Sequence[vx.Candidate],
                       split_by_unicode_script: bool = True):
  """(the new tokenizer file's bytes, a tokenizer reading them)."""
  if vocabulary.kind == "sentencepiece":
    data = vx.extend_sentencepiece(vocabulary.proto, chosen,
                                   split_by_unicode_script)
    tokenizer = spt.SentencePieceTokenizer(
        vocabulary.file_name, vocabulary.tokenizer.do_lower_case,
        fs=vx.BytesFile(data))
    return data, tokenizer
  tokens = vocabulary.tokenizer.tokens + [c.piece for c in chosen]
  data = "".join(t + "\n" for t in tokens).encode("utf-8")
  return data, wpt.WordPieceTokenizer(
      None, vocabulary.tokenizer.do_lower_case, tokens=tokens)


def new_rows(old: np.ndarray, chosen: Sequence[vx.Candidate],
             vocabulary: OldVocabulary) -> np.ndarray:
  """The rows of `chosen` for a table `old` [V, ...] (see the module doc).

  Returns:
    float32 array [N, ...]: mean of each spelling's rows, or of all old
    rows for a spelling of only `<unk>` and "▁".
  """
  tokenizer = vocabulary.tokenizer
  blank = {tokenizer.unk_id}
  if vocabulary.kind == "sentencepiece":
    space = tokenizer.sp_model.PieceToId(spt.SPIECE_UNDERLINE)
    if tokenizer.sp_model.IdToPiece(space) == spt.SPIECE_UNDERLINE:
      blank.add(space)
  everything = old.mean(axis=0)
  rows = [everything if set(c.spelling) <= blank
          else old[list(c.spelling)].mean(axis=0) for c in chosen]
  return np.stack(rows).astype(old.dtype)


def grow_arrays(arrays: Dict[str, np.ndarray], chosen: Sequence[vx.Candidate],
                vocabulary: OldVocabulary) -> Dict[str, np.ndarray]:
  """`arrays` with the word embeddings [V+N, E] and, when the MLM head is
  there, its output bias [V+N]; every other array is the same object."""
  grown = dict(arrays)
  for name in (EMBEDDINGS, OUTPUT_BIAS):
    if name in arrays:
      grown[name] = np.concatenate(
          [arrays[name], new_rows(arrays[name], chosen, vocabulary)])
  return grown


def pieces_per_word(tokenizer, sentences: Sequence[str]) -> Dict[str, float]:
  """{"pieces_per_word", "unknown_chars_per_word", "unk_share"} of
  `sentences` (unk_share: the fraction of its pieces that are <unk>, or
  [UNK])."""
  counts = vx.count_pieces(tokenizer, sentences)
  return {"pieces_per_word": counts["pieces"] / max(1, counts["words"]),
          "unknown_chars_per_word": counts["unknown_chars"] /
          max(1, counts["words"]),
          "unk_share": counts["unknown_pieces"] / max(1, counts["pieces"])}


def summary_line(output_dir: str, report: dict) -> str:
  """The line printed after a run: sizes, and the domain's pieces per word,
  unknown characters per word and unknown-piece share before and after."""
  before, after = report["domain_before"], report["domain_after"]
  return (f"wrote {output_dir}: vocab_size {report['old_vocab_size']} "
          f"-> {report['vocab_size']}; domain pieces per word "
          f"{before['pieces_per_word']:.3f} -> "
          f"{after['pieces_per_word']:.3f}, unknown characters per word "
          f"{before['unknown_chars_per_word']:.4f} -> "
          f"{after['unknown_chars_per_word']:.4f}, "
          f"{report['unknown_piece']} share of pieces "
          f"{before['unk_share']:.1%} -> {after['unk_share']:.1%} "
          f"({report['characters_added']} characters added as pieces)")


def data_settings(params: VocabularyExtensionParams, source_path: str,
                  kind: str) -> dict:
  """The data settings a run continued from the output compares its
  records with (continuation.DATA_SETTINGS_FILE): the source run's own,
  when its folder has them, with the tokenizer's casing and kind, which the
  records must share."""
  from albert_tf.training.pretraining import continuation
  folder = (source_path if file_io.isdir(source_path)  # a keras-hub preset
            else file_io.dirname(source_path))
  path = file_io.join(folder, continuation.DATA_SETTINGS_FILE)
  settings = (file_io.read_json_object(path, "the source run's data settings")
              if file_io.exists(path) else {})
  settings.update(do_lower_case=params.do_lower_case, tokenizer=kind)
  return settings


def _write_folder(output_dir: str, arrays, config: AlbertConfig,
                  tokenizer_name: str, tokenizer_data: bytes,
                  report: dict, settings: dict) -> None:
  """Writes everything in a hidden sibling, then renames it into place."""
  from albert_tf.checkpoints.writers import write_ours
  from albert_tf.training.pretraining import continuation
  staging = file_io.temp_name(output_dir)
  file_io.rmtree(staging)
  try:
    file_io.makedirs(staging)
    write_ours(arrays, config, file_io.join(staging, CHECKPOINT_NAME),
               fresh_ok=_FRESH_OK)
    config.to_json_file(file_io.join(staging, "albert_config.json"))
    file_io.write_atomic(file_io.join(staging, tokenizer_name),
                         tokenizer_data)
    file_io.write_json_atomic(file_io.join(staging, REPORT_NAME), report)
    file_io.write_json_atomic(
        file_io.join(staging, continuation.DATA_SETTINGS_FILE), settings)
    file_io.rename_tree(staging, output_dir, last=("checkpoint",))
  except OSError as e:
    raise UserInputError(f"--output_dir={output_dir}: cannot write it: "
                         f"{e}") from None
  finally:
    file_io.rmtree(staging)


# A transformers AlbertForMaskedLM source has no pooler and no SOP head:
# the extension gets a new model's, as run_pretraining would start them
# from the source itself (said in one warning and in the report's "fresh").
_FRESH_OK = ("pooler/", "sentence_order/")


def _fresh_parts(arrays) -> List[str]:
  """The parts of _FRESH_OK that write_ours writes new for `arrays`: the
  pooler when absent, the SOP head when absent beside an MLM head."""
  def has(prefix):
    return any(n.startswith(prefix) for n in arrays)
  return [part for part, fresh in (
      ("pooler", not has("pooler/")),
      ("sentence_order", has("masked_lm/") and not has("sentence_order/")))
          if fresh]


def extend_vocabulary(params: VocabularyExtensionParams) -> dict:
  """Writes the extended model to `params.output_dir`; returns its report
  (the added pieces and the pieces per word before and after).

  Raises:
    UserInputError: a bad flag, corpus, tokenizer or checkpoint (nothing is
      written then).
  """
  params.check()
  params = encoder_files.with_config_file(params)
  config = configs.load_albert_config(params.albert_config_file)
  vocabulary = read_vocabulary(params, config)
  sentences = read_domain(params)
  from albert_tf.checkpoints.reading.readers import read_weights
  weights = read_weights(params.init_checkpoint, config)
  weights.check_config(config)
  chosen = choose_pieces(params, vocabulary, sentences, params.ranking)
  data, tokenizer = extended_tokenizer(vocabulary, chosen,
                                       params.split_by_unicode_script)
  new_config = dataclasses.replace(
      config, vocab_size=config.vocab_size + len(chosen))
  name = (vocabulary.file_name if vocabulary.kind == "sentencepiece"
          else "vocab.txt")
  report = {
      "old_vocab_size": config.vocab_size,
      "vocab_size": new_config.vocab_size,
      "ranking": params.ranking,
      "split_by_unicode_script": params.split_by_unicode_script,
      "characters_added": len({_character(c) for c in chosen
                               if c.model_rank < 0}),
      "unknown_piece": vocabulary.tokenizer.convert_ids_to_tokens(
          [vocabulary.tokenizer.unk_id])[0],
      "domain_before": pieces_per_word(vocabulary.tokenizer, sentences),
      "domain_after": pieces_per_word(tokenizer, sentences),
      "pieces": [{"piece": c.piece, "id": config.vocab_size + i,
                  "frequency": c.frequency, "saving": c.saving,
                  "spelling": list(c.spelling)}
                 for i, c in enumerate(chosen)],
  }
  fresh = _fresh_parts(weights.arrays)
  if fresh:
    report["fresh"] = fresh
    logging.warning("%s has no %s (transformers' AlbertForMaskedLM has "
                    "none): %s holds a new model's, as run_pretraining "
                    "would start them", params.init_checkpoint,
                    " and ".join(fresh), params.output_dir)
  _write_folder(params.output_dir, grow_arrays(weights.arrays, chosen,
                                               vocabulary),
                new_config, name, data, report,
                data_settings(params, weights.path, vocabulary.kind))
  return report
