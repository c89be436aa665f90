"""The pure parts of benchmarks/pretraining/science_corpus.py: prose kept
and code, tables and math dropped on a crafted numpydoc docstring; a split
with no file on both sides; a balanced task whose dev rows come from
held-out files only."""

import pytest

from benchmarks.pretraining import science_corpus as sc

DOCSTRING = '''Compute the weighted covariance of two samples quickly.

    The covariance measures how much two random variables vary together,
    and it is estimated here from :func:`numpy.cov` with ``ddof`` set.

    .. math::

        \\sigma_{xy} = E[(X - E[X])(Y - E[Y])] with many letters here

    Parameters
    ----------
    x : array_like
        The first sample, which this long description of the parameter
        should never reach the corpus at all.
    y : array_like
        The second sample.

    Returns
    -------
    cov : float
        The estimate.

    Notes
    -----
    The estimate is unbiased when the weights are frequency weights and
    the correction is applied, see :ref:`the guide <guide>` for details.

    >>> cov([1, 2], [3, 4])  # doctest line that reads as prose words
    0.5 and here the output line of the doctest continues the block

    See Also
    --------
    numpy.cov : The covariance of many variables at once, not kept here.

    Examples
    --------
    The examples section holds prose too, and it is left out entirely.
    '''


def test_prose_paragraphs_keep_description_and_notes_only():
  assert sc.prose_paragraphs(DOCSTRING) == [
      "Compute the weighted covariance of two samples quickly.",
      "The covariance measures how much two random variables vary "
      "together, and it is estimated here from cov with ddof set.",
      "The estimate is unbiased when the weights are frequency weights "
      "and the correction is applied, see the guide for details."]


def test_short_paragraphs_formulas_and_templates_are_not_prose():
  assert sc.prose_paragraphs("Too short to keep.") == []
  assert sc.prose_paragraphs(
      "x = (a + b) * c / d ** 2 - (e + f) * g / h ** 3 - 1") == []
  assert sc.prose_paragraphs(
      "Return the %(klass)s of the values along the given axis now.") == []


def test_documentation_strings_include_add_newdoc_texts():
  source = '''"""The module's docstring."""
from numpy import add_newdoc

add_newdoc("scipy.special", "erf", """The error function of a value.""")


def f():
  """The function's docstring."""
  return "not documentation"
'''
  assert sc.documentation_strings(source) == [
      "The module's docstring.", "The error function of a value.",
      "The function's docstring."]
  assert sc.documentation_strings("def (:\n") == []


def test_split_puts_no_file_on_both_sides_and_holds_out_each_package():
  paths = ([f"scipy/stats/m{i}.py" for i in range(12)] +
           [f"pandas/core/m{i}.py" for i in range(7)] + ["sklearn/base.py"])
  train, heldout = sc.split_files(paths)
  assert not set(train) & set(heldout)
  assert sorted(train + heldout) == sorted(paths)
  assert {p.split("/")[0] for p in heldout} == {"scipy", "pandas",
                                                "sklearn"}


def _paragraph(label, index):
  return f"A paragraph about {label} number {index} with enough words."


def _corpus():
  """Each label has train files with 5 paragraphs; held-out files with 3,
  one of which repeats a training paragraph."""
  prefixes = {label: prefix[0] for label, prefix in sc.TASK_GROUPS.items()}
  train, heldout = [], []
  for label, prefix in prefixes.items():
    train.append((prefix + "a.py", [_paragraph(label, i) for i in range(5)]))
    heldout.append((prefix + "b.py", [_paragraph(label, i)
                                      for i in (4, 10, 11, 12)]))
  # A file of no task group: part of the domain, not of the task.
  train.append(("numpy/core.py", [_paragraph("numpy", 0)]))
  return sc.ScienceCorpus({"train": train, "heldout": heldout})


def test_task_is_balanced_and_dev_rows_come_from_heldout_files_only():
  corpus = _corpus()
  assert sc.label_of("scipy/sparse/linalg/x.py") == "scipy.linalg"
  assert sc.label_of("numpy/core.py") is None
  for split, per_class in (("train", 4), ("heldout", 3)):
    rows = sc.paragraph_rows(corpus, split, per_class, seed=0)
    labels = [r["label"] for r in rows]
    assert {label: labels.count(label) for label in sc.TASK_GROUPS} == {
        label: per_class for label in sc.TASK_GROUPS}
  dev = sc.paragraph_rows(corpus, "heldout", 3, seed=0)
  train_text = {p for _, ps in corpus.files["train"] for p in ps}
  # Paragraph 4 is in both a train and a held-out file: never a dev row.
  assert not {r["text"] for r in dev} & train_text
  heldout = {sc.label_of(path): set(ps) for path, ps in
             corpus.files["heldout"]}
  assert all(r["text"] in heldout[r["label"]] for r in dev)
  with pytest.raises(ValueError, match="fewer than 4"):
    sc.paragraph_rows(corpus, "heldout", 4, seed=0)


def test_documents_are_files_of_sentences():
  corpus = sc.ScienceCorpus({"train": [("pandas/a.py", [
      "First sentence here. Second one (with a note) follows! Third?"])],
                             "heldout": []})
  assert corpus.documents("train") == [[
      "First sentence here.", "Second one (with a note) follows!",
      "Third?"]]
