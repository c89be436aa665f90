"""tools.extend_vocabulary from transformers' own AlbertForMaskedLM folder
(no pooler, no SOP head): the extension keeps the encoder and the MLM head
(old rows unchanged), writes a new model's pooler and SOP head, and says so
in its report."""

import dataclasses

import numpy as np
import pytest

from albert_tf.checkpoints import converter
from albert_tf.training.pretraining import vocabulary_extension as vext
from tests.albert_tf.training.pretraining import domain_text
from tests.tools import docs_commands

pytest.importorskip("torch")
pytest.importorskip("transformers")

V = 2000


@pytest.mark.slow
def test_a_masked_lm_folder_is_extended_with_its_mlm_head(tmp_path,
                                                          spm_model):
  config = docs_commands.tiny_config(V)
  source = tmp_path / "albert_mlm"
  docs_commands.huggingface_folder(source, config, spm_model,
                                   "AlbertForMaskedLM")
  domain = domain_text.write_corpus(str(tmp_path / "notes.txt"),
                                    domain_text.clinical_sentences(300))
  report = vext.extend_vocabulary(vext.VocabularyExtensionParams.from_flat(
      init_checkpoint=str(source), spm_model_file=str(source / "spiece.model"),
      input_file=domain, new_pieces=20,
      output_dir=str(tmp_path / "out")))
  assert report["fresh"] == ["pooler", "sentence_order"]
  old = converter.read_weights(str(source), config).arrays
  assert not any(n.startswith(("pooler/", "sentence_order/")) for n in old)
  new = converter.read_weights(
      str(tmp_path / "out"),
      dataclasses.replace(config, vocab_size=V + 20)).arrays
  assert {n for n in new if n.startswith(("pooler/", "sentence_order/"))}
  heads = [n for n in old if n.startswith("masked_lm/")]
  assert heads
  for name, array in old.items():  # the grown ones: their first V rows
    np.testing.assert_array_equal(new[name][:array.shape[0]], array,
                                  err_msg=name)
