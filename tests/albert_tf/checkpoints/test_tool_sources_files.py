"""The tokenizer file a task model's folder gives the tools when the flags
are left out: a labels.txt beside the checkpoint is no WordPiece
vocabulary, and a keras-hub preset's is assets/tokenizer/vocabulary.spm."""

from albert_tf.training import encoder_files


def test_labels_txt_is_not_a_vocabulary(tmp_path):
  (tmp_path / "labels.txt").write_text("fruit\nmusic\n")
  assert encoder_files.vocabulary_in(str(tmp_path), "init_checkpoint") == {}
  (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\n")
  assert encoder_files.vocabulary_in(str(tmp_path), "init_checkpoint") == {
      "vocab_file": str(tmp_path / "vocab.txt")}


def test_a_keras_hub_presets_tokenizer_is_its_vocabulary_spm(tmp_path):
  tokenizer = tmp_path / "assets" / "tokenizer"
  tokenizer.mkdir(parents=True)
  (tokenizer / "vocabulary.spm").write_bytes(b"proto")
  (tmp_path / "labels.txt").write_text("fruit\nmusic\n")
  assert encoder_files.vocabulary_in(str(tmp_path), "init_checkpoint") == {
      "spm_model_file": str(tokenizer / "vocabulary.spm")}
