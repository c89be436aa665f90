"""Networks: built from layers, not trained alone."""

from albert_tf.networks.albert_encoder import AlbertEncoder

__all__ = [
    "AlbertEncoder",
]
