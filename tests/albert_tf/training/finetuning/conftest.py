"""The crafted own-data files the fine-tuning tests of this folder learn
(own_data_kit.py holds the tasks)."""

import pytest

from tests.albert_tf.training.finetuning import own_data_kit as kit


@pytest.fixture(scope="module")
def data(tmp_path_factory, english_corpus, spm_model):
  """The crafted tasks' files and a tiny config."""
  root = tmp_path_factory.mktemp("own_data")
  lines = kit.corpus_lines(english_corpus, 1400)
  train, dev, test = lines[:900], lines[900:1100], lines[1100:1140]
  files = {"root": root, "spm": spm_model,
           "config": kit.tiny_config(root / "albert_config.json"),
           # Three independent sigmoids learn slower than one softmax: H=64.
           "config_64": kit.tiny_config(root / "albert_config_64.json",
                                        hidden_size=64)}
  columns = ("id", "text", "label")
  rows = {"train": kit.classification_rows(train, 1),
          "dev": kit.classification_rows(dev, 2),
          "test": kit.classification_rows(test, 3)}
  files["classes"] = rows
  for split, split_rows in rows.items():
    files[f"classes_{split}"] = kit.write_csv(root / f"tickets_{split}.csv",
                                              split_rows, columns)
  files["classes_dev_tsv"] = kit.write_tsv(root / "dev.tsv", rows["dev"],
                                           columns)
  files["classes_dev_jsonl"] = kit.write_jsonl(root / "dev.jsonl",
                                               rows["dev"])
  files["classes_dev_parquet"] = kit.write_parquet(root / "dev.parquet",
                                                   rows["dev"], columns)
  for split, split_lines, seed in (("train", train, 4), ("dev", dev, 5)):
    files[f"scores_{split}"] = kit.write_jsonl(
        root / f"reviews_{split}.jsonl", kit.regression_rows(split_lines,
                                                             seed))
    tagged = kit.multi_label_rows(split_lines, seed + 2)
    files[f"tags_{split}"] = kit.write_csv(
        root / f"tags_{split}.csv", tagged, columns,
        convert=lambda r: dict(r, label="|".join(r["label"]) or "[]"))
  return files
