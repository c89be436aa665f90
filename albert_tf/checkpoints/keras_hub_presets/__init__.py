"""keras-hub ALBERT presets: ours <-> `keras_hub.models.Albert*`.

  preset      reading a preset (and the converter's entry for the format)
  writer      writing one
  vocabulary  our SentencePiece model as keras-hub's AlbertTokenizer proto
  wordpiece   presets of a WordPiece model (the released Chinese ALBERTs)

May import: albert_tf.checkpoints' other modules, albert_tf, data_pipeline,
albert_common.
"""
