"""The encoder's inputs, as named in TF Hub's BERT encoder interface.

The data pipeline writes feature dicts under these names and
`albert_tf.networks` reads them; each is int32 [batch, seq_length]. They
live in this leaf, not in `networks/`, because `data_pipeline` must not
import `albert_tf` (the package graph is one-way).
"""

INPUT_WORD_IDS = "input_word_ids"
INPUT_MASK = "input_mask"
INPUT_TYPE_IDS = "input_type_ids"
# In the order the TF Hub signatures list them.
ENCODER_INPUT_NAMES = (INPUT_WORD_IDS, INPUT_MASK, INPUT_TYPE_IDS)

# Packed rows (several examples a row: data_pipeline.tasks.packing), beside
# the three inputs above. Per token, int32 [rows, seq]:
INPUT_POSITIONS = "input_positions"  # position ids, 0 at each example's start
EXAMPLE_SLOT_IDS = "example_slot_ids"  # 1 + the token's example slot; 0: pad
# Per example slot, [rows, slots]:
EXAMPLE_STARTS = "example_starts"  # int32: the slot's [CLS] position
EXAMPLE_WEIGHTS = "example_weights"  # float32: 1 an example, 0 an empty slot
