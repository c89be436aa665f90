"""The neutral leaf every package of this project builds on.

`albert_tf` (models, training, exports) and `data_pipeline` (tokenization,
data creation, input pipelines) both import it; it imports neither, and no
TensorFlow at module load, so a CLI can check its settings against these
names before TensorFlow's ~5 s import.

- `errors`: `UserInputError`, the one error type for a user's mistake.
- `file_io`: every user path, on any TensorFlow filesystem (`gs://`, ...).
- `run_constants`: the values a run's settings may take.
- `encoder_inputs`: the names of the encoder's inputs (the TF Hub BERT
  interface), which the data pipeline writes and the networks read.

May import: the standard library only (TensorFlow inside file_io's
functions).
"""
