"""The command-line tools: `python -m tools.NAME`, one module per command
(installed as `albert_tf.cli` with an `albert-NAME` console script each).
Each defines its flags from settings dataclasses and calls one library
function; support/ holds what they share.

May import: albert_tf, data_pipeline, albert_common.
"""
