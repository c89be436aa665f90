"""Fine-tuned task models in the Keras layouts and ours, heads included.

  keras_tables  head tables of keras-hub's AlbertTextClassifier and Model
                Garden's BertClassifier / BertSpanLabeler (added to
                head_tables)
  garden        reading a Model Garden task model checkpoint
  ours          reading our classifier run directory, ckpt-N or export
                with its head and labels (the keras-hub preset writer's
                input)

May import: albert_tf.checkpoints' modules, albert_tf's models.
"""
