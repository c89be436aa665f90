"""Building blocks of ALBERT: embeddings, transformer sublayers and heads.

`layers/` holds blocks, `networks/` the encoder built from them (not trained
alone), `models/` the trainable models (pretrainer, fine-tuning models).

May import: albert_tf's root modules, albert_common.
"""

from albert_tf.layers.activations import get_activation
from albert_tf.layers.albert_embeddings import AlbertEmbeddings
from albert_tf.layers.attention_sublayer import AttentionSublayer
from albert_tf.layers.checkpointed_dropout import CheckpointedDropout
from albert_tf.layers.classification_head import ClassificationHead
from albert_tf.layers.feed_forward_sublayer import FeedForwardSublayer
from albert_tf.layers.float32_softmax_attention import Float32SoftmaxAttention
from albert_tf.layers.masked_lm_head import MaskedLMHead
from albert_tf.layers.multiple_choice_head import MultipleChoiceHead
from albert_tf.layers.sentence_order_head import SentenceOrderHead
from albert_tf.layers.span_head import SpanHead
from albert_tf.layers.squad_v2_head import SquadV2Head
from albert_tf.layers.token_classification_head import TokenClassificationHead

__all__ = [
    "get_activation",
    "AlbertEmbeddings",
    "AttentionSublayer",
    "CheckpointedDropout",
    "ClassificationHead",
    "FeedForwardSublayer",
    "Float32SoftmaxAttention",
    "MaskedLMHead",
    "MultipleChoiceHead",
    "SentenceOrderHead",
    "SpanHead",
    "SquadV2Head",
    "TokenClassificationHead",
]
