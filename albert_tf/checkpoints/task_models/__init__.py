"""Fine-tuned task models in the Keras layouts and ours, heads included.

  head_tables   canonical names of our task heads and each layout's names
                for them (Hugging Face, official TF1)
  keras_tables  head tables of keras-hub's AlbertTextClassifier and Model
                Garden's BertClassifier / BertSpanLabeler (added to
                head_tables)
  task_heads    a source's task head read, checked and fitted to ours
                (labels by name)
  garden        reading a Model Garden task model checkpoint
  source_paths  where our run directory's or export's config, labels and
                vocabulary are (no TensorFlow: the settings read them)
  task_sources  our fine-tuning run directory, ckpt-N or export read with
                its head, labels and vocabulary
  task_writers  ours written as a Hugging Face or official task model
  source_model  a fine-tuning tool's --init_checkpoint read and fitted to
                its task before anything is written
  source_labels the label list a source's head gives (names by position)

May import: albert_tf.checkpoints' modules, albert_tf's models,
data_pipeline.tasks (label lists).
"""
