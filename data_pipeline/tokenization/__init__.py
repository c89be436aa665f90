"""Tokenizers: SentencePiece and WordPiece, in Python and in-graph.

  sentencepiece_tokenizer  ALBERT normalisation + SentencePiece (official
                           tokenization.py's rules)
  wordpiece_tokenizer      BERT's FullTokenizer rules over a vocab.txt
  tf_sentencepiece, tf_wordpiece  the same, in-graph (tensorflow-text)
  factory                  one tokenizer from --spm_model_file / --vocab_file
  control_ids              the [PAD]/[UNK]/[CLS]/[SEP]/[MASK] ids both share
  sentencepiece_offsets, wordpiece_offsets, tokenized_paragraph
                           pieces mapped back to the text's characters
  sentencepiece_trainer, wordpiece_trainer  learning a vocabulary
  word_segmentation        word starts for whole-word masking (jieba)

May import: albert_common only.

`data_pipeline.tokenization` also keeps the names the module of that name
had before it became this package (`SentencePieceTokenizer`,
`preprocess_text`, `encode_pieces`, ...), so `from data_pipeline import
tokenization; tokenization.SentencePieceTokenizer(...)` works as before.
"""

from data_pipeline.tokenization.sentencepiece_tokenizer import SPIECE_UNDERLINE  # noqa: F401
from data_pipeline.tokenization.sentencepiece_tokenizer import (  # noqa: F401
    SentencePieceTokenizer,
)
from data_pipeline.tokenization.sentencepiece_tokenizer import encode_pieces  # noqa: F401
from data_pipeline.tokenization.sentencepiece_tokenizer import is_start_piece  # noqa: F401
from data_pipeline.tokenization.sentencepiece_tokenizer import (  # noqa: F401
    load_sentencepiece,
)
from data_pipeline.tokenization.sentencepiece_tokenizer import needs_comma_split  # noqa: F401
from data_pipeline.tokenization.sentencepiece_tokenizer import preprocess_text  # noqa: F401
from data_pipeline.tokenization.sentencepiece_tokenizer import resplit_pieces  # noqa: F401
