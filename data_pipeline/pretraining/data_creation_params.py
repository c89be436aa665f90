"""Settings of a data-creation run (create_pretraining_data), read once.

`DataCreationParams` holds the input and output, the vocabulary, the run's
scale and seed, and nests `InstanceOptions` (how instances are made) and
`CorpusOptions` (how the corpus is read). Every leaf field is the official
flag of its name: `tools.create_pretraining_data` generates its flags from
them (tools.support.settings_flags). Imports no TensorFlow.
"""

import dataclasses
from typing import Any, Dict, Optional

from albert_common.errors import UserInputError
from albert_common.settings_fields import FlatConstructible
from albert_common.settings_fields import setting
from data_pipeline.corpora.corpus_options import CorpusOptions
from data_pipeline.pretraining.instance_options import InstanceOptions

# Input bytes per unit of work, seeding and shuffling (part of the output's
# identity; pretraining_plan re-exports it).
DEFAULT_PIECE_BYTES = 256 * 1024


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataCreationParams(FlatConstructible):
  """Settings of create_pretraining_data (each leaf field is its flag)."""

  input_file: str = setting(
      help="Input text file(s): comma-separated paths or globs.")
  output_file: str = setting(
      help="Output TFRecord path, or comma-separated paths (one shard each).")
  vocab_file: str = setting(
      "", "WordPiece vocab.txt ([PAD] [UNK] [CLS] [SEP] [MASK]; e.g. the "
      "Chinese ALBERTs' vocab_chinese.txt), used when --spm_model_file is "
      "not given (official precedence).")
  spm_model_file: str = setting(
      "", "SentencePiece model (<pad> <unk> [CLS] [SEP] [MASK]); given with "
      "--vocab_file, this one is used.")
  word_segmenter: str = setting(
      "none", "none: the official rule, every Chinese character a word of "
      "its own. jieba: Chinese words segmented with jieba (as albert_zh and "
      "HFL's Chinese BERT-wwm), so whole-word and n-gram masking mask a "
      "multi-character word whole or not at all; ids stay one per "
      "character. Needs --vocab_file (WordPiece).")
  do_lower_case: bool = setting(True, "Lowercase the input text.")
  instance: InstanceOptions = dataclasses.field(
      default_factory=InstanceOptions)
  corpus: CorpusOptions = dataclasses.field(default_factory=CorpusOptions)
  random_seed: int = setting(12345, "Random seed for data generation.")
  dupe_factor: int = setting(
      40, "Times each document is used (with different masks).")
  num_workers: Optional[int] = setting(
      None, "Worker processes (default: all cores). The output does not "
      "depend on it.")
  num_output_shards: Optional[int] = setting(
      None, "Shards for a single --output_file: "
      "<output_file>-00000-of-0000N ...")
  skip_non_utf8_lines: bool = setting(
      False, "Skip (and count) input lines that are not UTF-8 instead of "
      "failing.")
  piece_bytes: int = setting(
      DEFAULT_PIECE_BYTES, "Input bytes per unit of work, seeding and "
      "shuffling. Changing it changes the output.")
  progress: bool = setting(True, "Show a progress bar.")
  albert_config_file: str = setting(
      "", "Optional ALBERT config the records are for: a vocabulary larger "
      "than its vocab_size is refused before any work.")
  runner: str = setting(
      "", "Apache Beam runner: DirectRunner, DataflowRunner, FlinkRunner, "
      "SparkRunner, PortableRunner, PrismRunner. Default: the local path "
      "(--num_workers processes). With a runner, flags not defined here "
      "are Beam pipeline options (--project, --region, --temp_location, "
      "--flink_master, --direct_num_workers, --direct_running_mode, ...), "
      "and --num_workers is Beam's (Dataflow: workers at start).")
  # Official flags kept so that existing commands run unchanged.
  input_file_mode: str = setting(
      "r", "Accepted for compatibility; input is read as UTF-8.")
  parallel: bool = setting(
      False, "Accepted for compatibility; see --num_workers.")
  do_permutation: bool = setting(
      False, "Official permutation LM option; not supported (must be "
      "False).")

  def check(self) -> None:
    """UserInputError for settings no run can use (flags quoted)."""
    if not (self.spm_model_file or self.vocab_file):
      raise UserInputError("give --spm_model_file (SentencePiece) or "
                           "--vocab_file (WordPiece vocab.txt)")
    if self.do_permutation:
      raise UserInputError("--do_permutation is not supported")
    self.corpus.validate()

  def writer_kwargs(self) -> Dict[str, Any]:
    """The keyword arguments of pretraining_writer.create_pretraining_data
    and beam_pipeline.create_pretraining_data_beam."""
    return dict(
        input_file=self.input_file, output_file=self.output_file,
        spm_model_file=self.spm_model_file or None,
        vocab_file=self.vocab_file or None,
        word_segmenter=self.word_segmenter, options=self.instance,
        do_lower_case=self.do_lower_case, dupe_factor=self.dupe_factor,
        random_seed=self.random_seed, num_workers=self.num_workers,
        num_output_shards=self.num_output_shards,
        piece_bytes=self.piece_bytes,
        skip_non_utf8_lines=self.skip_non_utf8_lines,
        albert_config_file=self.albert_config_file or None,
        corpus=self.corpus)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SentenceSplitParams(FlatConstructible):
  """Settings of split_sentences: a document corpus written in the official
  format, as data creation reads it (each leaf field is its flag)."""

  input_file: str = setting(
      help="Input file(s): comma-separated paths or globs.")
  output_file: str = setting(
      help="Output text file, or a folder (ending in /) for one <input "
      "name>.txt per input file.")
  corpus: CorpusOptions = dataclasses.field(default_factory=CorpusOptions)
  piece_bytes: int = setting(
      DEFAULT_PIECE_BYTES, "Input bytes per piece, as "
      "create_pretraining_data's (the scope of --dedup_documents).")
