"""A NER run's files, read and checked together, and its label list.

The labels come from the training file (sorted, with the scheme its tags
are in) and are kept in the run's output directory as labels.json
(data_pipeline.tasks.label_list); a rerun on the same output directory
reads them back and checks the training file still gives them, and an
evaluation or prediction without training uses them. Dev and test tags must
be among them and follow the same scheme.

Everything is read before anything is written, so a bad file leaves no
output behind.
"""

import dataclasses
from typing import Optional, Sequence

from albert_common.errors import UserInputError
from data_pipeline.tasks import label_list
from data_pipeline.tasks.ner import ner_files
from data_pipeline.tasks.ner import tag_schemes
from data_pipeline.tasks.ner.sentences import NerFile

TASK_TYPE = "token_classification"


@dataclasses.dataclass
class TaskFiles:
  """The files of a run (None where the run does not use one) and its
  labels (LabelList, task_type "token_classification", with the scheme)."""
  labels: label_list.LabelList
  train: Optional[NerFile] = None
  dev: Optional[NerFile] = None
  test: Optional[NerFile] = None

  @property
  def scheme(self) -> str:
    return self.labels.scheme


def _check_known(tags: Sequence[str], head_labels: Sequence[str],
                 path: str) -> None:
  unknown = sorted(set(tags) - set(head_labels))
  if unknown:
    raise UserInputError(
        f"{path} has tag(s) the --init_checkpoint head does not know: "
        f"{', '.join(unknown)} (its tags: {', '.join(head_labels)}; "
        "--init_head=false trains a fresh head)")


def read_task_files(output_dir: str, train_file: str = "",
                    dev_file: str = "", test_file: str = "",
                    input_format: str = ner_files.AUTO,
                    tag_scheme: str = tag_schemes.AUTO,
                    label_names: str = "",
                    skip_bad_records: bool = False,
                    head_labels: Optional[Sequence[str]] = None
                    ) -> TaskFiles:
  """Reads the files a run uses (an empty path: not used) and its labels.

  Args:
    output_dir: the run's folder (its labels.json, if any, is read).
    train_file, dev_file, test_file: the data (any filesystem); dev and
      test need labels: the training file's or labels.json's. The test file
      may be unlabeled.
    input_format, tag_scheme, label_names, skip_bad_records: see
      ner_files.read_ner_file (tag_scheme applies to the training file; the
      others follow its scheme).
    head_labels: the tags of a fine-tuned token classifier the run starts
      from (its head's order), or None: they are the run's labels (unless
      labels.json has them), and a training tag they lack is an error.

  Raises:
    UserInputError: a bad file (path:line), no labels to evaluate or
      predict with, or a training file whose labels differ from the run's
      labels.json.
  """
  saved = label_list.read(output_dir)
  if saved is not None and saved.task_type != TASK_TYPE:
    raise UserInputError(f"{label_list.path_in(output_dir)} is a "
                         f"{saved.task_type} label list, not NER's; use a new "
                         "--output_dir")
  files = TaskFiles(labels=saved)
  if train_file:
    files.train = ner_files.read_ner_file(
        train_file, input_format, labeled=True, scheme=tag_scheme,
        label_names=label_names, skip_bad_records=skip_bad_records)
    current = label_list.LabelList.from_training(
        TASK_TYPE, ner_files.all_tags([files.train]), files.train.scheme)
    if head_labels and saved is None:
      _check_known(current.labels, head_labels, train_file)
      current = label_list.LabelList(TASK_TYPE, tuple(head_labels),
                                     files.train.scheme)
    if saved is not None:
      label_list.check_same(saved, current, label_list.path_in(output_dir),
                            train_file)
    files.labels = current
  if files.labels is None and head_labels:
    scheme = tag_schemes.canonical(tag_scheme)
    if scheme == tag_schemes.AUTO:
      scheme = tag_schemes.detect_scheme([[n] for n in head_labels])
    files.labels = label_list.LabelList(TASK_TYPE, tuple(head_labels), scheme)
  if files.labels is None:
    if dev_file or test_file:
      raise UserInputError(
          f"no labels: {label_list.path_in(output_dir)} does not exist; "
          "train in this --output_dir first (--do_train --train_file)")
    return files
  scheme = files.labels.scheme
  for name, path, labeled in (("dev", dev_file, True),
                              ("test", test_file, None)):
    if path:
      setattr(files, name, ner_files.read_ner_file(
          path, input_format, labeled=labeled, scheme=scheme,
          label_names=label_names, known_labels=files.labels.labels,
          skip_bad_records=skip_bad_records))
  return files
