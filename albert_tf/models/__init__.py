"""Trainable models built on the AlbertEncoder (each takes an encoder).

May import: albert_tf.networks, layers, the root modules,
albert_common.
"""

from albert_tf.models.albert_classifier import AlbertClassifier
from albert_tf.models.albert_early_exit_classifier import (
    AlbertEarlyExitClassifier,
)
from albert_tf.models.albert_multiple_choice import AlbertMultipleChoice
from albert_tf.models.albert_pretrainer import AlbertPretrainer
from albert_tf.models.albert_span_labeler import AlbertSpanLabeler
from albert_tf.models.albert_squad_v2 import AlbertSquadV2
from albert_tf.models.albert_token_classifier import AlbertTokenClassifier

__all__ = [
    "AlbertClassifier",
    "AlbertEarlyExitClassifier",
    "AlbertMultipleChoice",
    "AlbertPretrainer",
    "AlbertSpanLabeler",
    "AlbertSquadV2",
    "AlbertTokenClassifier",
]
