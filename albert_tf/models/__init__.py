"""Trainable models built on the AlbertEncoder."""

from albert_tf.models.albert_pretrainer import AlbertPretrainer
