"""Token classification (NER) data: files -> sentences -> windows -> metrics.

  ner_files        read a CoNLL / JSON lines / CLUENER file, checked (bad
                   records: path:line), and write predictions back in it
  conll_format, jsonl_format, cluener_format  the three formats
  sentences        what the readers return (Sentence, NerFile, BadRecord)
  tag_schemes      IOB2 / IOB1 / IOBES: detection, checks, seqeval's entities
  features         word pieces, tags on first pieces, windows, max context
  metrics          seqeval precision / recall / F1 and token accuracy
  word_splitting   raw text -> words with character offsets (the export's
                   rule)
  entity_spans     predicted tags -> entities with character offsets, and
                   the lookup tables the export decodes with

May import: data_pipeline.tasks, data_pipeline.pretraining,
data_pipeline.corpora, data_pipeline.tokenization, albert_common.
"""
