"""Networks: built from layers, not trained alone.

May import: albert_tf.layers, the root modules, albert_common.
"""

from albert_tf.networks.albert_encoder import AlbertEncoder

__all__ = [
    "AlbertEncoder",
]
